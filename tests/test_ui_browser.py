"""The chat for real: ``python -m app serve`` on the small test index with the default model
(SmolLM2-135M, short answers), driven by Debian's Chromium through Playwright.

One server for the module; it loads the model once at start-up. Answers are checked for shape
(streamed, cited, linked, refused) rather than wording, since the model is tiny.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from app.ui import QUEUED_TEXT
from tests.browser.harness import (
    PUBMED_HREF,
    ChatPage,
    Server,
    require_chromium,
    serving_chat,
)
from tests.helpers import REFUSAL

pytestmark = [pytest.mark.browser, pytest.mark.slow]

QUESTION = ("Do mitochondria play a role in remodelling lace plant leaves during programmed "
            "cell death?")


@pytest.fixture(scope="module")
def server(small_index_cfg: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    require_chromium()
    folder = tmp_path_factory.mktemp("ui_real")
    # answer.style auto: the model writes, so answers stream token by token (the default
    # extractive style is in the chat of tests/test_ui_browser_gpt4all.py and the e2e tests)
    edit = {"llm": {"max_new_tokens": 48}, "answer": {"style": "auto"}}
    with serving_chat(small_index_cfg, folder, edit, audit=True) as srv:
        yield srv


@pytest.fixture
def chat(browser: Any, server: Server) -> Iterator[ChatPage]:
    page = ChatPage(browser, server.url).open()
    yield page
    page.close()


def test_streamed_answer_with_sources_linked_to_retrieved_pubmed_ids(
        chat: ChatPage, small_retriever: Any) -> None:
    answer = chat.ask(QUESTION)
    text = answer.inner_text()
    growing = [p for p in chat.partials() if p and "Sources" not in p and p in text]
    assert len(set(growing)) >= 2, chat.partials()  # shown token by token, not all at once
    assert "Mode: plain" in text

    links = chat.source_links(answer)
    assert links, text
    # the answer's own text cites (the Key findings and Sources lists also show [n]: not counted)
    own = re.split("Key findings|Related findings", text)[0].split("Sources")[0]
    assert re.search(r"\[\d\]", own), text
    retrieved = {d.metadata["pmid"] for d in small_retriever.retrieve(QUESTION).documents}
    pmids = [PUBMED_HREF.match(href).group(1) for _, href, _ in links]  # type: ignore[union-attr]
    assert set(pmids) <= retrieved
    assert all(target == "_blank" for _, _, target in links)
    # each source's passage is a side element named like its marker
    markers = answer.locator("a.element-link")
    markers.first.wait_for(timeout=60_000)  # the markers become links as the panels arrive
    assert markers.count() >= len(links)
    for n in range(1, len(links) + 1):
        assert f"[{n}]" in markers.all_inner_texts()
    chat.screenshot("ui_answer_with_sources.png")
    step = chat.last_search_step()
    assert "Searched for:" in step and "Sources found:" in step
    assert chat.dialogs == []  # (no request to another host: ChatPage.close checks it)


def test_side_panel_shows_the_whole_abstract_with_its_evidence_in_bold(
        chat: ChatPage, small_retriever: Any) -> None:
    from retrievers.articles import article_text

    answer = chat.ask(QUESTION)
    text = answer.inner_text()
    assert "Key findings" in text or "[1]" in text.split("Sources")[0]
    pmid = PUBMED_HREF.match(chat.source_links(answer)[0][1]).group(1)  # type: ignore[union-attr]
    doc = next(d for d in small_retriever.retrieve(QUESTION).documents
               if d.metadata["pmid"] == pmid)
    abstract = " ".join(article_text(doc).split())
    panel = chat.open_source_panel(answer, 1)
    # Chainlit renders markdown bold as <span class="font-bold">
    bold = [t.strip() for t in panel.locator("strong, .font-bold").all_inner_texts()]
    # the title line is bold too, and the panel's labels ("Design:")
    evidence = [t for t in bold if not t.startswith("[1]") and not t.endswith(":")]
    assert evidence, bold
    for sentence in evidence:  # each highlighted sentence is a whole sentence of this abstract
        assert " ".join(sentence.split()) in abstract, sentence
        assert sentence.endswith((".", "!", "?", ")")), sentence
    # the panel holds the whole abstract, not only the retrieved chunk
    shown = " ".join(panel.inner_text().split())
    assert abstract[-60:] in shown and abstract[:60] in shown
    chat.screenshot("ui_side_panel_evidence.png")


def test_conversational_follow_up_shows_the_rewritten_question(chat: ChatPage) -> None:
    chat.set_mode("Conversational (follow-up questions)")
    first = chat.ask("Does methylphenidate improve attention in children with ADHD?")
    assert "Mode: conversational" in first.inner_text()
    follow_up = chat.ask("What are its side effects?")
    assert "Mode: conversational" in follow_up.inner_text()
    step = chat.last_search_step()
    assert "Rewritten question:" in step, step


def test_multi_query_mode_shows_its_sub_queries(chat: ChatPage) -> None:
    chat.set_mode("Multi-query (several searches)")
    answer = chat.ask("What is suggested about the relationship between ubiquinone levels and "
                      "ADHD pathogenesis?")
    assert "Mode: multi-query" in answer.inner_text()
    step = chat.last_search_step()
    assert "Sub-queries:" in step, step


def _linked_pmids(chat: ChatPage, answer: Any) -> set[str]:
    return {PUBMED_HREF.match(h).group(1) for _, h, _ in chat.source_links(answer)}  # type: ignore[union-attr]


def test_two_users_at_once_each_get_their_own_answer(
        browser: Any, server: Server, small_retriever: Any) -> None:
    pages = [ChatPage(browser, server.url).open() for _ in range(2)]
    questions = ["Is childhood intelligence associated with adult mortality?", QUESTION]
    tops = [small_retriever.retrieve(q).documents[0].metadata["pmid"] for q in questions]
    assert tops[0] != tops[1]
    try:
        before = [page.send(q) for page, q in zip(pages, questions, strict=True)]
        answers = [page.wait_answer(b) for page, b in zip(pages, before, strict=True)]
        for i, (page, question, answer) in enumerate(zip(pages, questions, answers, strict=True)):
            assert page.user_messages() == [question]  # each sees only their own chat
            assert "Mode: plain" in answer.inner_text()
            linked = _linked_pmids(page, answer)  # each answer cites its own question's article
            assert tops[i] in linked and tops[1 - i] not in linked, (question, linked)
        # the model answers one question at a time: one of the two waited in the queue
        assert any(QUEUED_TEXT in p for page in pages for p in page.partials())
    finally:
        for page in pages:
            page.close()


def test_two_conversations_never_share_their_history(browser: Any, server: Server) -> None:
    """Two tabs in conversational mode, different topics; each follow-up is searched in the
    context of its own tab's previous question, never the other tab's."""
    pages = [ChatPage(browser, server.url).open() for _ in range(2)]
    firsts = ["Does methylphenidate improve attention in children with ADHD?", QUESTION]
    own = [re.compile(r"methylphenidate|ADHD", re.I), re.compile(r"mitochondria|lace", re.I)]
    try:
        for page in pages:
            page.set_mode("Conversational (follow-up questions)")
        for page, q in zip(pages, firsts, strict=True):
            page.ask(q)
        for i, page in enumerate(pages):
            page.ask("What else was found?")
            step = page.last_search_step()
            assert "Rewritten question:" in step, step
            searched = step.split("Rewritten question:")[1].split("\n")[0]
            assert own[i].search(searched) and not own[1 - i].search(searched), searched
    finally:
        for page in pages:
            page.close()


def test_off_topic_question_is_refused(chat: ChatPage) -> None:
    answer = chat.ask("Who won the 2014 football World Cup?")
    text = answer.inner_text()
    assert REFUSAL in text
    assert chat.source_links(answer) == []


def test_model_that_fails_to_load_gives_a_friendly_message(
        browser: Any, small_index_cfg: Any, tmp_path: Path) -> None:
    edit = {"llm": {"model_path": str(tmp_path / "missing.gguf")}}
    with serving_chat(small_index_cfg, tmp_path, edit) as srv:
        chat = ChatPage(browser, srv.url).open()
        try:
            notice = chat.page.get_by_text("The language model could not be loaded.")
            for n in (1, 2):  # the server keeps serving (and retries the load)
                chat.send("Is childhood intelligence associated with adult mortality?")
                expect(notice).to_have_count(n, timeout=120_000)
            text = "\n".join(chat.page.locator(".message-content").all_inner_texts())
            assert "cfg.yaml" in text and "Traceback" not in text
        finally:
            chat.close()


def test_the_server_tries_to_reach_no_other_host(server: Server) -> None:
    """After every answer above (model load included), the server has attempted no connection
    and no name lookup off this machine: each attempt is recorded as it is made
    (tests/browser/netaudit.py), so an offline machine fails this just as an online one does."""
    assert server.remote_attempts() == []
