"""The Milvus search backend: the same :class:`~retrievers.service.SearchBackend` as FAISS + BM25.

``bm25_search`` runs Milvus' native BM25 (the sparse field made by the collection's BM25 function,
queried with the raw text); ``dense_search`` a COSINE search over the normalised MiniLM vectors,
keeping hits with cosine >= threshold. Filters become Milvus filter expressions
(:mod:`retrievers.milvus_filters`). The :class:`~retrievers.hybrid.HybridRetriever` fuses the two
lists itself, exactly as for FAISS, so the chains receive the same ranks, fused score and
confidence; :meth:`MilvusBackend.hybrid_search` (Milvus' own RRF ranker) is there for comparison.

Returned Documents are those of the FAISS backend: ``id`` = chunk id, ``page_content`` = chunk
text, ``metadata`` = the chunk metadata stored at build time plus ``score``.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.documents import Document

from indexing.auto_backend import query_backend
from indexing.embeddings import Embedder, build_embedder
from indexing.milvus_fields import string_literal
from indexing.milvus_store import (
    MilvusManifest,
    MilvusUnavailableError,
    chunk_text,
    connect,
    missing_error,
    read_manifest,
    release,
)
from indexing.store import IndexMismatchError, check_compatible
from retrievers.filters import Filters
from retrievers.milvus_filters import filter_expression
from retrievers.service import CorpusWords
from settings.config import Config

OUTPUT_FIELDS = ["search_text", "metadata"]
MAX_LIMIT = 16_384  # Milvus' topk limit
_WORD = re.compile(r"\w")


class MilvusBackend:
    """One Milvus collection built by ``index build`` with ``retrieval.backend: milvus``."""

    def __init__(self, cfg: Config, embedder: Embedder | None = None) -> None:
        self.cfg = cfg
        self.collection = cfg.retrieval.milvus.collection
        self.client = connect(cfg)
        manifest = read_manifest(self.client, cfg)
        if manifest is None:
            raise missing_error(cfg)
        if manifest.state != "complete":
            raise missing_error(
                cfg, "its build did not finish (run the same command again to resume it)"
            )
        check_compatible(manifest, cfg)
        backend = query_backend(cfg, manifest.embedding_backend)  # auto: the collection's own
        if manifest.embedding_backend != backend:
            raise IndexMismatchError(
                f"index.embedding_backend is {cfg.index.embedding_backend!r} in cfg.yaml but the "
                f"Milvus collection was embedded with {manifest.embedding_backend!r}: rebuild it "
                "with `.venv/bin/python -m app index build`"
            )
        self.manifest: MilvusManifest = manifest
        self.embedder = embedder or build_embedder(cfg, backend=backend, queries=True)
        self.search_params = dict(cfg.retrieval.milvus.dense_search_params)
        self.client.load_collection(self.collection)
        self._size = manifest.chunks

    @property
    def size(self) -> int:
        return self._size

    # -- what a Milvus collection is, as a SearchBackend ------------------------------------------
    @property
    def dense_ready(self) -> bool:
        return True  # a collection is built with its dense vectors

    @property
    def corpus(self) -> CorpusWords | None:
        return None  # no corpus-wide word counts kept here

    def bm25_relevance(self, query: str, filters: Filters) -> float | None:
        return None  # Milvus does not report the highest possible BM25 score

    def snapshot(self) -> MilvusBackend:
        return self  # one collection, searched as it is

    @property
    def loaded(self) -> MilvusBackend:
        return self

    def close(self) -> None:
        """Close the client; for milvus-lite also stop this process' server for the database (so
        another process may open it), which ends every other client on it in this process."""
        self.client.close()
        release(self.cfg)

    # -- searches --------------------------------------------------------------------------------
    def bm25_search(self, query: str, k: int, filters: Filters) -> list[Document]:
        if not _WORD.search(query):
            return []  # no term to match (the analyzer keeps \w runs only)
        hits = self._search(query, "sparse", k, filters, {"metric_type": "BM25"})
        # Milvus reports BM25 as a positive score; milvus-lite as its negation (a distance).
        return [_document(h, abs(float(h["distance"]))) for h in hits]

    def dense_search(
        self, query: str, k: int, threshold: float, filters: Filters
    ) -> list[Document]:
        vector = self.embedder.embed_query(query)
        # Over-fetch like the FAISS backend: several chunks may belong to one article.
        params = {"metric_type": "COSINE", "params": self.search_params}
        hits = self._search(vector, "dense", 4 * k, filters, params)
        return [_document(h, float(h["distance"])) for h in hits if h["distance"] >= threshold]

    def hybrid_search(self, query: str, k: int, filters: Filters, c: float = 60) -> list[Document]:
        """Milvus-side fusion (RRFRanker over BM25 and dense chunk hits); metadata ``score`` is
        Milvus' RRF score. Per chunk, not per article, and without the dense threshold."""
        from pymilvus import AnnSearchRequest, RRFRanker

        expr = filter_expression(filters)
        requests = [
            AnnSearchRequest(
                data=[query], anns_field="sparse", param={"metric_type": "BM25"}, limit=k,
                expr=expr or None,
            ),
            AnnSearchRequest(
                data=[self.embedder.embed_query(query)], anns_field="dense",
                param={"metric_type": "COSINE", "params": self.search_params}, limit=k,
                expr=expr or None,
            ),
        ]
        result = self.client.hybrid_search(
            self.collection, requests, ranker=RRFRanker(int(c)), limit=k,
            output_fields=OUTPUT_FIELDS,
        )
        hits = [h for h in result[0] if filters.matches(_metadata(h))]
        return [_document(h, float(h["distance"])) for h in hits]

    def article_chunks(self, pmid: str) -> list[Document]:
        """Every chunk of one article, in chunk order (a scalar query on the indexed pmid)."""
        try:
            rows = self.client.query(
                self.collection,
                filter=f"pmid == {string_literal(str(pmid))}",
                output_fields=["id", "chunk_index", *OUTPUT_FIELDS],
            )
        except Exception as err:  # pymilvus' MilvusException and gRPC errors
            raise MilvusUnavailableError(
                f"Milvus query on {self.collection} failed: {err}"
            ) from err
        rows = sorted(rows, key=lambda row: int(row["chunk_index"]))
        return [
            Document(
                page_content=chunk_text(row["search_text"], row["metadata"]),
                metadata=dict(row["metadata"]),
                id=str(row["id"]),
            )
            for row in rows
        ]

    def _search(
        self, data: str | list[float], field: str, limit: int, filters: Filters,
        params: dict[str, Any],
    ) -> list[dict[str, Any]]:
        expr = filter_expression(filters)
        try:
            result = self.client.search(
                self.collection,
                data=[data],
                anns_field=field,
                limit=min(limit, MAX_LIMIT),
                filter=expr,
                output_fields=OUTPUT_FIELDS,
                search_params=params,
            )
        except Exception as err:  # pymilvus' MilvusException and gRPC errors
            raise MilvusUnavailableError(
                f"Milvus search on {self.collection} failed: {err}"
            ) from err
        # The expression mirrors Filters.matches; re-checking keeps corner cases identical.
        return [h for h in result[0] if filters.is_empty() or filters.matches(_metadata(h))]


def _metadata(hit: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = hit["entity"]["metadata"]
    return metadata


def _document(hit: dict[str, Any], score: float) -> Document:
    meta = _metadata(hit)
    return Document(
        page_content=chunk_text(hit["entity"]["search_text"], meta),
        metadata={**meta, "score": score},
        id=str(hit["id"]),
    )
