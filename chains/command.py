"""``python -m app ask "question" [--mode ...] [--json | --format ris|bibtex]``: answer one
question from the index; ``--format ris|bibtex`` prints only its sources, as a file for a
reference manager (``> sources.ris``)."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from typing import TYPE_CHECKING, Any, TextIO

from chains.modes import mode_names
from chains.question_checks import parse_history, validate_question
from chains.record import record_json
from chains.references import EXPORTS, vancouver_list
from chains.result import AnswerResult, DoneEvent, TokenEvent
from ingest.text import strip_unsafe
from retrievers.filters import Filters
from settings.config import Config

if TYPE_CHECKING:
    from chains.assistant import Assistant


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question", help="the question, in quotes")
    parser.add_argument("--mode", choices=mode_names(), default=None, help="default: chains.mode")
    parser.add_argument("--json", action="store_true", help="print the full result as JSON")
    parser.add_argument(
        "--format",
        choices=("text", "json", *EXPORTS),
        default="text",
        help="text (default: the answer, its sources and their references), json (as --json), "
        "or the sources alone as an RIS or BibTeX file",
    )
    parser.add_argument(
        "--history",
        default=None,
        help='earlier turns as JSON [["question", "answer"], ...] (conversational mode)',
    )


def result_json(result: AnswerResult) -> dict[str, Any]:
    """The answer record (:mod:`chains.record`), the same the HTTP API returns."""
    return record_json(result)


def format_findings(result: AnswerResult) -> str:
    """Each source's evidence sentences (its key findings), each ending with its [n]."""
    return "\n".join(f"- {' '.join(e.text.split())} [{n}]" for n, e in result.key_findings())


def format_sources(result: AnswerResult) -> str:
    lines = []
    for s in result.sources:
        bits = [s.title or "(untitled)"]
        meta = ", ".join(str(x) for x in (s.journal, s.year) if x)
        if meta:
            bits.append(f"({meta})")
        lines.append(f"[{s.n}] " + " ".join(bits) + f"\n    {s.url}")
    return "\n".join(lines)


# JSON escapes C0 controls itself; C1 controls (U+009B is a CSI) and bidi overrides it leaves raw
_RAW_IN_JSON = re.compile(r"[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def json_for_terminal(data: object) -> str:
    """``data`` as JSON whose control and bidi characters are all ``\\uXXXX`` escapes."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    return _RAW_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _print(text: str = "") -> None:
    """Print text that may come from abstracts or the user: no escape codes reach the terminal."""
    print(strip_unsafe(text))


async def _stream(
    assistant: Assistant,
    question: str,
    mode: str,
    history: list[tuple[str, str]] | None,
    out: TextIO | None,
) -> AnswerResult:
    result: AnswerResult | None = None
    async for event in assistant.astream(question, mode=mode, history=history):
        if isinstance(event, TokenEvent) and out is not None:
            out.write(strip_unsafe(event.text))
            out.flush()
        elif isinstance(event, DoneEvent):
            result = event.result
    assert result is not None
    return result


def run(cfg: Config, args: argparse.Namespace) -> int:
    from chains.assistant import Assistant

    mode = args.mode or cfg.chains.mode
    # checked before anything is loaded: a bad question costs milliseconds, not a model load
    question = validate_question(args.question, cfg.chains.max_question_chars)
    history = parse_history(args.history, cfg.chains.max_question_chars)
    assistant = Assistant.from_config(cfg)
    fmt = "json" if args.json else args.format
    if fmt == "json":
        result = asyncio.run(_stream(assistant, question, mode, history, None))
        print(json_for_terminal(result_json(result)))
        return 0
    if fmt in EXPORTS:
        result = asyncio.run(_stream(assistant, question, mode, history, None))
        if not result.sources:
            print("error: the answer has no sources to export", file=sys.stderr)
            return 1
        sys.stdout.write(strip_unsafe(EXPORTS[fmt][0](result.sources)))
        return 0
    result = asyncio.run(_stream(assistant, question, mode, history, sys.stdout))
    _print()
    if result.sub_queries:
        _print("\nSub-queries: " + " | ".join(result.sub_queries))
    if result.searched_question != result.question:
        _print(f"\nSearched: {result.searched_question}")
    if result.filters:
        _print(f"Filters: {Filters(**result.filters).describe()}")
    if result.key_findings():
        _print(f"\n{result.findings_title()}:\n" + format_findings(result))
    if result.sources:
        _print("\nSources:\n" + format_sources(result))
        _print("\nReferences:\n" + "\n".join(vancouver_list(result.sources)))
    return 0
