"""``python -m app bench ingest``: parse, chunk and embed throughput, index size, peak RSS.

Parse and chunk run over the whole corpus. Embedding is measured on a sample of real chunks
(``--sample``) for each backend side by side, against a plain sentence-transformers fp32
``encode`` of the same chunks, and the agreement of the vectors (cosine to the baseline) is
reported; the full embed time is extrapolated from the measured rate.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import time

import numpy as np

BACKENDS = ("torch", "torch-bf16", "onnx-int8")


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
    console.print(f"index: {report['index']}")
    if "streaming" in report:
        console.print(f"streaming parse: {report['streaming']}")
    console.print(f"peak RSS: {report['peak_rss_mb']} MB")
