"""Markup in an abstract stays inert in the real chat: a tiny real index (a few shared-corpus
articles plus one article whose title, authors, journal and abstract carry HTML/script), the real
server and model, and Chromium. No dialog may fire; the markup must show as text."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from app.config import load_config
from ingest.models import Article
from tests.browser.fakes import XSS_TITLE
from tests.browser.harness import (
    SHARED_DATA,
    ChatPage,
    Server,
    require_chromium,
    serving_chat,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

XSS_PMID = "99999901"
XSS_ABSTRACT = (
    "BACKGROUND: Working memory and intelligence are closely related <script>alert('abstract')"
    "</script>. METHODS: We tested working memory capacity and fluid intelligence in 200 adults "
    "<img src=x onerror=alert(2)>. RESULTS: Working memory capacity predicted intelligence "
    "[click](javascript:alert(3)). CONCLUSIONS: Intelligence and working memory share variance."
)
TOPICAL = re.compile(r"intellig|memory|cognit", re.IGNORECASE)


def malicious_article() -> Article:
    return Article(pmid=XSS_PMID, title=XSS_TITLE, abstract=XSS_ABSTRACT,
                   authors=["<b onmouseover=alert(4)>Mallory</b> M", "Doe J"],
                   journal="<svg onload=alert(5)>J Evil", year=2021)


@pytest.fixture(scope="module")
def server(shared_articles: list[Article],
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    require_chromium()
    from indexing.build import build_index

    folder = tmp_path_factory.mktemp("ui_xss")
    cfg = load_config(overrides={
        "corpus": {"paths": [str(SHARED_DATA / "pubmed")]},
        "index": {"dir": str(folder / "index"), "name": "xss", "embedding_backend": "torch"},
    })
    others = [a for a in shared_articles if not TOPICAL.search(a.title + " " + a.abstract)][:20]
    build_index(cfg, [*others, malicious_article()])
    with serving_chat(cfg, folder, {"llm": {"max_new_tokens": 16}}) as srv:
        yield srv


def test_markup_from_an_abstract_renders_as_text(browser: Any, server: Server) -> None:
    chat = ChatPage(browser, server.url).open()
    try:
        answer = chat.ask("How is working memory related to intelligence?")
        links = chat.source_links(answer)
        evil = [(text, n) for n, (text, href, _) in enumerate(links, 1) if XSS_PMID in href]
        assert evil, links
        title, n = evil[0]
        assert title == XSS_TITLE  # the tags are visible text, not elements
        text = answer.inner_text()
        assert "<b onmouseover=alert(4)>Mallory</b> M et al." in text
        assert "<svg onload=alert(5)>J Evil" in text

        answer.locator("a.element-link", has_text=f"[{n}]").first.click()
        chat.page.get_by_text("<img src=x onerror=alert(2)>", exact=False).first.wait_for()

        page = chat.page
        assert page.locator("img[src='x']").count() == 0
        assert page.locator("svg[onload]").count() == 0
        assert page.locator("b[onmouseover]").count() == 0
        assert page.locator("script:has-text('alert')").count() == 0
        assert page.locator("a[href^='javascript']").count() == 0
        page.mouse.move(5, 5)
        assert chat.dialogs == []
        chat.screenshot("ui_xss_inert.png")
    finally:
        chat.close()
