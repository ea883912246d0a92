"""Sign-in pieces (app/auth.py) without a server: the session secret, the users file, password
checks. The browser test (tests/test_ui_browser_history_auth.py) signs in for real."""

from __future__ import annotations

from pathlib import Path

import pytest

from app import auth
from app.config import load_config
from settings.errors import UserFacingError


def _cfg(tmp_path: Path) -> object:
    return load_config(overrides={"history": {"folder": str(tmp_path / "hist")},
                                  "ui": {"users_file": str(tmp_path / "hist" / "users.json")}})


def test_the_session_secret_is_made_once_kept_private_and_the_environment_wins(
        tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    env: dict[str, str] = {}
    first = auth.ensure_secret(cfg, env)  # type: ignore[arg-type]
    path = tmp_path / "hist" / ".auth_secret"
    assert env[auth.SECRET_ENV] == first and len(first) >= 32
    assert path.stat().st_mode & 0o777 == 0o600
    assert auth.ensure_secret(cfg, {}) == first  # the next start signs with the same secret
    assert auth.ensure_secret(cfg, {auth.SECRET_ENV: "from-env"}) == "from-env"


def test_a_secret_that_cannot_be_kept_still_lets_the_chat_start(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cfg = load_config(overrides={"history": {"folder": str(blocker / "hist")}})
    env: dict[str, str] = {}
    secret = auth.ensure_secret(cfg, env)
    assert secret and env[auth.SECRET_ENV] == secret


def test_passwords_are_checked_against_argon2_hashes(tmp_path: Path) -> None:
    users = tmp_path / "users.json"
    assert auth.add_user(users, "alice", "correct horse") is True
    assert auth.add_user(users, "alice", "battery staple") is False  # a new password
    assert auth.check_password(users, "alice", "battery staple")
    assert not auth.check_password(users, "alice", "correct horse")
    assert not auth.check_password(users, "mallory", "battery staple")
    assert "battery" not in users.read_text(encoding="utf-8")
    for name, password in (("", "long enough"), ("a b", "long enough"), ("local", "long enough"),
                           ("bob", "short")):
        with pytest.raises(UserFacingError):
            auth.add_user(users, name, password)
