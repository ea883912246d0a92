"""What the chat says about the semantic index: "Semantic index: 45% (about 12 minutes left)".

Read from disk (the published manifest and the running build's progress file), so it is cheap to
ask every few seconds and true for any build, the chat's own background one or a CLI build.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from indexing.progress import DenseProgress, read_progress
from indexing.store import location, read_manifest
from settings.config import Config
from settings.errors import IndexMissingError

BM25_ONLY = ("Until it is ready, answers use keyword search (BM25) alone; hybrid search "
             "(keywords + meaning) switches on by itself when it is.")
READY = "Semantic index ready: hybrid search (keywords + meaning) is on."


@dataclass(frozen=True)
class SemanticStatus:
    ready: bool
    text: str  # the chat's status message
    short: str = ""  # for the search step: "semantic index 45%, about 12 minutes left"


def time_left(seconds: float | None) -> str:
    if seconds is None:
        return "estimating the time left"
    if seconds < 60:
        return "less than a minute left"
    minutes = math.ceil(seconds / 60)
    return f"about {minutes} minute{'s' if minutes != 1 else ''} left"


def progress_text(progress: DenseProgress | None, building: bool, log: str) -> str:
    if progress is not None and progress.total:
        pct = math.floor(100 * progress.fraction)
        head = f"Semantic index: {pct}% ({time_left(progress.seconds_left)})"
        if not building:
            head += f"; its build stopped (log: {log}) and resumes on the next `make run`"
        return f"{head}. {BM25_ONLY}"
    if building:
        return f"Semantic index: starting (reading the corpus). {BM25_ONLY}"
    return (f"Semantic index: not being built (log: {log}); it is built on the next `make run` "
            "or by `python -m app index build`. Answers use keyword search (BM25) alone.")


def semantic_status(cfg: Config, *, building: bool, log: str = "") -> SemanticStatus | None:
    """The published index's semantic state; None when there is no local index to describe."""
    if cfg.retrieval.backend != "faiss":
        return None
    loc = location(cfg)
    folder = loc.current()
    if folder is None:
        return None
    try:
        manifest = read_manifest(folder)
    except IndexMissingError:
        return None
    if manifest.dense_ready:
        return SemanticStatus(True, READY, "semantic index ready")
    progress = read_progress(loc.progress)
    building = building or (progress is not None and _alive(progress.pid))
    return SemanticStatus(False, progress_text(progress, building, log),
                          short_text(progress, building))


def short_text(progress: DenseProgress | None, building: bool) -> str:
    if progress is not None and progress.total:
        return (f"semantic index {math.floor(100 * progress.fraction)}%, "
                f"{time_left(progress.seconds_left) if building else 'build stopped'}")
    return "semantic index starting" if building else "semantic index not being built"


def search_line(hybrid: bool | None, status: SemanticStatus | None) -> str | None:
    """The search step's line on how this answer searched (None: the assistant does not say)."""
    if hybrid is None:
        return None
    if hybrid:
        return "**Search:** hybrid (keywords + meaning)"
    detail = f"; {status.short}" if status is not None and not status.ready else ""
    return f"**Search:** keywords only (BM25){detail}"


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
