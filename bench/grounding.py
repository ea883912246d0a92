"""``python -m app bench grounding``: what grounding adds to a question, in ms, on this CPU.

For PubMedQA dev questions with three real abstracts each (the gold one and two others, as
retrieval hands over ``topk_rrf: 3``): splitting + one batched MiniLM pass over the question and
every sentence + evidence selection, then the support check of four generated-like sentences
(each embedded on its own, as streaming does). Reports p50/p95 per question.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

from settings.config import Config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", type=int, default=30, help="questions (default 30)")
    parser.add_argument("--json", action="store_true")


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip() + f", {os.cpu_count()} cores"
    except OSError:
        pass
    return platform.processor() or "unknown"


def run(cfg: Config, args: argparse.Namespace) -> int:
    from eval.grounding_tune import load_dev
    from grounding.evidence import select_evidence
    from grounding.sources import SourcePool, load_encoder
    from grounding.support import SupportChecker
    from ingest.sentences import split_sentences

    rows = load_dev(None)
    encoder = load_encoder(cfg)
    encoder.encode(["warm up"])
    prepare, check = [], []
    for i, row in enumerate(rows[: args.n]):
        others = [rows[(i + 97) % len(rows)], rows[(i + 211) % len(rows)]]
        abstracts = [row["abstract"], *(o["abstract"] for o in others)]
        t = time.perf_counter()
        pool = SourcePool.build(row["question"], abstracts, encoder)
        select_evidence(pool)
        prepare.append(time.perf_counter() - t)
        claims = [s.text + " [1]" for s in split_sentences(row["long_answer"])][:2]
        claims += ["A study at the University of California found 36 cases [2].", "Yes."]
        checker = SupportChecker(pool)
        t = time.perf_counter()
        for c in claims:
            checker.check(c)
        check.append(time.perf_counter() - t)

    def ms(xs: list[float], q: float) -> float:
        return round(1000 * float(np.percentile(xs, q)), 1)

    report = {
        "questions": len(prepare),
        "evidence_ms_p50": ms(prepare, 50),
        "evidence_ms_p95": ms(prepare, 95),
        "check_4_sentences_ms_p50": ms(check, 50),
        "check_4_sentences_ms_p95": ms(check, 95),
        "embedding_backend": getattr(encoder, "backend", cfg.index.embedding_backend),
        "cpu": _cpu(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }
    if args.json:
        print(json.dumps(report))
    else:
        for k, v in report.items():
            print(f"{k:28} {v}")
    return 0
