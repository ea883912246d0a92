"""Other processes wanting the cores while a benchmark times something: what a laptop's chat
meets when an index build, the browser or a second request runs beside it."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from contextlib import contextmanager


def _spin() -> None:  # pragma: no cover - runs in the child until terminated
    while True:
        pass


@contextmanager
def busy_cores(n: int) -> Iterator[None]:
    """Run ``n`` processes that each keep one core busy for the duration of the block."""
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_spin, daemon=True) for _ in range(n)]
    for w in workers:
        w.start()
    try:
        yield
    finally:
        for w in workers:
            w.terminate()
        for w in workers:
            w.join(timeout=10)
