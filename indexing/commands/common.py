"""What build and update share: load the corpus, index it, print the outcome."""

from __future__ import annotations

import argparse
import json
import time

from indexing.store import IndexMissingError, open_current


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the manifest as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def index_state(cfg, checksum: str) -> str:  # noqa: ANN001
    """'current', 'stale' (corpus changed; settings match) or 'missing' (absent or incompatible)."""
    try:
        _, manifest = open_current(cfg, verify=False)
    except IndexMissingError:
        return "missing"
    bm25 = cfg.retrieval.bm25.model_dump(include={"k1", "b", "stopwords"})
    if manifest.embedding_backend != cfg.index.embedding_backend or manifest.bm25_settings != bm25:
        return "stale"
    return "current" if manifest.corpus_checksum == checksum else "stale"


def run_indexing(cfg, args: argparse.Namespace, *, reuse: bool) -> int:  # noqa: ANN001
    from indexing.build import build_index
    from ingest.corpus import ensure_corpus, load_corpus

    started = time.perf_counter()
    files = ensure_corpus(cfg)
    if getattr(args, "if_needed", False):
        from ingest.corpus import corpus_checksum

        state = index_state(cfg, corpus_checksum(files))
        if state == "current":
            _, manifest = open_current(cfg, verify=False)
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
    manifest = build_index(
        cfg,
        corpus.articles,
        reuse=reuse,
        corpus_checksum=report.checksum,
        corpus_files=[str(f) for f in files],
        dropped_short=report.dropped_short,
        bad_records=len(report.bad_records),
        show_progress=show,
    )
    _print(
        args,
        manifest,
        f"indexed {manifest.articles} articles as {manifest.chunks} chunks "
        f"({manifest.embedded_articles} embedded, {manifest.reused_articles} reused) in "
        f"{manifest.build_seconds:.1f} s",
    )
    return 0


def _print(args: argparse.Namespace, manifest, message: str) -> None:  # noqa: ANN001
    if args.json:
        print(json.dumps(manifest.stats(), indent=2))
    else:
        print(message)
