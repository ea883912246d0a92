"""``python -m app bench answer``: time to first token and full-answer time per mode.

Questions come from the shared PubMedQA file (first N of the chosen split); the LLM is loaded and
warmed up once before timing. Reports p50/p95 per mode.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

from chains.result import MODES, AnswerResult, DoneEvent, TokenEvent
from settings.config import Config

SHARED_QUESTIONS = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "eval" / "pubmedqa_pqal.jsonl"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", type=int, default=50, help="questions per mode (default 50)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=["plain"])
    parser.add_argument("--questions", default=str(SHARED_QUESTIONS), help="JSONL with question")
    parser.add_argument("--split", default="test")
    parser.add_argument("--json", action="store_true")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    idx = min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))
    return s[idx]


def load_questions(path: Path, split: str, n: int) -> list[str]:
    out: list[str] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            if split != "all" and row.get("split", split) != split:
                continue
            if row.get("question"):
                out.append(str(row["question"]))
            if len(out) >= n:
                break
    return out


async def timed(assistant, question: str, mode: str) -> tuple[float, float, AnswerResult, int]:
    t0 = time.perf_counter()
    first = None
    tokens = 0
    result = None
    history = (
        [("What is attention deficit hyperactivity disorder?", "A disorder [1].")]
        if mode == "conversational"
        else None
    )
    async for ev in assistant.astream(question, mode=mode, history=history):
        if isinstance(ev, TokenEvent):
            tokens += 1
            if first is None:
                first = time.perf_counter() - t0
        elif isinstance(ev, DoneEvent):
            result = ev.result
    total = time.perf_counter() - t0
    return first if first is not None else total, total, result, tokens  # type: ignore[return-value]


def run(cfg: Config, args: argparse.Namespace) -> int:
    path = Path(args.questions)
    if not path.is_file():
        print(
            f"skipped: question file not found: {path} (pass --questions FILE.jsonl)",
            file=sys.stderr,
        )
        return 0
    from chains.assistant import Assistant

    questions = load_questions(path, args.split, args.n)
    assistant = Assistant.from_config(cfg)
    t = time.perf_counter()
    _ = assistant.llm
    load_s = time.perf_counter() - t
    asyncio.run(timed(assistant, questions[0], "plain"))  # warm-up (first-call overheads)

    report: dict = {"n": len(questions), "llm_load_s": round(load_s, 2), "modes": {}}
    for mode in args.modes:
        ttft: list[float] = []
        total: list[float] = []
        chars = 0
        refused = 0
        for q in questions:
            first, full, result, _ = asyncio.run(timed(assistant, q, mode))
            if result.refused:
                refused += 1
                continue
            ttft.append(first)
            total.append(full)
            chars += len(result.answer)
        report["modes"][mode] = {
            "answered": len(total),
            "refused": refused,
            "ttft_p50_s": round(percentile(ttft, 50), 3),
            "ttft_p95_s": round(percentile(ttft, 95), 3),
            "total_p50_s": round(percentile(total, 50), 3),
            "total_p95_s": round(percentile(total, 95), 3),
            "mean_s": round(statistics.fmean(total), 3) if total else None,
            "mean_answer_chars": round(chars / max(1, len(total))),
        }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"questions: {report['n']}  LLM load: {report['llm_load_s']} s")
    print(f"{'mode':<15}{'n':>4}{'TTFT p50':>10}{'p95':>8}{'total p50':>11}{'p95':>8}")
    for mode, r in report["modes"].items():
        print(
            f"{mode:<15}{r['answered']:>4}{r['ttft_p50_s']:>10}{r['ttft_p95_s']:>8}"
            f"{r['total_p50_s']:>11}{r['total_p95_s']:>8}"
        )
    return 0
