"""A three-turn conversation in the real chat (``python -m app serve`` on the small real index,
conversational mode, the shipped extractive answers), in Debian's Chromium: desktop and a
390x844 phone viewport. The third turn, "any long-term side effects?", must be searched as
stimulants for ADHD in adults and answered from abstracts on stimulant drugs (issue #36)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.harness import ChatPage, Server, require_chromium, serving_chat

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TURNS = ("Are stimulant medications effective for ADHD in children?", "what about adults?",
         "any long-term side effects?")  # fmt: skip
STIMULANT_WORDS = re.compile(r"stimulant|methylphenidate|amphetamine", re.I)
CHILDREN_WORDS = re.compile(r"\b(children|pediatric|paediatric|kids)\b", re.I)


@pytest.fixture(scope="module")
def server(small_index_cfg: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    require_chromium()
    folder = tmp_path_factory.mktemp("ui_conversation")
    with serving_chat(small_index_cfg, folder, {"chains": {"mode": "conversational"}}) as srv:
        yield srv


HINT = "reads as a follow-up"


def close_side_panel(chat: ChatPage) -> None:
    """Close the sources side panel where it opened by itself: on a phone it covers the message
    box (issue #36's UI part, fixed separately; this test is about the conversation)."""
    close = chat.page.locator("[role='dialog'] button", has_text="Close")
    if close.count() and close.first.is_visible():
        close.first.click()
        close.first.wait_for(state="hidden")


def ask(chat: ChatPage, question: str) -> Any:
    answer = chat.ask(question)
    close_side_panel(chat)
    return answer


@pytest.mark.parametrize("viewport", [None, {"width": 390, "height": 844}],
                         ids=["desktop", "phone"])  # fmt: skip
def test_the_third_turn_is_about_stimulants_for_adhd_in_adults(
    browser: Any, server: Server, viewport: dict[str, int] | None
) -> None:
    chat = ChatPage(browser, server.url)
    try:
        if viewport:
            chat.page.set_viewport_size(viewport)
            # on a phone viewport the page is not moved to the conversation's URL after the
            # first message (seen with Chainlit 2 here; the stored history is not this test's
            # subject): do not wait for it
            chat._keeps_history = False
        chat.open()
        chat.set_mode("Conversational (follow-up questions)")
        ask(chat, TURNS[0])
        ask(chat, TURNS[1])
        step = chat.last_search_step()
        assert "Rewrite: resolved" in step, step
        assert re.search(r"Rewritten question:.*ADHD in adults", step), step
        third = ask(chat, TURNS[2])
        # the conversational mode follows up: no hint that the follow-up was asked alone
        assert not chat.page.get_by_text(HINT).count()
        step = chat.last_search_step()
        searched = re.search(r"Rewritten question:\s*(.+)", step)
        assert searched, step
        for word in ("stimulant", "ADHD", "adults", "side"):
            assert word in searched.group(1), step
        assert "children" not in searched.group(1), step
        assert chat.source_links(third), third.inner_text()
        sources = third.inner_text().split("Sources")[-1]  # the answer's list of its abstracts
        # answered from studies of adults, a stimulant study among them (the small index holds
        # no adults' study of stimulants' long-term effects; the children's ones come after)
        assert STIMULANT_WORDS.search(sources), sources
        assert not CHILDREN_WORDS.search(sources), sources
        chat.screenshot(f"ui_conversation_third_turn_{'phone' if viewport else 'desktop'}.png")
    finally:
        chat.close()


def test_a_follow_up_in_plain_mode_is_answered_with_a_hint_naming_conversational(
    browser: Any, server: Server
) -> None:
    """In Plain, "what about adults?" is searched as written (the answer is about other adults);
    the chat says so under it and names the Conversational button. Mutation caught: the hint
    not sent from ``app/ui.py`` -> no hint (the conversational test above catches it shown in
    the mode that follows up; tests/test_followup_hint.py the rest)."""
    chat = ChatPage(browser, server.url).open()
    try:
        chat.set_mode("Plain")
        ask(chat, TURNS[0])
        ask(chat, TURNS[1])
        hint = chat.page.get_by_text(HINT)
        hint.first.wait_for(timeout=30_000)
        assert hint.count() == 1  # under the follow-up only, not under the first question
        assert "choose Conversational" in hint.first.inner_text()
        assert "Searched for: what about adults?" in chat.last_search_step()
        chat.screenshot("ui_followup_hint_plain.png")
    finally:
        chat.close()
