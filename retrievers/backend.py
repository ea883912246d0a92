"""The search engine behind the retrievers: build/load/search, with metadata filters.

The retrievers only see :class:`~retrievers.service.SearchBackend`; FAISS + BM25 on local files is
the default engine, and another (a server: :mod:`retrievers.milvus_backend`) implements the same
protocol.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import faiss
import numpy as np
from langchain_community.docstore.in_memory import InMemoryDocstore
from langchain_community.vectorstores import FAISS
from langchain_community.vectorstores.utils import DistanceStrategy
from langchain_core.documents import Document

from indexing.aliases import AliasTable, name_stems
from indexing.auto_backend import query_backend
from indexing.bm25 import BM25Index
from indexing.build import read_chunks
from indexing.drug_names import drug_names
from indexing.embeddings import Embedder, build_embedder
from indexing.lay_terms import lay_name_stems
from indexing.stems import stem
from indexing.store import DENSE_FILE, check_counts, open_current
from ingest.metadata import ChunkMeta
from retrievers.dense_filter import FilterIndex, filtered_search
from retrievers.filters import Filters
from retrievers.service import CorpusWords
from settings.config import Config
from settings.threads import threads_set


def identity_relevance(score: float) -> float:
    """Vectors are L2-normalised and the index is inner-product: the raw score IS the cosine.

    LangChain's default for MAX_INNER_PRODUCT maps s to 1 - s for positive s, which would turn a
    cosine of 0.8 into a "relevance" of 0.2 and make ``score_threshold`` mean the opposite.
    """
    return score


class FaissBM25Backend:
    """FAISS (exact inner product over normalised vectors) + sparse BM25, loaded from disk.

    A lexical-only build (manifest ``dense: pending``), or ``load_dense=False``, loads BM25
    alone: ``dense_ready`` is False, ``dense_search`` finds nothing and no query embedder is
    loaded (``embedder`` None)."""

    def __init__(
        self, cfg: Config, embedder: Embedder | None = None, *, load_dense: bool = True
    ) -> None:
        folder, self.manifest = open_current(cfg)
        self.folder = folder
        self.dense_ready = self.manifest.dense_ready and load_dense
        self.k1 = float(self.manifest.bm25_settings.get("k1", cfg.retrieval.bm25.k1))
        stored = read_chunks(folder)
        self.docs = [
            Document(page_content=text, metadata=meta, id=cid)
            for cid, text, meta in zip(stored.chunk_ids, stored.texts, stored.metadata, strict=True)
        ]
        self.bm25 = BM25Index.load(folder, phrase_weight=cfg.retrieval.bm25.phrase_weight)
        sizes = {"chunk table": len(self.docs), "BM25": self.bm25.size}
        if self.bm25.phrases is not None:
            sizes["BM25 phrase"] = self.bm25.phrases.size
        self.embedder: Embedder | None = embedder
        self.vectorstore: FAISS | None = None
        self.search_threads = cfg.index.query_threads
        if self.dense_ready:
            # auto: queries are embedded as the index's vectors were (the manifest's backend)
            backend = query_backend(cfg, self.manifest.embedding_backend)
            self.embedder = embedder or build_embedder(cfg, backend=backend, queries=True)
            index = faiss.read_index(str(folder / DENSE_FILE))
            self.vectorstore = FAISS(
                embedding_function=self.embedder,
                index=index,
                docstore=InMemoryDocstore(dict(zip(stored.chunk_ids, self.docs, strict=True))),
                index_to_docstore_id=dict(enumerate(stored.chunk_ids)),
                distance_strategy=DistanceStrategy.MAX_INNER_PRODUCT,
                relevance_score_fn=identity_relevance,
            )
            sizes["dense"] = index.ntotal
        check_counts(folder, self.manifest, **sizes)
        self.filter_index = FilterIndex(stored.metadata)  # filters as masks (dense_filter.py)
        self._rows_by_pmid: dict[str, list[int]] | None = None
        self._aliases: AliasTable | None = None

    @property
    def size(self) -> int:
        return len(self.docs)

    @property
    def corpus(self) -> CorpusWords:
        return self  # chunks_with_stems over the BM25 vocabulary

    def snapshot(self) -> FaissBM25Backend:
        return self  # one loaded build: it never changes

    @property
    def loaded(self) -> FaissBM25Backend:
        return self

    def article_chunks(self, pmid: str) -> list[Document]:
        if self._rows_by_pmid is None:
            rows: dict[str, list[int]] = {}
            for row, doc in enumerate(self.docs):
                rows.setdefault(ChunkMeta.pmid_of(doc.metadata), []).append(row)
            self._rows_by_pmid = rows
        chunks = [self.docs[r] for r in self._rows_by_pmid.get(str(pmid), [])]
        return sorted(chunks, key=lambda d: int(d.metadata.get("chunk_index", 0)))

    def alias_stems(self, name: str) -> list[frozenset[str]]:
        """The other names the corpus's abstracts define for ``name`` (indexing.aliases), and a
        drug's generic name for its brand name (indexing.drug_names), and the names the index
        uses for a lay word it rarely holds (indexing.lay_terms), each as its words' stems; the
        table is built from the chunks on first use (~1 s)."""
        if self._aliases is None:
            self._aliases = AliasTable.build((d.page_content for d in self.docs),
                                             drugs=drug_names())
        return self._aliases.stems_of(name) + lay_name_stems(name, self.chunks_with_name)

    def chunks_with_name(self, name: str) -> int:
        """How many chunks hold every word of ``name`` (in any inflection)."""
        return self.chunks_with_stems(sorted(name_stems(name)))

    def chunks_with_stems(self, stems: Sequence[str]) -> int:
        """How many chunks hold a word of every stem (grounding.concepts.CorpusTerms)."""
        rows: np.ndarray | None = None
        for s in stems:
            found = self.bm25.rows_with_stem(s, stem)
            rows = found if rows is None else np.intersect1d(rows, found, assume_unique=True)
            if not rows.size:
                return 0
        return 0 if rows is None else int(rows.size)

    def _mask(self, filters: Filters) -> np.ndarray | None:
        return self.filter_index.mask(filters)

    def bm25_search(self, query: str, k: int, filters: Filters) -> list[Document]:
        hits = self.bm25.search(query, k, self._mask(filters))
        return [_with_score(self.docs[row], score) for row, score in hits]

    def bm25_relevance(self, query: str, filters: Filters) -> float:
        """The best matching chunk's BM25 score over the query's highest possible score, in
        [0, 1] (:meth:`indexing.bm25.BM25Index.relevance`): refusal without a dense index."""
        mask = self._mask(filters)
        if mask is not None and not mask.any():
            return 0.0
        return self.bm25.relevance(query, self.k1, mask)

    def dense_search(
        self, query: str, k: int, threshold: float, filters: Filters
    ) -> list[Document]:
        mask = self._mask(filters)
        if self.vectorstore is None or (mask is not None and not mask.any()):
            return []
        # one question's search on 37k vectors: 3.9 ms on one thread, 4.8 ms on two, quiet;
        # 9 ms against 35 ms with two other processes busy
        with threads_set(self.search_threads, faiss.omp_get_max_threads,
                         faiss.omp_set_num_threads):
            return self._dense_search(query, k, threshold, mask)

    def _dense_search(
        self, query: str, k: int, threshold: float, mask: np.ndarray | None
    ) -> list[Document]:
        assert self.vectorstore is not None
        if mask is not None:  # searched inside FAISS, the mask as an ID selector
            if self.embedder is None:
                return []
            query_vector = np.asarray(self.embedder.embed_query(query), dtype=np.float32)
            hits = filtered_search(self.vectorstore.index, query_vector, mask, k, threshold,
                                   self.filter_index.chunk_article)
            return [_with_score(self.docs[row], score) for row, score in hits]
        # Over-fetch: several chunks may belong to one article.
        fetch_k = min(self.size, 4 * k)
        with warnings.catch_warnings():
            # LangChain warns when a cosine is negative or nothing passes the threshold; both are
            # expected here (cosine lies in [-1, 1]; an off-topic question has no hit).
            warnings.simplefilter("ignore", UserWarning)
            pairs = self.vectorstore.similarity_search_with_relevance_scores(
                query, k=fetch_k, fetch_k=fetch_k, score_threshold=threshold
            )
        return [_with_score(doc, score) for doc, score in pairs]


def _with_score(doc: Document, score: float) -> Document:
    return Document(
        page_content=doc.page_content, metadata={**doc.metadata, "score": float(score)}, id=doc.id
    )
