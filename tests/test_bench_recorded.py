"""``bench recorded compare``: two recordings of the same answers are identical only when every
streamed token and every result field is."""

from __future__ import annotations

import copy

from bench.recorded import CASES, compare


def recording() -> dict:
    result = {"answer": "No (1 study) [1].", "verdict": "no", "sources": [{"pmid": "1", "n": 1}]}
    return {"answers": [
        {"id": "a", "style": "extractive", "tokens": ["No (1 study) [1]."], "result": result},
        {"id": "b", "style": "generative", "error": "the question is empty", "tokens": []},
    ]}  # fmt: skip


def test_identical_recordings_compare_equal() -> None:
    assert compare(recording(), recording()) == []


def test_a_token_split_differently_is_a_difference() -> None:
    after = recording()
    after["answers"][0]["tokens"] = ["No (1 study)", " [1]."]  # same text, other pieces
    (line,) = compare(recording(), after)
    assert line.startswith("extractive a: streamed tokens differ")


def test_a_result_field_or_a_missing_answer_is_named() -> None:
    after = copy.deepcopy(recording())
    after["answers"][0]["result"]["sources"][0]["pmid"] = "2"
    (line,) = compare(recording(), after)
    assert line == "extractive a: .result.sources[0].pmid: '1' != '2'"
    fewer = {"answers": recording()["answers"][:1]}
    assert compare(recording(), fewer) == ["generative b: only in before"]


def test_the_cases_cover_every_kind_of_question() -> None:
    modes = {c.mode for c in CASES}
    assert modes == {"plain", "conversational", "multi-query"}
    assert any(c.history for c in CASES) and len({c.id for c in CASES}) == len(CASES)
