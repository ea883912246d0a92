"""The evaluation's question files: one JSON object a line, each checked as it is read, a bad line
named by its file and number."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from settings.errors import UserFacingError

T = TypeVar("T")


def read_jsonl(path: Path, kind: str, expected: str, parse: Callable[[dict[str, Any]], T | None],
               limit: int | None = None) -> list[T]:
    """``parse`` each non-blank line's object (None: leave the row out). A line that is not JSON or
    lacks a field (KeyError, TypeError) is "expected ``expected``"; a ValueError from ``parse``
    says what else is wrong with it. ``kind``: what the file holds, for the not-found error."""
    if not path.is_file():
        raise UserFacingError(f"{kind} file not found: {path}")
    rows: list[T] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = parse(json.loads(line))
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            raise UserFacingError(f"{path}:{n}: expected {expected} ({err})") from None
        except ValueError as err:
            raise UserFacingError(f"{path}:{n}: {err}") from None
        if row is not None:
            rows.append(row)
    return rows[:limit] if limit else rows
