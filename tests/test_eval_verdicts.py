"""``eval verdicts``' arithmetic, fast (the real command runs in ``test_judgement_real.py``)."""

from __future__ import annotations

from typing import Any

from eval.verdicts import summarize


def _row(gold: str | None, verdict: str | None, *, abstained: bool = False,
         gold_pmids: tuple[str, ...] = ("1",), missing: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"gold": gold, "verdict": verdict, "abstained": abstained, "refused": False,
            "gold_pmids": list(gold_pmids), "missing_concepts": list(missing),
            "verdict_reason": "agree" if verdict else "unclear"}  # fmt: skip


def test_verdict_metrics_count_shown_right_and_opposite_verdicts() -> None:
    rows = [_row("yes", "yes"), _row("no", "yes"), _row("maybe", "no"), _row("no", None),
            _row("yes", None, abstained=True)]  # fmt: skip
    report = summarize(rows)
    assert report["coverage"] == 0.6  # 3 of 5 shown
    assert report["precision"] == 0.3333  # 1 of 3 right ("maybe" shown as no is wrong)
    assert report["contradictions"] == 0.2  # only yes/no golds can be contradicted
    assert report["abstained_answerable"] == 0.2
    assert report["shown"] == {"yes": 2, "no": 1}


def test_unanswerable_questions_count_abstentions_that_name_what_is_missing() -> None:
    rows = [_row(None, None, abstained=True, gold_pmids=(), missing=("inclisiran",)),
            _row(None, None, abstained=True, gold_pmids=()),
            _row(None, "yes", gold_pmids=())]  # fmt: skip
    report = summarize(rows)
    assert report["abstained_unanswerable"] == 0.6667 and report["named"] == 0.3333
    assert report["verdicts_shown"] == 1 and "coverage" not in report
    # a file of answerable questions without gold answers (llm_questions_dev): abstention only
    answerable = summarize([_row(None, None, abstained=True), _row(None, None)])
    assert answerable["abstained_answerable"] == 0.5 and "n_unanswerable" not in answerable
