"""Bring the published index in line with the user's library without rebuilding it.

:func:`sync_library` compares the library on disk (``ingest.library``) with what the published
build holds (``Manifest.library_pmids``) and writes a new build that differs from it only there:

* the chunks, vectors and article hashes of the articles kept are copied as they are (in their
  order); the articles added to the library are chunked and embedded, and only they, and appended
  in library order; those removed are dropped;
* BM25 (words and phrase pairs) is rebuilt over the new build's chunk texts: its statistics (idf,
  mean length) change with every document, and the rebuild is seconds;
* the build is published with the same atomic symlink swap as a full build, so the chat keeps
  answering from the old build until the new one is complete, and ``LiveIndex`` picks it up.

The result equals what ``index build`` makes from scratch over the same corpus (same chunks in
the same order, same BM25 weights, vectors within float tolerance; tested), because the library's
files come last in the corpus and never repeat a PMID. That holds only while the rest of the
corpus is what the build was made from (``Manifest.base_checksum``); otherwise the sync refuses
and says to run ``index build --if-needed``, which includes the library too.

A sync killed at any point leaves the published build as it was; the next sync (or ``make run``'s
``index build --if-needed``, which sees the corpus changed) completes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from indexing.bm25 import BM25Index
from indexing.build import (
    article_hash,
    bm25_build_settings,
    read_article_hashes,
    read_chunks,
    write_articles,
    write_chunks,
)
from indexing.chunking import Chunk, TokenChunker, Tokenizer
from indexing.embeddings import Embedder, build_embedder
from indexing.store import (
    DENSE_FILE,
    IndexLocation,
    Manifest,
    location,
    new_build_dir,
    open_current,
    publish,
)
from ingest.corpus import corpus_checksum, find_corpus_files, load_corpus
from ingest.errors import CorpusError
from ingest.library import Library, LibraryError, stop_if_asked
from ingest.models import Article
from settings.config import Config


class IndexBusyError(LibraryError):
    """Another build of the index holds its lock for longer than ``library.lock_wait_s``."""


@dataclass
class SyncResult:
    manifest: Manifest
    added: int = 0  # articles embedded and appended
    removed: int = 0
    chunks_embedded: int = 0
    changed: bool = True  # False: the index already matched the library
    seconds: dict[str, float] = field(default_factory=dict)  # stage -> seconds


@contextlib.contextmanager
def index_lock(loc: IndexLocation, wait_s: float) -> Iterator[None]:
    """The index's build lock (the one ``index build`` holds), waiting at most ``wait_s``."""
    loc.root.mkdir(parents=True, exist_ok=True)
    with open(loc.root / f".{loc.name}.lock", "w") as handle:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise IndexBusyError(
                        f"another build of the index ({loc.link}) is running (the semantic "
                        "index, or an `index build`); the library keeps your additions and "
                        "`python -m app library sync` (or the next `make run`) indexes them"
                    ) from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def library_stamp(cfg: Config, files: Sequence[Path],
                  articles: Sequence[Article]) -> tuple[str, list[str]]:
    """(checksum of the corpus files outside the library, the library's PMIDs among
    ``articles`` in their order): what a build records so a later sync can be incremental."""
    library = Library.of(cfg)
    lib_files = {p.resolve() for p in library.files()}
    base = [f for f in files if Path(f).resolve() not in lib_files]
    pmids = library.pmids()
    return (corpus_checksum(base) if base else ""), [a.pmid for a in articles if a.pmid in pmids]


def _stored_chunk(pmid: str, text: str, metadata: dict[str, Any]) -> Chunk:
    return Chunk(pmid, metadata["chunk_index"], text, metadata)


def sync_library(
    cfg: Config,
    *,
    embedder: Embedder | None = None,
    wait_s: float | None = None,
    progress: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
) -> SyncResult:
    """Make the published index hold exactly the corpus with the library as it is on disk.
    ``stop`` set before the publish ends it with :class:`AdditionStopped` and the published
    build untouched (checked between steps and between embedding batches)."""
    wait = cfg.library.lock_wait_s if wait_s is None else wait_s
    with index_lock(location(cfg), wait):
        return _sync_locked(cfg, embedder, progress or (lambda _m: None), stop)


def _sync_locked(cfg: Config, embedder: Embedder | None,
                 progress: Callable[[str], None], stop: threading.Event | None) -> SyncResult:
    seconds: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        seconds[stage] = round(seconds.get(stage, 0.0) + now - clock, 3)
        clock = now

    loc = location(cfg)
    library = Library.of(cfg)
    with library.lock():  # never while an addition is between its note and its XML
        library.clean_interrupted()
    files = find_corpus_files(cfg)
    folder, manifest = open_current(cfg)  # every checksum verified: a damaged build is refused
    lib_paths = library.files()
    lib_set = {p.resolve() for p in lib_paths}
    base_files = [f for f in files if f.resolve() not in lib_set]
    base_then = manifest.base_checksum or (
        manifest.corpus_checksum if not manifest.library_pmids else "")
    if corpus_checksum(base_files) != base_then:
        raise LibraryError(
            "the corpus outside the library changed since the index was built, so it cannot be "
            "updated piece by piece: run `python -m app index build --if-needed` (it includes "
            "the library)"
        )
    lib_articles = _library_articles(cfg, lib_paths)
    lib_pmids = {a.pmid for a in lib_articles}
    stored = read_chunks(folder)
    hashes = read_article_hashes(folder)
    remove = set(manifest.library_pmids) - lib_pmids
    add = [a for a in lib_articles if a.pmid not in hashes]
    checksum_now = corpus_checksum(files)
    lap("read")
    if not add and not remove and manifest.corpus_checksum == checksum_now:
        return SyncResult(manifest, changed=False, seconds=seconds)

    keep = [i for i, p in enumerate(stored.pmids) if p not in remove]
    chunks = [_stored_chunk(stored.pmids[i], stored.texts[i], stored.metadata[i]) for i in keep]
    dense = manifest.dense_ready
    if dense and embedder is None:
        embedder = build_embedder(cfg, backend=manifest.embedding_backend)
    tokenizer = embedder.tokenizer if embedder is not None else _tokenizer(cfg)
    chunker = TokenChunker(tokenizer, cfg.index.chunk_size, cfg.index.chunk_overlap)
    new_chunks = chunker.chunk_articles(add)
    lap("chunk")
    stop_if_asked(stop)
    build_dir = new_build_dir(loc)
    try:  # until the publish, nothing refers to the new build: any failure (or Stop) drops it
        if dense:
            assert embedder is not None
            if new_chunks:
                progress(f"embedding {len(new_chunks)} new chunks")
            done = 0

            def embedded(n: int) -> None:
                nonlocal done
                done += n
                progress(f"embedded {done} of {len(new_chunks)} new chunks")
                stop_if_asked(stop)

            new_vectors = embedder.encode([c.search_text for c in new_chunks],
                                          progress=embedded)
            lap("embed")
            old = faiss.read_index(str(folder / DENSE_FILE))
            vectors = old.reconstruct_n(0, old.ntotal)[keep] if keep else np.zeros(
                (0, old.d), dtype=np.float32)
            index = faiss.IndexFlatIP(old.d)
            index.add(np.ascontiguousarray(
                np.concatenate([vectors, new_vectors.reshape(-1, old.d)]), dtype=np.float32))
            faiss.write_index(index, str(build_dir / DENSE_FILE))
            lap("write")
        chunks.extend(new_chunks)
        new_hashes = {p: h for p, h in hashes.items() if p not in remove}
        new_hashes.update((a.pmid, article_hash(a)) for a in add)
        write_chunks(build_dir, chunks)
        write_articles(build_dir, new_hashes)
        lap("write")
        progress(f"updating BM25 for {len(new_chunks)} new of {len(chunks)} chunks")
        _write_bm25(cfg, folder, build_dir, keep, [c.search_text for c in chunks],
                    len(new_chunks))
        lap("bm25")
        stop_if_asked(stop)  # the last moment: after the swap the addition is complete
        fresh = manifest.model_copy(update={
            "corpus_checksum": checksum_now,
            "corpus_files": [str(f) for f in files],
            "base_checksum": base_then,
            "library_pmids": [p for p in new_hashes if p in lib_pmids],
            "articles": len(new_hashes),
            "chunks": len(chunks),
            "bm25_settings": bm25_build_settings(cfg),
            "reused_articles": len(new_hashes) - len(add),
            "embedded_articles": len(add) if dense else 0,
            "file_sha256": {},
            "manifest_sha256": "",
        })
        fresh.built_at = Manifest.model_fields["built_at"].get_default(call_default_factory=True)
        fresh.build_seconds = round(sum(seconds.values()), 2)
    except BaseException:
        shutil.rmtree(build_dir, ignore_errors=True)
        raise
    progress("publishing the new index")
    publish(loc, build_dir, fresh)
    lap("publish")
    return SyncResult(fresh, added=len(add), removed=len(remove & set(hashes)),
                      chunks_embedded=len(new_chunks) if dense else 0, seconds=seconds)


def _write_bm25(cfg: Config, old: Path, build_dir: Path, keep: Sequence[int],
                texts: Sequence[str], new: int) -> None:
    """BM25 for the new build: the published build's term counts, less the rows not kept, with
    the ``new`` last texts counted and appended, and every weight recomputed (idf and mean length
    change with every document); rebuilt over all ``texts`` when that build kept no counts."""
    bm25 = cfg.retrieval.bm25
    index = BM25Index.extend(old, keep, texts[len(texts) - new:], k1=bm25.k1, b=bm25.b,
                             stopwords=bm25.stopwords, phrases=True)
    if index is None:
        index = BM25Index.build(texts, k1=bm25.k1, b=bm25.b, stopwords=bm25.stopwords,
                                phrases=True)
    index.save(build_dir)


def _library_articles(cfg: Config, paths: Sequence[Path]) -> list[Article]:
    """The library's articles through the corpus' own reading rules (one per PMID, short
    abstracts dropped), in file order."""
    if not paths:
        return []
    try:
        return load_corpus(cfg, paths).articles
    except CorpusError:  # every library file empty of usable articles
        return []


def _tokenizer(cfg: Config) -> Tokenizer:
    from indexing.lexical import load_tokenizer

    return load_tokenizer(cfg)
