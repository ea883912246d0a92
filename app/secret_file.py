"""The small JSON files that hold secrets' hashes (``ui.users_file``, the API keys file): one
named section read with a user-facing error, written atomically and readable by the owner only."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from settings.errors import UserFacingError


def read_section(path: Path, section: str, what: str) -> dict[str, Any]:
    """``{section: {...}}`` in ``path``; {} when the file is absent. ``what`` names the file for
    the user ("users file", "API keys file")."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise UserFacingError(f"cannot read the {what} {path}: {err}") from None
    found = data.get(section) if isinstance(data, dict) else None
    if not isinstance(found, dict):
        article = "an" if what[:1].lower() in "aeiou" else "a"
        expected = json.dumps({section: {}}).replace("{}", "{...}")
        raise UserFacingError(f"{path} is not {article} {what} (expected {expected})")
    return found


def write_section(path: Path, section: str, entries: dict[str, Any]) -> None:
    """Replace ``path`` with ``{section: entries}`` atomically (a temporary file in the same
    folder, mode 0600, then a rename): a crash leaves the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({section: entries}, f, indent=2, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
