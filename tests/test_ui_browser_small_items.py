"""Issue #36's screens in real Chromium, against the real Chainlit app with the scripted
assistant whose sources are real articles of the shared corpus (with the designs ingest gives
them): design badges that are right or not shown, the over-long question, "New chat"'s warning, a
reopened conversation's mode button."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.harness import (
    FAKE_APP_ARGS,
    REPO_ROOT,
    SHARED_DATA,
    ChatPage,
    Server,
    require_chromium,
    require_shared_data,
    running_server,
)

pytestmark = pytest.mark.browser

# the sources, in this order: [1] "...: A Randomized Comparison to Processing Speed Training"
# (was Cohort), [2] an analysis "in an observational design" (was RCT), [3] a cost model (was a
# systematic review), [4] an open training trial (was Other)
PMIDS = ["27043141", "29538361", "26268911", "23411126"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    require_chromium()
    require_shared_data()
    folder = tmp_path_factory.mktemp("ui_items")
    corpus = os.pathsep.join(str(SHARED_DATA / "pubmed" / f) for f in
                             ("intelligence_2013_2022.xml.gz", "pubmedqa_pqal.xml.gz"))
    with running_server(FAKE_APP_ARGS, folder / "server.log",
                        env={"CHAINLIT_APP_ROOT": str(REPO_ROOT), "FAKE_TOKEN_DELAY": "0.01",
                             "FAKE_SOURCE_PMIDS": ",".join(PMIDS), "FAKE_CORPUS": corpus},
                        audit_log=folder / "net.log") as srv:
        yield srv


def _source_lines(answer: Any) -> dict[int, str]:
    lines = {}
    for line in answer.inner_text().splitlines():
        m = re.match(r"\s*\[(\d+)\]\s", line)
        if m and " — " in line:
            lines[int(m.group(1))] = line
    return lines


@pytest.mark.parametrize("phone", [False, True], ids=["desktop", "phone"])
def test_design_badges_are_right_or_not_shown(browser: Any, server: Server, phone: bool) -> None:
    chat = ChatPage(browser, server.url, phone=phone).open()
    try:
        answer = chat.ask("Does working memory training improve intelligence?")
        lines = _source_lines(answer)
        assert sorted(lines) == [1, 2, 3, 4], lines
        assert "Randomized Comparison" in lines[1] and "Cohort" not in lines[1], lines[1]
        assert "RCT" not in lines[2], lines[2]
        assert "Systematic review" not in lines[3], lines[3]
        assert all("Other" not in line for line in lines.values()), lines
        assert all("design not stated" in line for line in lines.values()), lines
        assert all("search match:" in line and "confidence" not in line
                   for line in lines.values()), lines
        assert "not the strength or certainty of its evidence" in answer.inner_text()
        panel = chat.open_source_panel(answer, 1)
        text = panel.inner_text()
        assert "Design: not stated reliably" in text and "suggests RCT" in text, text
        chat.page.wait_for_timeout(700)
        chat.screenshot(f"designs_{'phone' if phone else 'desktop'}.png")
    finally:
        chat.close()


def test_an_overlong_question_is_refused_in_plain_words(chat_page: ChatPage) -> None:
    question = "Is intelligence heritable? " + "x" * 5000
    chat_page.send(question)
    reply = chat_page.page.locator(".message-content", has_text="That question is too long")
    reply.first.wait_for(timeout=30_000)
    text = reply.first.inner_text()
    assert "at most 2,000 characters" in text, text
    assert "cfg.yaml" not in text and "max_question_chars" not in text, text
    assert "xxxxxxxxxx" not in text and len(text) < 400, text
    assert chat_page.answers().count() == 0


def test_new_chat_says_the_conversation_is_kept(chat_page: ChatPage) -> None:
    chat_page.ask("Does IQ predict health?")
    chat_page.click_on_screen("#new-chat-button")
    dialog = chat_page.page.get_by_role("alertdialog").or_(chat_page.page.get_by_role("dialog"))
    dialog.first.wait_for()
    text = dialog.first.inner_text()
    assert "clear your current chat history" not in text, text
    assert "stays in Past chats" in text, text


def test_a_reopened_conversation_highlights_its_own_mode(chat_page: ChatPage) -> None:
    chat = chat_page
    chat.set_mode("conversational")
    chat.ask("Does IQ predict health?")
    first = chat.page.url
    chat.click_on_screen("#new-chat-button")
    chat.page.get_by_role("button", name="Confirm").click()
    chat.page.locator("#starters").wait_for()
    chat.set_mode("plain")
    chat.ask("Is intelligence heritable?")
    assert chat.current_mode() == "Plain"
    chat.click_on_screen("#sidebar-trigger-button")  # open the sidebar, reopen the first chat
    chat.page.locator(f"a[href='{first.split(chat.base_url)[1]}']").first.click()
    chat.page.wait_for_url(first, timeout=60_000)
    chat.answers().first.wait_for(timeout=60_000)
    chat.page.wait_for_function(
        "() => (document.querySelector('.command-buttons-container button.text-command')"
        " || {}).innerText?.trim() === 'Conversational'", timeout=30_000)
    assert chat.current_mode() == "Conversational"

    # the server's choice may reach the page while the mode buttons are disabled (a reopened
    # conversation loading; here an answer running): a click on them does nothing, so the page
    # highlights it once they are enabled again (the answer is long enough to be running still
    # under any load; stopping it enables the buttons)
    chat.set_mode("plain")
    chat.send("Please give a very long answer")
    chat.page.get_by_text("word word").first.wait_for()
    assert chat.mode_button("conversational").is_disabled()
    chat.page.evaluate("window.postMessage({pubmedAssistant: {modeButton: 'Conversational'}},"
                       " window.location.origin)")
    chat.page.wait_for_timeout(500)
    assert chat.current_mode() == "Plain"  # not while the buttons are disabled
    chat.page.click("#stop-button")
    chat.page.get_by_text("Task manually stopped.").wait_for()
    chat.page.wait_for_function(
        "() => (document.querySelector('.command-buttons-container button.text-command')"
        " || {}).innerText?.trim() === 'Conversational'", timeout=30_000)


@pytest.fixture
def chat_page(browser: Any, server: Server) -> Iterator[ChatPage]:
    page = ChatPage(browser, server.url).open()
    yield page
    page.close()
