# ruff: noqa: F811 - the fixtures imported from tests.library_fixtures are parameters here
"""``/pubmed`` and the offer after an abstention, through app/ui.py's handlers as Chainlit sends
them (recorded, no browser): a real library addition against the local E-utilities replay server
into a small real index (real MiniLM), the stand-in assistant answering. Each test names the
mutation it was seen to catch."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from app import pubmed_chat, ui
from app.relay import Backend
from indexing.build import read_article_hashes
from indexing.store import open_current
from ingest.library import Library
from ingest.replay import ReplayServer, closed_port_url
from tests.browser.fakes import FakeAssistant
from tests.library_fixtures import (  # noqa: F401 - fixtures
    SHIPPED,
    embedder,
    full_build,
    make_cfg,
    pool,
    write_corpus,
)
from tests.test_ui_answer import _files_in_tmp, new_session  # noqa: F401 - a fixture


def message(text: str) -> Any:
    return type("Msg", (), {"content": text, "command": None})()


def test_a_question_becomes_a_query_of_its_concepts():
    """Mutation caught: the question sent as written (its frame words ANDed by PubMed)."""
    query = pubmed_chat.pubmed_query("Does dapagliflozin reduce cardiovascular death in heart "
                                     "failure?")
    assert "dapagliflozin" in query and " AND " in query and "Does" not in query
    assert pubmed_chat.pubmed_query("sglt2[Title] AND heart failure") == (
        "sglt2[Title] AND heart failure")  # a query is sent as written
    assert pubmed_chat.pubmed_text("/pubmed  dapagliflozin ") == "dapagliflozin"
    assert pubmed_chat.pubmed_text("/PubMed x") == "x"
    assert pubmed_chat.pubmed_text("pubmed is a database") is None


@pytest.mark.asyncio
async def test_slash_pubmed_adds_then_answers_again(tmp_path, pool, embedder, monkeypatch):
    """Mutation caught: the ``/pubmed`` route in ``_on_message`` removed (the text is answered as
    a question, nothing is searched)."""
    write_corpus(tmp_path / "corpus", pool[:SHIPPED])
    with ReplayServer(pool) as replay:
        cfg = make_cfg(tmp_path, replay.base_url)
        full_build(cfg, embedder)
        emitter = new_session()
        fake = FakeAssistant()
        monkeypatch.setattr(ui, "_CFG", cfg)
        monkeypatch.setattr(ui, "BACKEND", Backend(lambda: fake))

        async def loaded_embedder() -> Any:
            return embedder  # what the loaded retriever's query embedder would be

        monkeypatch.setattr(ui, "_query_embedder", loaded_embedder)
        await ui._on_message(message("/pubmed laparoscopic"))
    step = next(d for d in emitter.of("update_step") if d.get("name") == "Search PubMed")
    assert step["input"] == "laparoscopic"
    (note,) = Library.of(cfg).notes()
    assert f"PubMed: {note.count:,} matches; {note.fetched} fetched" in step["output"]
    assert f"**{note.new} new** to the index" in step["output"]
    assert set(note.pmids) <= set(read_article_hashes(open_current(cfg)[0]))
    assert [c["question"] for c in fake.calls] == ["laparoscopic"]  # answered again


@pytest.mark.asyncio
async def test_offline_the_step_says_so_and_the_question_is_still_answered(
    tmp_path, pool, embedder, monkeypatch,
):
    """Mutation caught: the FetchError not caught in the step (the chat shows an error and
    never answers)."""
    write_corpus(tmp_path / "corpus", pool[:SHIPPED])
    cfg = make_cfg(tmp_path, closed_port_url())
    full_build(cfg, embedder)
    emitter = new_session()
    fake = FakeAssistant()
    monkeypatch.setattr(ui, "_CFG", cfg)
    monkeypatch.setattr(ui, "BACKEND", Backend(lambda: fake))
    await ui._on_message(message("/pubmed Does dapagliflozin reduce heart failure deaths?"))
    step = next(d for d in emitter.of("update_step") if d.get("name") == "Search PubMed")
    assert step["output"].startswith("PubMed could not be reached")
    assert step["output"].endswith("Answering from the local index only.")
    assert len(fake.calls) == 1 and Library.of(cfg).notes() == []


@pytest.mark.asyncio
async def test_an_abstention_for_a_missing_concept_gets_the_offer():
    """Mutation caught: the offer sent after every answer (also when nothing was missing)."""
    emitter = new_session()
    await pubmed_chat.offer_after("Is IQ heritable?", SimpleNamespace(missing_concepts=[]))
    assert emitter.events == []
    question = "Does dapagliflozin reduce cardiovascular death in heart failure?"
    await pubmed_chat.offer_after(question, SimpleNamespace(missing_concepts=["dapagliflozin"]))
    sent = [d for k, d in emitter.events if k == "send_step"]
    assert sent and "Not in the local index: dapagliflozin" in sent[-1]["output"]
    assert pubmed_chat.pubmed_query(question) in sent[-1]["output"]
