"""Fault suite, server side (issue 13): the real chat server started on 127.0.0.1.

* a page from another origin cannot open a chat session (the WebSocket/Socket.IO handshake);
* an oversized question gets a clear message at once, in the browser;
* closing a tab cancels its work, so another tab's queued question is answered.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from app.config import load_config
from tests.browser.harness import Server, running_server, write_test_config

HANDSHAKE = "/ws/socket.io/?EIO=4&transport=polling"


@pytest.fixture(scope="module")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`python -m app serve` (no index needed for the handshake)."""
    tmp = tmp_path_factory.mktemp("origin")
    cfg = write_test_config(load_config(), tmp / "cfg.yaml",
                            {"index": {"dir": str(tmp / "no_index")}})
    args = ["-m", "app", "--config", str(cfg), "serve", "--port", "{port}"]
    with running_server(args, tmp / "server.log") as server:
        yield server


def handshake(server: Server, origin: str | None,
              host: str | None = None) -> tuple[int, str, dict[str, str]]:
    headers = {"Origin": origin} if origin else {}
    if host:  # what a browser at http://<host>:<port> sends
        headers["Host"] = f"{host}:{server.port}"
    req = urllib.request.Request(server.url + HANDSHAKE, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read().decode(), dict(resp.headers)
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(), dict(err.headers)


def test_a_cross_origin_handshake_is_refused(app_server: Server) -> None:
    status, body, headers = handshake(app_server, "http://evil.example")
    assert status == 400 and "not an accepted origin" in body
    assert '"sid"' not in body
    assert headers.get("access-control-allow-origin") != "http://evil.example"


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_the_servers_own_origin_gets_a_session(app_server: Server, host: str) -> None:
    status, body, _ = handshake(app_server, f"http://{host}:{app_server.port}", host)
    assert status == 200 and '"sid"' in body


def test_http_cors_headers_are_not_given_to_other_origins(app_server: Server) -> None:
    req = urllib.request.Request(app_server.url + "/project/settings?language=en-US",
                                 headers={"Origin": "http://evil.example"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            headers = dict(resp.headers)
    except urllib.error.HTTPError as err:
        headers = dict(err.headers)
    assert "access-control-allow-origin" not in {k.lower() for k in headers}


def test_listed_origins_are_allowed_for_deployments() -> None:
    from app.web_security import origin_check

    check = origin_check(["https://assistant.example.org/"])
    environ = {"wsgi.url_scheme": "http", "HTTP_HOST": "127.0.0.1:8000"}
    assert check("https://assistant.example.org", environ)
    assert check("http://127.0.0.1:8000", environ)
    assert not check("http://evil.example", environ)
    assert origin_check(["*"]) == "*"


