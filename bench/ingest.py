"""``python -m app bench ingest``: parse, chunk and embed throughput, index size, peak RSS.

Parse and chunk run over the whole corpus. Embedding is measured on a sample of real chunks
(``--sample``) for each backend side by side, against a plain sentence-transformers fp32
``encode`` of the same chunks, and the agreement of the vectors (cosine to the baseline) is
reported; the full embed time is extrapolated from the measured rate.

It also prints what ``embedding_backend: auto`` would choose on this machine: the build's own
measurement (same candidates, sample size and rule), run afresh and not cached, beside the
decision cached for this CPU if a build made one. ``--auto-only`` prints just that.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import time

import numpy as np

from indexing.backend_cache import CONCRETE_BACKENDS as BACKENDS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sample", type=int, default=1500, help="chunks embedded per backend")
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    parser.add_argument(
        "--stream-copies",
        type=int,
        default=3,
        help="parse a file of this many copies of the largest corpus file and compare peak RSS "
        "with one copy (0: skip)",
    )
    parser.add_argument(
        "--auto-only",
        action="store_true",
        help="only measure what embedding_backend: auto would choose here (seconds)",
    )
    parser.add_argument("--json", action="store_true")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _sentence_transformers_baseline(cfg, texts: list[str]) -> tuple[float, np.ndarray]:
    from sentence_transformers import SentenceTransformer

    from indexing.embeddings import resolve_model_dir

    model = SentenceTransformer(str(resolve_model_dir(cfg.index.embedding_model)), device="cpu")
    model.encode(texts[:32])  # warm-up
    started = time.perf_counter()
    vectors = model.encode(texts, batch_size=cfg.index.embed_batch_size, normalize_embeddings=True)
    return time.perf_counter() - started, np.asarray(vectors, dtype=np.float32)


def auto_choice(cfg, articles) -> dict:
    """What ``auto`` would choose on this machine, measured now as a build measures (no cache
    read or written), with the decision a build cached for this CPU, if any."""
    from dataclasses import asdict

    from indexing.auto_backend import (
        REFERENCE,
        Decision,
        choose_backend,
        load_candidates,
        measure_candidates,
        sample_texts,
    )
    from indexing.backend_cache import cached_backend, cpu_model, decision_key, decision_path
    from settings.config import cpu_has_native_bf16

    loaded, missing = load_candidates(cfg)
    texts = sample_texts(articles, loaded[REFERENCE].tokenizer, cfg)
    measured = measure_candidates(texts, {n: e.encode for n, e in loaded.items()}) + missing
    decision = Decision(
        choose_backend(measured), tuple(measured), False,
        decision_key(cfg.index.embedding_model), decision_path(cfg),
    )
    return {
        "cpu": cpu_model(),
        "avx512_bf16_or_amx_flag": cpu_has_native_bf16(),
        "would_choose": decision.backend,
        "candidates": [asdict(m) for m in measured],
        "cached_decision": cached_backend(cfg),
        "summary": decision.summary(),
    }


def _print_auto(auto: dict) -> None:
    print(auto["summary"].replace("measured now", "measured now, not cached"))
    print(f"  AVX512-BF16/AMX flag: {'yes' if auto['avx512_bf16_or_amx_flag'] else 'no'}; "
          f"decision cached for this CPU: {auto['cached_decision'] or 'none yet'}")


def run(cfg, args: argparse.Namespace) -> int:
    import platform

    from indexing.chunking import TokenChunker
    from indexing.embeddings import Embedder
    from indexing.store import location, open_current
    from ingest.corpus import find_corpus_files, load_corpus

    report: dict = {"machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores"}
    started = time.perf_counter()
    corpus = load_corpus(cfg, find_corpus_files(cfg))
    parse_s = time.perf_counter() - started
    articles = corpus.articles
    report["parse"] = {
        "articles": len(articles),
        "seconds": round(parse_s, 2),
        "articles_per_s": round(len(articles) / parse_s, 1),
        "dropped_short": corpus.report.dropped_short,
    }
    if getattr(args, "auto_only", False):
        auto = auto_choice(cfg, articles)
        if args.json:
            print(json.dumps(auto, indent=2))
        else:
            _print_auto(auto)
        return 0

    embedders = {
        b: Embedder(
            cfg.index.embedding_model,
            backend=b,
            cache_dir=cfg.resolve(cfg.index.dir) / ".models",
            batch_size=cfg.index.embed_batch_size,
        )
        for b in args.backends
    }
    tokenizer = next(iter(embedders.values())).tokenizer
    chunker = TokenChunker(tokenizer, cfg.index.chunk_size, cfg.index.chunk_overlap)
    started = time.perf_counter()
    chunks = chunker.chunk_articles(articles)
    chunk_s = time.perf_counter() - started
    total_tokens = sum(
        len(t)
        for t in tokenizer([c.search_text for c in chunks[:2000]], add_special_tokens=True)[
            "input_ids"
        ]
    )
    tokens_per_chunk = total_tokens / min(2000, len(chunks))
    report["chunk"] = {
        "chunks": len(chunks),
        "seconds": round(chunk_s, 2),
        "articles_per_s": round(len(articles) / chunk_s, 1),
        "tokens_per_chunk": round(tokens_per_chunk, 1),
        "total_tokens_est": int(tokens_per_chunk * len(chunks)),
    }

    sample = [c.search_text for c in random.Random(0).sample(chunks, min(args.sample, len(chunks)))]
    base_s, base_vecs = _sentence_transformers_baseline(cfg, sample)
    embed = {
        "sentence-transformers fp32 (baseline)": {
            "chunks_per_s": round(len(sample) / base_s, 1),
            "tokens_per_s": round(len(sample) * tokens_per_chunk / base_s),
            "speedup": 1.0,
            "cosine_to_baseline_min": 1.0,
        }
    }
    for name, embedder in embedders.items():
        embedder.encode(sample[:32])
        t0 = time.perf_counter()
        vecs = embedder.encode(sample)
        dt = time.perf_counter() - t0
        cos = (vecs * base_vecs).sum(axis=1)
        embed[name] = {
            "chunks_per_s": round(len(sample) / dt, 1),
            "tokens_per_s": round(len(sample) * tokens_per_chunk / dt),
            "speedup": round(base_s / dt, 2),
            "cosine_to_baseline_mean": round(float(cos.mean()), 5),
            "cosine_to_baseline_min": round(float(cos.min()), 5),
            "full_corpus_minutes_est": round(len(chunks) / (len(sample) / dt) / 60, 1),
        }
    report["embed"] = embed
    report["auto"] = auto_choice(cfg, articles)
    try:
        folder, manifest = open_current(cfg, verify=False)
        report["index"] = {
            "path": str(location(cfg).link),
            "articles": manifest.articles,
            "chunks": manifest.chunks,
            "build_seconds": manifest.build_seconds,
            "embedding_backend": manifest.embedding_backend,
            "size_mb": round(sum(f.stat().st_size for f in folder.iterdir()) / 2**20, 1),
        }
    except Exception as err:  # noqa: BLE001 - the bench still reports the rest
        report["index"] = {"missing": str(err)}
    if args.stream_copies:
        from pathlib import Path

        from bench.streaming import streaming_report

        xml = [f for f in corpus.files if f.name.endswith((".xml", ".xml.gz"))]
        if xml:
            largest = max(xml, key=lambda f: f.stat().st_size)
            report["streaming"] = streaming_report(
                largest, args.stream_copies, Path(__file__).resolve().parents[1]
            )
    report["peak_rss_mb"] = round(peak_rss_mb(), 1)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)
    return 0


def _print(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"machine: {report['machine']}")
    console.print(f"parse: {report['parse']}")
    console.print(f"chunk: {report['chunk']}")
    table = Table(title="embedding (same sample of real chunks)")
    for col in ("backend", "chunks/s", "tokens/s", "speedup", "cos min", "full corpus (min)"):
        table.add_column(col)
    for name, row in report["embed"].items():
        table.add_row(
            name,
            str(row["chunks_per_s"]),
            str(row["tokens_per_s"]),
            str(row["speedup"]),
            str(row["cosine_to_baseline_min"]),
            str(row.get("full_corpus_minutes_est", "")),
        )
    console.print(table)
    _print_auto(report["auto"])
    console.print(f"index: {report['index']}")
    if "streaming" in report:
        console.print(f"streaming parse: {report['streaming']}")
    console.print(f"peak RSS: {report['peak_rss_mb']} MB")
