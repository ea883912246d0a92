"""Who is chatting (``ui.auth`` in cfg.yaml).

- ``none`` (a laptop): no login page. Chainlit lists past conversations only for a signed-in
  user, so everyone who reaches the server is the one local user, signed in by a header
  callback that asks nothing (the page signs in by itself). Bind to 127.0.0.1 (the default).
- ``password`` (a shared server): Chainlit's login page; users and their argon2id password
  hashes live in ``ui.users_file`` (``python -m app users add NAME``); each user sees only their
  own conversations (Chainlit checks a thread's author on every read and on resume).

Either way Chainlit signs its session cookie with ``CHAINLIT_AUTH_SECRET``: taken from the
environment, else generated once and kept in the history folder (mode 0600), never in the repo.
"""

from __future__ import annotations

import argparse
import getpass
import logging
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from app.secret_file import read_section, write_section
from settings.config import Config
from settings.errors import UserFacingError

log = logging.getLogger("app.auth")

LOCAL_USER = "local"
SECRET_ENV = "CHAINLIT_AUTH_SECRET"
SECRET_FILE = ".auth_secret"
NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@-")
MIN_PASSWORD_CHARS = 8


# ---- the signing secret -----------------------------------------------------------------------
def secret_path(cfg: Config) -> Path:
    return cfg.resolve(cfg.history.folder) / SECRET_FILE


def ensure_secret(cfg: Config, environ: Any = None) -> str:
    """``CHAINLIT_AUTH_SECRET`` from the environment, else from the secret file (made once, 0600),
    and put into ``environ`` (default: this process's) for Chainlit."""
    env = os.environ if environ is None else environ
    if env.get(SECRET_ENV):
        return str(env[SECRET_ENV])
    path = secret_path(cfg)
    try:
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass  # another process made it first
            else:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(secrets.token_urlsafe(48))
                log.info("auth: generated the session secret in %s", path)
        secret = path.read_text(encoding="utf-8").strip()
    except OSError as err:  # the chat still starts; sign-ins last until the server stops
        log.error("auth: cannot keep the session secret in %s (%s); using one for this run "
                  "only", path, err)
        secret = secrets.token_urlsafe(48)
    if not secret:
        raise UserFacingError(f"{path} is empty: delete it and start again (a new one is made)")
    env[SECRET_ENV] = secret
    return secret


# ---- users ------------------------------------------------------------------------------------
def users_path(cfg: Config) -> Path:
    return cfg.resolve(cfg.ui.users_file)


def load_users(path: Path) -> dict[str, dict[str, str]]:
    """name -> {"hash": argon2 hash, "created": ISO time}; {} when the file is absent."""
    return read_section(path, "users", "users file")


def _write_users(path: Path, users: dict[str, dict[str, str]]) -> None:
    write_section(path, "users", users)


def _hasher() -> Any:
    from argon2 import PasswordHasher

    return PasswordHasher()  # argon2id, the library's current recommended parameters


def add_user(path: Path, name: str, password: str) -> bool:
    """Add ``name`` (or set a new password); True when the user is new."""
    if not name or not set(name) <= NAME_CHARS or len(name) > 64:
        raise UserFacingError("a user name is 1 to 64 letters, digits, '.', '_', '@' or '-'")
    if name == LOCAL_USER:
        raise UserFacingError(f"{LOCAL_USER!r} is the laptop's own user; choose another name")
    if len(password) < MIN_PASSWORD_CHARS:
        raise UserFacingError(f"the password must have at least {MIN_PASSWORD_CHARS} characters")
    users = load_users(path)
    new = name not in users
    users[name] = {"hash": _hasher().hash(password),
                   "created": users.get(name, {}).get("created")
                   or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    _write_users(path, users)
    return new


_DUMMY_HASH: str | None = None


def check_password(path: Path, name: str, password: str) -> bool:
    """True when ``name`` is in the users file and ``password`` is theirs (an unknown name costs
    the same hashing, so it cannot be told apart by time)."""
    from argon2.exceptions import InvalidHashError, VerificationError

    global _DUMMY_HASH
    hasher = _hasher()
    user = load_users(path).get(name)
    stored = user.get("hash") if isinstance(user, dict) else None
    if not isinstance(stored, str):
        if _DUMMY_HASH is None:
            _DUMMY_HASH = hasher.hash(secrets.token_hex(16))
        stored, name = _DUMMY_HASH, ""
    try:
        return hasher.verify(stored, password) and bool(name)
    except (VerificationError, InvalidHashError):
        return False


# ---- Chainlit callbacks -----------------------------------------------------------------------
def install(cfg: Config) -> None:
    """Register the sign-in of ``ui.auth`` with Chainlit and make sure the secret exists."""
    import asyncio

    import chainlit as cl

    if cfg.ui.auth == "none" and not cfg.history.enabled:
        return  # nothing to sign in for: no history to list
    ensure_secret(cfg)
    if cfg.ui.auth == "password":
        path = users_path(cfg)
        if not load_users(path):
            log.warning("ui.auth is password but %s has no users: add one with "
                        "`python -m app users add NAME`", path)

        @cl.password_auth_callback
        async def _password(username: str, password: str) -> cl.User | None:
            ok = await asyncio.to_thread(check_password, path, username, password)
            if not ok:
                log.warning("sign-in refused for %r", username[:64])
                return None
            return cl.User(identifier=username, metadata={"provider": "password"})
    else:

        @cl.header_auth_callback
        async def _local(headers: Any) -> cl.User | None:
            return cl.User(identifier=LOCAL_USER, metadata={"provider": "local"})


# ---- `python -m app users add NAME` -----------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="the user name to sign in with")
    parser.add_argument("--password-stdin", action="store_true",
                        help="read the password from standard input (for scripts) instead of "
                        "asking for it")


def _read_password(from_stdin: bool) -> str:
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass("Password: ")
    if first != getpass.getpass("Password again: "):
        raise UserFacingError("the two passwords differ; nothing was changed")
    return first


def run(cfg: Config, args: argparse.Namespace) -> int:
    path = users_path(cfg)
    password = _read_password(bool(args.password_stdin))
    new = add_user(path, args.name, password)
    print(f"{'added' if new else 'updated the password of'} {args.name} in {path}")
    if cfg.ui.auth != "password":
        print("note: ui.auth in cfg.yaml is not `password`, so the chat asks nobody to sign in "
              "until it is")
    return 0
