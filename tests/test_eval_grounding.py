"""``eval grounding``: the independent support scorer, the metrics, question loading, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import build_parser
from eval.grounding import QuestionFileError, load_questions, rouge_l, summarize
from eval.support_scorer import score_answer, sentences, supported

SOURCES = [
    "Statin use was associated with lower dementia risk (OR 0.78) in 1,200 older adults.",
    "Short sleep predicted poorer grades in mathematics among 310 adolescents.",
]


def test_scorer_needs_a_citation_the_words_and_the_numbers() -> None:
    assert supported("Statin use was associated with lower dementia risk [1].", SOURCES)
    assert not supported("Statin use was associated with lower dementia risk.", SOURCES)
    assert not supported("Statin use was associated with lower dementia risk [2].", SOURCES)
    assert not supported("Statin use lowered dementia risk (OR 0.55) [1].", SOURCES)
    assert supported("Statin use lowered dementia risk (OR 0.780) [1].", SOURCES)
    assert not supported(
        "A study at the University of California, Davis, of surgical residents [1].", SOURCES
    )
    assert not supported("Statin use was associated with lower dementia risk [3].", SOURCES)


def test_scorer_splits_and_leaves_out_bare_verdicts() -> None:
    answer = "Yes [1]. Statin use was associated with lower dementia risk [1]. Invented claim here."
    assert sentences(answer) == [
        "Statin use was associated with lower dementia risk [1].",
        "Invented claim here.",
    ]
    s = score_answer(answer, SOURCES)
    assert (s.sentences, s.supported, s.cites, s.rate) == (2, 1, True, 0.5)
    assert score_answer("Nothing cited here at all.", SOURCES).cites is False


def test_verdict_lines_that_only_count_stances_are_no_claims_but_anything_more_is() -> None:
    lines = ["No (3 of 3 studies) [1–3].", "Yes (1 study) [1].",
             "Mixed evidence (1 yes [3], 2 no [1, 2]).",
             "No clear answer (2 studies, not plainly yes or no) [1, 2]."]  # fmt: skip
    finding = "Statin use was associated with lower dementia risk [1]."
    for line in lines:
        assert sentences(f"{line} {finding}") == [finding], line
    # a verdict line with words of its own is a claim, checked like any other
    padded = "No (3 of 3 studies) say statins cure dementia [1]."
    assert sentences(padded) == [padded]
    assert score_answer(padded, SOURCES).supported == 0


def test_summarize_means_over_answers() -> None:
    rows = [
        {"refused": False, "abstained": False, "rate": 1.0, "cites": True, "rougeL": 0.4},
        {"refused": False, "abstained": False, "rate": 0.5, "cites": True, "rougeL": 0.2},
        {"refused": False, "abstained": True, "rate": 0.0, "cites": True, "rougeL": None},
        {"refused": True, "abstained": False, "rate": None, "cites": False, "rougeL": None},
    ]
    out = summarize(rows, "pipeline", "m")
    assert out["supported_sentence_rate"] == 0.75  # abstentions and refusals are not rated
    assert out["answers_citing"] == 1.0 and out["abstain_rate"] == pytest.approx(0.3333, 1e-3)
    assert out["rougeL_f1"] == pytest.approx(0.3) and out["n"] == 4 and out["refused"] == 1
    assert set(out) >= {"supported_sentence_rate", "answers_citing", "abstain_rate", "style"}


def test_rouge_ignores_citation_markers() -> None:
    assert rouge_l("statins lower risk", "Statins lower risk [1].") == pytest.approx(1.0)


def test_load_questions(tmp_path: Path) -> None:
    f = tmp_path / "q.jsonl"
    rows = [{"question": "A?", "split": "dev"}, {"question": "B?"}, {"x": 1}]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    assert [r["question"] for r in load_questions(f, "test")] == ["B?"]
    assert [r["question"] for r in load_questions(f, "all")] == ["A?", "B?"]
    with pytest.raises(QuestionFileError, match="not found"):
        load_questions(tmp_path / "none.jsonl", "test")


def test_cli_registers_eval_grounding() -> None:
    args = build_parser().parse_args(
        [
            "eval",
            "grounding",
            "--questions",
            "q.jsonl",
            "--split",
            "dev",
            "--limit",
            "5",
            "--style",
            "extractive",
            "--json",
        ]  # fmt: skip
    )
    assert args._module == "eval.grounding" and args.style == "extractive" and args.limit == 5
