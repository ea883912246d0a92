"""Make tests/data/threshold_scores.json: each question's best dense cosine on the FULL index.

``retrieval.score_threshold`` (cfg.yaml) decides whether a question is refused; the cut was
measured on the full 16.7k-article index, where a question's best cosine is higher than on the
small test index. This records, for real on-topic questions (all 72 of the shared
``llm_questions_dev.jsonl`` and every 25th of ``pubmedqa_pqal.jsonl``) and the off-topic ones
below, the best cosine of any chunk (searched as the retriever searches: filters parsed from the
question) and the number of BM25 hits (of ``retrieval.k``), so that
tests/test_threshold_real.py can apply the product's refusal to them without the full index.

Regenerate (after rebuilding the full index, changing the embedding model or the questions):

    .venv/bin/python -m tests.threshold_scores --index-dir faiss_indices

The file holds only the question strings and the numbers computed here.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "data" / "threshold_scores.json"
EVAL_DIR = REPO.parent / "shared" / "data" / "eval"
PQAL_STEP = 25

# Questions nobody should ask a PubMed assistant about intelligence research (written before the
# scores were computed; none was changed after).
OFF_TOPIC = [
    # sport
    "Who holds the record for the most home runs in a single Major League Baseball season?",
    "How many players are on the field for each team in a rugby union match?",
    "Which country has won the most Olympic gold medals in alpine skiing?",
    "What is the offside rule in ice hockey?",
    "Who won the Tour de France in 2019?",
    "How long is a marathon in kilometres?",
    "What are the rules of a tie-break in tennis?",
    # cooking
    "How long should I boil an egg for a runny yolk?",
    "What is the best way to make a sourdough starter?",
    "How do you make a classic French omelette?",
    "Which herbs go well with roast lamb?",
    "What temperature should I bake chocolate chip cookies at?",
    "How do I caramelize onions without burning them?",
    "What is the difference between baking soda and baking powder in a cake recipe?",
    # films, music, television
    "Who played Darth Vader in the original Star Wars trilogy?",
    "Which film won the Academy Award for Best Picture in 1995?",
    "What is the plot of the movie Inception?",
    "Who composed the soundtrack for The Lord of the Rings films?",
    "Which band released the album Abbey Road?",
    "When does the next season of the TV series Stranger Things come out?",
    # programming
    "How do I reverse a list in Python?",
    "What is the difference between a left join and an inner join in SQL?",
    "How do I undo the last git commit?",
    "Why does my JavaScript promise return undefined?",
    "How do I center a div with CSS flexbox?",
    "What does a segmentation fault mean in a C program?",
    "How do I install a package with npm?",
    # geography and travel
    "What is the capital city of Australia?",
    "Which river is the longest in South America?",
    "How tall is Mount Kilimanjaro?",
    "What is the best time of year to visit Iceland?",
    "Which countries border Switzerland?",
    "What currency is used in Thailand?",
    # finance
    "What is the current interest rate of the European Central Bank?",
    "Should I invest in index funds or individual stocks?",
    "How is capital gains tax calculated on selling a house?",
    "What is the difference between a Roth IRA and a traditional IRA?",
    "How do I improve my credit score quickly?",
    # weather, home
    "Will it rain in London tomorrow?",
    "How do I fix a leaking kitchen tap?",
]


def on_topic_questions(eval_dir: Path) -> list[dict[str, str]]:
    """(source, qid, question) of the real questions: every llm question, every 25th PubMedQA."""
    out = []
    llm = (eval_dir / "llm_questions_dev.jsonl").read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(llm):
        row = json.loads(line)
        out.append({"source": "llm_questions_dev", "qid": str(row.get("qid", n)),
                    "question": row["question"]})  # fmt: skip
    pqal = (eval_dir / "pubmedqa_pqal.jsonl").read_text(encoding="utf-8").splitlines()
    for line in pqal[::PQAL_STEP]:
        row = json.loads(line)
        out.append({"source": "pubmedqa_pqal", "qid": str(row["qid"]),
                    "question": row["question"]})  # fmt: skip
    return out


def measure(backend: Any, k: int, question: str) -> dict[str, Any]:
    """The best dense cosine (no threshold) and the BM25 hit count, filters parsed as the
    retriever parses them (``HybridRetriever._prepare``)."""
    from retrievers.filters import parse_filters

    query, filters = parse_filters(question)
    query = query or question
    dense = backend.dense_search(query, 1, -1.0, filters)
    best = round(float(dense[0].metadata["score"]), 4) if dense else None
    return {"best_cosine": best, "bm25_hits": len(backend.bm25_search(query, k, filters))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.threshold_scores")
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
    backend = FaissBM25Backend(cfg)
    manifest = backend.manifest
    if manifest.articles < 10_000:
        print(f"warning: the index holds {manifest.articles} articles: not the full index",
              file=sys.stderr)  # fmt: skip
    rows: list[dict[str, Any]] = [
        {**q, "on_topic": True} for q in on_topic_questions(args.eval_dir)
    ]
    rows += [{"source": "written", "qid": f"off-{n}", "question": q, "on_topic": False}
             for n, q in enumerate(OFF_TOPIC)]  # fmt: skip
    for row in rows:
        row.update(measure(backend, cfg.retrieval.k, row["question"]))
    data = {
        "index": {key: getattr(manifest, key) for key in (
            "articles", "chunks", "embedding_model", "embedding_backend", "built_at",
            "corpus_checksum")},
        "bm25_k": cfg.retrieval.k,
        "questions": rows,
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(rows)} questions to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
