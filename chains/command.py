"""``python -m app ask "question" [--mode ...] [--json]``: answer one question from the index."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from chains.result import MODES, AnswerResult, DoneEvent, TokenEvent
from settings.config import Config

JSON_SOURCE_FIELDS = (
    "n", "pmid", "title", "url", "year", "journal", "authors", "confidence", "passage",
    "rrf_score", "ranks",
)  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question", help="the question, in quotes")
    parser.add_argument("--mode", choices=MODES, default=None, help="default: chains.mode")
    parser.add_argument("--json", action="store_true", help="print the full result as JSON")
    parser.add_argument(
        "--history",
        default=None,
        help='earlier turns as JSON [["question", "answer"], ...] (conversational mode)',
    )


def result_json(result: AnswerResult) -> dict:
    data = result.model_dump()
    data["sources"] = [{k: s.model_dump()[k] for k in JSON_SOURCE_FIELDS} for s in result.sources]
    return data


def format_sources(result: AnswerResult) -> str:
    lines = []
    for s in result.sources:
        bits = [s.title or "(untitled)"]
        meta = ", ".join(str(x) for x in (s.journal, s.year) if x)
        if meta:
            bits.append(f"({meta})")
        lines.append(f"[{s.n}] " + " ".join(bits) + f"\n    {s.url}")
    return "\n".join(lines)


def _parse_history(text: str | None) -> list[tuple[str, str]]:
    if not text:
        return []
    from settings.errors import UserFacingError

    try:
        data = json.loads(text)
        return [(str(u), str(a)) for u, a in data]
    except (ValueError, TypeError) as err:
        raise UserFacingError(
            '--history must be JSON like [["first question", "its answer"]]'
        ) from err


async def _stream(assistant, question: str, mode: str, history, out) -> AnswerResult:
    result: AnswerResult | None = None
    async for event in assistant.astream(question, mode=mode, history=history):
        if isinstance(event, TokenEvent) and out is not None:
            out.write(event.text)
            out.flush()
        elif isinstance(event, DoneEvent):
            result = event.result
    assert result is not None
    return result


def run(cfg: Config, args: argparse.Namespace) -> int:
    from chains.assistant import Assistant

    mode = args.mode or cfg.chains.mode
    history = _parse_history(args.history)
    assistant = Assistant.from_config(cfg)
    if args.json:
        result = asyncio.run(_stream(assistant, args.question, mode, history, None))
        print(json.dumps(result_json(result), indent=2, ensure_ascii=False))
        return 0
    result = asyncio.run(_stream(assistant, args.question, mode, history, sys.stdout))
    print()
    if result.sub_queries:
        print("\nSub-queries: " + " | ".join(result.sub_queries))
    if result.searched_question != result.question:
        print(f"\nSearched: {result.searched_question}")
    if result.filters:
        print(f"Filters: {result.filters}")
    if result.sources:
        print("\nSources:\n" + format_sources(result))
    return 0
