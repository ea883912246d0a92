"""In-memory stand-ins for the search seams, for unit tests without an index.

``FakeRetriever`` follows :class:`retrievers.service.SearchService` (``retrieve``/``aretrieve``
returning an object with ``documents``, ``filters``, ``query``, ``empty``) with plain word-overlap
scoring; ``FakeBackendBase`` gives a test's fake :class:`retrievers.service.SearchBackend` the
protocol's members it does not need (dense ready, no embedder, no corpus counts, relevance not
measured, no whole abstracts, itself as its snapshot).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from langchain_core.documents import Document

_W = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "of",
        "in",
        "on",
        "for",
        "and",
        "or",
        "to",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "with",
        "by",
        "what",
        "how",
    ]
)


@dataclass
class FakeFilters:
    values: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return dict(self.values)


@dataclass
class FakeRetrieval:
    documents: list[Document]
    filters: FakeFilters
    query: str

    @property
    def empty(self) -> bool:
        return not self.documents


def make_doc(pmid: str, title: str, text: str, *, year: int = 2020, **extra: Any) -> Document:
    md = {
        "pmid": pmid,
        "title": title,
        "authors": extra.pop("authors", ["Doe J", "Roe R"]),
        "journal": extra.pop("journal", "J Test"),
        "year": year,
        "month": None,
        "day": None,
        "doi": None,
        "url": f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/",
        "chunk_index": 0,
        "rrf_score": 0.0,
        "ranks": {"bm25": None, "dense": None},
        "scores": {},
        "confidence": 0.5,
        **extra,
    }
    return Document(page_content=text, metadata=md)


class FakeBackendBase:
    """The :class:`retrievers.service.SearchBackend` members a test's fake backend leaves out."""

    manifest = None
    size = 0
    dense_ready = True
    embedder = None
    corpus = None

    def bm25_search(self, query: str, k: int, filters: Any) -> list[Document]:
        return []

    def dense_search(self, query: str, k: int, threshold: float, filters: Any) -> list[Document]:
        return []

    def bm25_relevance(self, query: str, filters: Any) -> float | None:
        return None

    def article_chunks(self, pmid: str) -> list[Document]:
        return []

    def snapshot(self) -> FakeBackendBase:
        return self

    @property
    def loaded(self) -> FakeBackendBase:
        return self


class FakeRetriever:
    """Scores documents by shared content words; records every query it was asked."""

    topk = 3  # what the follow-up fusion keeps by default
    c = 60.0  # the RRF constant of the follow-up fusion
    embedder = None  # grounding builds its own encoder (tests pass a FakeEncoder)
    corpus = None  # no corpus-wide word counts
    hybrid = True

    def __init__(self, documents: list[Document], *, k: int = 3, min_overlap: int = 1) -> None:
        self.documents = documents
        self.k = k
        self.min_overlap = min_overlap
        self.calls: list[tuple[str, Any]] = []
        self.wordings: list[str | None] = []  # the user's own wording given with each query

    def article_chunks(self, pmid: str) -> list[Document]:
        return []  # no whole abstracts: grounding reads the retrieved chunk

    def snapshot(self) -> FakeBackendBase:
        return FakeBackendBase()

    def retrieve(
        self, question: str, *, k: int | None = None, filters: Any = None, config: Any = None,
        wording: str | None = None,
    ) -> FakeRetrieval:
        self.calls.append((question, filters))
        self.wordings.append(wording)
        q = {w for w in _W.findall(question.lower()) if w not in _STOP}
        scored = []
        for rank, d in enumerate(self.documents):
            words = set(_W.findall((d.metadata["title"] + " " + d.page_content).lower()))
            overlap = len(q & words)
            if overlap >= self.min_overlap:
                scored.append((-overlap, rank, d))
        scored.sort(key=lambda x: (x[0], x[1]))
        docs = []
        for i, (_, _, d) in enumerate(scored[: k or self.k]):
            md = {
                **d.metadata,
                "rrf_score": 1 / (60 + i + 1),
                "ranks": {"bm25": i + 1, "dense": None},
            }
            docs.append(Document(page_content=d.page_content, metadata=md))
        f = filters if isinstance(filters, FakeFilters) else FakeFilters()
        return FakeRetrieval(docs, f, question)

    async def aretrieve(
        self, question: str, *, k: int | None = None, filters: Any = None, config: Any = None,
        wording: str | None = None,
    ) -> FakeRetrieval:
        return self.retrieve(question, k=k, filters=filters, wording=wording)


class FakeEncoder:
    """Bag-of-words vectors (hashed words, L2-normalised) for grounding in unit tests: sentences
    that share words are close, as with MiniLM, at no model load."""

    dim = 4096  # wide enough that distinct words rarely collide

    def encode(self, texts: list[str]):  # noqa: ANN201 - numpy array
        import zlib

        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for w in _W.findall(text.lower()):
                if w not in _STOP:
                    out[i, zlib.crc32(w.encode()) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)
