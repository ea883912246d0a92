"""The chat in a real browser against the real Chainlit app with a scripted assistant (no model):
offline page, streaming, sources, escaping, settings, stop, queue, new chat, failures.

The real-model scenarios are in test_ui_browser.py; these are the deterministic ones.
"""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from app.config import load_config
from app.ui import QUEUED_TEXT
from tests.browser.fakes import XSS_TITLE
from tests.browser.harness import (
    FAKE_APP_ARGS,
    REPO_ROOT,
    ChatPage,
    Server,
    require_chromium,
    running_server,
    write_test_config,
)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def fake_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    require_chromium()
    folder = tmp_path_factory.mktemp("ui_fake")
    args = FAKE_APP_ARGS
    with running_server(args, folder / "server.log", env={"CHAINLIT_APP_ROOT": str(REPO_ROOT),
                                                          "FAKE_TOKEN_DELAY": "0.05"},
                        audit_log=folder / "net.log") as server:
        yield server


@pytest.fixture
def chat(browser: Any, fake_server: Server) -> Iterator[ChatPage]:
    page = ChatPage(browser, fake_server.url).open()
    yield page
    page.close()


def test_served_page_loads_nothing_from_other_hosts(fake_server: Server, chat: ChatPage) -> None:
    """The page's HTML names no other host, and (the real check) the browser, while it loads the
    chat, its styles and fonts, and shows an answer, requests nothing from another host: every
    request is recorded as it is made (ChatPage), whether or not this machine is online."""
    with urllib.request.urlopen(fake_server.url + "/") as resp:
        html = resp.read().decode()
    assert not re.search(r"""(?:href|src)\s*=\s*["'](?:https?:)?//""", html), html
    assert "googleapis" not in html and "jsdelivr" not in html
    chat.page.locator("#starters").wait_for()
    starters = chat.page.locator("#starters button").all_inner_texts()
    assert "Does working memory training improve fluid intelligence?" in starters
    chat.ask("Does IQ predict health?")
    assert any(u.startswith(fake_server.url) for u in chat.requests)  # the recorder records
    assert chat.external_requests() == []


def test_a_message_with_no_words_is_not_sent_and_buttons_have_names(chat: ChatPage) -> None:
    """Zero-width and bidi characters alone are no question: the page does not send them (no
    empty bubble; public/pubmed-ui.js), and the chat goes on. Every button on screen has an
    accessible name (send, copy, rating, sidebar ...), and the closed sidebar is out of the Tab
    order."""
    for blank in ("", "\u200b \u202e"):  # Chainlit sends "" when a mode button is highlighted
        chat.page.fill("#chat-input", blank)
        chat.page.locator("#chat-submit").click(force=True)
        chat.page.locator("#chat-input").press("Enter")
    chat.page.wait_for_timeout(1500)
    assert chat.user_messages() == [] and chat.answers().count() == 0
    # never sent (the server's own guard would have answered "Please type a question")
    assert chat.page.get_by_text("Please type a question").count() == 0
    answer = chat.ask("Does IQ predict health?")  # and the chat goes on
    # the blank was never sent (the server's own guard would have answered "Please type ...")
    assert chat.page.get_by_text("Please type a question").count() == 0
    assert chat.user_messages() == ["Does IQ predict health?"]
    assert "Sources" in answer.inner_text()
    unnamed = chat.page.evaluate("""() => [...document.querySelectorAll('button')]
        .filter(b => b.getClientRects().length && !b.closest('[inert]'))
        .filter(b => !((b.getAttribute('aria-label') || '').trim()
                       || (b.textContent || '').trim() || b.getAttribute('title')))
        .map(b => b.id + ' ' + b.innerHTML.slice(0, 160))""")
    assert unnamed == [], unnamed
    for name in ("Send question", "Copy the answer", "Rate as helpful", "Rate as not helpful"):
        assert chat.page.get_by_role("button", name=name).count() >= 1, name
    offscreen = chat.page.evaluate("""() => [...document.querySelectorAll(
        'button, a[href], input, [tabindex]:not([tabindex="-1"])')]
        .filter(e => !e.closest('[inert]') && e.getClientRects().length
                && e.getBoundingClientRect().right <= 0).length""")
    assert offscreen == 0, f"{offscreen} Tab stops off screen (the closed sidebar)"


def test_answer_streams_with_pubmed_links_and_inert_abstract_markup(chat: ChatPage) -> None:
    answer = chat.ask("Does IQ predict health?")
    final = answer.inner_text()
    partial = [p for p in chat.partials() if p and "Sources" not in p and p in final]
    assert len(set(partial)) >= 2, chat.partials()  # the answer grew before it was complete

    links = chat.source_links(answer)
    assert [href for _, href, _ in links] == ["https://pubmed.ncbi.nlm.nih.gov/31234567/",
                                              "https://pubmed.ncbi.nlm.nih.gov/29999999/"]
    assert all(target == "_blank" for _, _, target in links)
    assert links[1][0] == XSS_TITLE  # shown as text
    assert "<b>and</b>" in final and "O'Brien <b>X</b>" in final
    assert chat.page.locator("img[src='x']").count() == 0
    assert chat.page.locator("script:has-text('alert')").count() == 0

    answer.locator("a.element-link", has_text="[2]").first.click()
    side = chat.page.get_by_text("Abstract with <script>alert(2)</script>")
    side.wait_for()
    assert chat.dialogs == []


def test_answer_offers_ris_and_bibtex_downloads_and_a_vancouver_list(
    chat: ChatPage, fake_server: Server
) -> None:
    """The files download from the chat and read back as the sources; the reference list under
    the answer shows the abstract's markup as text."""
    import rispy
    from pybtex.database import parse_string

    answer = chat.ask("Does IQ predict health?")
    refs = answer.locator("ol li").all_inner_texts()  # a numbered list, 1 and 2
    assert refs == [
        "Deary IJ, Batty GD. Childhood IQ and adult health: a cohort study. Intelligence. "
        "2019;41(3):101-9. doi:10.1016/j.intell.2019.05.001. PMID: 31234567.",
        f"<b>X</b> O. {XSS_TITLE}. J [Evil] *Journal*. 2021. PMID: 29999999.",  # markup as text
    ]
    assert "References (Vancouver)" in answer.inner_text()
    assert "Deary IJ et al. · Intelligence · 2019" in answer.inner_text()  # the source line
    assert chat.page.locator("img[src='x']").count() == 0
    files = {}
    for name in ("sources.ris", "sources.bib"):
        link = chat.page.locator("a", has_text=name).last
        link.wait_for()
        with chat.page.expect_download() as info:
            link.click()
        files[name] = Path(info.value.path()).read_text(encoding="utf-8")
    ris = rispy.loads(files["sources.ris"])
    assert [r["accession_number"] for r in ris] == ["31234567", "29999999"]
    assert ris[1]["title"] == XSS_TITLE and ris[0]["volume"] == "41"
    assert ris[0]["secondary_title"] == "Intelligence"  # the journal (T2), as in the list
    bib = parse_string(files["sources.bib"], "bibtex").entries
    assert [e.fields["pmid"] for e in bib.values()] == ["31234567", "29999999"]
    assert bib["Deary2019_31234567"].fields["pages"] == "101--109"
    assert bib["Deary2019_31234567"].fields["journal"] == "Intelligence"


def test_mode_switch_is_used_and_shown(chat: ChatPage) -> None:
    chat.set_mode("Multi-query (several searches)")
    answer = chat.ask("Does IQ predict health?")
    assert "Mode: multi-query" in answer.inner_text()
    step = chat.last_search_step()
    assert "Sub-queries:" in step and "Does IQ predict health? variant 2" in step


def test_follow_ups_use_the_history_and_a_new_chat_starts_clean(chat: ChatPage) -> None:
    chat.set_mode("Conversational (follow-up questions)")
    chat.ask("Is IQ heritable?")
    assert "Searched for:" in chat.last_search_step()
    chat.ask("And in adults?")
    assert "Rewritten question: And in adults? (rewritten)" in chat.last_search_step()

    chat.click_on_screen("#new-chat-button")
    chat.page.get_by_role("button", name="Confirm").click()
    chat.page.locator("#starters").wait_for()
    chat.set_mode("Conversational (follow-up questions)")
    chat.ask("And in adults?")
    assert "Searched for: And in adults?" in chat.last_search_step()


def test_stop_button_ends_the_answer_and_frees_the_model(chat: ChatPage) -> None:
    chat.send("Please give a long answer")
    chat.page.get_by_text("word word word").first.wait_for()
    chat.page.click("#stop-button")
    chat.page.get_by_text("Task manually stopped.").wait_for()
    chat.page.get_by_text("Stopped.", exact=True).wait_for()
    answer = chat.ask("Does IQ predict health?")
    assert "Sources" in answer.inner_text()


def test_a_second_user_is_queued_then_answered(browser: Any, fake_server: Server) -> None:
    first, second = (ChatPage(browser, fake_server.url).open() for _ in range(2))
    try:
        first.send("Please give a long answer")
        first.page.get_by_text("word word").first.wait_for()
        before = second.send("Does IQ predict health?")
        second.page.get_by_text(QUEUED_TEXT).wait_for()
        first.page.click("#stop-button")
        answer = second.wait_answer(before)
        assert "Sources" in answer.inner_text()
        assert second.page.get_by_text(QUEUED_TEXT).count() == 0
        assert "word" not in answer.inner_text()
    finally:
        first.close()
        second.close()


def test_missing_index_gives_a_friendly_message_and_the_server_keeps_serving(
        browser: Any, tmp_path: Path) -> None:
    # history off: the notices are counted on one page (with history the page moves to the
    # conversation's URL after the first message and redraws it from what was stored)
    cfg = write_test_config(load_config(), tmp_path / "cfg.yaml",
                            {"index": {"dir": str(tmp_path / "no_index")},
                             "history": {"enabled": False}})
    args = ["-m", "app", "--config", str(cfg), "serve", "--port", "{port}"]
    with running_server(args, tmp_path / "server.log") as server:
        chat = ChatPage(browser, server.url).open()
        try:
            notice = chat.page.get_by_text("The search index is not available.")
            for n in (1, 2):
                chat.send("Does IQ predict health?")
                expect(notice).to_have_count(n, timeout=120_000)
            text = "\n".join(chat.page.locator(".message-content").all_inner_texts())
            assert "python -m app index build" in text and "make run" in text
            assert "Traceback" not in text
            with urllib.request.urlopen(server.url + "/health") as resp:
                assert resp.status == 200
        finally:
            chat.close()


def test_the_server_tries_to_reach_no_other_host(fake_server: Server) -> None:
    """app/ui.py (with the scripted assistant) attempted no connection and no name lookup off
    this machine while serving every test above (tests/browser/netaudit.py records attempts)."""
    assert fake_server.remote_attempts() == []
