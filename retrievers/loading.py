"""Build the configured retriever from the index on disk."""

from __future__ import annotations

from retrievers.hybrid import HybridRetriever


def load_backend(cfg):  # noqa: ANN001, ANN201 - Config -> SearchBackend
    if cfg.retrieval.backend == "milvus":
        from retrievers.milvus_backend import MilvusBackend  # optional engine

        return MilvusBackend(cfg)
    from retrievers.backend import FaissBM25Backend

    return FaissBM25Backend(cfg)


def load_retriever(cfg, backend=None) -> HybridRetriever:  # noqa: ANN001
    """The hybrid retriever the chains use (raises IndexMissingError with a how-to)."""
    return HybridRetriever.from_backend(backend or load_backend(cfg), cfg)
