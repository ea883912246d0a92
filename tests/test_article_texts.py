"""The retriever hands on each result's whole abstract, and grounding reads it from the result:
nothing above the retriever calls back down into the search for article text (issue #34)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from langchain_core.documents import Document

from grounding.sources import SourcePool
from retrievers.articles import ARTICLE_TEXT, article_text, join_chunks, whole_abstract
from retrievers.hybrid import HybridRetriever
from settings.config import Config
from tests.fake_retriever import FakeBackendBase, FakeEncoder
from tests.helpers import parse_python

REPO = Path(__file__).resolve().parents[1]
FIRST = "Statins were given to 40 adults. Migraine days fell by half."
SECOND = "Migraine days fell by half. No serious harm was seen."


def _chunk(pmid: str, index: int, text: str, score: float) -> Document:
    return Document(page_content=text, metadata={"pmid": pmid, "chunk_index": index,
                                                 "title": f"Article {pmid}", "score": score})


class _Backend(FakeBackendBase):
    """Two chunks of one article and one of another; both halves find the second chunk first."""

    def __init__(self) -> None:
        self.docs = [_chunk("1", 0, FIRST, 0.5), _chunk("1", 1, SECOND, 0.9),
                     _chunk("2", 0, "Another topic entirely.", 0.6)]
        self.asked: list[str] = []

    def bm25_search(self, query: str, k: int, filters: Any) -> list[Document]:
        return sorted(self.docs, key=lambda d: -d.metadata["score"])

    def dense_search(self, query: str, k: int, threshold: float, filters: Any) -> list[Document]:
        return sorted(self.docs, key=lambda d: -d.metadata["score"])

    def article_chunks(self, pmid: str) -> list[Document]:
        self.asked.append(pmid)
        return [d for d in self.docs if d.metadata["pmid"] == pmid]


def test_each_result_carries_its_whole_abstract_from_the_search() -> None:
    backend = _Backend()
    retriever = HybridRetriever.from_backend(backend, Config())  # type: ignore[arg-type]
    found = retriever.retrieve("Do statins reduce migraine days?").documents
    by_pmid = {d.metadata["pmid"]: d for d in found}
    assert by_pmid["1"].page_content == SECOND  # the best chunk is still the passage
    whole = "Statins were given to 40 adults. Migraine days fell by half. No serious harm was seen."
    assert by_pmid["1"].metadata[ARTICLE_TEXT] == whole == article_text(by_pmid["1"])
    assert article_text(by_pmid["2"]) == "Another topic entirely."
    assert all(ARTICLE_TEXT not in d.metadata for d in backend.docs)  # the index is untouched


def test_grounding_reads_the_abstract_the_result_carries() -> None:
    doc = Document(page_content=SECOND, metadata={"pmid": "1", ARTICLE_TEXT: f"{FIRST} Third."})
    pool = SourcePool.from_documents("Do statins reduce migraine days?", [doc], FakeEncoder())
    assert pool.sources[0].abstract == f"{FIRST} Third."
    bare = Document(page_content=SECOND, metadata={"pmid": "1"})  # made elsewhere: its passage
    assert SourcePool.from_documents("q?", [bare], FakeEncoder()).sources[0].abstract == SECOND


def test_chunks_join_without_their_overlap_in_chunk_order() -> None:
    assert join_chunks([FIRST, SECOND]) == whole_abstract(
        [_chunk("1", 1, SECOND, 0), _chunk("1", 0, FIRST, 0)])
    assert join_chunks(["Alpha beta.", "Gamma delta."]) == "Alpha beta. Gamma delta."


def test_nothing_above_the_retriever_asks_the_search_for_article_text() -> None:
    calls = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for package in ("grounding", "chains")
        for path in sorted((REPO / package).rglob("*.py"))
        for node in ast.walk(parse_python(path))
        if isinstance(node, ast.Attribute) and node.attr == "article_chunks"
    ]
    assert not calls, "grounding/chains reach into the search for article text: " + str(calls)
