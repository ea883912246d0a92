"""The chat's main path with ``retrieval.backend: milvus``: ``python -m app serve`` on a copy of
the small milvus-lite test index, the default model, Debian's Chromium through Playwright.

The expected sources are computed in this process first, on the session's own copy of the
index; the server gets another copy, since milvus-lite allows one process per database. The
server's config also names the small FAISS index (the same articles), so what tells the backends
apart is the server holding its Milvus database open: milvus-lite keeps the database's LOCK file
open in the process that opened it, and FAISS never opens it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.harness import (
    PUBMED_HREF,
    ChatPage,
    Server,
    chromium,
    require_chromium,
    running_server,
    write_test_config,
)
from tests.milvus_fixtures import (  # noqa: F401 - fixtures
    copy_lite_db,
    small_milvus_backend,
    small_milvus_cfg,
    small_milvus_source,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

QUESTION = ("Do mitochondria play a role in remodelling lace plant leaves during programmed "
            "cell death?")


@pytest.fixture(scope="module")
def server(small_milvus_source: Any, tmp_path_factory: pytest.TempPathFactory  # noqa: F811
           ) -> Iterator[tuple[Server, Path]]:
    """The chat on its own copy of the milvus-lite database, and that database's folder."""
    require_chromium()
    folder = tmp_path_factory.mktemp("ui_milvus")
    cfg = copy_lite_db(small_milvus_source, folder)
    path = write_test_config(cfg, folder / "cfg.yaml", {"llm": {"max_new_tokens": 48}})
    args = ["-m", "app", "--config", str(path), "serve", "--port", "{port}"]
    with running_server(args, folder / "server.log") as srv:
        yield srv, cfg.resolve(cfg.retrieval.milvus.uri)


def open_files(pid: int) -> set[str]:
    """The files process ``pid`` has open (Linux /proc)."""
    opened = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            opened.add(os.path.realpath(f"/proc/{pid}/fd/{fd}"))
        except OSError:  # closed meanwhile
            pass
    return opened


def test_streamed_answer_with_sources_from_milvus(
        server: tuple[Server, Path], small_milvus_cfg: Any,  # noqa: F811
        small_milvus_backend: Any) -> None:  # noqa: F811
    from retrievers.loading import load_retriever

    srv, database = server
    retriever = load_retriever(small_milvus_cfg, small_milvus_backend)
    retrieved = {d.metadata["pmid"] for d in retriever.retrieve(QUESTION).documents}
    assert retrieved
    with chromium() as browser:
        chat = ChatPage(browser, srv.url).open()
        try:
            answer = chat.ask(QUESTION)
            # searched in the Milvus database: the server holds it open, FAISS never would
            lock = os.path.realpath(database / "LOCK")
            assert lock in open_files(srv.proc.pid), sorted(open_files(srv.proc.pid))
            text = answer.inner_text()
            assert "Mode: plain" in text
            growing = [p for p in chat.partials() if p and "Sources" not in p and p in text]
            assert len(set(growing)) >= 2, chat.partials()  # streamed token by token
            links = chat.source_links(answer)
            assert links, text
            pmids = [PUBMED_HREF.match(href).group(1) for _, href, _ in links]  # type: ignore[union-attr]
            assert set(pmids) <= retrieved
            step = chat.last_search_step()
            assert "Searched for:" in step and "Sources found:" in step
            assert chat.dialogs == [] and chat.external_requests() == []
            chat.screenshot("ui_answer_with_sources_milvus.png")
        finally:
            chat.close()
