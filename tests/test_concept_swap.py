"""The concept-swap negatives of the auto-labelled set (eval.concept_swap) and how they are
scored (eval.autolabel.summarize)."""

from __future__ import annotations

from typing import Any

from eval.autolabel import judge_item, summarize
from eval.concept_swap import exposure_text, swap_items
from tests.test_grounding_unit import HashEncoder


def _item(pmid: str, question: str, context: str) -> dict[str, Any]:
    return {"qid": f"al{pmid}", "question": question, "answer": "yes", "gold_pmids": [pmid],
            "title": "", "shape": "verb", "context": context}  # fmt: skip


ITEMS = [
    _item("1", "Is maternal smoking associated with offspring intelligence?",
          "Maternal smoking and breastfeeding were recorded. Offspring intelligence was lower "
          "after prenatal smoking."),
    # the closest question: its exposure ("breastfeeding duration") is written in item 1's
    # abstract, so item 1's negative must skip it
    _item("2", "Is breastfeeding duration associated with offspring intelligence?",
          "Breastfeeding duration predicted offspring intelligence at age 8."),
    _item("3", "Is methylmercury exposure associated with offspring intelligence?",
          "Methylmercury levels were associated with offspring intelligence deficits."),
]  # fmt: skip


def test_the_exposure_is_the_concept_before_the_relation_word() -> None:
    found = exposure_text("Is maternal smoking associated with offspring intelligence?")
    assert found is not None and found[0] == "maternal smoking"
    assert exposure_text("Does it help?") is None


def test_a_negative_asks_of_an_abstract_an_exposure_it_never_writes() -> None:
    # mutation caught: the "abstract never writes it" check dropped -> item 1's negative asks
    # about breastfeeding duration, which its abstract writes (an answerable question)
    negatives = {r["gold_pmids"][0]: r for r in swap_items(ITEMS, HashEncoder())}
    first = negatives["1"]
    assert first["question"] == "Is methylmercury exposure associated with offspring intelligence?"
    assert first["answer"] is None
    assert first["swapped"] == ["maternal smoking", "methylmercury exposure"]
    assert first["context"] == ITEMS[0]["context"]


def test_unanswerable_items_are_counted_apart_from_the_labelled_ones() -> None:
    # mutation caught: summarize without the split -> coverage 2/3 over every row, and no
    # "unanswerable" report
    negative = next(iter(swap_items(ITEMS, HashEncoder())))
    rows: list[dict[str, Any]] = [
        {"gold": "yes", "verdict": "yes", "reason": "agree"},
        {"gold": "no", "verdict": None, "reason": "unclear"},
        {"gold": None, "verdict": "yes", "reason": "agree"},
        judge_item(negative),
    ]
    report = summarize(rows)
    assert report["n"] == 2 and report["coverage"] == 0.5 and report["precision"] == 1.0
    assert report["unanswerable"]["n"] == 2
    assert report["unanswerable"]["verdicts_shown"] == 1
    # the swapped-in "methylmercury exposure" is not in item 1's abstract: not addressed
    assert report["unanswerable"]["addressed"] == 0.5
