"""Build the configured retriever from the index on disk."""

from __future__ import annotations

from typing import Literal

from retrievers.hybrid import HybridRetriever
from retrievers.service import SearchBackend
from settings.config import Config
from settings.errors import UserFacingError

BackendName = Literal["faiss", "milvus"]  # retrieval.backend
BACKENDS: tuple[BackendName, ...] = ("faiss", "milvus")


def load_backend(cfg: Config) -> SearchBackend:
    if cfg.retrieval.backend == "milvus":
        from retrievers.milvus_backend import MilvusBackend  # optional engine

        return MilvusBackend(cfg)
    from retrievers.live import LiveIndex

    # follows the published build: a lexical-only one switches to hybrid when the dense index
    # is published (retrievers.live)
    return LiveIndex(cfg)


def load_retriever(cfg: Config, backend: SearchBackend | None = None) -> HybridRetriever:
    """The hybrid retriever the chains use (raises IndexMissingError with a how-to)."""
    return HybridRetriever.from_backend(backend or load_backend(cfg), cfg)


def parse_backends(text: str | None, cfg: Config) -> list[BackendName]:
    """``--backend faiss,milvus`` -> ["faiss", "milvus"]; empty -> cfg.yaml's backend."""
    if not text:
        return [cfg.retrieval.backend]
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in BACKENDS]
    if unknown or not names:
        raise UserFacingError(
            f"unknown --backend {', '.join(unknown) or text!r}: give one or more of "
            f"{', '.join(BACKENDS)}, comma-separated (e.g. --backend faiss,milvus)"
        )
    return [b for n in dict.fromkeys(names) for b in BACKENDS if b == n]  # in the order given


def with_backend(cfg: Config, backend: BackendName) -> Config:
    """A copy of ``cfg`` that searches ``backend``."""
    out = cfg.model_copy(deep=True)
    out.retrieval.backend = backend
    return out
