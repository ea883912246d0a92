"""Build or update the index: chunk, embed (resumable), write FAISS + BM25 + docs, swap in.

``build_index`` re-embeds every article; ``update_index`` reuses the vectors of articles whose
content hash is unchanged and embeds only new or changed PMIDs. Both write a new build folder and
publish it atomically (see :mod:`indexing.store`).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import faiss
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm.auto import tqdm

from indexing.auto_backend import resolve_for_build
from indexing.bm25 import BM25Index
from indexing.chunking import Chunk, TokenChunker
from indexing.embeddings import Embedder, build_embedder
from indexing.heap import release_freed_memory
from indexing.progress import ProgressWriter, wait_until_released
from indexing.store import (
    METADATA_SCHEMA,
    DamagedIndexError,
    Manifest,
    ShardCache,
    location,
    new_build_dir,
    open_current,
    publish,
    verify_build,
)
from ingest.metadata import chunk_metadata
from ingest.models import CITATION_FIELDS, Article
from settings.errors import IndexMissingError

if TYPE_CHECKING:
    from settings.config import Config

SHARD_ROWS = 1024


def article_hash(article: Article) -> str:
    """Over what is embedded or filtered on; the bibliographic fields (CITATION_FIELDS) only ride
    in the chunks' metadata, refreshed when vectors are reused, so adding them re-embeds nothing."""
    exclude = {"version", *CITATION_FIELDS}
    return hashlib.sha256(article.model_dump_json(exclude=exclude).encode()).hexdigest()[:24]


# The Article fields a metadata-schema-1 build hashed: an old index's vectors are reused when
# these are unchanged (the new fields are metadata only; they change nothing that is embedded).
_SCHEMA1_FIELDS = {"pmid", "title", "abstract", "authors", "journal", "year", "month", "day",
                   "doi", "mesh_terms"}


def schema1_article_hash(article: Article) -> str:
    dump = article.model_dump_json(include=_SCHEMA1_FIELDS)
    return hashlib.sha256(dump.encode()).hexdigest()[:24]


@dataclass
class StoredChunks:
    """Chunks of a published build, in vector order."""

    chunk_ids: list[str]
    pmids: list[str]
    texts: list[str]
    metadata: list[dict[str, Any]]  # each chunk's JSON record (ingest.metadata)

    def __len__(self) -> int:
        return len(self.chunk_ids)


def read_chunks(folder: Path) -> StoredChunks:
    table = pq.read_table(folder / "chunks.parquet")
    cols = table.to_pydict()
    return StoredChunks(
        chunk_ids=cols["chunk_id"],
        pmids=cols["pmid"],
        texts=cols["text"],
        metadata=[json.loads(m) for m in cols["metadata"]],
    )


def read_article_hashes(folder: Path) -> dict[str, str]:
    cols = pq.read_table(folder / "articles.parquet").to_pydict()
    return dict(zip(cols["pmid"], cols["content_hash"], strict=True))


def write_chunks(folder: Path, chunks: Sequence[Chunk]) -> None:
    table = pa.table(
        {
            "chunk_id": [c.chunk_id for c in chunks],
            "pmid": [c.pmid for c in chunks],
            "chunk_index": [c.index for c in chunks],
            "text": [c.text for c in chunks],
            "metadata": [json.dumps(c.metadata, ensure_ascii=False) for c in chunks],
        }
    )
    pq.write_table(table, folder / "chunks.parquet")


def write_articles(folder: Path, hashes: dict[str, str]) -> None:
    pq.write_table(
        pa.table({"pmid": list(hashes), "content_hash": list(hashes.values())}),
        folder / "articles.parquet",
    )


def _embed_resumable(
    embedder: Embedder,
    chunks: Sequence[Chunk],
    cache: ShardCache,
    show_progress: bool,
    progress: ProgressWriter | None = None,
) -> tuple[np.ndarray, int]:
    """The chunks' vectors, and how many of them came from an interrupted build's shards.
    ``progress`` (the chat's "semantic index: 45%") counts every chunk done."""
    texts = [c.search_text for c in chunks]
    out = np.zeros((len(texts), embedder.dimension), dtype=np.float32)
    resumed = 0
    bar = tqdm(total=len(texts), desc="embedding chunks", unit="chunk", disable=not show_progress)

    def step(n: int) -> None:
        bar.update(n)
        if progress is not None:
            progress.advance(n)

    for start in range(0, len(texts), SHARD_ROWS):
        stop = min(start + SHARD_ROWS, len(texts))
        cached = cache.get(start, stop - start)
        if cached is None:
            cached = embedder.encode(texts[start:stop], progress=step)
            cache.put(start, cached)
            release_freed_memory()
        else:
            bar.update(stop - start)
            if progress is not None:
                progress.advance(stop - start, resumed=True)
            resumed += stop - start
        out[start:stop] = cached
    bar.close()
    return out, resumed


def bm25_build_settings(cfg: Config) -> dict[str, Any]:
    """What the BM25 files depend on (a change means a rebuild); ``phrases``: word pairs stored."""
    return {**cfg.retrieval.bm25.model_dump(include={"k1", "b", "stopwords"}), "phrases": True}


def _plan_key(cfg: Config, chunks: Sequence[Chunk]) -> str:
    h = hashlib.sha256()
    h.update(f"{cfg.index.embedding_model}|{cfg.index.embedding_backend}|{SHARD_ROWS}".encode())
    for c in chunks:
        h.update(c.chunk_id.encode())
        h.update(hashlib.md5(c.search_text.encode()).digest())
    return h.hexdigest()


def published_vectors(cfg: Config) -> tuple[StoredChunks, dict[str, str], np.ndarray, int] | None:
    """The published build's chunks, article hashes, vectors and metadata schema, when they can
    be reused: the build matches cfg.yaml's model and chunking (``open_current``) and its
    embedding backend. An older metadata schema's vectors are reusable (only metadata changed)."""
    try:
        folder, manifest = open_current(cfg, verify=False, old_schema_ok=True)
    except IndexMissingError:
        return None
    if not manifest.dense_ready or manifest.embedding_backend != cfg.index.embedding_backend:
        return None
    try:
        verify_build(folder, manifest, complete=False)  # a damaged build's vectors are not reused
    except DamagedIndexError:
        return None
    index = faiss.read_index(str(folder / "dense.faiss"))
    vectors = index.reconstruct_n(0, index.ntotal)
    return read_chunks(folder), read_article_hashes(folder), vectors, manifest.metadata_schema


def build_index(
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
    report: Callable[[str], None] | None = None,
    base_checksum: str = "",
    library_pmids: Sequence[str] = (),
) -> Manifest:
    """Index ``articles`` and publish them; with ``reuse``, unchanged PMIDs keep their vectors.

    With ``if_missing``, a complete index that another process finished meanwhile is returned
    as is (a lexical-only one, ``dense: pending``, is not complete).
    ``embedding_backend: auto`` is decided first (measured, or this CPU's cached decision) and
    the decision, with the measured rates, goes to ``report``; the manifest records the backend.
    """
    if not articles:
        raise ValueError("no articles to index")
    with location(cfg).lock():
        if if_missing:
            try:
                manifest = open_current(cfg)[1]
                if manifest.dense_ready:
                    return manifest
            except IndexMissingError:
                pass
        return _build_locked(
            cfg, articles, reuse=reuse, corpus_checksum=corpus_checksum,
            corpus_files=corpus_files, dropped_short=dropped_short, bad_records=bad_records,
            show_progress=show_progress, embedder=embedder, report=report,
            base_checksum=base_checksum, library_pmids=library_pmids,
        )


def _build_locked(
    cfg: Config,
    articles: Sequence[Article],
    *,
    reuse: bool,
    corpus_checksum: str,
    corpus_files: Sequence[str],
    dropped_short: int,
    bad_records: int,
    show_progress: bool,
    embedder: Embedder | None,
    report: Callable[[str], None] | None,
    base_checksum: str = "",
    library_pmids: Sequence[str] = (),
) -> Manifest:
    started = time.perf_counter()
    loc = location(cfg)
    cfg, embedder = resolve_for_build(cfg, articles, embedder, report)
    embedder = embedder or build_embedder(cfg)
    chunker = TokenChunker(embedder.tokenizer, cfg.index.chunk_size, cfg.index.chunk_overlap)
    previous = published_vectors(cfg) if reuse else None

    hashes = {a.pmid: article_hash(a) for a in articles}
    reused_rows: dict[str, list[int]] = {}
    if previous:
        stored, old_hashes, _, schema = previous
        compare = hashes if schema == METADATA_SCHEMA else {
            a.pmid: schema1_article_hash(a) for a in articles
        }
        for row, pmid in enumerate(stored.pmids):
            if old_hashes.get(pmid) == compare.get(pmid):
                reused_rows.setdefault(pmid, []).append(row)

    to_embed = [a for a in articles if a.pmid not in reused_rows]
    new_chunks = chunker.chunk_articles(
        tqdm(to_embed, desc="chunking", unit="article", disable=not show_progress)
    )
    cache = ShardCache(loc.work, _plan_key(cfg, new_chunks))
    saved = cache.saved_rows(len(new_chunks), SHARD_ROWS)
    if saved and report is not None:
        report(f"resuming an interrupted build: {saved} of {len(new_chunks)} chunk embeddings "
               f"already computed ({loc.work})")
    progress = ProgressWriter(loc.progress, len(new_chunks))
    progress.flush()
    wait_until_released()  # a test seam: holds the build only while $PUBMED_ASSISTANT_HOLD_DENSE
    progress.restart_clock()
    new_vectors, resumed = _embed_resumable(embedder, new_chunks, cache, show_progress, progress)
    if resumed and report is not None:
        report(f"resumed an interrupted build: {resumed} of {len(new_chunks)} chunk embeddings "
               f"reused from {loc.work}")

    chunks: list[Chunk] = []
    parts: list[np.ndarray] = []
    new_by_pmid: dict[str, list[int]] = {}
    for i, c in enumerate(new_chunks):
        new_by_pmid.setdefault(c.pmid, []).append(i)
    for article in articles:
        if previous is not None and article.pmid in reused_rows:  # reused rows need previous
            stored, _, old_vectors, _ = previous
            rows = reused_rows[article.pmid]
            meta = chunk_metadata(article)  # re-derived: an older schema's metadata is never kept
            chunks.extend(
                Chunk(
                    article.pmid,
                    stored.metadata[r]["chunk_index"],
                    stored.texts[r],
                    {**meta, "chunk_index": stored.metadata[r]["chunk_index"],
                     "chunk_id": stored.chunk_ids[r]},
                )
                for r in rows
            )
            parts.append(old_vectors[rows])
        else:
            rows = new_by_pmid.get(article.pmid, [])
            chunks.extend(new_chunks[r] for r in rows)
            parts.append(new_vectors[rows])
    vectors = np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)
    del parts, new_vectors
    release_freed_memory()

    build_dir = new_build_dir(loc)
    write_chunks(build_dir, chunks)
    write_articles(build_dir, hashes)
    dense = faiss.IndexFlatIP(embedder.dimension)
    dense.add(vectors)
    faiss.write_index(dense, str(build_dir / "dense.faiss"))
    BM25Index.build(
        [c.search_text for c in chunks],
        k1=cfg.retrieval.bm25.k1,
        b=cfg.retrieval.bm25.b,
        stopwords=cfg.retrieval.bm25.stopwords,
        phrases=True,
    ).save(build_dir)
    manifest = Manifest(
        name=cfg.index.name,
        embedding_model=cfg.index.embedding_model,
        embedding_backend=cfg.index.embedding_backend,
        dimension=embedder.dimension,
        chunk_size=cfg.index.chunk_size,
        chunk_overlap=cfg.index.chunk_overlap,
        metadata_schema=METADATA_SCHEMA,
        bm25_settings=bm25_build_settings(cfg),
        corpus_checksum=corpus_checksum,
        corpus_files=list(corpus_files),
        base_checksum=base_checksum,
        library_pmids=list(library_pmids),
        articles=len(articles),
        chunks=len(chunks),
        dropped_short=dropped_short,
        bad_records=bad_records,
        build_seconds=round(time.perf_counter() - started, 2),
        reused_articles=len(reused_rows),
        embedded_articles=len(to_embed),
    )
    publish(loc, build_dir, manifest)
    cache.clear()
    return manifest
