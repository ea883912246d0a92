"""The chat's background build of the dense (semantic) index.

``make run`` publishes a lexical-only index first (``index build --dense-later``) and starts the
chat on it; :func:`start_if_pending`, called by ``serve`` before the chat opens, then runs the
full build as a separate process (``python -m app index build --if-needed --quiet``) at a lower
CPU priority, so answers stay quick on a small machine and a crash or a kill of the build never
takes the chat down. The build is the CLI's own: it resumes from the embeddings an interrupted
run left (``<name>.work/``), writes its progress there (:mod:`indexing.progress`) and publishes
the complete index with the usual atomic swap, which the chat's retriever then picks up
(:mod:`retrievers.live`). Its output goes to ``<index.dir>/<name>.dense-build.log``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from indexing.store import location, read_manifest
from settings.config import REPO_ROOT, Config
from settings.errors import IndexMissingError

NICENESS = 10  # below the chat's own priority: the build takes what the answers leave

_lock = threading.Lock()
_process: subprocess.Popen[bytes] | None = None


def dense_pending(cfg: Config) -> bool:
    """Whether the published index is lexical-only (its dense part still to be built)."""
    if cfg.retrieval.backend != "faiss":
        return False
    folder = location(cfg).current()
    if folder is None:
        return False
    try:
        return not read_manifest(folder).dense_ready
    except IndexMissingError:
        return False


def log_path(cfg: Config) -> Path:
    loc = location(cfg)
    return loc.root / f"{loc.name}.dense-build.log"


def build_command(config_path: str | None) -> list[str]:
    cmd = [sys.executable, "-m", "app"]
    if config_path:
        cmd += ["--config", str(Path(config_path).expanduser().resolve())]
    return cmd + ["index", "build", "--if-needed", "--quiet"]


def _lower_priority() -> None:  # runs in the child, before exec
    os.nice(NICENESS)


def start_if_pending(
    cfg: Config, config_path: str | None
) -> subprocess.Popen[bytes] | None:
    """Start the background build when the index is lexical-only; None when there is nothing
    to build (or one is already running from this process)."""
    global _process
    with _lock:
        if _process is not None and _process.poll() is None:
            return None
        if not dense_pending(cfg):
            return None
        path = log_path(cfg)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab") as log:
            _process = subprocess.Popen(
                build_command(config_path), cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, preexec_fn=_lower_priority,
            )  # fmt: skip
        return _process


def running() -> bool:
    """Whether this process's background build is still running."""
    with _lock:
        return _process is not None and _process.poll() is None
