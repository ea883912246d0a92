"""``python -m app bench retrieval``: query latency at the real index, and how it grows.

1. p50/p95 of a full hybrid retrieval per question (query embedding, BM25, FAISS, fusion) on
   the built index, over real questions; and of a conversational follow-up (searched as written
   and after the previous question, fused: :mod:`retrievers.followup`).
2. Dense search at 100k and 1M vectors (real chunk vectors plus noise, so the data keeps its
   cluster structure): exact FAISS vs IVF (and HNSW at 100k), with recall@10 against exact.
3. Filtered vs unfiltered dense search at the real index, and (``--filter-sizes 1000000``) at
   synthetic sizes: :mod:`bench.filtered`.
4. BM25 scoring growth: rank-bm25's ``get_scores`` vs this project's sparse scorer, on the real
   BM25 matrix replicated to larger sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bench.busy import busy_cores
from bench.synthetic import synthetic_vectors
from eval.retrieval import read_questions
from settings.errors import UserFacingError

if TYPE_CHECKING:
    from retrievers.service import SearchBackend

DEFAULT_QUESTIONS = Path(__file__).resolve().parents[2] / "shared" / "data" / "eval"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--questions",
        type=Path,
        nargs="*",
        default=None,
        help="JSONL question files (default: the shared eval files)",
    )
    parser.add_argument("--n", type=int, default=100, help="questions timed")
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="*",
        default=[100_000, 1_000_000],
        help="synthetic vector counts for the scale test",
    )
    parser.add_argument(
        "--filter-sizes",
        type=int,
        nargs="*",
        default=[],
        help="synthetic vector counts for filtered vs unfiltered search (e.g. 1000000: about "
        "2 GB of memory; off by default)",
    )
    parser.add_argument(
        "--only-filtered",
        action="store_true",
        help="time only filtered vs unfiltered search (skip the other sections)",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--busy",
        type=int,
        default=0,
        help="time the real index's searches with N other processes keeping a core busy each "
        "(a build, the browser, another request beside the chat)",
    )
    parser.add_argument(
        "--backend",
        default=None,
        help="faiss, milvus or faiss,milvus: time each on the same questions (default: "
        "retrieval.backend in cfg.yaml); the growth tests run when faiss is among them",
    )


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def _questions(args: argparse.Namespace) -> list[str]:
    files = args.questions or sorted(DEFAULT_QUESTIONS.glob("*.jsonl"))
    out: list[str] = []
    for f in files:
        if not args.questions and _is_conversation_file(Path(f)):
            continue  # followups_dev.jsonl: turns, not questions (timed by eval followups)
        if not args.questions and not _has_gold(Path(f)):
            continue  # abstain_dev.jsonl: no gold article (scored by eval verdicts)
        out += [q["question"] for q in read_questions(Path(f))]
    if not out:
        raise SystemExit("no questions found: pass --questions FILE.jsonl")
    step = max(1, len(out) // args.n)
    return out[::step][: args.n]


def _is_conversation_file(path: Path) -> bool:
    with path.open(encoding="utf-8") as fh:
        first = fh.readline()
    try:
        return "turns" in json.loads(first) and "question" not in json.loads(first)
    except json.JSONDecodeError:
        return False


def _has_gold(path: Path) -> bool:
    with path.open(encoding="utf-8") as fh:
        first = fh.readline()
    try:
        return "gold_pmids" in json.loads(first)
    except json.JSONDecodeError:
        return False


def bench_real(cfg, questions: list[str]) -> tuple[dict, SearchBackend]:
    from retrievers.filters import Filters
    from retrievers.followup import retrieve_followup
    from retrievers.loading import load_retriever

    retriever = load_retriever(cfg)
    backend = retriever.backend
    embedder = backend.embedder
    if embedder is None:
        raise UserFacingError("the index has no dense part yet: wait for its build to finish")
    for q in questions[:5]:
        retriever.retrieve(q)  # warm-up
    total, embed, bm25, dense, followup = [], [], [], [], []
    r = cfg.retrieval
    for previous, q in zip([questions[-1], *questions[:-1]], questions, strict=True):
        t0 = time.perf_counter()
        retrieve_followup(retriever, q, [previous])  # conversational: two searches, fused
        followup.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        embedder.embed_query(q)
        embed.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        retriever.retrieve(q)
        total.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        backend.bm25_search(q, 3 * r.k, Filters())  # what BM25ChunkRetriever asks for
        bm25.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        backend.dense_search(q, r.k, r.score_threshold, Filters())  # includes query embedding
        dense.append(time.perf_counter() - t0)
    ms = lambda xs, p: round(1000 * pct(xs, p), 1)  # noqa: E731
    return {
        "backend": cfg.retrieval.backend,
        "chunks": backend.size,
        "questions": len(questions),
        "p50_ms": ms(total, 50),
        "p95_ms": ms(total, 95),
        "query_embedding_p50_ms": ms(embed, 50),
        "bm25_search_p50_ms": ms(bm25, 50),
        "bm25_search_p95_ms": ms(bm25, 95),
        "dense_search_p50_ms": ms(dense, 50),
        "dense_search_p95_ms": ms(dense, 95),
        "followup_p50_ms": ms(followup, 50),
        "followup_p95_ms": ms(followup, 95),
    }, backend


def _time_search(index, queries: np.ndarray, k: int = 10) -> tuple[list[float], np.ndarray]:
    times, ids = [], []
    for q in queries:
        t0 = time.perf_counter()
        _, i = index.search(q[None, :], k)
        times.append(time.perf_counter() - t0)
        ids.append(i[0])
    return times, np.array(ids)


def bench_dense_scale(base: np.ndarray, queries: np.ndarray, sizes: list[int]) -> list[dict]:
    import faiss

    rows = []
    for n in sizes:
        data = synthetic_vectors(base, n)
        exact = faiss.IndexFlatIP(data.shape[1])
        exact.add(data)
        t_exact, truth = _time_search(exact, queries)
        variants: dict[str, tuple[Any, float]] = {}  # faiss index, build seconds
        nlist = int(4 * np.sqrt(n))
        ivf = faiss.IndexIVFFlat(
            faiss.IndexFlatIP(data.shape[1]), data.shape[1], nlist, faiss.METRIC_INNER_PRODUCT
        )
        t0 = time.perf_counter()
        ivf.train(data[np.random.default_rng(1).choice(n, min(n, 40 * nlist), replace=False)])
        ivf.add(data)
        build = time.perf_counter() - t0
        for nprobe in (16, 32):
            ivf.nprobe = nprobe
            variants[f"ivf{nlist},nprobe{nprobe}"] = (ivf, build)
        if n <= 200_000:
            hnsw = faiss.IndexHNSWFlat(data.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
            hnsw.hnsw.efConstruction = 64
            t0 = time.perf_counter()
            hnsw.add(data)
            hnsw.hnsw.efSearch = 64
            variants["hnsw32,ef64"] = (hnsw, time.perf_counter() - t0)
        row: dict[str, Any] = {
            "vectors": n,
            "exact_p50_ms": round(1000 * pct(t_exact, 50), 2),
            "exact_p95_ms": round(1000 * pct(t_exact, 95), 2),
        }
        for name, (index, build_s) in variants.items():
            if name.startswith("ivf"):
                index.nprobe = int(name.split("nprobe")[1])
            times, ids = _time_search(index, queries)
            recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, truth, strict=True)])
            row[name] = {
                "p50_ms": round(1000 * pct(times, 50), 2),
                "p95_ms": round(1000 * pct(times, 95), 2),
                "recall@10": round(float(recall), 4),
                "build_s": round(build_s, 1),
            }
        rows.append(row)
        del data, exact, variants
    return rows


def bench_bm25_growth(backend, questions: list[str]) -> list[dict]:
    import scipy.sparse as sp
    from rank_bm25 import BM25Okapi

    from indexing.bm25 import BM25Index

    real = backend.bm25
    texts = [d.page_content for d in backend.docs]
    rows = []
    for factor in (1, 3, 10):
        weights = sp.vstack([real.weights] * factor).tocsc() if factor > 1 else real.weights
        big = BM25Index(weights, real.vocab, real.stopwords)
        times = []
        for q in questions[:30]:
            t0 = time.perf_counter()
            big.search(q, 20)
            times.append(time.perf_counter() - t0)
        row = {
            "chunks": big.size,
            "sparse_p50_ms": round(1000 * statistics.median(times), 2),
            "sparse_p95_ms": round(1000 * pct(times, 95), 2),
        }
        if factor <= 3:  # rank-bm25 itself: every document scored in Python
            okapi = BM25Okapi([real.tokenize(t) or ["-"] for t in texts * factor])
            times = []
            for q in questions[:10]:
                t0 = time.perf_counter()
                okapi.get_scores(real.tokenize(q))
                times.append(time.perf_counter() - t0)
            row["rank_bm25_p50_ms"] = round(1000 * statistics.median(times), 1)
        rows.append(row)
    return rows


def run(cfg, args: argparse.Namespace) -> int:
    from retrievers.backend import FaissBM25Backend
    from retrievers.loading import parse_backends, with_backend

    backends = parse_backends(getattr(args, "backend", None), cfg)
    questions = _questions(args)
    real: dict[str, dict] = {}
    faiss_backend: FaissBM25Backend | None = None
    for name in backends:
        with busy_cores(getattr(args, "busy", 0)):
            real[name], backend = bench_real(with_backend(cfg, name), questions)
        loaded = backend.snapshot()
        if name == "faiss" and isinstance(loaded, FaissBM25Backend):
            faiss_backend = loaded
    report: dict = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "busy_processes": getattr(args, "busy", 0),
        "query_threads": cfg.index.query_threads,
        "real_index": real[backends[0]] if len(backends) == 1 else real,
    }
    store = faiss_backend.vectorstore if faiss_backend is not None else None
    embedder = faiss_backend.embedder if faiss_backend is not None else None
    if faiss_backend is not None and store is not None and embedder is not None:
        from bench.filtered import bench_filtered_real, bench_filtered_scale

        r = cfg.retrieval
        report["filtered_real_index"] = bench_filtered_real(
            faiss_backend, questions, r.k, r.score_threshold
        )
        index = store.index
        base = index.reconstruct_n(0, index.ntotal)
        queries = np.stack([embedder.embed_query_array(q) for q in questions[:100]])
        if args.filter_sizes:
            meta = [d.metadata for d in faiss_backend.docs]
            report["filtered_scale"] = bench_filtered_scale(base, meta, queries[:30],
                                                            args.filter_sizes)
    if (faiss_backend is not None and store is not None and embedder is not None
            and not args.only_filtered):
        index = store.index
        base = index.reconstruct_n(0, index.ntotal)
        queries = np.stack([embedder.embed_query_array(q) for q in questions[:100]])
        if args.sizes:
            report["dense_scale"] = bench_dense_scale(base, queries, args.sizes)
        report["bm25_growth"] = bench_bm25_growth(faiss_backend, questions)
    print(json.dumps(report, indent=2))
    return 0
