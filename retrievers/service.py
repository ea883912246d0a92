"""The typed seams between the search engine and everything above it.

Two protocols, one per level:

- :class:`SearchBackend`: one search engine. FAISS + BM25 on local files
  (:class:`retrievers.backend.FaissBM25Backend`), the local index that follows the published build
  (:class:`retrievers.live.LiveIndex`) and Milvus (:class:`retrievers.milvus_backend.MilvusBackend`)
  implement it; the retrievers in :mod:`retrievers.hybrid` search through it.
- :class:`SearchService`: what the chains, grounding, the evaluation and the chat use: search a
  question (sync and async), the whole abstract of a PMID, the query embedder, the corpus' word
  counts, whether search is hybrid now. :class:`retrievers.hybrid.HybridRetriever` implements it.

Nothing above ``retrievers/`` looks for a component by name (``getattr``): what a backend cannot
do it says in its own type (``bm25_relevance`` None, ``corpus`` None, ``embedder`` None).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, ConfigDict, Field

from retrievers.filters import Filters

if TYPE_CHECKING:
    from indexing.embeddings import Embedder


class CorpusWords(Protocol):
    """What the index can say about words across the whole corpus (the BM25 vocabulary); the
    same shape as :class:`grounding.concepts.CorpusTerms`, which reads it."""

    @property
    def size(self) -> int:
        """Indexed chunks."""
        ...

    def chunks_with_stems(self, stems: Sequence[str]) -> int:
        """How many indexed chunks contain a word of every one of ``stems``."""
        ...


class SearchBackend(Protocol):
    """One search engine: BM25 and dense searches over chunks, with metadata filters."""

    @property
    def size(self) -> int:
        """Number of chunks."""
        ...

    @property
    def dense_ready(self) -> bool:
        """Whether the dense index can be searched (False on a lexical-only build)."""
        ...

    @property
    def embedder(self) -> Embedder | None:
        """The query embedder (None while there is no dense index)."""
        ...

    @property
    def corpus(self) -> CorpusWords | None:
        """The corpus-wide word counts, when the engine keeps them (FAISS + BM25 does)."""
        ...

    def bm25_search(self, query: str, k: int, filters: Filters) -> list[Document]:
        """Chunks by BM25 score (metadata ``score``), best first."""
        ...

    def dense_search(
        self, query: str, k: int, threshold: float, filters: Filters
    ) -> list[Document]:
        """Chunks with cosine similarity >= threshold (metadata ``score``), best first."""
        ...

    def bm25_relevance(self, query: str, filters: Filters) -> float | None:
        """BM25's best match over the query's highest possible score, in [0, 1]; None for an
        engine that cannot measure it (Milvus)."""
        ...

    def article_chunks(self, pmid: str) -> list[Document]:
        """Every chunk of one article, in chunk order (the yes/no verdict reads the last one,
        where an abstract's conclusion is)."""
        ...

    def snapshot(self) -> SearchBackend:
        """The engine to search now, for all parts of one retrieval (a live index's build of the
        moment, loading a newly published one first; any other engine: itself)."""
        ...

    @property
    def loaded(self) -> SearchBackend:
        """The engine loaded now, without looking for a newer build."""
        ...


class Retrieval(BaseModel):
    """What one retrieval produced: documents best first, the active filters, the question
    without its filters (what grounding reads) and the text the engines searched (the same, or
    with drug names' generic names added: :func:`indexing.drug_names.with_generic_names`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    documents: list[Document]
    filters: Filters = Field(default_factory=Filters)
    query: str = ""
    searched: str = ""

    @property
    def empty(self) -> bool:
        return not self.documents


class SearchService(Protocol):
    """Search as the layers above ``retrievers/`` see it."""

    k: int  # hits taken from each retriever before fusion (retrieval.k)
    topk: int  # articles passed on after fusion (retrieval.topk_rrf)
    c: float  # the RRF constant (retrieval.rrf_c); also fuses several searches

    def retrieve(
        self,
        question: str,
        *,
        k: int | None = None,
        filters: Filters | None = None,
        config: RunnableConfig | None = None,
        wording: str | None = None,
    ) -> Retrieval:
        """The question's articles, best first (filters parsed from it unless given).
        ``wording``: the user's own words, when ``question`` is a text built from them (a
        follow-up's context form); how the retrievers are weighted may read it."""
        ...

    async def aretrieve(
        self,
        question: str,
        *,
        k: int | None = None,
        filters: Filters | None = None,
        config: RunnableConfig | None = None,
        wording: str | None = None,
    ) -> Retrieval:
        """:meth:`retrieve`, async."""
        ...

    def article_chunks(self, pmid: str) -> list[Document]:
        """Every chunk of one article, in chunk order (the whole abstract)."""
        ...

    @property
    def embedder(self) -> Embedder | None:
        """The search engine's query embedder (None while there is no dense index)."""
        ...

    @property
    def corpus(self) -> CorpusWords | None:
        """The corpus-wide word counts, when the engine keeps them."""
        ...

    @property
    def hybrid(self) -> bool:
        """Whether the build loaded now has a dense index (False while it is being built)."""
        ...

    def snapshot(self) -> SearchBackend:
        """The engine of the moment (a newly published build is loaded first)."""
        ...
