"""Small helpers shared by test modules (shared fixtures are in tests/conftest.py, the browser
plumbing in tests/browser/harness.py)."""

from __future__ import annotations

import ast
import gc
from pathlib import Path
from typing import Any

import pytest

# What the assistant answers to a question outside its corpus (``chains.refusal``), word for word.
REFUSAL = "Sorry, but I don't know as my capabilities are focused on medical assistance"


def need(path: Path) -> Path:
    """``path`` in the shared data, or skip the test saying where it was looked for."""
    if not path.exists():
        pytest.skip(f"shared data not found at {path} (it lives beside the repo, never in it)")
    return path


def cfg_at(tmp_path: Path, **index: Any) -> Any:
    """cfg.yaml with its index at ``tmp_path`` (named ``t``); ``index`` sets other index keys."""
    from app.config import load_config

    return load_config(overrides={"index": {"dir": str(tmp_path), "name": "t", **index}})


async def until(check: Any, shown: Any, timeout_s: float = 30) -> None:
    """Wait in a running event loop for ``check()`` (a stall guard, not a speed goal); fail
    showing ``shown``."""
    import asyncio

    deadline = asyncio.get_running_loop().time() + timeout_s
    while not check():
        assert asyncio.get_running_loop().time() < deadline, shown
        await asyncio.sleep(0.01)


def parse_python(source: Path | str) -> ast.Module:
    """``ast.parse`` of a source file (or its text) with the garbage collector held off.
    Python 3.11.7's AST constructor counts its recursion depth and raises "SystemError: AST
    constructor recursion depth mismatch" when a collection in the middle runs Python
    finalizers (seen in CI: an earlier test's unretrieved asyncio futures logged their errors
    during the parse)."""
    text = source.read_text(encoding="utf-8") if isinstance(source, Path) else source
    gc.disable()
    try:
        return ast.parse(text)
    finally:
        gc.enable()
