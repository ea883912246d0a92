"""What build and update share: load the corpus, index it, print the outcome."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from indexing.store import METADATA_SCHEMA, Manifest, open_current
from settings.errors import IndexMissingError, UserFacingError

if TYPE_CHECKING:
    from settings.config import Config

SEMANTIC_LATER = ("the semantic (dense) index is built in the background once the chat starts "
                  "(`python -m app serve`), or all at once by `python -m app index build`")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the manifest as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def index_state(cfg: Config, checksum: str) -> str:
    """'current', 'stale' (corpus changed; settings match), 'pending' (a lexical-only build of
    this corpus: its dense index is still to be embedded) or 'missing' (absent or incompatible)."""
    if cfg.retrieval.backend == "milvus":
        from indexing.milvus_index import milvus_index_state

        return milvus_index_state(cfg, checksum)
    try:
        _, manifest = open_current(cfg, verify=False, old_schema_ok=True)
    except IndexMissingError:
        return "missing"
    from indexing.auto_backend import wanted_backend
    from indexing.build import bm25_build_settings

    bm25 = bm25_build_settings(cfg)
    if not manifest.dense_ready:  # no vectors to reuse: the same corpus is pending, else rebuild
        same = (manifest.corpus_checksum == checksum and manifest.bm25_settings == bm25
                and manifest.metadata_schema == METADATA_SCHEMA)
        return "pending" if same else "missing"
    wanted = wanted_backend(cfg, manifest.embedding_backend)
    if manifest.embedding_backend != wanted or manifest.bm25_settings != bm25:
        return "stale"
    if not manifest.manifest_sha256:  # built before manifests were checksummed: rebuild, reusing
        return "stale"
    if manifest.metadata_schema != METADATA_SCHEMA:  # older metadata: re-derived, vectors reused
        return "stale"
    return "current" if manifest.corpus_checksum == checksum else "stale"


def current_manifest(cfg: Config) -> Manifest:  # the configured backend's (MilvusManifest)
    if cfg.retrieval.backend == "milvus":
        from indexing.milvus_index import current_milvus_manifest

        return current_milvus_manifest(cfg)
    return open_current(cfg, verify=False, old_schema_ok=True)[1]


def run_indexing(cfg: Config, args: argparse.Namespace, *, reuse: bool) -> int:
    from ingest.corpus import ensure_corpus, find_corpus_files, load_corpus

    extra: dict[str, Any] = {}  # keyword arguments only one engine's build takes
    build_index: Callable[..., Manifest]
    if cfg.retrieval.backend == "milvus":
        from indexing.milvus_index import build_milvus_index

        build_index = build_milvus_index
        extra["append"] = getattr(args, "append", False)
    elif getattr(args, "append", False):
        raise UserFacingError(
            "--append needs retrieval.backend: milvus (a FAISS index is rebuilt as a whole)"
        )
    else:
        from indexing.build import build_index as build_faiss_index

        build_index = build_faiss_index

    started = time.perf_counter()
    # Downloading is never a side effect of indexing: only `--fetch-if-empty` (make run) or
    # `python -m app ingest --fetch` starts one.
    files = ensure_corpus(cfg) if getattr(args, "fetch_if_empty", False) else find_corpus_files(cfg)
    # --dense-later (make run): a missing index is published lexical-only, the chat embeds the rest
    dense_later = getattr(args, "dense_later", False) and cfg.retrieval.backend == "faiss"
    state = "missing"
    checked = getattr(args, "if_needed", False) or dense_later
    if checked:
        from ingest.corpus import corpus_checksum

        state = index_state(cfg, corpus_checksum(files))
        if state == "pending" and dense_later:
            manifest = current_manifest(cfg)
            _print(args, manifest, f"BM25 index is up to date ({manifest.articles} articles, "
                   f"{manifest.chunks} chunks); {SEMANTIC_LATER}")
            return 0
        if state == "current":
            manifest = current_manifest(cfg)
            _print(
                args,
                manifest,
                f"index is up to date ({manifest.articles} articles, "
                f"{manifest.chunks} chunks); reused in {time.perf_counter() - started:.1f} s",
            )
            return 0
        reuse = state == "stale"
    show = not args.quiet
    if show:
        print(f"reading {len(files)} corpus file(s)…", flush=True)
    corpus = load_corpus(cfg, files)
    report = corpus.report
    if show:
        print(
            f"{report.articles} articles ({report.dropped_short} dropped with an abstract under "
            f"{report.min_abstract_chars} characters, {report.duplicates_replaced} duplicates "
            f"replaced, {len(report.bad_records)} unreadable records)",
            flush=True,
        )
    if cfg.retrieval.backend == "faiss":  # what lets a library change update it incrementally
        from indexing.incremental import library_stamp

        extra["base_checksum"], extra["library_pmids"] = library_stamp(cfg, files,
                                                                       corpus.articles)
    if dense_later and state in ("missing", "pending"):
        from indexing.lexical import build_lexical_index

        manifest = build_lexical_index(
            cfg, corpus.articles, corpus_checksum=report.checksum,
            corpus_files=[str(f) for f in files], dropped_short=report.dropped_short,
            bad_records=len(report.bad_records), **extra,
        )  # fmt: skip
        _print(args, manifest, f"BM25 index of {manifest.articles} articles ({manifest.chunks} "
               f"chunks) ready in {time.perf_counter() - started:.1f} s; {SEMANTIC_LATER}")
        return 0
    if checked and cfg.retrieval.backend == "faiss":
        # another process (the chat's background build) may finish it while this one waits
        extra["if_missing"] = state in ("missing", "pending")
    manifest = build_index(
        cfg,
        corpus.articles,
        reuse=reuse,
        corpus_checksum=report.checksum,
        corpus_files=[str(f) for f in files],
        dropped_short=report.dropped_short,
        bad_records=len(report.bad_records),
        show_progress=show,
        report=_reporter(args),
        **extra,
    )
    _print(
        args,
        manifest,
        f"indexed {manifest.articles} articles as {manifest.chunks} chunks "
        f"({manifest.embedded_articles} embedded, {manifest.reused_articles} reused) in "
        f"{manifest.build_seconds:.1f} s",
    )
    return 0


def _reporter(args: argparse.Namespace) -> Callable[[str], None]:
    """Where build notes (the measured embedding backend) go: stdout, or stderr when stdout is
    the result (``--json``) or asked to stay quiet (``--quiet``)."""
    if args.json or args.quiet:
        return lambda line: print(line, file=sys.stderr, flush=True)
    return lambda line: print(line, flush=True)


def _print(args: argparse.Namespace, manifest: Manifest, message: str) -> None:
    if args.json:
        print(json.dumps(manifest.stats(), indent=2))
    else:
        print(message)
