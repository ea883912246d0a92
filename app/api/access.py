"""Who may call the API, as whom, and how often.

- A laptop (``ui.auth: none``, listening on a loopback address, ``api.require_keys: auto``): no
  key; every call acts as the chat's local user. Requests must name a loopback host (a page on
  another site that resolves its own name to 127.0.0.1, DNS rebinding, is refused) and come from
  no other web page (an ``Origin`` that is neither this server nor in ``api.cors_origins``).
- A shared server (``ui.auth: password``, another address, or ``require_keys: always``): every
  call needs a key (``Authorization: Bearer KEY`` or ``X-API-Key: KEY``): 401 without one or with
  one never issued, 403 with a revoked one. The key acts as its user.
- Per key a token bucket: ``api.rate_limit_per_minute`` with bursts of ``api.rate_burst``; beyond
  it 429 with ``Retry-After``. Calls without a key (a laptop's own user) are not limited.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from fastapi import HTTPException
from starlette.datastructures import Headers

from app.api.keys import KeyRing, keys_path
from app.auth import LOCAL_USER
from settings.config import Config

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True)
class Caller:
    user: str  # whose conversations the call may see and add to
    key: str | None  # the key's name; None: the local user, no key needed


def needs_keys(cfg: Config, host: str) -> bool:
    return (cfg.api.require_keys == "always" or cfg.ui.auth == "password"
            or host not in LOOPBACK)


class RateLimiter:
    """A token bucket per caller: ``per_minute`` tokens an hour-long average, ``burst`` at most."""

    def __init__(self, per_minute: int, burst: int) -> None:
        self.rate = per_minute / 60.0
        self.burst = float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, who: str) -> float:
        """0 when a request may go now (a token taken), else the seconds until it may."""
        now = time.monotonic()
        with self._lock:
            tokens, then = self._buckets.get(who, (self.burst, now))
            tokens = min(self.burst, tokens + (now - then) * self.rate)
            if tokens >= 1:
                self._buckets[who] = (tokens - 1, now)
                return 0.0
            self._buckets[who] = (tokens, now)
            return (1 - tokens) / self.rate


def _bearer(headers: Headers) -> str | None:
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return (headers.get("x-api-key") or "").strip() or None


def _hostname(value: str) -> str:
    return (urlsplit(f"//{value}").hostname or "").lower()


class Access:
    """The checks every API, OpenAI-compatible and MCP request goes through."""

    def __init__(self, cfg: Config, host: str) -> None:
        self.required = needs_keys(cfg, host)
        self.ring = KeyRing(keys_path(cfg))
        self.limiter = RateLimiter(cfg.api.rate_limit_per_minute, cfg.api.rate_burst)
        self.cors_origins = set(cfg.api.cors_origins)

    def origin_allowed(self, origin: str) -> bool:
        return "*" in self.cors_origins or origin.rstrip("/") in self.cors_origins

    def identify(self, headers: Headers, client: str | None) -> Caller:
        """The caller, or an HTTPException (401, 403, 429) saying why not."""
        key = _bearer(headers)
        match = self.ring.match(key) if key else None
        if self.required:
            if key is None:
                raise HTTPException(401, "an API key is required: send 'Authorization: Bearer "
                                    "KEY' (python -m app keys add NAME --user USER)",
                                    headers={"WWW-Authenticate": "Bearer"})
            if match is None:
                raise HTTPException(401, "unknown API key", headers={"WWW-Authenticate": "Bearer"})
            if match.revoked:
                raise HTTPException(403, f"the API key {match.name!r} has been revoked")
            caller = Caller(match.user, match.name)
        else:
            self._local_only(headers)
            caller = (Caller(match.user, match.name) if match is not None and not match.revoked
                      else Caller(LOCAL_USER, None))
        wait = self.limiter.take(caller.key) if caller.key else 0.0  # the laptop's own user: none
        if wait > 0:
            raise HTTPException(429, f"rate limit: at most {self.limiter.rate * 60:g} requests "
                                "a minute for this key; try again later",
                                headers={"Retry-After": str(max(1, math.ceil(wait)))})
        return caller

    def _local_only(self, headers: Headers) -> None:
        host = _hostname(headers.get("host", ""))
        if host and host not in LOOPBACK:
            raise HTTPException(403, f"this server answers requests for a loopback address only "
                                f"(got Host {host!r}); a shared server needs API keys")
        origin = headers.get("origin")
        same = origin is not None and urlsplit(origin).netloc == headers.get("host", "")
        if origin and not same and not self.origin_allowed(origin):
            raise HTTPException(403, f"requests from the web page {origin!r} are not allowed "
                                "(api.cors_origins)")
