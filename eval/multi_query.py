"""``python -m app eval multiquery --questions F.jsonl ... --raw RAW.jsonl``: multi-query retrieval.

The model's sub-query text for each question is read from ``--raw`` (one ``{"question", "raw"}``
a line; written first with ``--generate``, which asks the configured LLM with the chat's prompt
and token limit), so that the selection can be compared on the same model output: ``parsed``
(every line the parser keeps, the chat before sub-queries were checked) and ``selected``
(:func:`chains.subqueries.sub_queries`, the chat now). Each is searched as multi-query mode
searches (the question, then each sub-query, the lists fused by RRF, ``retrieval.topk_rrf``
kept); reported: hit@1 / hit@3 / MRR of the gold, the share of questions with fewer than two
sub-queries, and the mean number searched. The question alone is the baseline.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from eval.followups import metrics, pmids_of, rank_of
from settings.errors import UserFacingError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--questions", required=True, type=Path, nargs="+",
                        help="JSONL files with question and gold_pmids")
    parser.add_argument("--raw", required=True, type=Path,
                        help="JSONL of the model's outputs ({question, raw}); see --generate")
    parser.add_argument("--generate", action="store_true",
                        help="ask the configured LLM first and write --raw")
    parser.add_argument("--json", action="store_true", help="print JSON")


def read_questions(paths: list[Path]) -> list[dict[str, Any]]:
    rows = []
    for path in paths:
        if not path.is_file():
            raise UserFacingError(f"question file not found: {path}")
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                rows.append({"question": row["question"],
                             "gold_pmids": [str(p) for p in row.get("gold_pmids") or []]})
    return rows


def generate(cfg: Any, questions: list[str], out: Path) -> None:
    from langchain_core.messages import HumanMessage

    from chains.prompts import Prompts, render
    from llms.llm import get_llm, with_max_tokens

    n = cfg.chains.n_queries
    llm = with_max_tokens(get_llm(cfg.llm, root=cfg.root), 24 * n + 16)  # as the chat asks
    template = Prompts.from_config(cfg).multi_query
    with out.open("w", encoding="utf-8") as fh:
        for i, q in enumerate(questions, start=1):
            raw = llm.invoke([HumanMessage(render(template, question=q, n=n))]).content
            fh.write(json.dumps({"question": q, "raw": raw}) + "\n")
            print(f"[{i}/{len(questions)}]", file=sys.stderr)


def fused_pmids(retriever: Any, question: str, subs: list[str], c: float, keep: int) -> list[str]:
    from retrievers.filters import parse_filters
    from retrievers.fusion import reciprocal_rank_fusion

    first = retriever.retrieve(question)
    if first.empty:
        return []
    _, filters = parse_filters(question)
    lists = [list(first.documents)]
    for q in subs:
        found = retriever.retrieve(q, filters=filters)
        if not found.empty:
            lists.append(list(found.documents))
    return pmids_of(reciprocal_rank_fusion(lists, c=c)[:keep])


def evaluate(cfg: Any, questions: list[dict[str, Any]], raws: dict[str, str],
             retriever: Any = None) -> dict[str, Any]:  # fmt: skip
    from chains.queries import parse_queries
    from chains.subqueries import sub_queries
    from retrievers.filters import parse_filters
    from retrievers.loading import load_retriever

    retriever = retriever or load_retriever(cfg)
    encoder = retriever.embedder
    n, c, keep = cfg.chains.n_queries, cfg.retrieval.rrf_c, cfg.retrieval.topk_rrf
    ranks: dict[str, list[int | None]] = {"alone": [], "parsed": [], "selected": []}
    counts: dict[str, list[int]] = {"parsed": [], "selected": []}
    rows = []
    for item in questions:
        q, gold = item["question"], item["gold_pmids"]
        raw = raws.get(q, "")
        searched, _ = parse_filters(q)
        subs = {"parsed": parse_queries(raw, n, original=q),
                "selected": sub_queries(searched, raw, n, encoder, retriever.corpus)}
        alone = pmids_of(retriever.retrieve(q).documents)
        ranks["alone"].append(rank_of(alone, gold))
        row: dict[str, Any] = {"question": q, "alone": rank_of(alone, gold)}
        for name, lines in subs.items():
            r = rank_of(fused_pmids(retriever, q, lines, c, keep), gold)
            ranks[name].append(r)
            counts[name].append(len(lines))
            row[name] = {"rank": r, "sub_queries": lines}
        rows.append(row)
    return {
        **{name: metrics(r) for name, r in ranks.items()},
        "fewer_than_two": {k: round(sum(x < 2 for x in v) / len(v), 4) for k, v in counts.items()},
        "mean_sub_queries": {k: round(sum(v) / len(v), 2) for k, v in counts.items()},
        "n": len(rows),
        "rows": rows,
    }


def run(cfg: Any, args: argparse.Namespace) -> int:
    questions = [q for q in read_questions(args.questions) if q["gold_pmids"]]
    if args.generate:
        generate(cfg, [q["question"] for q in questions], args.raw)
    if not args.raw.is_file():
        raise UserFacingError(f"{args.raw} not found: write it with --generate")
    raws = {}
    for line in args.raw.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            raws[row["question"]] = row["raw"]
    result = evaluate(cfg, questions, raws)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key in ("alone", "parsed", "selected"):
            print(f"{key:9} {result[key]}")
        print(f"fewer than two sub-queries: {result['fewer_than_two']}")
        print(f"mean sub-queries searched: {result['mean_sub_queries']}")
    return 0
