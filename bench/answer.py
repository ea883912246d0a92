"""``python -m app bench answer``: time to first token and full-answer time per mode.

Questions come from the shared PubMedQA file (first N of the chosen split); the LLM is loaded and
warmed up once before timing. Reports p50/p95 per mode.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import time
from pathlib import Path

from chains.modes import mode_names
from chains.result import AnswerResult, DoneEvent, TokenEvent
from settings.config import Config, llm_with_backend

SHARED_QUESTIONS = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "eval" / "pubmedqa_pqal.jsonl"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", type=int, default=50, help="questions per mode (default 50)")
    parser.add_argument("--modes", nargs="+", choices=mode_names(), default=["plain"])
    parser.add_argument("--questions", default=str(SHARED_QUESTIONS), help="JSONL with question")
    parser.add_argument("--split", default="test")
    parser.add_argument("--backends", default=None,
                        help="compare LLM backends in one run, comma-separated; each may set "
                        "llm keys: huggingface,gpt4all,gpt4all:n_threads=1:n_batch=512 "
                        "(default: cfg.yaml's llm as is)")  # fmt: skip
    parser.add_argument("--json", action="store_true")


def backend_config(cfg: Config, spec: str) -> Config:
    """``gpt4all:n_threads=1:n_batch=512`` -> cfg with those ``llm`` settings (validated)."""
    name, *pairs = spec.split(":")
    update: dict = {"backend": name}
    for pair in pairs:
        key, _, value = pair.partition("=")
        update[key] = value
    llm = llm_with_backend(cfg.llm, name, **{k: v for k, v in update.items() if k != "backend"})
    return cfg.model_copy(update={"llm": llm})


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
    specs = [b.strip() for b in (getattr(args, "backends", None) or "").split(",") if b.strip()]
    if not specs:
        single = _bench_backend(Assistant.from_config(cfg), questions, args)
        report = {"n": len(questions), **single}
        return _print(report, args)
    from retrievers.loading import load_retriever

    retriever = load_retriever(cfg)  # one index for every backend
    report = {"n": len(questions), "backends": {}}
    for spec in specs:
        assistant = Assistant.from_config(backend_config(cfg, spec), retriever=retriever)
        report["backends"][spec] = _bench_backend(assistant, questions, args)
    return _print(report, args)


def _bench_backend(assistant, questions: list[str], args: argparse.Namespace) -> dict:  # noqa: ANN001
    t = time.perf_counter()
    _ = assistant.llm
    load_s = time.perf_counter() - t
    asyncio.run(timed(assistant, questions[0], "plain"))  # warm-up (first-call overheads)

    report: dict = {
        "backend": assistant.cfg.llm.backend,
        "model": str(assistant.llm._identifying_params.get("model_name", "")),
        "llm_load_s": round(load_s, 2),
        "modes": {},
    }
    for mode in args.modes:
        ttft: list[float] = []
        total: list[float] = []
        chars = 0
        refused = cited = with_verdict = 0
        for q in questions:
            first, full, result, _ = asyncio.run(timed(assistant, q, mode))
            if result.refused:
                refused += 1
                continue
            ttft.append(first)
            total.append(full)
            chars += len(result.answer)
            cited += bool(re.search(r"\[\d+\]", result.answer))
            with_verdict += result.verdict is not None
        report["modes"][mode] = {
            "answered": len(total),
            "refused": refused,
            "ttft_p50_s": round(percentile(ttft, 50), 3),
            "ttft_p95_s": round(percentile(ttft, 95), 3),
            "total_p50_s": round(percentile(total, 50), 3),
            "total_p95_s": round(percentile(total, 95), 3),
            "mean_s": round(statistics.fmean(total), 3) if total else None,
            "mean_answer_chars": round(chars / max(1, len(total))),
            "cited": cited,  # answers with at least one [n] citation
            "with_verdict": with_verdict,  # answers led by the yes/no verdict
        }
    return report


def _print(report: dict, args: argparse.Namespace) -> int:
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    runs = report.get("backends") or {report.get("backend", "llm"): report}
    print(f"questions: {report['n']}")
    print(f"{'backend':<28}{'mode':<15}{'n':>4}{'TTFT p50':>10}{'p95':>8}{'total p50':>11}"
          f"{'p95':>8}{'cited':>7}{'verdict':>9}")  # fmt: skip
    for name, run_ in runs.items():
        for mode, r in run_["modes"].items():
            print(
                f"{name:<28}{mode:<15}{r['answered']:>4}{r['ttft_p50_s']:>10}{r['ttft_p95_s']:>8}"
                f"{r['total_p50_s']:>11}{r['total_p95_s']:>8}{r['cited']:>7}{r['with_verdict']:>9}"
            )
        print(f"{name:<28}LLM load {run_['llm_load_s']} s")
    return 0
