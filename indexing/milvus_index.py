"""``index build|update`` into Milvus: chunk, embed (or reuse FAISS vectors), upsert in batches.

The collection itself is the checkpoint. Every row carries its article's content hash and chunk
count, so a run first lists what is already there and skips every article whose rows are all
present with the current hash; an interrupted build (``state: building`` in the manifest, same
settings and corpus) therefore resumes where it stopped, losing at most one batch. ``update``
does the same on a finished collection: it upserts the chunks of new or changed articles by chunk
id, deletes chunks that an article no longer has, and deletes articles that left the corpus.

Vectors come from the published FAISS index when it was built with the same embedding model,
backend and chunking and holds the article with the same content hash (re-embedding 37k chunks
costs ~7 minutes on 2 cores); otherwise the chunks are embedded here, one batch at a time.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from indexing.auto_backend import resolve_for_build, wanted_backend, with_embedding_backend
from indexing.embeddings import Embedder, build_embedder
from indexing.milvus_rows import FaissVectors, chunk_row
from indexing.milvus_store import (
    MilvusManifest,
    connect,
    create_collection,
    describe_location,
    lite_path,
    missing_error,
    read_manifest,
    write_manifest,
)
from indexing.milvus_sync import Present, SyncReport, count_rows, scan_present, sync_collection
from indexing.store import METADATA_SCHEMA, file_lock
from ingest.models import Article
from settings.errors import IndexMissingError

if TYPE_CHECKING:
    from pymilvus import MilvusClient

    from settings.config import Config

__all__ = [  # the row and sync parts live in their own modules; importable from here too
    "FaissVectors", "Present", "SyncReport", "build_milvus_index", "chunk_row", "count_rows",
    "current_milvus_manifest", "milvus_index_state", "milvus_stats", "scan_present",
    "sync_collection",
]


# -- settings -----------------------------------------------------------------------------------
def settings_key(cfg: Config, dimension: int) -> dict[str, Any]:
    """Everything that changes what a row holds or how it is indexed (a change means rebuild)."""
    m = cfg.retrieval.milvus
    return {
        "embedding_model": cfg.index.embedding_model,
        "embedding_backend": cfg.index.embedding_backend,
        "dimension": dimension,
        "chunk_size": cfg.index.chunk_size,
        "chunk_overlap": cfg.index.chunk_overlap,
        "bm25": cfg.retrieval.bm25.model_dump(include={"k1", "b", "stopwords"}),
        "analyzer": m.analyzer,
        "dense_index": m.dense_index,
        "dense_index_params": dict(sorted(m.dense_index_params.items())),
    }


def manifest_settings(manifest: MilvusManifest) -> dict[str, Any]:
    """``settings_key`` as recorded in a manifest (to compare with the configured one)."""
    return {
        "embedding_model": manifest.embedding_model,
        "embedding_backend": manifest.embedding_backend,
        "dimension": manifest.dimension,
        "chunk_size": manifest.chunk_size,
        "chunk_overlap": manifest.chunk_overlap,
        "bm25": manifest.bm25_settings,
        "analyzer": manifest.analyzer,
        "dense_index": manifest.dense_index.split(":")[0],
        "dense_index_params": _index_params(manifest.dense_index),
    }


def _index_params(dense_index: str) -> dict[str, int]:
    _, _, raw = dense_index.partition(":")
    pairs = [p.split("=") for p in raw.split(",") if "=" in p]
    return dict(sorted((k, int(v)) for k, v in pairs))


def _dense_index_label(cfg: Config) -> str:
    m = cfg.retrieval.milvus
    params = ",".join(f"{k}={v}" for k, v in sorted(m.dense_index_params.items()))
    return f"{m.dense_index}:{params}"


def plan_key(settings: Mapping[str, Any], corpus_checksum: str) -> str:
    raw = repr(sorted(settings.items())) + "|" + corpus_checksum
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


# -- build / update -----------------------------------------------------------------------------
@contextlib.contextmanager
def build_lock(cfg: Config) -> Iterator[None]:
    """One builder at a time for a milvus-lite database (a server build is not locked here)."""
    if not cfg.retrieval.milvus.is_lite:
        yield
        return
    path = lite_path(cfg)
    path.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(Path(f"{path}.build-lock")):
        yield


def build_milvus_index(
    cfg: Config,
    articles: Sequence[Article],
    *,
    reuse: bool = False,
    corpus_checksum: str = "",
    corpus_files: Sequence[str] = (),
    dropped_short: int = 0,
    bad_records: int = 0,
    show_progress: bool = False,
    embedder: Embedder | None = None,
    if_missing: bool = False,
    vectors_from_faiss: bool = True,
    after_batch: Callable[[int], None] | None = None,
    append: bool = False,
    report: Callable[[str], None] | None = None,
) -> MilvusManifest:
    """Build (``reuse=False``) or update (``reuse=True``) the collection; see the module doc.

    A build starts from an empty collection unless the collection is an unfinished build of the
    same settings and corpus, which it resumes; an update keeps a compatible collection and
    changes only what differs (an incompatible one is rebuilt). ``append`` (with ``reuse``)
    adds or refreshes ``articles`` and deletes nothing else: how a corpus too large for one
    process's memory (the PubMed baseline) is loaded shard by shard.
    """
    if append and not reuse:
        raise ValueError("append is a kind of update: pass reuse=True")
    if not articles:
        raise ValueError("no articles to index")
    with build_lock(cfg):
        started = time.perf_counter()
        client = connect(cfg)
        name = cfg.retrieval.milvus.collection
        old = read_manifest(client, cfg)
        cfg, embedder = resolve_for_build(cfg, articles, embedder, report)  # auto: measured
        embedder = embedder or build_embedder(cfg)
        settings = settings_key(cfg, embedder.dimension)
        if if_missing and old and old.state == "complete" and manifest_settings(old) == settings:
            return old
        key = plan_key(settings, corpus_checksum)
        compatible = old is not None and manifest_settings(old) == settings
        resume = old is not None and compatible and (
            reuse or (old.state == "building" and old.plan_key == key)
        )
        if not resume:
            if client.has_collection(name):
                client.drop_collection(name)
            create_collection(client, cfg, embedder.dimension)
        client.load_collection(name)
        manifest = MilvusManifest(
            name=name,
            embedding_model=cfg.index.embedding_model,
            embedding_backend=cfg.index.embedding_backend,
            dimension=embedder.dimension,
            chunk_size=cfg.index.chunk_size,
            chunk_overlap=cfg.index.chunk_overlap,
            faiss_index="milvus",
            metadata_schema=METADATA_SCHEMA,
            bm25_settings=settings["bm25"],
            corpus_checksum=corpus_checksum,
            corpus_files=list(corpus_files),
            articles=len(articles),
            chunks=0,
            dropped_short=dropped_short,
            bad_records=bad_records,
            uri=cfg.retrieval.milvus.uri,
            collection=name,
            state="building",
            plan_key=key,
            dense_index=_dense_index_label(cfg),
            analyzer=cfg.retrieval.milvus.analyzer,
        )
        write_manifest(client, cfg, manifest)
        faiss_vectors = FaissVectors.load(cfg) if vectors_from_faiss else None
        synced = sync_collection(
            client, cfg, articles, embedder, faiss_vectors=faiss_vectors,
            show_progress=show_progress, after_batch=after_batch, append=append,
        )
        if append and old is not None:
            manifest.articles = old.articles + synced.new_articles
            manifest.corpus_files = sorted({*old.corpus_files, *corpus_files})
            manifest.corpus_checksum = "appended"  # no single corpus: --if-needed updates it
        manifest.chunks = count_rows(client, name)
        manifest.state = "complete"
        manifest.build_seconds = round(time.perf_counter() - started, 2)
        manifest.reused_articles = synced.kept_articles + synced.faiss_vector_articles
        manifest.embedded_articles = synced.embedded_articles
        manifest.written_articles = synced.written_articles
        manifest.deleted_articles = synced.deleted_articles
        write_manifest(client, cfg, manifest)
        return manifest


# -- state, for `index build --if-needed` and `index stats` --------------------------------------
def current_milvus_manifest(cfg: Config) -> MilvusManifest:
    """The manifest of a finished collection (IndexMissingError with the command otherwise)."""
    manifest = read_manifest(connect(cfg), cfg)
    if manifest is None:
        raise missing_error(cfg)
    if manifest.state != "complete":
        raise missing_error(cfg, "its build did not finish (run the same command to resume it)")
    return manifest


def milvus_index_state(cfg: Config, checksum: str) -> str:
    """'current', 'stale' (corpus or settings changed: update or rebuild) or 'missing'."""
    try:
        manifest = current_milvus_manifest(cfg)
    except IndexMissingError:
        return "missing"
    cfg = with_embedding_backend(cfg, wanted_backend(cfg, manifest.embedding_backend))
    if manifest_settings(manifest) != settings_key(cfg, manifest.dimension):
        return "stale"
    return "current" if manifest.corpus_checksum == checksum else "stale"


def milvus_stats(cfg: Config) -> dict[str, Any]:
    """``index stats``: the manifest, where the collection lives, its rows and (lite) disk size."""
    client = connect(cfg)
    manifest = current_milvus_manifest(cfg)
    stats = manifest.stats()
    stats["path"] = describe_location(cfg)
    stats["rows"] = count_rows_loaded(client, cfg.retrieval.milvus.collection)
    if cfg.retrieval.milvus.is_lite:
        path = lite_path(cfg)
        stats["size_bytes"] = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    else:
        stats["size_bytes"] = None  # held by the server; see its own metrics
    return stats


def count_rows_loaded(client: MilvusClient, collection: str) -> int:
    client.load_collection(collection)
    return count_rows(client, collection)
