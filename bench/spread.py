"""How a bench reports a set of timings: nearest-rank percentiles, a p50/p95/max spread, and
that spread as one line of text."""

from __future__ import annotations

from collections.abc import Sequence


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
