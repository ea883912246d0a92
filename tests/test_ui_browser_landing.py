"""The chat as a new user first sees it, for real: ``python -m app serve`` on the small test index
with cfg.yaml's defaults (gpt4all SmolLM2, extractive answers), driven by Debian's Chromium.

The landing page names the product (tab, logo, no Chainlit logo, "Help" rather than "Readme") and
offers the starter questions; a starter asks its question; the current answer mode is shown
beside the message box and one click switches it (the next answer's mode label and search step
change); "New chat" starts without the earlier conversation's history.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urljoin

import pytest

from app.render import STARTERS
from tests.browser.harness import (
    ChatPage,
    Server,
    require_chromium,
    serving_chat,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NULL_FINDING = STARTERS[0]  # "Does working memory training improve fluid intelligence?"
FOLLOW_UP = "Does it transfer to other tasks?"
# SmolLM2 rephrases this one into sub-queries (tests/test_ui_browser.py)
MULTI = ("What is suggested about the relationship between ubiquinone levels and ADHD "
         "pathogenesis?")


@pytest.fixture(scope="module")
def server(small_index_cfg: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    require_chromium()
    folder = tmp_path_factory.mktemp("ui_landing")
    with serving_chat(small_index_cfg, folder) as srv:
        yield srv


@pytest.fixture
def chat(browser: Any, server: Server) -> Iterator[ChatPage]:
    page = ChatPage(browser, server.url).open()
    yield page
    page.close()


def _fetch(chat: ChatPage, url: str) -> str:
    resp = chat.page.request.get(urljoin(chat.base_url + "/", url))
    assert resp.ok, (url, resp.status)
    return resp.text()


def test_the_landing_page_names_the_product_and_a_starter_asks_its_question(
        chat: ChatPage) -> None:
    page = chat.page
    assert page.title() == "PubMed Assistant"
    # the tab's icon and the logo over the message box are the product's own files (public/)
    icon = page.locator("link[rel='icon']").get_attribute("href") or ""
    assert "PubMed Assistant" in _fetch(chat, icon)
    logo = page.locator("#welcome-screen img.logo")
    logo.wait_for()
    assert page.evaluate("img => img.complete && img.naturalWidth > 0", logo.element_handle())
    assert "PubMed Assistant" in _fetch(chat, logo.get_attribute("src") or "")
    # chainlit.md opens from "Help", not from Chainlit's developer-facing "Readme"
    assert page.locator("#readme-button").inner_text().strip() == "Help"
    assert page.get_by_text("Readme", exact=True).count() == 0
    placeholder = page.locator("#chat-input").get_attribute("placeholder")
    assert placeholder == "Ask a biomedical question..."

    starters = page.locator("#starters button")
    starters.first.wait_for()
    assert [t.strip() for t in starters.all_inner_texts()] == [label for label, _ in STARTERS]
    assert chat.current_mode() == "Plain"  # the configured default, highlighted at once
    chat.screenshot("landing_page.png")

    label, question = NULL_FINDING
    before = chat.answers().count()
    page.locator("#starters button", has_text=label).click()
    answer = chat.wait_answer(before)
    assert chat.user_messages() == [question]
    text = answer.inner_text()
    assert text.startswith("No ("), text  # the null finding, as a yes/no verdict
    assert "Mode: plain" in text


def test_one_click_switches_the_mode_and_new_chat_forgets_the_conversation(
        chat: ChatPage) -> None:
    page = chat.page
    chat.mode_button("conversational").click()  # one click
    assert chat.current_mode() == "Conversational"
    first = chat.ask(NULL_FINDING[1])
    assert "Mode: conversational" in first.inner_text()
    assert chat.current_mode() == "Conversational"  # still highlighted after sending
    follow_up = chat.ask(FOLLOW_UP)
    assert "Mode: conversational" in follow_up.inner_text()
    step = chat.last_search_step()
    assert "Rewritten question:" in step and "working memory" in step, step

    chat.click_on_screen("#new-chat-button")  # the closed sidebar holds a second one
    page.get_by_role("button", name="Confirm").click()
    page.locator("#starters").wait_for()
    chat.set_mode("conversational")
    again = chat.ask(FOLLOW_UP)
    assert "Mode: conversational" in again.inner_text()
    step = chat.last_search_step()
    assert "Searched for: " + FOLLOW_UP in step and "working memory" not in step, step

    chat.mode_button("multi-query").click()  # one click
    assert chat.current_mode() == "Multi-query"
    other = chat.ask(MULTI)
    assert "Mode: multi-query" in other.inner_text()
    assert "Sub-queries:" in chat.last_search_step()
    chat.screenshot("mode_buttons.png")


def test_the_landing_page_and_help_say_what_the_index_holds(
        browser: Any, server: Server, small_index_cfg: Any) -> None:
    """The line under the starters and the Help page give the index's article count and years,
    read from the index the server uses (its manifest and chunks), with how to add articles; on
    a phone the starters fit the screen and the mode buttons keep their names."""
    from indexing.store import location, read_manifest

    folder = location(small_index_cfg).current()
    assert folder is not None
    count = f"{read_manifest(folder).articles:,} PubMed abstracts"
    for phone in (False, True):
        chat = ChatPage(browser, server.url, phone=phone).open()
        try:
            page = chat.page
            line = page.locator("#pubmed-index-summary")
            line.wait_for(timeout=30_000)
            text = line.inner_text()
            assert f"The index holds {count}" in text and "published " in text, text
            assert "type /pubmed and a search" in text, text  # how to add more
            box = line.bounding_box()
            assert box and box["y"] > page.locator("#starters").bounding_box()["y"]
            if phone:
                width = page.viewport_size["width"]
                for chip in page.locator("#starters button").all():
                    b = chip.bounding_box()
                    assert b and b["x"] >= 0 and b["x"] + b["width"] <= width, b
                for name in ("Plain", "Conversational", "Multi-query"):
                    assert chat.page.locator(f"[id='command-{name}']").inner_text().strip() \
                        == name
                chat.screenshot("landing_phone.png")
            else:
                page.locator("#readme-button").click()
                dialog = page.get_by_role("dialog")
                dialog.get_by_text(count).first.wait_for(timeout=30_000)
                help_text = dialog.inner_text()
                assert "{index_summary}" not in help_text
                assert "python -m app index update" in help_text, help_text
                assert "/pubmed dapagliflozin heart failure" in help_text, help_text
                assert "Search match" in help_text or "search match" in help_text
                chat.screenshot("help_index.png")
        finally:
            chat.close()
