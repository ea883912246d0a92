"""The answer as a whole for real: the small real index (``small_index_cfg``: it holds every
verdict_dev gold article), real MiniLM, the shipped stance classifier, cfg.yaml's extractive
style (no model text). Each test names the question kind it stands for."""

from __future__ import annotations

import re
from typing import Any

import pytest

from app.config import Config
from chains.result import AnswerResult
from grounding.lead import finding_clause

UNINDEXED_DRUG = "Does dapagliflozin reduce cardiovascular death in heart failure?"
NULL_FINDING = "Does working memory training improve fluid intelligence?"


@pytest.fixture(scope="module")
def assistant(small_index_cfg: Config, small_retriever: Any) -> Any:
    from chains.assistant import Assistant

    return Assistant.from_config(small_index_cfg, retriever=small_retriever)


@pytest.fixture(scope="module")
def lexical_assistant(small_index_cfg: Config) -> Any:
    """The chat's first minutes after ``make run``: BM25 only, no dense index yet."""
    from chains.assistant import Assistant
    from retrievers.backend import FaissBM25Backend
    from retrievers.hybrid import HybridRetriever

    backend = FaissBM25Backend(small_index_cfg, load_dense=False)
    retriever = HybridRetriever.from_backend(backend, small_index_cfg)
    return Assistant.from_config(small_index_cfg, retriever=retriever)


def _no_verdict_for_the_unindexed_drug(r: AnswerResult) -> None:
    # retrieval finds something loosely related, or (BM25 alone) refuses the question outright:
    # either way the drug is named, and no verdict is given
    assert r.verdict is None and r.verdict_reason == "not_addressed"
    assert not r.addresses_question and r.absent_concepts == ["dapagliflozin"]
    assert "No indexed abstract mentions dapagliflozin." in r.answer, r.answer
    assert all(s.stance is None for s in r.sources)
    assert not r.answer.startswith(("Yes", "No ("))


def test_a_drug_no_indexed_abstract_mentions_gets_no_verdict(assistant: Any) -> None:
    for mode in ("plain", "multi-query"):
        if mode == "multi-query":
            pytest.importorskip("gpt4all")
        _no_verdict_for_the_unindexed_drug(assistant.ask(UNINDEXED_DRUG, mode=mode))


def test_the_same_rule_holds_while_only_the_keyword_index_exists(lexical_assistant: Any) -> None:
    _no_verdict_for_the_unindexed_drug(lexical_assistant.ask(UNINDEXED_DRUG, mode="plain"))
    r = lexical_assistant.ask(NULL_FINDING, mode="plain")
    assert r.verdict != "yes", r.answer


def test_sources_that_all_report_a_null_finding_answer_no(assistant: Any) -> None:
    r = assistant.ask(NULL_FINDING, mode="plain")
    said = [s.stance for s in r.sources if s.stance]
    assert said and set(said) <= {"no", "unclear"} and "no" in said, said
    assert r.verdict == "no" and r.verdict_reason == "agree", (r.answer, said)
    assert r.answer.startswith("No ("), r.answer
    deciding = [s for s in r.sources if s.n in r.verdict_sources]
    assert deciding and all(s.stance == "no" for s in deciding)
    # the lead states a deciding finding, the abstract's own words, cited to that abstract
    # ("No (2 of 3 studies) [1, 2]: <finding> [1]."); any other deciding sentence follows it
    m = re.match(r"No \(\d+ (?:of \d+ )?stud(?:y|ies)\)(?: \[[^\]]*\])?: (.+) \[(\d+)\]\.$",
                 r.lead)  # fmt: skip
    assert m, r.lead
    source = r.sources[int(m.group(2)) - 1]
    assert source.n in r.verdict_sources
    assert finding_clause(source.stance_sentence).rstrip(".") == m.group(1)
    assert m.group(1)[1:] in " ".join(source.abstract.split())
    assert r.stance_summary.endswith("no") and "yes" not in r.stance_summary


def test_a_follow_up_keeps_the_rules(assistant: Any) -> None:
    first = assistant.ask(NULL_FINDING, mode="plain")
    r = assistant.ask(
        "And does dapagliflozin help?",
        mode="conversational",
        history=[(NULL_FINDING, first.answer)],
    )
    assert r.verdict is None and not r.addresses_question and "dapagliflozin" in r.answer


def test_eval_verdicts_scores_the_real_pipeline(
    small_index_cfg: Config, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse
    import json

    from eval.verdicts import run

    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps({"question": NULL_FINDING, "answer": "no", "gold_pmids": ["24091548"]}) + "\n"
        + json.dumps({"question": UNINDEXED_DRUG}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    args = argparse.Namespace(questions=str(questions), split="test", mode="plain", limit=None,
                              out=str(tmp_path / "rows.jsonl"), json=True)  # fmt: skip
    assert run(small_index_cfg, args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["precision"] == 1.0 and report["coverage"] == 1.0
    assert report["contradictions"] == 0.0
    assert report["named"] == 1.0 and report["verdicts_shown"] == 0
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert rows[1]["absent_concepts"] == ["dapagliflozin"]
