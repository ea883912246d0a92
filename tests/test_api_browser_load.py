"""The chat stays usable while API clients load the same server: ``python -m app bench api`` (4
clients here; the 20-client figures are in docs/api.md) runs against ``python -m app serve`` on
the small test index with the default model, and a user asks a question in the chat, in
Chromium, meanwhile. Mutation checked: the API not mounted on the chat server
(``install_on_chainlit`` returning at once) -> the bench's clients never queue (the chat's page
answers /api/v1/ready) and the test fails. The model is loaded once (the server's log says so
once) for the chat and the API."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.browser.harness import (
    PUBMED_HREF,
    REPO_ROOT,
    ChatPage,
    Server,
    require_chromium,
    serving_chat,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

QUESTION = "Does methylphenidate help children with ADHD?"


@pytest.fixture(scope="module")
def server(small_index_cfg: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    require_chromium()
    folder = tmp_path_factory.mktemp("api_load")
    with serving_chat(small_index_cfg, folder) as srv:
        srv.wait_for_log("language model loaded", timeout_s=600)  # a stall guard
        yield srv


def test_a_chat_question_is_answered_while_bench_api_loads_the_server(
        browser: Any, server: Server, small_retriever: Any) -> None:
    cfg_file = server.log_path.parent / "cfg.yaml"
    bench = subprocess.Popen(
        [sys.executable, "-m", "app", "--config", str(cfg_file), "bench", "api", "--url",
         server.url, "--clients", "4", "--questions", "2"],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    page = ChatPage(browser, server.url).open()
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            deadline = time.monotonic() + 600  # a stall guard: until the clients are queued
            while http.get("/api/v1/ready").json()["queue"] < 2:
                assert bench.poll() is None, bench.communicate()[0]
                assert time.monotonic() < deadline, "the bench's clients never queued"
                time.sleep(0.2)
        assert bench.poll() is None  # the load is on while the user asks
        answer = page.ask(QUESTION)
        links = page.source_links(answer)
        assert links, answer.inner_text()
        retrieved = {d.metadata["pmid"] for d in small_retriever.retrieve(QUESTION).documents}
        pmids = {PUBMED_HREF.match(href).group(1) for _, href, _ in links}  # type: ignore[union-attr]
        assert pmids <= retrieved
        page.screenshot("api_load_chat_answer.png")
    finally:
        page.close()
        out, _ = bench.communicate(timeout=1800)
    assert bench.returncode == 0, out
    assert "8/8 answered" in out and "OK" in out, out
    assert server.log().count("language model loaded") == 1  # one engine for chat and API
