"""``python -m app eval verdicts``: is the answer as a whole right?

Runs the assistant as a user gets it (``Assistant.ask``) on every question of a file and scores
what the user reads first:

- lines with a gold ``answer`` (yes / no / maybe): ``coverage`` (share of questions given a
  yes/no verdict), ``precision`` (share of shown verdicts equal to gold), ``contradictions``
  (share of questions whose shown verdict is the opposite of a yes/no gold), ``abstained``
  (share told that no abstract addresses them, or that the abstracts do not answer);
- lines with ``gold_pmids`` (answerable questions, with or without an answer):
  ``abstained_answerable``, the share wrongly told that the abstracts do not answer;
- lines with neither (questions no indexed abstract answers, ``abstain_dev.jsonl``):
  ``abstained_unanswerable``, ``named`` (abstained AND named the missing concept),
  ``verdicts_shown``.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

from eval.grounding import load_questions
from eval.runner import answer_each, print_report
from settings.config import Config

YES_NO = ("yes", "no")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--questions", required=True, help="JSONL: question, optional answer")
    parser.add_argument("--split", default="test", help="test, dev or all, for files with a "
                        "split field (default test)")  # fmt: skip
    from chains.modes import mode_names

    parser.add_argument("--mode", default="plain", choices=mode_names())
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--out", default=None, metavar="FILE.jsonl",
                        help="write one line per answer")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the metrics as JSON")


def answer_row(question: dict[str, Any], result: Any) -> dict[str, Any]:
    """What one answer is scored on (``result``: an :class:`~chains.result.AnswerResult`)."""
    shown = result.verdict if result.verdict in YES_NO else None
    return {
        "qid": question.get("qid"),
        "question": question["question"],
        "gold": question.get("answer"),
        "verdict": shown,
        "verdict_reason": result.verdict_reason,
        "addresses_question": result.addresses_question,
        "missing_concepts": list(result.missing_concepts),
        "absent_concepts": list(result.absent_concepts),
        "abstained": bool(result.style == "abstain" or not result.addresses_question),
        "refused": bool(result.refused),
        "stances": [s.stance for s in result.sources],
        "pmids": [s.pmid for s in result.sources],
        "gold_pmids": list(question.get("gold_pmids") or []),
        "answer": result.answer,
        "seconds": result.timings.get("total_s"),
    }


def _rate(k: int, n: int) -> float | None:
    return round(k / n, 4) if n else None


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The metrics over :func:`answer_row` rows (see the module docstring)."""
    gold = [r for r in rows if r["gold"]]
    answerable = [r for r in rows if r["gold"] or r["gold_pmids"]]
    open_ = [r for r in rows if not (r["gold"] or r["gold_pmids"])]
    report: dict[str, Any] = {"n": len(rows)}
    if gold:
        shown = [r for r in gold if r["verdict"]]
        right = sum(r["verdict"] == r["gold"] for r in shown)
        opposite = sum(r["gold"] in YES_NO and r["verdict"] != r["gold"] for r in shown)
        report.update(
            n_gold=len(gold),
            coverage=_rate(len(shown), len(gold)),
            precision=_rate(right, len(shown)),
            contradictions=_rate(opposite, len(gold)),
            shown={v: sum(r["verdict"] == v for r in shown) for v in YES_NO},
        )
    if answerable:
        report.update(
            n_answerable=len(answerable),
            abstained_answerable=_rate(
                sum(r["abstained"] or r["refused"] for r in answerable), len(answerable)
            ),
        )
    if open_:
        abstained = [r for r in open_ if r["abstained"] or r["refused"]]
        named = [r for r in abstained if r["missing_concepts"]]
        report.update(
            n_unanswerable=len(open_),
            abstained_unanswerable=_rate(len(abstained), len(open_)),
            named=_rate(len(named), len(open_)),
            verdicts_shown=sum(bool(r["verdict"]) for r in open_),
        )
    report["reasons"] = dict(Counter(r["verdict_reason"] or "none" for r in rows))
    return report


def run(cfg: Config, args: argparse.Namespace) -> int:
    from chains.assistant import Assistant

    questions = load_questions(Path(args.questions), args.split, args.limit)
    assistant = Assistant.from_config(cfg)
    rows, seconds = answer_each(
        questions,
        lambda q: answer_row(q, assistant.ask(q["question"], mode=args.mode)),
        args.out,
        quiet=args.json,
    )
    report = summarize(rows)
    report["mode"] = args.mode
    report["seconds"] = seconds
    print_report(report, as_json=args.json, width=24)
    return 0
