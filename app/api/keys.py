"""API keys: ``python -m app keys add NAME --user alice`` prints a new key once and stores only its
SHA-256 hash (a key is 256 random bits, so a fast hash is safe: nothing to guess), with the user
it acts as; ``keys list``; ``keys revoke NAME``. The file (``api.keys_file``, default
``<history.folder>/api_keys.json``) is written atomically with mode 0600.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.secret_file import read_section, write_section
from settings.config import Config
from settings.errors import UserFacingError

KEYS_FILE = "api_keys.json"
PREFIX = "pma_"
NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@-")


def keys_path(cfg: Config) -> Path:
    if cfg.api.keys_file:
        return cfg.resolve(cfg.api.keys_file)
    return cfg.resolve(cfg.history.folder) / KEYS_FILE


def digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def load_keys(path: Path) -> dict[str, dict[str, Any]]:
    """name -> {"user", "hash", "created", "revoked"}; {} when the file is absent."""
    return read_section(path, "keys", "API keys file")


def _write(path: Path, keys: dict[str, dict[str, Any]]) -> None:
    write_section(path, "keys", keys)


def _check_name(name: str, what: str) -> None:
    if not name or not set(name) <= NAME_CHARS or len(name) > 64:
        raise UserFacingError(f"a {what} is 1 to 64 letters, digits, '.', '_', '@' or '-'")


def add_key(path: Path, name: str, user: str) -> str:
    """A new key for ``user``, named ``name``; returned once, only its hash is kept."""
    _check_name(name, "key name")
    _check_name(user, "user name")
    keys = load_keys(path)
    if name in keys and not keys[name].get("revoked"):
        raise UserFacingError(f"a key named {name!r} exists; revoke it first or choose another "
                              "name")
    key = PREFIX + secrets.token_urlsafe(32)
    keys[name] = {"user": user, "hash": digest(key), "created": _now(), "revoked": None}
    _write(path, keys)
    return key


def revoke_key(path: Path, name: str) -> None:
    keys = load_keys(path)
    if name not in keys:
        raise UserFacingError(f"no key named {name!r} in {path}")
    keys[name]["revoked"] = keys[name].get("revoked") or _now()
    _write(path, keys)


@dataclass(frozen=True)
class KeyMatch:
    name: str
    user: str
    revoked: bool


class KeyRing:
    """The keys file, re-read when it changes (a key added or revoked while the server runs
    takes effect at the next request)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._keys: dict[str, dict[str, Any]] = {}

    def _current(self) -> dict[str, dict[str, Any]]:
        try:
            st = self.path.stat()
            stamp = (st.st_mtime_ns, st.st_size)
        except OSError:
            self._stamp, self._keys = None, {}
            return self._keys
        if stamp != self._stamp:
            self._keys = load_keys(self.path)
            self._stamp = stamp
        return self._keys

    def match(self, key: str) -> KeyMatch | None:
        """The key's entry (revoked or not); None for a key never issued."""
        wanted = digest(key)
        found = None
        for name, entry in self._current().items():
            # compared in constant time, every entry: no timing hint of a near miss
            if hmac.compare_digest(str(entry.get("hash", "")), wanted):
                found = KeyMatch(name, str(entry.get("user", "")), bool(entry.get("revoked")))
        return found


# ---- `python -m app keys add|list|revoke` -----------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("add", "list", "revoke"))
    parser.add_argument("name", nargs="?", help="the key's name (add, revoke)")
    parser.add_argument("--user", help="add: the user the key acts as (whose history it sees)")


def run(cfg: Config, args: argparse.Namespace) -> int:
    path = keys_path(cfg)
    if args.action == "list":
        keys = load_keys(path)
        if not keys:
            print(f"no API keys in {path}")
        for name, entry in sorted(keys.items()):
            state = f"revoked {entry['revoked']}" if entry.get("revoked") else "active"
            print(f"{name}\tuser {entry.get('user')}\tcreated {entry.get('created')}\t{state}")
        return 0
    if not args.name:
        raise UserFacingError(f"keys {args.action} needs the key's NAME")
    if args.action == "revoke":
        revoke_key(path, args.name)
        print(f"revoked {args.name} in {path}")
        return 0
    if not args.user:
        raise UserFacingError("keys add needs --user USER (the user the key acts as)")
    key = add_key(path, args.name, args.user)
    print(key)
    print(f"(shown once: only its hash is kept in {path}; it acts as user {args.user})",
          file=sys.stderr, flush=True)
    return 0
