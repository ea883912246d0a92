"""The SHIPPED ``retrieval.bm25.refusal_threshold`` on real BM25 scores of the FULL index.

While the dense index is still being built (the chat's first minutes after ``make run``), off-topic
questions are refused from BM25 alone: the best chunk's score over the highest score the
question's words could reach (``indexing.bm25.BM25Index.relevance``), under the threshold
(``retrievers.hybrid.refuses_lexical``, applied here through the product's own
``HybridRetriever.fuse_lexical``). tests/data/bm25_refusal_scores.json holds each question's
relevance measured on the full 16.7k-article index (BM25 only, as the chat has it then):

- ``calibration``: the cosine threshold's questions (112 real, 40 off-topic), on which the
  threshold was chosen by the rule the cosine threshold follows: answer every real question. The
  cut is the midpoint between the lowest real question's relevance and the highest off-topic
  relevance below it (the best balanced accuracy, 0.401, would refuse 4 of the 112 real ones);
- ``held_out``: 60 real questions and 30 off-topic ones the choice never saw.

Regenerate it after rebuilding the full index (needs that index and ../shared/data/eval; this
test needs neither):

    .venv/bin/python -m tests.bm25_refusal_scores --index-dir /work/main/faiss_indices
"""

from __future__ import annotations

import json

import pytest
from langchain_core.documents import Document

from retrievers.hybrid import HybridRetriever
from settings.config import Config, load_config
from tests.conftest import REPO
from tests.fake_retriever import FakeBackendBase

DATA = REPO / "tests" / "data" / "bm25_refusal_scores.json"
SHIPPED_CFG = REPO / "cfg.yaml"
# The measured outcome at the shipped threshold (docs/measurements-retrieval.md, "Refusal before
# the semantic index exists"): a change here (new data, another threshold, another rule) must
# be looked at.
EXPECTED = {
    "calibration": {"real_answered": 112, "real": 112, "off_refused": 35, "off": 40},
    "held_out": {"real_answered": 60, "real": 60, "off_refused": 27, "off": 30},
}


class NoSearch(FakeBackendBase):
    """A search backend that is never searched: ``fuse_lexical`` gets the measured relevance."""

    manifest = None
    size = 0
    dense_ready = False

    def bm25_search(self, *args: object) -> list[Document]:
        raise AssertionError("not searched")

    def dense_search(self, *args: object) -> list[Document]:
        raise AssertionError("not searched")

    def article_chunks(self, pmid: str) -> list[Document]:
        return []


HIT = Document(page_content="a BM25 hit", id="h-0",
               metadata={"pmid": "1", "chunk_index": 0, "score": 12.0})  # fmt: skip


@pytest.fixture(scope="module")
def data() -> dict:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    assert data["index"]["articles"] > 10_000, "measured on the full index"
    return data


@pytest.fixture(scope="module")
def shipped() -> Config:
    return load_config(SHIPPED_CFG)


def outcome(retriever: HybridRetriever, rows: list[dict]) -> dict[str, int]:
    answered = [bool(retriever.fuse_lexical([HIT], r["relevance"])) for r in rows]
    return {
        "real_answered": sum(a for a, r in zip(answered, rows, strict=True) if r["on_topic"]),
        "real": sum(r["on_topic"] for r in rows),
        "off_refused": sum(not a for a, r in zip(answered, rows, strict=True)
                           if not r["on_topic"]),  # fmt: skip
        "off": sum(not r["on_topic"] for r in rows),
    }


@pytest.mark.parametrize("part", ["calibration", "held_out"])
def test_the_shipped_lexical_threshold_gives_the_measured_accuracy(
    data: dict, shipped: Config, part: str
) -> None:
    retriever = HybridRetriever.from_backend(NoSearch(), shipped)  # type: ignore[arg-type]
    assert retriever.lexical_threshold == shipped.retrieval.bm25.refusal_threshold
    assert outcome(retriever, data[part]) == EXPECTED[part]


def test_the_shipped_threshold_is_the_calibration_rule(data: dict, shipped: Config) -> None:
    """The highest cut that answers every real calibration question: midway between the lowest
    real relevance and the highest off-topic relevance under it."""
    rows = data["calibration"]
    lowest_real = min(r["relevance"] for r in rows if r["on_topic"])
    below = max(r["relevance"] for r in rows
                if not r["on_topic"] and r["relevance"] < lowest_real)  # fmt: skip
    threshold = shipped.retrieval.bm25.refusal_threshold
    assert threshold == round((lowest_real + below) / 2, 3)
    assert below < threshold <= lowest_real
