"""How a bench reports: nearest-rank percentiles, a p50/p95/max spread, that spread as one line
of text, and the report written, printed and turned into an exit code."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank ``q``-th percentile of ``values``; None when there are none."""
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


def spread(values: Sequence[float | None]) -> dict[str, float | None]:
    """Count, p50, p95 and max of the values that were seen (None: never happened)."""
    seen = [v for v in values if v is not None]
    return {"n": len(seen), "p50": percentile(seen, 50), "p95": percentile(seen, 95),
            "max": max(seen) if seen else None}


def format_spread(s: dict[str, float | None]) -> str:
    if not s["n"]:
        return "never"
    return f"p50 {s['p50']:.2f} s, p95 {s['p95']:.2f} s, max {s['max']:.2f} s (n={s['n']})"


def emit_report(rep: dict[str, Any], out: str | None, as_json: bool,
                print_text: Callable[[dict[str, Any]], None]) -> int:
    """Write the report to ``out`` (when given), print it (JSON or text) and return the exit
    code: 0 when the run was ``ok``."""
    if out:
        Path(out).write_text(json.dumps(rep, indent=2), encoding="utf-8")
    if as_json:
        print(json.dumps(rep, indent=2))
    else:
        print_text(rep)
    return 0 if rep["ok"] else 1
