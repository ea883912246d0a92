"""``python -m app eval conversations --questions FILE.jsonl``: conversations of any length.

Each line is ``{"cid", "turns": [{"q", "gold_pmids"}, {"q", "standalone", "gold_pmids",
"type"}, ...]}`` (``../shared/data/eval/conversations_dev.jsonl``). The conversation is asked
turn by turn with the accumulated history (the user's earlier questions, as many as
``chains.conversation_depth`` keeps, as the chat passes them), each later turn searched the way
conversational mode searches it (:func:`chains.conversation.plan_followup`, then
:func:`retrievers.followup.retrieve_followup`) and, for comparison, alone. Reported: hit@1 /
hit@3 / MRR of each later turn's gold (among the first 20 articles), per move type, and how
close the question searched in context is to the file's ideal standalone question (MiniLM
cosine, mean).

``--resolve none`` searches each follow-up the way the chat did before conversations were
resolved (as written + the previous question and the follow-up), for before/after figures.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from eval.followups import DEPTH, metrics, pmids_of, rank_of
from eval.jsonl import read_jsonl
from settings.errors import UserFacingError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--questions", required=True, type=Path,
                        help="JSONL: cid, turns [{q, gold_pmids, standalone?, type?}, ...]")
    parser.add_argument("--limit", type=int, default=None, help="first N conversations only")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--resolve", choices=("rules", "none"), default="rules",
                        help="resolve follow-ups against the conversation (rules, the chat's "
                        "way) or search as written + the previous question (none: before)")


def read_conversations(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    def parse(row: dict[str, Any]) -> dict[str, Any]:
        turns = [{**t, "q": str(t["q"]), "gold_pmids": [str(p) for p in t["gold_pmids"]]}
                 for t in row["turns"]]  # fmt: skip
        if len(turns) < 2:
            raise ValueError("a conversation needs two turns or more")
        return {**row, "turns": turns}

    return read_jsonl(path, "conversation", "a JSON object with 'turns': [{'q', 'gold_pmids'}]",
                      parse, limit)


def conversation_rows(
    retriever: Any, conv: dict[str, Any], *, depth: int, resolve: bool, prior_weight: float = 0.0
) -> list[dict[str, Any]]:
    """One row per later turn: its gold's rank with the conversation and alone, and the text
    searched in context."""
    from chains.conversation import embedding_similarity, plan_followup
    from chains.queries import names_own_topic, needs_context
    from retrievers.followup import retrieve_followup

    corpus = retriever.corpus
    embedder = retriever.embedder
    similar = embedding_similarity(embedder) if embedder is not None else None
    asked: list[str] = []
    rows = []
    for i, turn in enumerate(conv["turns"]):
        question = turn["q"]
        if i == 0:
            asked.append(question)
            continue
        previous = asked[-depth:] if depth else []
        if resolve:
            searched, prev, options = plan_followup(question, previous, corpus, similar)
        else:
            searched, prev = question, previous
            options = {"stands_alone": not needs_context(question),
                       "own_topic": names_own_topic(question, corpus)}  # fmt: skip
        found = retrieve_followup(retriever, searched, prev, k=DEPTH, prior_weight=prior_weight,
                                  **options)  # type: ignore[arg-type]  # fmt: skip
        alone = retriever.retrieve(question, k=DEPTH)
        gold = turn["gold_pmids"]
        rows.append({
            "cid": conv.get("cid"),
            "turn": i + 1,
            "question": question,
            "type": list(turn.get("type") or []),
            "path": found.path,
            # the as-written text, the resolved one, and the focused one (chains.conversation)
            "in_context": found.queries[1] if len(found.queries) > 1 else searched,
            "focus": found.queries[2] if len(found.queries) > 2 else "",
            "standalone_gold": turn.get("standalone") or "",
            "with_history": rank_of(pmids_of(found.documents), gold),
            "without_history": rank_of(pmids_of(alone.documents), gold),
            "top3": pmids_of(found.documents[:3]),
        })
        asked.append(question)
    return rows


def add_similarity(rows: list[dict[str, Any]], encoder: Any) -> None:
    """Each row's ``similarity``: MiniLM cosine of the text searched in context and the ideal
    standalone question."""
    pairs = [(r["in_context"], r["standalone_gold"]) for r in rows if r["standalone_gold"]]
    if encoder is None or not pairs:
        return
    a = encoder.encode([p[0] for p in pairs])
    b = encoder.encode([p[1] for p in pairs])
    sims = iter((a * b).sum(axis=1).tolist())
    for r in rows:
        if r["standalone_gold"]:
            r["similarity"] = round(float(next(sims)), 4)


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        for t in r["type"] or ["untyped"]:
            by_type[t].append(r)
    sims = [r["similarity"] for r in rows if "similarity" in r]
    paths: dict[str, int] = defaultdict(int)
    for r in rows:
        paths[r["path"]] += 1
    return {
        "with_history": metrics([r["with_history"] for r in rows]),
        "without_history": metrics([r["without_history"] for r in rows]),
        "by_type": {t: metrics([r["with_history"] for r in sub])
                    for t, sub in sorted(by_type.items())},  # fmt: skip
        "standalone_similarity": round(sum(sims) / len(sims), 4) if sims else None,
        "paths": dict(paths),
        "n": len(rows),
    }


def evaluate_conversations(
    cfg: Any, conversations: list[dict[str, Any]], retriever: Any = None, *, resolve: bool = True
) -> dict[str, Any]:
    from retrievers.loading import load_retriever

    retriever = retriever or load_retriever(cfg)
    started = time.perf_counter()
    rows = [r for c in conversations for r in conversation_rows(
        retriever, c, depth=cfg.chains.conversation_depth, resolve=resolve)]  # fmt: skip
    add_similarity(rows, retriever.embedder)
    result = summarize(rows)
    result["rows"] = rows
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result


def print_table(result: dict[str, Any], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for col in ("later turns", "hit@1", "hit@3", "MRR", "n"):
        table.add_column(col, justify="left" if col == "later turns" else "right")
    rows = [("with the conversation", result["with_history"]),
            ("asked alone", result["without_history"])]
    rows += [(f"  {t}", m) for t, m in result["by_type"].items()]
    for name, m in rows:
        table.add_row(name, f"{m['hit@1']:.3f}", f"{m['hit@3']:.3f}", f"{m['mrr']:.3f}",
                      str(m["n"]))  # fmt: skip
    Console().print(table)
    print(f"standalone similarity (MiniLM cosine, mean): {result['standalone_similarity']}")
    print(f"paths: {result['paths']}")


def run(cfg: Any, args: argparse.Namespace) -> int:
    conversations = read_conversations(args.questions, args.limit)
    if not conversations:
        raise UserFacingError(f"no conversations in {args.questions}")
    result = evaluate_conversations(cfg, conversations, resolve=args.resolve == "rules")
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result, f"{args.questions.name} ({len(conversations)} conversations)")
    return 0
