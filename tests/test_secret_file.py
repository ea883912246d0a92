"""The users and API keys files (app/secret_file.py): unreadable or mis-shaped files are named to
the user, writes are atomic and owner-only, and each file keeps its own section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.api.keys import load_keys
from app.auth import load_users
from app.secret_file import read_section, write_section
from settings.errors import UserFacingError


def test_a_broken_file_is_named_with_what_it_is(tmp_path: Path) -> None:
    broken = tmp_path / "users.json"
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(UserFacingError, match=r"cannot read the users file .*users\.json"):
        load_users(broken)
    wrong = tmp_path / "api_keys.json"
    wrong.write_text(json.dumps({"users": {}}), encoding="utf-8")
    with pytest.raises(UserFacingError, match=r"is not an API keys file \(expected \{\"keys\""):
        load_keys(wrong)


def test_written_atomically_owner_only_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "keys.json"
    write_section(path, "keys", {"a": {"hash": "h"}})
    write_section(path, "keys", {"b": {"hash": "g"}})
    assert read_section(path, "keys", "API keys file") == {"b": {"hash": "g"}}
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["keys.json"]  # no temporary file left
    assert read_section(tmp_path / "absent.json", "keys", "API keys file") == {}
