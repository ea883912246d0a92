"""Where the history lives (no Chainlit import: the CLI commands use it too)."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy.engine import make_url

from settings.config import Config

SQLITE_NAME = "history.db"
SQLITE_BUSY_TIMEOUT_S = 2.0  # a locked file fails a write after this, instead of hanging


def sqlite_path(cfg: Config) -> Path:
    return cfg.resolve(cfg.history.folder) / SQLITE_NAME


def database_url(cfg: Config, environ: dict[str, str] | None = None) -> str:
    """The SQLAlchemy URL: ``history.url`` with the password from the environment variable
    ``history.password_env``, or the SQLite file under ``history.folder``."""
    env = os.environ if environ is None else environ
    if cfg.history.url:
        url = make_url(cfg.history.url)
        password = env.get(cfg.history.password_env)
        if password:
            url = url.set(password=password)
        return url.render_as_string(hide_password=False)
    return f"sqlite+aiosqlite:///{sqlite_path(cfg)}"


def shown_url(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


def connect_args(url: str) -> dict[str, float]:
    return {"timeout": SQLITE_BUSY_TIMEOUT_S} if url.startswith("sqlite") else {}


def is_sign_in_refused(err: BaseException) -> bool:
    """Whether the database refused the sign-in: SQLSTATE class 28 (a wrong or missing password,
    28P01; no such role, 28000), found on the error or on any error it wraps (SQLAlchemy wraps
    the driver's)."""
    todo: list[BaseException | None] = [err]
    seen: set[int] = set()
    while todo:
        item = todo.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        state = getattr(item, "sqlstate", None) or getattr(item, "pgcode", None)
        if isinstance(state, str) and state.startswith("28"):
            return True
        todo += [getattr(item, "orig", None), item.__cause__, item.__context__]
    return False


def password_hint(password_env: str, environ: dict[str, str] | None = None) -> str:
    """Where the password comes from, for a refused sign-in."""
    env = os.environ if environ is None else environ
    if env.get(password_env):
        return f"the password is read from the environment variable {password_env}: check it"
    return (f"the password is read from the environment variable {password_env}, which is not "
            "set")


def describe_failure(err: BaseException, password_env: str | None = None,
                     environ: dict[str, str] | None = None) -> str:
    """One line for a failed database operation; a refused sign-in names ``password_env``."""
    lines = str(err).splitlines()
    text = f"{type(err).__name__}: {lines[0][:300] if lines else ''}"
    if password_env and is_sign_in_refused(err):
        text += f" ({password_hint(password_env, environ)})"
    return text
