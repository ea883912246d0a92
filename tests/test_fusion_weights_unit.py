"""The fusion weights follow BM25's confidence (retrievers.hybrid.fusion_weights): a question whose
best BM25 match is weak (worded unlike the abstracts) is ordered by the dense retriever first."""

from __future__ import annotations

import asyncio

import pytest

from app.config import load_config
from retrievers.hybrid import HybridRetriever, fusion_weights
from tests.test_retrieval_unit import FakeBackend, doc

STRONG, WEAK = [0.75, 0.25], [0.25, 0.75]


@pytest.mark.parametrize(
    ("relevance", "expected"),
    [(0.9, STRONG), (0.343, STRONG), (0.342, WEAK), (0.0, WEAK), (None, STRONG)],
)
def test_weights_swap_below_the_lexical_refusal_bar(relevance, expected) -> None:
    assert fusion_weights(relevance, STRONG, WEAK, 0.343) == expected


def test_no_weak_weights_means_always_the_configured_weights() -> None:
    assert fusion_weights(0.0, STRONG, None, 0.343) == STRONG


class MeasuringBackend(FakeBackend):
    """A fake backend that also reports BM25's relevance for the question."""

    def __init__(self, bm25, dense, relevance: float) -> None:
        super().__init__(bm25, dense)
        self.relevance = relevance

    def bm25_relevance(self, query, filters) -> float:
        return self.relevance


def retriever(relevance: float, **retrieval) -> HybridRetriever:
    # BM25 ranks A first (a literal match), dense ranks D first; neither finds the other's top.
    bm25 = [doc(p, score=s) for p, s in zip("ABC", (20.0, 19.0, 18.0), strict=True)]
    dense = [doc(p, score=s) for p, s in zip("DEF", (0.7, 0.69, 0.68), strict=True)]
    cfg = load_config(overrides={"retrieval": {"k": 3, "topk_rrf": 3, **retrieval}})
    return HybridRetriever.from_backend(MeasuringBackend(bm25, dense, relevance), cfg)


@pytest.mark.parametrize("fusion", ["rrf", "convex"])
def test_weak_bm25_lets_dense_lead_and_strong_bm25_keeps_the_lead(fusion: str) -> None:
    on = {"fusion": fusion, "weights_when_bm25_weak": [0.25, 0.75]}
    weak = retriever(0.2, **on).retrieve("q").documents
    strong = retriever(0.6, **on).retrieve("q").documents
    assert [d.metadata["pmid"] for d in weak] == ["D", "E", "F"]
    assert [d.metadata["pmid"] for d in strong] == ["A", "B", "C"]
    # the confidence stays in [0, 1] under either weighting
    assert all(0.0 <= d.metadata["confidence"] <= 1.0 for d in weak + strong)


def test_the_rule_is_on_by_default_and_null_turns_it_off() -> None:
    # cfg.yaml ships it on (docs/measurements-retrieval.md, "Meaning, not words")
    assert retriever(0.2).retrieve("q").documents[0].metadata["pmid"] == "D"
    off = retriever(0.2, weights_when_bm25_weak=None).retrieve("q").documents
    assert off[0].metadata["pmid"] == "A"


def test_async_path_applies_the_same_weights() -> None:
    r = retriever(0.2)
    assert [d.metadata for d in asyncio.run(r.aretrieve("q")).documents] == [
        d.metadata for d in r.retrieve("q").documents
    ]


class WordingBackend(MeasuringBackend):
    """BM25's relevance is high for the user's own words only ("own"), low for the long text
    built from them and the conversation."""

    def bm25_relevance(self, query, filters) -> float:
        return 0.6 if query == "own" else 0.1


def test_a_follow_ups_own_wording_decides_whether_bm25_is_weak() -> None:
    """A follow-up's context form glues the conversation's words, so its own BM25 relevance is
    low whatever the wording; the user's wording, when given, decides. Mutation caught:
    ``HybridRetriever._relevance`` reading only the searched text (D first both times)."""
    bm25 = [doc(p, score=s) for p, s in zip("ABC", (20.0, 19.0, 18.0), strict=True)]
    dense = [doc(p, score=s) for p, s in zip("DEF", (0.7, 0.69, 0.68), strict=True)]
    cfg = load_config(overrides={"retrieval": {"k": 3, "topk_rrf": 3}})
    r = HybridRetriever.from_backend(WordingBackend(bm25, dense, 0.0), cfg)
    assert r.retrieve("the long context text").documents[0].metadata["pmid"] == "D"
    glued = r.retrieve("the long context text", wording="own").documents
    assert glued[0].metadata["pmid"] == "A"
    later = asyncio.run(r.aretrieve("the long context text", wording="own")).documents
    assert [d.metadata for d in later] == [d.metadata for d in glued]
