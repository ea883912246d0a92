"""``python -m app bench library``: adding ~100 abstracts from a PubMed search, timed step by step.

Set-up (not timed as the addition): the published index is copied into a work folder and the
corpus is copied beside it without ``--n`` held-out articles (the last ones of the last corpus
file that match ``--query``); the index is brought to that corpus by a rebuild that reuses every
vector (what ``index update`` does after a corpus change: its time is reported as the rebuild's).
The held-out articles' real PubMed XML is then served by the local E-utilities replay server
(``ingest.replay``: NCBI's wire format and rate limit), and ``library add`` fetches and indexes
them: ESearch, batched EFetch, ingest, store, chunk, embed (only the new chunks), BM25 (the new
chunks counted and appended, every weight recomputed),
write, publish (atomic swap), then the chat's ``LiveIndex`` loading the new build and the chat's
assistant (real model) answering the first added article's title, a question (``--no-answer``
skips it). Nothing of the real index or corpus is written.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

ORDER = ("search", "fetch", "ingest", "store", "read", "chunk", "embed", "write", "bm25", "publish")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", type=int, default=100, help="abstracts to add (default 100)")
    parser.add_argument("--query", default="patients",
                        help="the search; the held-out articles are ones it matches")
    parser.add_argument("--work", default=None, help="work folder (default: a temporary one)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-answer", action="store_true",
                        help="skip the re-answer (no language model loaded)")


def _held_out(path: Path, query: str, n: int):  # -> (kept records, held-out records)
    from ingest.replay import ReplayState, read_records

    records = read_records([path])
    hits = set(ReplayState(records).search(query))
    chosen = sorted(hits)[-n:]
    held = set(chosen)
    return [r for i, r in enumerate(records) if i not in held], [records[i] for i in chosen]


def _write_xml(path: Path, records) -> None:  # noqa: ANN001 - ReplayRecord list
    import gzip

    from ingest.library import XML_HEAD, XML_TAIL

    path.write_bytes(gzip.compress(XML_HEAD + b"".join(r.xml + b"\n" for r in records)
                                   + XML_TAIL, mtime=0))


def _title(xml: bytes) -> str:
    import html
    import re

    found = re.search(rb"<ArticleTitle[^>]*>(.*?)</ArticleTitle>", xml, re.DOTALL)
    text = re.sub(r"<[^>]+>", "", found.group(1).decode("utf-8", "replace")) if found else ""
    return html.unescape(" ".join(text.split()))


def _copy_index(source: Path, name: str, target_root: Path) -> None:
    builds = target_root / f"{name}.builds"
    builds.mkdir(parents=True)
    shutil.copytree(source, builds / source.name)
    (target_root / name).symlink_to(os.path.relpath(builds / source.name, target_root))


def run(cfg, args: argparse.Namespace) -> int:  # settings.config.Config
    from indexing.backend_cache import cpu_model
    from indexing.build import build_index
    from indexing.incremental import library_stamp
    from indexing.library_ops import add_search
    from indexing.store import open_current
    from ingest.corpus import find_corpus_files, load_corpus
    from ingest.library import Library
    from ingest.replay import ReplayServer
    from retrievers.live import LiveIndex
    from settings.config import load_config

    source, manifest = open_current(cfg)
    if not manifest.dense_ready:
        raise SystemExit("bench library needs a full (dense) index: run `index build` first")
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-library-"))
    corpus_dir = work / "corpus"
    corpus_dir.mkdir(parents=True, exist_ok=True)
    library = {p.resolve() for p in Library.of(cfg).files()}
    files = [f for f in find_corpus_files(cfg) if f not in library]
    kept, held = _held_out(files[-1], args.query, args.n)
    if len(held) < args.n:
        raise SystemExit(f"only {len(held)} articles of {files[-1]} match {args.query!r}")
    for f in files[:-1]:
        (corpus_dir / f.name).symlink_to(f)
    _write_xml(corpus_dir / files[-1].name, kept)
    _copy_index(source, cfg.index.name, work / "indices")
    report: dict = {"cpu": cpu_model(), "cores": os.cpu_count(),
                    "load_average": [round(x, 2) for x in os.getloadavg()],
                    "index": str(source), "n": args.n, "query": args.query}

    with ReplayServer(held) as replay:
        bench_cfg = load_config(overrides={
            "corpus": {"paths": [str(corpus_dir)], "fetch": {"base_url": replay.base_url}},
            "index": {"dir": str(work / "indices"),
                      "embedding_backend": manifest.embedding_backend},
            "library": {"dir": str(work / "library"), "per_user_daily": 0,
                        "max_per_add": max(args.n, 1)},
        })
        started = time.perf_counter()
        corpus = load_corpus(bench_cfg)
        base, lib = library_stamp(bench_cfg, corpus.files, corpus.articles)
        rebuilt = build_index(bench_cfg, corpus.articles, reuse=True,
                              corpus_checksum=corpus.report.checksum,
                              corpus_files=[str(f) for f in corpus.files], base_checksum=base,
                              library_pmids=lib)
        report["rebuild_reusing_vectors_s"] = round(time.perf_counter() - started, 1)
        report["index_articles"], report["index_chunks"] = rebuilt.articles, rebuilt.chunks
        started = time.perf_counter()
        live = LiveIndex(bench_cfg)
        report["live_load_s"] = round(time.perf_counter() - started, 2)
        assistant = None
        if not args.no_answer:  # the chat's assistant over that index, its model loaded
            from chains.assistant import Assistant
            from retrievers.hybrid import HybridRetriever

            assistant = Assistant.from_config(
                bench_cfg, retriever=HybridRetriever.from_backend(live, bench_cfg))
            assert assistant.llm is not None

        # the addition, as `library add` runs it (the chat's embedder reused, as the chat does)
        started = time.perf_counter()
        outcome = add_search(bench_cfg, args.query, args.n, user="bench",
                             embedder=live.loaded.embedder)
        total = time.perf_counter() - started
        started = time.perf_counter()
        live.snapshot()
        pickup = time.perf_counter() - started
        if assistant is not None:  # the question of an added article, answered again
            question = _title(held[0].xml)
            started = time.perf_counter()
            result = assistant.ask(question, mode=bench_cfg.chains.mode)
            report["re_answer_s"] = round(time.perf_counter() - started, 2)
            report["re_answer_question"] = question
            report["re_answer_cites_added"] = held[0].pmid in {s.pmid for s in result.sources}
    seconds = dict(outcome.seconds)
    seconds["ingest"] = outcome.fetched.ingest_seconds
    seconds["search"] = outcome.fetched.search_seconds
    seconds["fetch"] = round(seconds.pop("search+fetch") - outcome.fetched.ingest_seconds
                             - outcome.fetched.search_seconds, 3)
    report.update({
        "added": outcome.note.new, "fetched": outcome.note.fetched,
        "chunks_embedded": outcome.sync.chunks_embedded,
        "requests": len(replay.requests),
        "seconds": {k: seconds.get(k, 0.0) for k in ORDER},
        "addition_total_s": round(total, 2),
        "chat_pickup_s": round(pickup, 2),
        "embed_chunks_per_s": round(outcome.sync.chunks_embedded / seconds["embed"], 1)
        if seconds.get("embed") else None,
    })
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _print(report: dict) -> None:
    print(f"CPU {report['cpu']}, {report['cores']} cores, load average "
          f"{report['load_average']}; index {report['index_articles']:,} articles, "
          f"{report['index_chunks']:,} chunks")
    print(f"adding {report['added']} abstracts ({report['fetched']} fetched in "
          f"{report['requests']} requests, {report['chunks_embedded']} chunks embedded):")
    for stage, secs in report["seconds"].items():
        print(f"  {stage:<13} {secs:7.2f} s")
    print(f"  {'total':<13} {report['addition_total_s']:7.2f} s, then the chat loads the new "
          f"build in {report['chat_pickup_s']:.2f} s")
    if "re_answer_s" in report:
        print(f"  re-answer     {report['re_answer_s']:7.2f} s ({report['re_answer_question']!r};"
              f" cites the added article: {report['re_answer_cites_added']})")
    print(f"full rebuild of the same corpus reusing every vector: "
          f"{report['rebuild_reusing_vectors_s']:.1f} s (from scratch it embeds every chunk: "
          "docs/measurements-indexing.md)")
