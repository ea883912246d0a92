"""``python -m app eval retrieval --questions FILE.jsonl``: BM25, dense and hybrid, scored by ranx.

"hybrid" runs the chains' retriever with cfg.yaml's settings; only the cut after fusion is
deepened (to 20 articles instead of ``topk_rrf``) so that hit@10/hit@20 can be measured: its first
``topk_rrf`` results are exactly what the chains receive.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from eval.jsonl import read_jsonl
from ingest.metadata import ChunkMeta
from retrievers.asked_age import abstracts_from
from settings.errors import UserFacingError

DEPTH = 20
METRICS = {
    "hit@1": "hit_rate@1",
    "hit@3": "hit_rate@3",
    "hit@5": "hit_rate@5",
    "hit@10": "hit_rate@10",
    "hit@20": "hit_rate@20",
    "mrr": "mrr",
    "ndcg@3": "ndcg@3",
    "ndcg@10": "ndcg@10",
    "recall@10": "recall@10",
}
SYSTEMS = ("bm25", "dense", "hybrid")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--questions", required=True, type=Path, help="JSONL: question, gold_pmids")
    parser.add_argument("--split", default=None, help="only lines whose 'split' equals this")
    parser.add_argument("--limit", type=int, default=None, help="first N questions only")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--backend",
        default=None,
        help="search engine(s), comma-separated: faiss, milvus or faiss,milvus to compare both "
        "on the same questions (default: retrieval.backend in cfg.yaml)",
    )


def read_questions(path: Path, split: str | None = None, limit: int | None = None) -> list[dict]:
    def parse(row: dict[str, Any]) -> dict[str, Any] | None:
        row["question"], row["gold_pmids"] = str(row["question"]), list(row["gold_pmids"])
        return row if split is None or row.get("split") == split else None

    return read_jsonl(path, "question", "a JSON object with 'question' and 'gold_pmids'", parse,
                      limit)


def rankings(retriever, question: str) -> dict[str, list[str]]:  # HybridRetriever
    """PMIDs ranked by each system for one question: filters parsed and the text searched as
    the chains do (brand names with their generic names: ``HybridRetriever._plan``)."""
    search = retriever._plan(question, None)
    query, filters, backend = search.searched, search.filters, search.backend
    bm25_r, dense_r = (r.bound(filters, backend) for r in retriever.retrievers)
    bm25_h, dense_h = bm25_r.invoke(query), dense_r.invoke(query)
    relevance = backend.bm25_relevance(query, filters)
    hybrid = retriever.fuse([bm25_h, dense_h], k=DEPTH, relevance=relevance,
                            question=search.query,
                            abstract_of=abstracts_from(backend.article_chunks))  # fmt: skip
    bm25 = bm25_h if bm25_r.k >= DEPTH else bm25_r.model_copy(update={"k": DEPTH}).invoke(query)
    dense = dense_h if dense_r.k >= DEPTH else dense_r.model_copy(update={"k": DEPTH}).invoke(query)
    return {
        "bm25": [ChunkMeta.pmid_of(d.metadata) for d in bm25],
        "dense": [ChunkMeta.pmid_of(d.metadata) for d in dense],
        "hybrid": [ChunkMeta.pmid_of(d.metadata) for d in hybrid],
    }


def score(questions: list[dict], ranked: list[dict[str, list[str]]]) -> dict[str, dict]:
    from ranx import Qrels, Run, evaluate

    qrels = Qrels({str(i): {p: 1 for p in q["gold_pmids"]} for i, q in enumerate(questions)})
    out = {}
    for system in SYSTEMS:
        run_dict = {
            str(i): ({p: 1.0 / r for r, p in enumerate(ranks[system], start=1)} or {"-": 0.0})
            for i, ranks in enumerate(ranked)
        }
        values = evaluate(qrels, Run(run_dict), list(METRICS.values()), make_comparable=True)
        out[system] = {name: round(float(values[m]), 4) for name, m in METRICS.items()}
        out[system]["n"] = len(questions)
    return out


def evaluate_retrieval(cfg, questions: Iterable[dict], retriever=None) -> dict:
    from retrievers.loading import load_retriever

    questions = list(questions)
    retriever = retriever or load_retriever(cfg)
    started = time.perf_counter()
    ranked = [rankings(retriever, q["question"]) for q in questions]
    result: dict[str, Any] = score(questions, ranked)
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result


def print_table(result: dict, title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    table.add_column("system")
    for name in [*METRICS, "n"]:
        table.add_column(name, justify="right")
    for system in SYSTEMS:
        row = result[system]
        table.add_row(system, *(f"{row[m]:.3f}" for m in METRICS), str(row["n"]))
    Console().print(table)


def run(cfg, args: argparse.Namespace) -> int:
    from retrievers.loading import parse_backends, with_backend

    backends = parse_backends(getattr(args, "backend", None), cfg)
    questions = read_questions(args.questions, args.split, args.limit)
    if not questions:
        raise UserFacingError(f"no questions in {args.questions} (split={args.split})")
    results = {b: evaluate_retrieval(with_backend(cfg, b), questions) for b in backends}
    if args.json:
        # One backend: the result itself (as before); several: one result per backend.
        print(json.dumps(results if len(backends) > 1 else results[backends[0]], indent=2))
    else:
        for backend, result in results.items():
            suffix = f", {backend}" if len(backends) > 1 else ""
            print_table(result, f"{args.questions.name} ({len(questions)} questions{suffix})")
    return 0
