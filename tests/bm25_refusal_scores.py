"""Make tests/data/bm25_refusal_scores.json: each question's BM25 relevance on the FULL index.

While the dense index is still being built (the chat's first minutes after ``make run``), refusal
is decided from BM25 alone: the best chunk's plain BM25 score divided by the highest score the
question's words could reach (``indexing.bm25.BM25Index.relevance``), refused under
``retrieval.bm25.refusal_threshold``. This records that relevance, searched as the retriever
searches (filters parsed from the question), for two sets:

- ``calibration``: the questions of tests/data/threshold_scores.json (the cosine threshold's set:
  112 real, 40 off-topic), on which the threshold is chosen;
- ``held_out``: questions the threshold never saw: every 25th PubMedQA question from the 13th
  (40), the first turns of followups_dev.jsonl (20), and 30 more off-topic questions written for
  this file before any score was computed (none changed after).

Regenerate (needs the full index and ../shared/data/eval; the test that reads the file does not):

    .venv/bin/python -m tests.bm25_refusal_scores --index-dir /work/main/faiss_indices

The file holds only question strings and the numbers computed here.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tests.threshold_scores import EVAL_DIR, OFF_TOPIC, PQAL_STEP, REPO, on_topic_questions

OUT = REPO / "tests" / "data" / "bm25_refusal_scores.json"
HELD_OUT_PQAL_START = 12

HELD_OUT_OFF_TOPIC = [
    "How often should I water a cactus in winter?",
    "What is the best way to remove red wine stains from a carpet?",
    "How do I change a flat tyre on my car?",
    "Which wand wood does Harry Potter use?",
    "What time does the Louvre open on Sundays?",
    "How do I knit a scarf for beginners?",
    "What is the population of Tokyo?",
    "Who painted the ceiling of the Sistine Chapel?",
    "How many calories are in a slice of pepperoni pizza?",
    "What are good names for a golden retriever puppy?",
    "How do I set up a home Wi-Fi router?",
    "What is the plot of Pride and Prejudice?",
    "When was the Eiffel Tower built?",
    "How do I make cold brew coffee at home?",
    "Which planet has the most moons?",
    "What should I pack for a week of camping in the mountains?",
    "How do I write a cover letter for a marketing job?",
    "What is the difference between a violin and a viola?",
    "How do I clean a cast iron skillet?",
    "Who won the FIFA World Cup in 2014?",
    "How do I file my taxes as a freelancer in Germany?",
    "What is the fastest land animal?",
    "How do I repot an orchid?",
    "What are the lyrics of Bohemian Rhapsody about?",
    "How do I convert a Word document to PDF?",
    "Which airline has the most legroom in economy class?",
    "What is the tallest building in the world?",
    "How do I train my cat to use a scratching post?",
    "What is a good itinerary for three days in Rome?",
    "How do I paint a bathroom ceiling without streaks?",
]


def held_out_questions(eval_dir: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    pqal = (eval_dir / "pubmedqa_pqal.jsonl").read_text(encoding="utf-8").splitlines()
    for line in pqal[HELD_OUT_PQAL_START::PQAL_STEP]:
        row = json.loads(line)
        out.append({"source": "pubmedqa_pqal", "qid": str(row["qid"]),
                    "question": row["question"], "on_topic": True})  # fmt: skip
    for line in (eval_dir / "followups_dev.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out.append({"source": "followups_dev", "qid": str(row["qid"]),
                    "question": row["turns"][0], "on_topic": True})  # fmt: skip
    out += [{"source": "written", "qid": f"held-off-{n}", "question": q, "on_topic": False}
            for n, q in enumerate(HELD_OUT_OFF_TOPIC)]  # fmt: skip
    return out


def calibration_questions(eval_dir: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [{**q, "on_topic": True} for q in on_topic_questions(eval_dir)]
    rows += [{"source": "written", "qid": f"off-{n}", "question": q, "on_topic": False}
             for n, q in enumerate(OFF_TOPIC)]  # fmt: skip
    return rows


def relevance(backend: Any, question: str) -> float:
    """As the retriever computes it: filters parsed from the question (HybridRetriever._prepare),
    drug names' generic names added, and the drug names no chunk holds left out
    (retrievers.hybrid.lexical_refusal_text)."""
    from indexing.drug_names import with_generic_names
    from retrievers.filters import parse_filters
    from retrievers.hybrid import lexical_refusal_text

    query, filters = parse_filters(question)
    searched = lexical_refusal_text(with_generic_names(query or question), backend)
    return round(float(backend.bm25_relevance(searched, filters)), 4)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bm25_refusal_scores")
    parser.add_argument("--index-dir", default=None, help="index.dir of the full index "
                        "(default: cfg.yaml's)")  # fmt: skip
    parser.add_argument("--eval-dir", type=Path, default=EVAL_DIR)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    from retrievers.backend import FaissBM25Backend
    from settings.config import load_config
    from settings.offline import offline_env

    offline_env()
    overrides = {"index": {"dir": args.index_dir}} if args.index_dir else None
    cfg = load_config(REPO / "cfg.yaml", overrides=overrides)
    backend = FaissBM25Backend(cfg, load_dense=False)  # BM25 only: what the chat has then
    manifest = backend.manifest
    if manifest.articles < 10_000:
        print(f"warning: the index holds {manifest.articles} articles: not the full index",
              file=sys.stderr)  # fmt: skip
    sets = {"calibration": calibration_questions(args.eval_dir),
            "held_out": held_out_questions(args.eval_dir)}  # fmt: skip
    for rows in sets.values():
        for row in rows:
            row["relevance"] = relevance(backend, row["question"])
    data = {
        "index": {key: getattr(manifest, key) for key in (
            "articles", "chunks", "built_at", "corpus_checksum", "bm25_settings")},
        **sets,
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {sum(len(r) for r in sets.values())} questions to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
