"""How far the dense (embedding) part of a running build is: a small JSON file beside its shards.

The build writes ``<index.dir>/<name>.work/progress.json`` (atomically: a temporary file, then
``os.replace``) after every embedded batch; the chat reads it to show "semantic index: 45% (about
12 minutes left)". Nothing in it is trusted beyond its validated numbers, and a missing or
unreadable file simply means "no progress known".

A test seam, :func:`wait_until_released`: with ``$PUBMED_ASSISTANT_HOLD_DENSE`` naming a file, a
build waits before embedding until that file exists, so a test can look at the chat while the
dense index is still building, then let the build finish.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

HOLD_ENV = "PUBMED_ASSISTANT_HOLD_DENSE"
HOLD_POLL_S = 0.2


class DenseProgress(BaseModel):
    """Chunks embedded so far (``done``) of ``total``, at ``rate`` chunks/s (this run's own)."""

    done: int = Field(ge=0)
    total: int = Field(ge=0)
    rate: float = Field(0.0, ge=0)
    pid: int = 0
    updated: float = 0.0  # time.time() of the last write

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.total else 0.0

    @property
    def seconds_left(self) -> float | None:
        """At the measured rate; None before a rate is known."""
        if self.rate <= 0:
            return None
        return max(0.0, (self.total - self.done) / self.rate)


def write_progress(path: Path, progress: DenseProgress) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(progress.model_dump_json(), encoding="utf-8")
    os.replace(tmp, path)


def read_progress(path: Path) -> DenseProgress | None:
    try:
        return DenseProgress.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError):
        return None


class ProgressWriter:
    """Counts embedded chunks and writes the file at most every ``every_s`` seconds (and at the
    start and the end). ``resumed`` chunks came from shards of an interrupted run: they count as
    done but not into this run's rate."""

    def __init__(self, path: Path, total: int, *, every_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self.total = total
        self.every_s = every_s
        self._clock = clock
        self._started = clock()
        self._last_write = float("-inf")
        self.done = 0
        self._embedded = 0

    def advance(self, n: int, *, resumed: bool = False) -> None:
        self.done += n
        if not resumed:
            self._embedded += n
        if self._clock() - self._last_write >= self.every_s or self.done >= self.total:
            self.flush()

    def rate(self) -> float:
        elapsed = self._clock() - self._started
        return self._embedded / elapsed if elapsed > 0 and self._embedded else 0.0

    def flush(self) -> None:
        self._last_write = self._clock()
        write_progress(self.path, DenseProgress(
            done=self.done, total=self.total, rate=round(self.rate(), 3), pid=os.getpid(),
            updated=time.time()))

    def restart_clock(self) -> None:
        """The rate counts from now (after a hold or a model load)."""
        self._started = self._clock()


def wait_until_released(env: dict[str, str] | None = None) -> None:
    """The test seam: block while ``$PUBMED_ASSISTANT_HOLD_DENSE`` names a file that does not
    exist yet; return at once when the variable is unset."""
    hold = (env if env is not None else os.environ).get(HOLD_ENV)
    if not hold:
        return
    path = Path(hold)
    while not path.exists():
        time.sleep(HOLD_POLL_S)
