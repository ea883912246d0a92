"""The answer as a whole, in the chat: stance badges on the sources and the line over them, and
the missing-concept message for a question no indexed abstract addresses. ``python -m app serve``
on the small real index with cfg.yaml's defaults (gpt4all, extractive), driven by Chromium."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from app.render import STANCE_BADGES
from tests.browser.harness import (
    ChatPage,
    Server,
    chromium,
    require_chromium,
    serving_chat,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NULL_FINDING = "Does working memory training improve fluid intelligence?"
UNINDEXED_DRUG = "Does dapagliflozin reduce cardiovascular death in heart failure?"


@pytest.fixture(scope="module")
def server(small_index_cfg: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    require_chromium()
    folder = tmp_path_factory.mktemp("ui_verdict")
    with serving_chat(small_index_cfg, folder) as srv:
        yield srv


@pytest.fixture
def chat(server: Server) -> Iterator[ChatPage]:
    with chromium() as browser:
        page = ChatPage(browser, server.url).open()
        try:
            yield page
        finally:
            page.close()


def test_null_finding_sources_show_no_badges_and_the_answer_says_no(chat: ChatPage) -> None:
    answer = chat.ask(NULL_FINDING)
    text = answer.inner_text()
    assert text.startswith("No ("), text
    # the line over the sources and a badge on each source that addresses the question
    assert "studies: " in text or "study: " in text, text
    badges = answer.locator("code").all_inner_texts()
    assert "says no" in badges and "says yes" not in badges, badges
    # the verdict line cites each of its sources with its own clickable marker ("[1] [2]", not
    # "[1, 2]"); mutation: the body rendered without app.render.linkable_markers -> no links
    verdict_line = answer.locator("[role=article]").first  # its first paragraph
    line = verdict_line.inner_text()
    assert not re.search(r"\[\d+,", line), line
    # the markers become links when the answer's panels arrive, just after its text
    verdict_line.locator("a.element-link").first.wait_for(timeout=60_000)
    links = set(verdict_line.locator("a.element-link").all_inner_texts())
    assert set(re.findall(r"\[\d+\]", line)) <= links, (line, links)
    chat.screenshot("verdict_null_finding.png")


def test_a_drug_no_abstract_mentions_is_named_with_no_verdict(chat: ChatPage) -> None:
    answer = chat.ask(UNINDEXED_DRUG)
    text = answer.inner_text()
    assert text.startswith("No indexed abstract mentions dapagliflozin."), text
    assert "Related reading:" in text, text
    assert not any(text.startswith(w) for w in ("Yes", "No (")), text
    # the closest sentences found are shown, but not as the answer's "Key findings"
    assert "Related findings (they do not answer the question)" in text, text
    assert "Key findings" not in text, text
    stances = set(STANCE_BADGES.values())  # (design badges are code too)
    badges = [b for b in answer.locator("code").all_inner_texts() if b in stances]
    assert badges == []  # no stance badges: nothing addresses it
