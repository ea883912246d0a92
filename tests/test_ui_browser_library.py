"""Search PubMed from the chat, in a real browser, with the real model and embedder, against the
local E-utilities replay server (``ingest.replay``: NCBI's wire format over real PubMedQA records).

The shipped corpus is the first 60 PubMedQA articles; the replay server holds all 1,000. A
question about a drug no indexed abstract mentions gets the abstention and the offer; clicking
"Search PubMed" shows the query and PubMed's counts in the step, and the answer that follows
cites the added article with its PubMed link, its side panel saying which search of the library
added it (query and date). After a server restart the article is still found; ``library remove``
takes it out again and the question abstains as before. Driven by Debian's Chromium.

Mutation caught (seen to fail this test): the side panel's "Added to your library" line dropped
(``pubmed_chat.added_line`` returning "").
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from indexing.embeddings import build_embedder
from ingest.replay import ReplayServer, read_records
from settings.config import load_config
from tests.browser.harness import (
    PUBMED_HREF,
    ChatPage,
    chromium,
    require_chromium,
    serving_chat,
    write_test_config,
)
from tests.conftest import REPO, SMALL_INDEX_THRESHOLD
from tests.helpers import need
from tests.library_fixtures import PQAL, full_build, write_corpus

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHIPPED = 60
QUESTION = "Is aripiprazole associated with pathological gambling?"
QUERY = "aripiprazole AND pathological gambling"  # the question's concepts (pubmed_query)
ADDED = "24315783"  # "Aripiprazole: a new risk factor for pathological gambling?"
ABSTAINED = "No indexed abstract mentions aripiprazole"
ADD_WAIT_MS = 300_000  # bound on the search, the real embedding and the answer on 2 busy cores


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path]]:
    require_chromium()
    records = read_records([need(PQAL)])
    assert not any("aripiprazole" in r.text for r in records[:SHIPPED])
    folder = tmp_path_factory.mktemp("ui_library")
    write_corpus(folder / "corpus", records[:SHIPPED])
    with ReplayServer(records) as replay:
        cfg = load_config(overrides={
            "corpus": {"paths": [str(folder / "corpus")], "min_abstract_chars": 20,
                       "fetch": {"base_url": replay.base_url}},
            "index": {"dir": str(folder / "indices"), "name": "small",
                      "embedding_backend": "torch"},
            "library": {"dir": str(folder / "library")},
            "retrieval": {"score_threshold": SMALL_INDEX_THRESHOLD},
        })  # fmt: skip
        full_build(cfg, build_embedder(cfg))
        for sub in ("first", "restarted", "cli"):
            (folder / sub).mkdir()
        yield cfg, folder


def _pmids(chat: ChatPage, answer: Any) -> list[str]:
    out = []
    for _, href, _ in chat.source_links(answer):
        found = PUBMED_HREF.match(href)
        assert found, href  # every source link is a well-formed PubMed article link
        out.append(found.group(1))
    return out


def _cited_number(chat: ChatPage, answer: Any, pmid: str) -> int:
    """The [n] of ``pmid`` in the answer's numbered source list."""
    link = chat.page.locator(f"a[href='https://pubmed.ncbi.nlm.nih.gov/{pmid}/']")
    item = answer.locator("li", has=link).first.inner_text()
    found = re.search(r"\[(\d+)\]", item)
    assert found, item
    return int(found.group(1))


def test_search_pubmed_from_the_chat_adds_cites_survives_a_restart_and_is_removed(
    setup: tuple[Any, Path],
) -> None:
    cfg, folder = setup
    with chromium() as browser:
        with serving_chat(cfg, folder / "first") as server:
            chat = ChatPage(browser, server.url).open()
            try:
                abstained = chat.ask(QUESTION)
                assert ABSTAINED in abstained.inner_text()
                assert ADDED not in _pmids(chat, abstained)
                offer = chat.page.locator(".message-content", has_text="Not in the local index")
                offer.first.wait_for(timeout=60_000)
                assert QUERY in offer.first.inner_text()

                before = chat.answers().count()
                chat.page.get_by_role("button", name="Search PubMed").first.click()
                answer = chat.wait_answer(before, ADD_WAIT_MS)
                toggle = chat.page.locator("[id='step-Search PubMed']").last
                if toggle.get_attribute("aria-expanded") != "true":
                    toggle.click()
                region = chat.page.locator(f"[id='{toggle.get_attribute('aria-controls')}']")
                region.get_by_text("PubMed:").wait_for(timeout=30_000)
                step = region.inner_text()
                assert QUERY in step, step
                assert "PubMed: 1 match; 1 fetched; 1 new to the index" in step, step
                chat.screenshot("ui_library_added.png")

                assert ABSTAINED not in answer.inner_text()
                assert ADDED in _pmids(chat, answer), answer.inner_text()
                panel = chat.open_source_panel(answer, _cited_number(chat, answer, ADDED))
                marked = panel.inner_text()
                assert "Added to your library from the PubMed search" in marked, marked
                assert f"\u201c{QUERY}\u201d on 20" in marked, marked
                chat.screenshot("ui_library_panel.png")
            finally:
                chat.close()

        with serving_chat(cfg, folder / "restarted") as server:  # the same index and library
            chat = ChatPage(browser, server.url).open()
            try:
                again = chat.ask(QUESTION)
                assert ADDED in _pmids(chat, again), again.inner_text()
                assert ABSTAINED not in again.inner_text()

                config = write_test_config(cfg, folder / "cli" / "cfg.yaml")
                removed = subprocess.run(
                    [sys.executable, "-m", "app", "--config", str(config), "library", "remove",
                     QUERY], cwd=REPO, capture_output=True, text=True, timeout=600)  # fmt: skip
                assert removed.returncode == 0, removed.stderr

                gone = chat.ask(QUESTION)  # the open chat picks the new build up
                assert ADDED not in _pmids(chat, gone)
                assert ABSTAINED in gone.inner_text()
            finally:
                chat.close()
