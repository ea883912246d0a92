"""Fault suite, server side (issue 13): the real chat server started on 127.0.0.1.

* a page from another origin cannot open a chat session (the WebSocket/Socket.IO handshake);
* an oversized question gets a clear message at once, in the browser;
* closing a tab cancels its work, so another tab's queued question is answered.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from app.config import load_config
from app.ui import QUEUED_TEXT
from tests.browser.harness import (
    FAKE_APP_ARGS,
    REPO_ROOT,
    ChatPage,
    Server,
    require_chromium,
    running_server,
    write_test_config,
)

HANDSHAKE = "/ws/socket.io/?EIO=4&transport=polling"
CANCELLED = r"answer cancelled \(stop button or closed tab\) after \d+ characters shown"
ANSWERED = r"answered in [\w-]+ mode: \d+ sources"


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




# -- the chat: an oversized question, a closed tab ---------------------------------------------
LONG_QUESTION = ("What is the effect of childhood intelligence on later health outcomes? "
                 * 2000)[:100_000]


@pytest.fixture(scope="module")
def slow_fake_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """app/ui.py with the scripted assistant at 0.5 s a token: a "long answer" takes 200 s."""
    require_chromium()
    log = tmp_path_factory.mktemp("faults_ui") / "server.log"
    args = FAKE_APP_ARGS
    with running_server(args, log, env={"CHAINLIT_APP_ROOT": str(REPO_ROOT),
                                        "FAKE_TOKEN_DELAY": "0.5"}) as server:
        yield server


@pytest.mark.browser
def test_a_100k_question_gets_a_message_at_once_and_another_tab_is_answered(
        browser: Any, slow_fake_server: Server) -> None:
    first, second = (ChatPage(browser, slow_fake_server.url).open() for _ in range(2))
    try:
        first.page.fill("#chat-input", LONG_QUESTION)  # one input event, not 100,000 keys
        first.page.click("#chat-submit")
        before = second.send("Does IQ predict health?")
        first.page.get_by_text("at most 2,000 characters").wait_for(timeout=30_000)
        assert first.answers().count() == 0  # refused, not answered
        answer = second.wait_answer(before, timeout_ms=60_000)
        assert "Sources" in answer.inner_text()
    finally:
        first.close()
        second.close()


@pytest.mark.browser
def test_closing_a_tab_cancels_its_answer_so_a_queued_tab_is_answered(
        browser: Any, slow_fake_server: Server) -> None:
    first, second = (ChatPage(browser, slow_fake_server.url).open() for _ in range(2))
    try:
        first.send("Please give a long answer")  # 400 tokens at 0.5 s: 200 s
        first.page.get_by_text("word word").first.wait_for(timeout=60_000)
        before = second.send("Does IQ predict health?")
        second.page.get_by_text(QUEUED_TEXT).wait_for(timeout=30_000)
        log_at = len(slow_fake_server.log())
        first.close()
        cancelled = slow_fake_server.wait_for_log(CANCELLED, log_at)
        answer = second.wait_answer(before)
        assert "Sources" in answer.inner_text()
        # the closed tab's answer was cancelled before the queued one ran, not waited out
        answered = slow_fake_server.wait_for_log(ANSWERED, log_at)
        assert cancelled.start() < answered.start(), slow_fake_server.log()[log_at:]
    finally:
        second.close()
