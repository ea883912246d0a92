"""The source panel opens when the reader clicks a source marker, never by itself, and shows
exactly the clicked source; Escape closes it (issue #36; public/pubmed-ui.js). In real Chromium
on a desktop window and on a 390x844 phone, against the real Chainlit app with the scripted
assistant (two sources a answer), with history on: after an answer, a second answer, a reload
(desktop) and a conversation reopened from the sidebar (phone); on the desktop the panel left
open while another answer arrives keeps the reader's source.

Chainlit's page by itself opens its side view whenever the set of display="side" elements
changes; the page's script keeps such an opening from being drawn and closes it (or shows the
reader's source again). "Never by itself" is checked at every painted frame: an
animation-frame loop counts the frames in which the panel was drawn.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.browser.fakes import XSS_TITLE
from tests.browser.harness import (
    FAKE_APP_ARGS,
    REPO_ROOT,
    THREAD_PATH,
    ChatPage,
    Server,
    require_chromium,
    running_server,
)

pytestmark = pytest.mark.browser

FIRST_TITLE = "Childhood IQ and adult health: a cohort study"  # the scripted source [1]
# counts the painted frames in which the side panel was drawn: in the page and rendered (not
# display:none or visibility:hidden on it or a parent; survives reloads: an init script of the
# browser context)
_COUNT_PANEL_FRAMES = """
window.__panelFrames = 0;
window.__crowdedFrames = 0;
(function tick() {
  const panel = document.getElementById('side-view-content');
  if (panel && panel.checkVisibility({visibilityProperty: true})) {
    window.__panelFrames++;
    if (panel.childElementCount !== 1) window.__crowdedFrames++;  // not one source alone
  }
  requestAnimationFrame(tick);
})();
"""


@pytest.fixture(scope="module")
def fake_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    require_chromium()
    folder = tmp_path_factory.mktemp("ui_panel")
    with running_server(FAKE_APP_ARGS, folder / "server.log",
                        env={"CHAINLIT_APP_ROOT": str(REPO_ROOT), "FAKE_TOKEN_DELAY": "0.01"},
                        audit_log=folder / "net.log") as server:
        yield server


def _chat(browser: Any, server: Server, phone: bool) -> ChatPage:
    chat = ChatPage(browser, server.url, phone=phone)
    chat.context.add_init_script(_COUNT_PANEL_FRAMES)
    return chat.open()


def _settled(chat: ChatPage) -> None:
    """Wait until the newest answer's elements (its export files) are drawn: the moment Chainlit
    would open its side view, then a few more frames."""
    chat.page.locator("a", has_text="sources.bib").last.wait_for(timeout=60_000)
    chat.page.evaluate("() => new Promise(r => requestAnimationFrame(() => "
                       "requestAnimationFrame(() => setTimeout(r, 300))))")


def _no_panel_since_reset(chat: ChatPage, when: str) -> None:
    frames = chat.page.evaluate("window.__panelFrames")
    assert frames == 0, f"the source panel was on screen for {frames} frames {when}"
    assert chat.page.locator("#side-view-content").count() == 0, when


def _reset_frames(chat: ChatPage) -> None:
    chat.page.evaluate("window.__panelFrames = 0; window.__crowdedFrames = 0")


def _open(chat: ChatPage, answer: Any, n: int) -> Any:
    answer.locator("a.element-link", has_text=f"[{n}]").first.click()
    panel = chat.page.locator("#side-view-content")
    panel.wait_for(timeout=30_000)
    return panel


def _shows_only(panel: Any, n: int) -> None:
    """The panel holds one source, the n-th of the scripted two."""
    text = panel.inner_text()
    assert panel.evaluate("el => el.childElementCount") == 1, text
    wanted, other = (FIRST_TITLE, XSS_TITLE) if n == 1 else (XSS_TITLE, FIRST_TITLE)
    assert wanted in text and other not in text, text
    assert re.search(rf"\[{n}\]", text), text


def _escape_closes(chat: ChatPage) -> None:
    chat.page.keyboard.press("Escape")
    chat.page.locator("#side-view-content").wait_for(state="detached", timeout=10_000)


@pytest.mark.parametrize("phone", [False, True], ids=["desktop", "phone"])
def test_the_source_panel_opens_only_on_a_click_with_the_clicked_source(
        browser: Any, fake_server: Server, phone: bool) -> None:
    chat = _chat(browser, fake_server, phone)
    try:
        _reset_frames(chat)
        answer = chat.ask("Does IQ predict health?")
        _settled(chat)
        _no_panel_since_reset(chat, "after the first answer")

        panel = _open(chat, answer, 2)  # a click opens exactly the clicked source
        _shows_only(panel, 2)
        chat.page.wait_for_timeout(700)  # the sheet slides in
        chat.screenshot(f"panel_clicked_{'phone' if phone else 'desktop'}.png")
        _escape_closes(chat)

        panel = _open(chat, answer, 1)
        _shows_only(panel, 1)
        _escape_closes(chat)

        _reset_frames(chat)
        second = chat.ask("Does IQ predict health in old age?")
        _settled(chat)
        _no_panel_since_reset(chat, "after the second answer")
        _shows_only(_open(chat, second, 1), 1)  # the second answer's [1], alone
        _escape_closes(chat)

        if phone:  # the phone page stays at "/": open the conversation's own address
            got = chat.page.request.post(chat.base_url + "/project/threads", data={
                "pagination": {"first": 5}, "filter": {}})
            assert got.ok, got.status
            chat.page.goto(f"{chat.base_url}/thread/{got.json()['data'][0]['id']}")
        else:
            assert THREAD_PATH.search(urlsplit(chat.page.url).path), chat.page.url
            chat.page.reload()
        chat.page.wait_for_selector("#chat-input", timeout=60_000)
        _reset_frames(chat)
        chat.answers().nth(1).wait_for(timeout=60_000)
        _settled(chat)
        _no_panel_since_reset(chat, "after reopening the conversation")
        panel = _open(chat, chat.answers().nth(0), 2)
        _shows_only(panel, 2)
        chat.page.wait_for_timeout(700)
        chat.screenshot(f"panel_reopened_{'phone' if phone else 'desktop'}.png")
        if not phone:  # the desktop panel stays open while another answer arrives (the phone's
            # sheet covers the message box): it keeps the reader's source, alone, every frame
            _reset_frames(chat)
            chat.ask("Does IQ predict health in childhood?")
            _settled(chat)
            crowded = chat.page.evaluate("window.__crowdedFrames")
            assert crowded == 0, f"the open panel showed several sources for {crowded} frames"
            _shows_only(panel, 2)
        _escape_closes(chat)
    finally:
        chat.close()


def test_another_server_stopping_in_the_same_folder_leaves_this_chats_files(
        browser: Any, fake_server: Server, tmp_path: Any) -> None:
    """Chainlit removes its files folder when its server stops: a second server started from the
    same folder and stopped must not take this chat's export files or its next answer's source
    panels with it (app/chainlit_files.py)."""
    chat = _chat(browser, fake_server, phone=False)
    try:
        chat.ask("Does IQ predict health?")
        _settled(chat)
        href = chat.page.locator("a", has_text="sources.bib").last.get_attribute("href")
        assert href, "the export link has no address"

        with running_server(FAKE_APP_ARGS, tmp_path / "other.log",
                            env={"CHAINLIT_APP_ROOT": str(REPO_ROOT)}) as other:
            other.wait_for_log("Your app is available")
        assert other.proc.returncode == 0, other.log()  # a clean exit: its files folder removed

        got = chat.page.request.get(chat.base_url + href if href.startswith("/") else href)
        assert got.ok and b"31234567" in got.body(), got.status  # the first answer's export
        second = chat.ask("Does IQ predict health in old age?")
        _shows_only(_open(chat, second, 1), 1)  # its markers are links: its panels were sent
        assert "could not be written" not in fake_server.log()
    finally:
        chat.close()
