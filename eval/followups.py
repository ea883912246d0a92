"""``python -m app eval followups --questions FILE.jsonl``: conversational retrieval, scored.

Each line is ``{"turns": [first question, follow-up], "gold_pmids": [...]}``. Turn 1 is asked
and its sources kept; then the follow-up is searched the way conversational mode searches it
(:func:`retrievers.followup.retrieve_followup`, with turn 1 as history) and, for comparison,
alone. Reported: hit@1 / hit@3 / MRR of the follow-up with and without history (the gold among
the first 20 fused articles), and the share of follow-ups per rewrite path, with the same
figures per path so that no path can hide below the history-free baseline.

``--rewrite llm`` also asks the configured LLM for a standalone question (the chains' prompt
and guard), as conversational mode does when ``chains.rewrite_with_llm`` is on; the default
follows cfg.yaml.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval.jsonl import read_jsonl
from ingest.metadata import ChunkMeta
from retrievers.followup import PATHS, retrieve_followup
from settings.errors import UserFacingError

if TYPE_CHECKING:
    from langchain_core.documents import Document

    from grounding.concepts import CorpusTerms

DEPTH = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--questions", required=True, type=Path, help="JSONL: turns [q1, follow-up], gold_pmids"
    )
    parser.add_argument("--limit", type=int, default=None, help="first N conversations only")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--prior-weight", type=float, default=0.0,
        help="RRF weight of turn 1's sources in the follow-up's fusion (an experiment: the chat "
        "uses none, docs/measurements-retrieval.md)",
    )  # fmt: skip
    parser.add_argument(
        "--rewrite",
        choices=("cfg", "llm", "none"),
        default="cfg",
        help="ask the LLM for a standalone rewrite (llm), never (none), or as cfg.yaml's "
        "chains.rewrite_with_llm says (cfg, the default)",
    )
    parser.add_argument("--resolve", choices=("rules", "none"), default="rules",
                        help="resolve the follow-up against the conversation (rules, the chat's "
                        "way) or search as written + the previous question (none: before)")


def read_conversations(path: Path, limit: int | None = None) -> list[dict]:
    def parse(row: dict[str, Any]) -> dict[str, Any]:
        turns = [str(t) for t in row["turns"]]
        gold = [str(p) for p in row["gold_pmids"]]
        if len(turns) < 2 or not gold:
            raise ValueError("'turns' needs a first question and a follow-up, 'gold_pmids' a PMID")
        return {**row, "turns": turns, "gold_pmids": gold}

    return read_jsonl(path, "conversation", "a JSON object with 'turns' and 'gold_pmids'", parse,
                      limit)


def pmids_of(documents: Sequence[Document]) -> list[str]:
    """The PMIDs of ranked results, in order (:meth:`ingest.metadata.ChunkMeta.pmid_of`)."""
    return [ChunkMeta.pmid_of(d.metadata) for d in documents]


def rank_of(pmids: Sequence[str], gold: Sequence[str]) -> int | None:
    """1-based rank of the first gold PMID, or None."""
    return next((i for i, p in enumerate(pmids, start=1) if p in set(gold)), None)


def metrics(ranks: Sequence[int | None]) -> dict:
    n = len(ranks)
    if not n:
        return {"hit@1": 0.0, "hit@3": 0.0, "mrr": 0.0, "n": 0}
    return {
        "hit@1": round(sum(r == 1 for r in ranks) / n, 4),
        "hit@3": round(sum(r is not None and r <= 3 for r in ranks) / n, 4),
        "mrr": round(sum(1 / r for r in ranks if r) / n, 4),
        "n": n,
    }


def make_rewriter(cfg):  # noqa: ANN001, ANN201 - Config -> (question, history) -> dict
    """The chains' rewrite step with the configured LLM (loaded once)."""
    from chains.prompts import Prompts
    from chains.steps import make_rewrite_step
    from llms.llm import get_llm

    llm = get_llm(cfg.llm, root=cfg.root)
    step = make_rewrite_step(lambda: llm, Prompts.from_config(cfg).rewrite)
    return lambda question, history: step.invoke({"question": question, "history": history})


def corpus_of(retriever) -> CorpusTerms | None:  # noqa: ANN001
    """The index's word counts, as the chat's assistant finds them (for essential concepts)."""
    return retriever.corpus


def followup_row(
    retriever,  # noqa: ANN001
    conv: dict,
    rewriter=None,  # noqa: ANN001
    prior_weight: float = 0.0,
    corpus: CorpusTerms | None = None,
    resolve: bool = True,
) -> dict:
    """Ranks of the gold article for one conversation, with and without history. ``resolve``:
    the follow-up is resolved against the conversation as the chat does
    (:func:`chains.conversation.plan_followup`); without it, searched as written + the previous
    question (before conversations were resolved)."""
    from chains.conversation import embedding_similarity, plan_followup
    from chains.queries import names_own_topic, needs_context

    first, followup = conv["turns"][0], conv["turns"][-1]
    previous = conv["turns"][:-1]
    turn1 = retriever.retrieve(first)
    history = [(q, "") for q in previous]
    if resolve:
        embedder = retriever.embedder
        similar = embedding_similarity(embedder) if embedder is not None else None
        searched, prev, options = plan_followup(followup, previous, corpus, similar)
    else:
        searched, prev = followup, previous
        options = {"stands_alone": not needs_context(followup),
                   "own_topic": names_own_topic(followup, corpus)}  # fmt: skip
    if rewriter is not None and needs_context(followup):
        out = rewriter(followup, history)
        if out.get("raw") and not (resolve and out["fallback"]):
            options = {**options, "rewrite": out["question"], "resolved": False,
                       "rewrite_fallback": bool(out["fallback"])}  # fmt: skip
    with_history = retrieve_followup(
        retriever,
        searched,
        prev,
        previous_sources=pmids_of(turn1.documents),
        prior_weight=prior_weight,
        k=DEPTH,
        **options,  # type: ignore[arg-type]
    )
    alone = retriever.retrieve(followup, k=DEPTH)
    gold = conv["gold_pmids"]
    return {
        "qid": conv.get("qid"),
        "path": with_history.path,
        "queries": with_history.queries,
        "with_history": rank_of(pmids_of(with_history.documents), gold),
        "without_history": rank_of(pmids_of(alone.documents), gold),
    }


def summarize(rows: list[dict]) -> dict:
    n = len(rows)
    out: dict = {
        "with_history": metrics([r["with_history"] for r in rows]),
        "without_history": metrics([r["without_history"] for r in rows]),
        "paths": {p: round(sum(r["path"] == p for r in rows) / n, 4) for p in PATHS} if n else {},
        "by_path": {},
        "n": n,
    }
    for path in PATHS:
        sub = [r for r in rows if r["path"] == path]
        if sub:
            out["by_path"][path] = {
                "with_history": metrics([r["with_history"] for r in sub]),
                "without_history": metrics([r["without_history"] for r in sub]),
            }
    return out


def evaluate_followups(
    cfg,
    conversations: list[dict],
    retriever=None,
    rewriter=None,  # noqa: ANN001
    prior_weight: float = 0.0,
    resolve: bool = True,
) -> dict:
    from retrievers.loading import load_retriever

    retriever = retriever or load_retriever(cfg)
    started = time.perf_counter()
    corpus = corpus_of(retriever)
    rows = [
        followup_row(retriever, c, rewriter, prior_weight, corpus, resolve) for c in conversations
    ]
    result = summarize(rows)
    result["rows"] = rows
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result


def print_table(result: dict, title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for col in ("follow-up searched", "hit@1", "hit@3", "MRR", "n"):
        table.add_column(col, justify="left" if col.startswith("follow") else "right")
    rows = [
        ("with history", result["with_history"]),
        ("without history", result["without_history"]),
    ]
    for path, figures in result["by_path"].items():
        rows.append((f"  path {path}: with history", figures["with_history"]))
        rows.append((f"  path {path}: without history", figures["without_history"]))
    for name, m in rows:
        table.add_row(
            name, f"{m['hit@1']:.3f}", f"{m['hit@3']:.3f}", f"{m['mrr']:.3f}", str(m["n"])
        )
    Console().print(table)
    shares = ", ".join(f"{p} {s:.0%}" for p, s in result["paths"].items() if s)
    print(f"rewrite paths: {shares}")


def run(cfg, args: argparse.Namespace) -> int:  # noqa: ANN001
    conversations = read_conversations(args.questions, args.limit)
    if not conversations:
        raise UserFacingError(f"no conversations in {args.questions}")
    use_llm = args.rewrite == "llm" or (args.rewrite == "cfg" and cfg.chains.rewrite_with_llm)
    rewriter = make_rewriter(cfg) if use_llm else None
    result = evaluate_followups(cfg, conversations, rewriter=rewriter,
                                prior_weight=args.prior_weight,
                                resolve=args.resolve == "rules")  # fmt: skip
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result, f"{args.questions.name} ({len(conversations)} conversations)")
    return 0
