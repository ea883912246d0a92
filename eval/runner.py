"""The loop every answer evaluation shares: ask each question, keep a row per answer (written to
``--out`` as it comes, so a long run can be watched and a killed one keeps what it had), report
progress on stderr, then print the metrics as JSON or as aligned lines."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Row = dict[str, Any]


def answer_each(
    questions: Sequence[dict[str, Any]],
    row_for: Callable[[dict[str, Any]], Row],
    out: str | None = None,
    *,
    quiet: bool = False,
) -> tuple[list[Row], float]:
    """(one row per question, seconds taken)."""
    out_fh = Path(out).open("w", encoding="utf-8") if out else None
    rows: list[Row] = []
    t0 = time.perf_counter()
    try:
        for i, question in enumerate(questions, start=1):
            row = row_for(question)
            rows.append(row)
            if out_fh:
                out_fh.write(json.dumps(row) + "\n")
                out_fh.flush()
            if not quiet:
                print(f"[{i}/{len(questions)}] {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    finally:
        if out_fh:
            out_fh.close()
    return rows, round(time.perf_counter() - t0, 1)


def print_report(report: dict[str, Any], *, as_json: bool, width: int = 26) -> None:
    if as_json:
        print(json.dumps(report))
        return
    for key, value in report.items():
        print(f"{key:{width}} {value}")
