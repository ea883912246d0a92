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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from indexing.auto_backend import resolve_for_build, wanted_backend, with_embedding_backend
from indexing.build import article_hash, published_vectors
from indexing.chunking import Chunk, TokenChunker
from indexing.embeddings import Embedder, build_embedder
from indexing.milvus_fields import authors_key, string_literal, title_key, year_value
from indexing.milvus_store import (
    MilvusManifest,
    connect,
    create_collection,
    describe_location,
    lite_path,
    missing_error,
    quiet_logs,
    read_manifest,
    write_manifest,
)
from indexing.store import IndexMissingError, file_lock
from ingest.models import Article

SCAN_BATCH = 10_000
DELETE_BATCH = 1_000  # pmids per `pmid in [...]` expression
MAX_QUERY_ROWS = 16_384  # Milvus' limit on one query's rows (1,000 articles have far fewer)
JOURNAL_MAX_BYTES = 512


@dataclass
class Present:
    """What the collection already holds for one article."""

    content_hash: str
    n_chunks: int
    ids: set[str] = field(default_factory=set)

    def complete(self, content_hash: str) -> bool:
        return self.content_hash == content_hash and len(self.ids) == self.n_chunks


@dataclass
class SyncReport:
    kept_articles: int = 0
    written_articles: int = 0
    written_chunks: int = 0
    embedded_articles: int = 0
    faiss_vector_articles: int = 0
    deleted_articles: int = 0
    deleted_chunks: int = 0
    new_articles: int = 0


# -- settings -----------------------------------------------------------------------------------
def settings_key(cfg, dimension: int) -> dict:
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


def manifest_settings(manifest: MilvusManifest) -> dict:
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


def _index_params(dense_index: str) -> dict:
    _, _, raw = dense_index.partition(":")
    pairs = [p.split("=") for p in raw.split(",") if "=" in p]
    return dict(sorted((k, int(v)) for k, v in pairs))


def _dense_index_label(cfg) -> str:
    m = cfg.retrieval.milvus
    params = ",".join(f"{k}={v}" for k, v in sorted(m.dense_index_params.items()))
    return f"{m.dense_index}:{params}"


def plan_key(settings: dict, corpus_checksum: str) -> str:
    raw = repr(sorted(settings.items())) + "|" + corpus_checksum
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


# -- vectors ------------------------------------------------------------------------------------
class FaissVectors:
    """Vectors of the published FAISS index, for chunks whose article is unchanged."""

    def __init__(self, chunk_rows: dict[str, int], texts: list[str], hashes: dict[str, str],
                 vectors: np.ndarray) -> None:
        self.chunk_rows = chunk_rows
        self.texts = texts
        self.hashes = hashes
        self.vectors = vectors

    @classmethod
    def load(cls, cfg) -> FaissVectors | None:
        """None when there is no FAISS index or it was built with other embedding settings."""
        published = published_vectors(cfg)
        if published is None:
            return None
        stored, hashes, vectors = published
        rows = {cid: i for i, cid in enumerate(stored.chunk_ids)}
        return cls(rows, stored.texts, hashes, vectors)

    def for_article(self, chunks: Sequence[Chunk], content_hash: str) -> np.ndarray | None:
        """The article's vectors when FAISS holds exactly these chunks of the same content."""
        if not chunks or self.hashes.get(chunks[0].pmid) != content_hash:
            return None
        rows = [self.chunk_rows.get(c.chunk_id) for c in chunks]
        found = [r for r in rows if r is not None]
        if len(found) < len(rows) or any(
            self.texts[r] != c.text for r, c in zip(found, chunks, strict=True)
        ):
            return None
        return self.vectors[found]


# -- rows ---------------------------------------------------------------------------------------
def _truncate_bytes(text: str, limit: int) -> str:
    raw = text.encode()
    return text if len(raw) <= limit else raw[:limit].decode(errors="ignore")


def chunk_row(chunk: Chunk, vector: np.ndarray, content_hash: str, n_chunks: int) -> dict:
    meta = chunk.metadata
    return {
        "id": chunk.chunk_id,
        "pmid": chunk.pmid,
        "chunk_index": chunk.index,
        "content_hash": content_hash,
        "n_chunks": n_chunks,
        "search_text": chunk.search_text,
        "title_lc": title_key(meta.get("title")),
        "year": year_value(meta.get("year")),
        "journal": _truncate_bytes(meta.get("journal") or "", JOURNAL_MAX_BYTES),
        "authors_lc": authors_key(meta.get("authors")),
        "metadata": meta,
        "dense": np.asarray(vector, dtype=np.float32).tolist(),
    }


# -- reading the collection ---------------------------------------------------------------------
SCAN_FIELDS = ["id", "pmid", "content_hash", "n_chunks"]


def scan_present(
    client, collection: str, pmids: Sequence[str] | None = None
) -> dict[str, Present]:
    """pmid -> what the collection holds: every article, or only ``pmids`` (append mode)."""
    out: dict[str, Present] = {}
    if pmids is not None:
        for part in _batches(list(pmids), DELETE_BATCH):
            expr = "pmid in [" + ", ".join(string_literal(p) for p in part) + "]"
            _collect(out, client.query(collection, filter=expr, output_fields=SCAN_FIELDS,
                                       limit=MAX_QUERY_ROWS))
        return out
    # milvus-lite lacks the timestamp RPC that the iterator asks for first; pymilvus falls back
    # to a client-side timestamp, after both sides log a traceback. Only that is silenced.
    with quiet_logs("grpc._server", "pymilvus.client.iterator.query_iterator"):
        it = client.query_iterator(
            collection, batch_size=SCAN_BATCH, filter="", output_fields=SCAN_FIELDS
        )
        try:
            while batch := it.next():
                _collect(out, batch)
        finally:
            it.close()
    return out


def _collect(out: dict[str, Present], rows: list[dict]) -> None:
    for row in rows:
        p = out.setdefault(row["pmid"], Present(row["content_hash"], row["n_chunks"]))
        if p.content_hash != row["content_hash"]:
            p.content_hash = "mixed"  # rows of two versions: rewrite the article
        p.ids.add(row["id"])


def count_rows(client, collection: str) -> int:
    rows = client.query(collection, filter="", output_fields=["count(*)"])
    return int(rows[0]["count(*)"])


def _batches(items: Sequence, size: int) -> Iterator[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def delete_articles(client, collection: str, pmids: Sequence[str]) -> None:
    for part in _batches(list(pmids), DELETE_BATCH):
        expr = "pmid in [" + ", ".join(string_literal(p) for p in part) + "]"
        client.delete(collection, filter=expr)


def delete_chunks(client, collection: str, ids: Sequence[str]) -> None:
    for part in _batches(list(ids), DELETE_BATCH):
        client.delete(collection, ids=list(part))


# -- the sync -----------------------------------------------------------------------------------
def _article_groups(articles: Sequence[Article], chunker: TokenChunker,
                    target: int) -> Iterator[list[tuple[Article, list[Chunk]]]]:
    group: list[tuple[Article, list[Chunk]]] = []
    size = 0
    for article in articles:
        chunks = chunker.chunk_article(article)
        group.append((article, chunks))
        size += len(chunks)
        if size >= target:
            yield group
            group, size = [], 0
    if group:
        yield group


def sync_collection(
    client,  # pymilvus.MilvusClient
    cfg,
    articles: Sequence[Article],
    embedder: Embedder,
    *,
    faiss_vectors: FaissVectors | None = None,
    show_progress: bool = False,
    after_batch: Callable[[int], None] | None = None,
    append: bool = False,
) -> SyncReport:
    """Make the collection hold exactly ``articles`` (see the module docstring); with
    ``append``, add or refresh ``articles`` and leave every other article alone (one shard of
    a corpus too large to load at once, such as the PubMed baseline)."""
    name = cfg.retrieval.milvus.collection
    report = SyncReport()
    hashes = {a.pmid: article_hash(a) for a in articles}
    present = scan_present(client, name, list(hashes) if append else None)
    report.new_articles = len(set(hashes) - set(present))
    gone = [] if append else [p for p in present if p not in hashes]
    delete_articles(client, name, gone)
    report.deleted_articles = len(gone)
    todo = [
        a for a in articles if not (a.pmid in present and present[a.pmid].complete(hashes[a.pmid]))
    ]
    report.kept_articles = len(articles) - len(todo)

    chunker = TokenChunker(embedder.tokenizer, cfg.index.chunk_size, cfg.index.chunk_overlap)
    bar = tqdm(total=len(todo), desc="writing to Milvus", unit="article", disable=not show_progress)
    for n, group in enumerate(_article_groups(todo, chunker, cfg.retrieval.milvus.insert_batch)):
        rows, stale, to_embed = [], [], []
        for article, chunks in group:
            content_hash = hashes[article.pmid]
            vectors = faiss_vectors.for_article(chunks, content_hash) if faiss_vectors else None
            if vectors is None:
                to_embed.append((article, chunks))
            else:
                report.faiss_vector_articles += 1
                rows += [
                    chunk_row(c, v, content_hash, len(chunks))
                    for c, v in zip(chunks, vectors, strict=True)
                ]
            if article.pmid in present:
                stale += sorted(present[article.pmid].ids - {c.chunk_id for c in chunks})
        if to_embed:
            flat = [c for _, chunks in to_embed for c in chunks]
            vectors = embedder.encode([c.search_text for c in flat])
            report.embedded_articles += len(to_embed)
            counts = {a.pmid: len(chunks) for a, chunks in to_embed}
            rows += [
                chunk_row(c, v, hashes[c.pmid], counts[c.pmid])
                for c, v in zip(flat, vectors, strict=True)
            ]
        client.upsert(name, rows)
        delete_chunks(client, name, stale)
        report.written_articles += len(group)
        report.written_chunks += len(rows)
        report.deleted_chunks += len(stale)
        bar.update(len(group))
        if after_batch:
            after_batch(n)
    bar.close()
    client.flush(name)
    return report


# -- build / update -----------------------------------------------------------------------------
@contextlib.contextmanager
def build_lock(cfg) -> Iterator[None]:
    """One builder at a time for a milvus-lite database (a server build is not locked here)."""
    if not cfg.retrieval.milvus.is_lite:
        yield
        return
    path = lite_path(cfg)
    path.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(Path(f"{path}.build-lock")):
        yield


def build_milvus_index(
    cfg,
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
def current_milvus_manifest(cfg) -> MilvusManifest:
    """The manifest of a finished collection (IndexMissingError with the command otherwise)."""
    manifest = read_manifest(connect(cfg), cfg)
    if manifest is None:
        raise missing_error(cfg)
    if manifest.state != "complete":
        raise missing_error(cfg, "its build did not finish (run the same command to resume it)")
    return manifest


def milvus_index_state(cfg, checksum: str) -> str:
    """'current', 'stale' (corpus or settings changed: update or rebuild) or 'missing'."""
    try:
        manifest = current_milvus_manifest(cfg)
    except IndexMissingError:
        return "missing"
    cfg = with_embedding_backend(cfg, wanted_backend(cfg, manifest.embedding_backend))
    if manifest_settings(manifest) != settings_key(cfg, manifest.dimension):
        return "stale"
    return "current" if manifest.corpus_checksum == checksum else "stale"


def milvus_stats(cfg) -> dict:
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


def count_rows_loaded(client, collection: str) -> int:
    client.load_collection(collection)
    return count_rows(client, collection)
