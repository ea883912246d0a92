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


def connect_args(url: str) -> dict:
    return {"timeout": SQLITE_BUSY_TIMEOUT_S} if url.startswith("sqlite") else {}
