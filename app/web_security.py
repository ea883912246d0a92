"""Which web pages may open a chat connection: the server's own origin, plus any listed.

Chainlit builds its Socket.IO server with CORS handling switched off, which also switches off
Engine.IO's Origin check: any page the user visits could open a session on the local chat and ask
through it (browsers apply no CORS rule to WebSockets). :func:`restrict_socket_origins` turns the
check back on. The server's own origin is the scheme and ``Host`` of the request (what the browser
shows in the address bar), so ``localhost`` and ``127.0.0.1`` both work without configuration; a
deployment behind another address lists it in ``allow_origins`` of ``.chainlit/config.toml`` (which
also sets Chainlit's HTTP CORS headers). ``"*"`` there allows every origin, on purpose only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

OriginCheck = Callable[[str | None, Mapping[str, Any]], bool]


def own_origins(environ: Mapping[str, Any]) -> set[str]:
    """The origin(s) a same-origin page has, from the request itself (proxy headers included)."""
    scheme = environ.get("wsgi.url_scheme", "http")
    host = environ.get("HTTP_HOST", "")
    origins = {f"{scheme}://{host}"} if host else set()
    fwd_host = str(environ.get("HTTP_X_FORWARDED_HOST", host)).split(",")[0].strip()
    fwd_scheme = str(environ.get("HTTP_X_FORWARDED_PROTO", scheme)).split(",")[0].strip()
    if fwd_host:
        origins.add(f"{fwd_scheme}://{fwd_host}")
    return origins


def origin_check(extra: Iterable[str]) -> OriginCheck | str:
    """Engine.IO's ``cors_allowed_origins`` value: ``"*"`` when listed, else a check allowing the
    server's own origin and ``extra``."""
    listed = {o.rstrip("/") for o in extra}
    if "*" in listed:
        return "*"

    def allowed(origin: str | None, environ: Mapping[str, Any]) -> bool:
        if not origin:  # not a browser page (curl, tests): nothing to protect against
            return True
        return origin in listed or origin in own_origins(environ)

    return allowed


def restrict_socket_origins(sio: Any, extra: Iterable[str]) -> None:
    """Turn Engine.IO's Origin check on for Chainlit's Socket.IO server ``sio``."""
    sio.eio.cors_allowed_origins = origin_check(extra)
