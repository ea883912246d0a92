"""The SHIPPED ``retrieval.score_threshold`` (cfg.yaml) on real vectors of the FULL index.

Other tests lower the threshold to 0.25 on the small test index (best cosines grow with corpus
size). This one applies the product's own refusal (``HybridRetriever.fuse``, through
``retrievers.hybrid.refuses``) with cfg.yaml's threshold to each question's best dense cosine and
BM25 hit count measured on the full 16.7k-article index, stored in tests/data/threshold_scores.json
(112 real questions: all of llm_questions_dev.jsonl and every 25th of pubmedqa_pqal.jsonl; 40
off-topic ones written for it: sport, cooking, films, programming, geography, finance).

Regenerate the JSON after rebuilding the full index or changing the embedding model (it needs the
built index and ../shared/data/eval; this test needs neither):

    .venv/bin/python -m tests.threshold_scores --index-dir faiss_indices

What the data shows: every real question has a best cosine >= 0.41 and is answered; 34 of the
40 off-topic questions score under 0.35 and are refused, but 6 score 0.40-0.50 and are not (the
corpus has abstracts on sport, physical exercise and financial decisions). No threshold separates
the two sets: any cut that refuses those 6 also refuses real questions (0.41-0.49). BM25 finds
hits for every question (stopwords are kept), so the dense cosine alone decides.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.documents import Document

from retrievers.hybrid import HybridRetriever, refuses
from settings.config import Config, load_config
from tests.conftest import REPO
from tests.fake_retriever import FakeBackendBase

DATA = REPO / "tests" / "data" / "threshold_scores.json"
SHIPPED_CFG = REPO / "cfg.yaml"
# Off-topic questions the shipped threshold lets through, as measured (best cosine on the full
# index). A change here (after regenerating the data, or changing the threshold) must be looked at.
KNOWN_LEAKS = {
    "How do I improve my credit score quickly?",  # 0.50
    "How long is a marathon in kilometres?",  # 0.49
    "How many players are on the field for each team in a rugby union match?",  # 0.43
    "What are the rules of a tie-break in tennis?",  # 0.43
    "Which country has won the most Olympic gold medals in alpine skiing?",  # 0.42
    "What is the plot of the movie Inception?",  # 0.40
}


class NoSearch(FakeBackendBase):
    """A search backend that is never searched: ``fuse`` gets the measured hits directly."""

    manifest = None
    size = 0

    def bm25_search(self, query: str, k: int, filters: Any) -> list[Document]:
        raise AssertionError("not searched")

    def dense_search(self, query: str, k: int, threshold: float, filters: Any) -> list[Document]:
        raise AssertionError("not searched")

    def article_chunks(self, pmid: str) -> list[Document]:
        return []


def hit(kind: str, n: int, score: float) -> Document:
    return Document(page_content=f"{kind} hit {n}", id=f"{kind}-{n}",
                    metadata={"pmid": f"{kind}{n}", "chunk_index": 0, "score": score})  # fmt: skip


def measured_hits(row: dict) -> list[list[Document]]:
    """What BM25 and FAISS would hand to the fusion for this question: its BM25 hits, and its
    best dense hit (before the threshold: the refusal is what is tested)."""
    bm25 = [hit("bm25-", n, 10.0 - n) for n in range(row["bm25_hits"])]
    dense = [] if row["best_cosine"] is None else [hit("dense-", 0, row["best_cosine"])]
    return [bm25, dense]


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    assert data["index"]["articles"] > 10_000, "measured on the full index"
    return data["questions"]


@pytest.fixture(scope="module")
def shipped() -> Config:
    return load_config(SHIPPED_CFG)


def refused_by_product(retriever: HybridRetriever, row: dict) -> bool:
    return retriever.fuse(measured_hits(row)) == []


def test_the_data_covers_both_kinds(rows: list[dict]) -> None:
    on = [r for r in rows if r["on_topic"]]
    off = [r for r in rows if not r["on_topic"]]
    assert len(on) >= 100 and len(off) >= 40
    assert {r["source"] for r in on} == {"llm_questions_dev", "pubmedqa_pqal"}
    assert all(r["bm25_hits"] > 0 for r in off)  # BM25 alone would never refuse


def test_the_shipped_threshold_answers_real_questions_and_refuses_off_topic_ones(
    rows: list[dict], shipped: Config
) -> None:
    retriever = HybridRetriever.from_backend(NoSearch(), shipped)  # type: ignore[arg-type]
    assert retriever.score_threshold == shipped.retrieval.score_threshold
    refused_real = [r["question"] for r in rows if r["on_topic"]
                    and refused_by_product(retriever, r)]  # fmt: skip
    leaked = {r["question"] for r in rows if not r["on_topic"]
              and not refused_by_product(retriever, r)}  # fmt: skip
    assert refused_real == [], "real questions refused at the shipped threshold"
    assert leaked == KNOWN_LEAKS, "off-topic questions answered at the shipped threshold changed"
    off = sum(not r["on_topic"] for r in rows)
    assert (off - len(leaked)) / off == pytest.approx(34 / 40)  # the measured refusal rate


def test_no_threshold_separates_the_measured_sets(rows: list[dict]) -> None:
    """Why KNOWN_LEAKS exists: every cut that refuses all off-topic questions refuses real ones."""
    cosines = sorted({r["best_cosine"] for r in rows})
    for threshold in [c + d for c in cosines for d in (0.0, 1e-6)]:
        real_refused = any(refuses(r["best_cosine"], threshold) for r in rows if r["on_topic"])
        off_answered = any(not refuses(r["best_cosine"], threshold) for r in rows
                           if not r["on_topic"])  # fmt: skip
        assert real_refused or off_answered, f"{threshold} separates them: update the docstring"
