# ruff: noqa: F811 - the fixtures imported from tests.library_fixtures are parameters here
"""``/pubmed`` and the offer after an abstention, through app/ui.py's handlers as Chainlit sends
them (recorded, no browser): a real library addition against the local E-utilities replay server
into a small real index (real MiniLM), the stand-in assistant answering. Each test names the
mutation it was seen to catch."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from app import pubmed_chat, ui
from app.relay import Backend
from grounding.concepts import search_term
from indexing.build import read_article_hashes
from indexing.incremental import sync_library
from indexing.store import location, open_current
from ingest.library import Library
from ingest.replay import ReplayServer, closed_port_url
from settings.config import ConfigError, load_config
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
    # drugs asked as alternatives are ORed (mutation caught: every concept ANDed)
    assert pubmed_chat.pubmed_query("If I stay on Zoloft or Prozac while expecting, will my kid "
                                    "end up with a lower IQ?") == "(Zoloft OR Prozac) AND IQ"
    assert pubmed_chat.pubmed_text("/pubmed  dapagliflozin ") == "dapagliflozin"
    # a verb is no search term: the question is parted at it (stop 72), and a concept that
    # still holds one drops it (mutation caught: search_term returning the concept as asked ->
    # PubMed requires "induce" in every abstract it finds)
    assert pubmed_chat.pubmed_query("Does ozanimod induce remission in ulcerative colitis?") == (
        "ozanimod AND remission AND ulcerative colitis")
    assert search_term("ozanimod induce remission") == "ozanimod remission"


def test_the_query_holds_the_concept_the_answer_said_is_missing():
    """Mutation caught: pubmed_query ignoring ``missing`` -> the offer under "Not in the closest
    abstracts: baby walker" searched PubMed for "infancy delay walking AND IQ" (each word of
    "baby walker" is everyday English, so the concept has no essential word of its own)."""
    question = "Does using a baby walker in infancy delay walking or lead to lower IQ later?"
    assert "baby walker" not in pubmed_chat.pubmed_query(question)
    query = pubmed_chat.pubmed_query(question, ["baby walker"])
    assert query.startswith("baby walker AND ") and "IQ" in query
    text, actions = pubmed_chat.offer_actions(question, "Not in the closest abstracts: baby "
                                              "walker.", ["baby walker"])
    assert actions[0].payload["query"] == query and f"`{query}`" in text
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
    step = [d for d in emitter.of("update_step") if d.get("name") == "Search PubMed"][-1]
    assert step["input"] == "laparoscopic"
    (note,) = Library.of(cfg).notes()
    assert f"PubMed: {note.count:,} match" in step["output"]  # "1 match", "12 matches"
    assert f"; {note.fetched} fetched" in step["output"]
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
    step = [d for d in emitter.of("update_step") if d.get("name") == "Search PubMed"][-1]
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
    await pubmed_chat.offer_after(question, SimpleNamespace(
        missing_concepts=["dapagliflozin"], absent_concepts=["dapagliflozin"]))
    sent = [d for k, d in emitter.events if k == "send_step"]
    assert sent and "Not in the local index: dapagliflozin" in sent[-1]["output"]
    assert pubmed_chat.pubmed_query(question) in sent[-1]["output"]


async def _offer_shown(question: str, missing: list[str]) -> str:
    """What the chat shows under an answer that named ``missing`` (none absent from the index)."""
    emitter = new_session()
    await pubmed_chat.offer_after(question, SimpleNamespace(
        missing_concepts=missing, absent_concepts=[]))
    sent = [d for k, d in emitter.events if k == "send_step"]
    assert sent, "no offer was shown"
    return str(sent[-1]["output"])


@pytest.mark.asyncio
async def test_the_offer_says_not_in_the_index_only_of_what_no_indexed_abstract_holds():
    """Mutation caught: ``not_found`` naming every missing concept "Not in the local index"
    (the chat said so of "preemies", whose clinical name "preterm" the index holds)."""
    shown = await _offer_shown("Do preemies have a lower IQ as adults?", ["preemies"])
    assert "Not in the closest abstracts: preemies." in shown
    assert "local index" not in shown


@pytest.mark.asyncio
async def test_the_offer_searches_pubmed_for_the_concept_it_says_is_missing():
    """Mutation caught: ``offer_after`` not passing the missing concepts on -> "Not in the
    closest abstracts: baby walker. Search PubMed for `infancy delay walking AND IQ`"."""
    question = "Does using a baby walker in infancy delay walking or lead to lower IQ later?"
    assert "Search PubMed for `baby walker AND " in await _offer_shown(question, ["baby walker"])


class HeldEmbedder:
    """The real embedder, held after its first batch until the test has pressed Stop (so Stop
    lands in the middle of the embedding, whatever the machine's speed)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.first_batch = threading.Event()
        self.release = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def encode(self, texts: Any, progress: Any = None) -> Any:
        def batch_done(n: int) -> None:
            self.first_batch.set()
            self.release.wait(120)
            if progress:
                progress(n)

        return self.inner.encode(texts, progress=batch_done)


def _library_files(cfg: Any) -> list[str]:
    folder = cfg.resolve(cfg.library.dir)
    return sorted(p.name for p in folder.iterdir() if p.name != ".lock") if folder.is_dir() else []


@pytest.mark.asyncio
async def test_progress_in_the_step_and_stop_leaves_the_library_and_index_as_they_were(
    tmp_path, pool, embedder, monkeypatch,
):
    """Mutations caught: the step not updated while the addition runs (no progress shown); Stop
    not passed on to the worker (``stop.set()`` dropped: the addition completes and is
    published); the search's files not taken out of the library after Stop (the corpus ahead of
    the index)."""
    write_corpus(tmp_path / "corpus", pool[:SHIPPED])
    with ReplayServer(pool) as replay:
        cfg = make_cfg(tmp_path, replay.base_url)
        full_build(cfg, embedder)
        published, manifest = open_current(cfg)
        emitter = new_session()
        fake = FakeAssistant()
        held = HeldEmbedder(embedder)
        monkeypatch.setattr(ui, "_CFG", cfg)
        monkeypatch.setattr(ui, "BACKEND", Backend(lambda: fake))
        monkeypatch.setattr(pubmed_chat, "PROGRESS_POLL_S", 0.05)

        async def loaded_embedder() -> Any:
            return held

        monkeypatch.setattr(ui, "_query_embedder", loaded_embedder)
        task = asyncio.ensure_future(ui._on_message(message("/pubmed laparoscopic")))
        assert await asyncio.to_thread(held.first_batch.wait, 300), "never embedded"

        def shown() -> list[str]:
            return [d.get("output") or "" for d in emitter.of("update_step")
                    if d.get("name") == "Search PubMed"]

        for _ in range(600):  # the step shows the embedding before Stop is pressed
            if any("new chunks" in out for out in shown()):
                break
            await asyncio.sleep(0.05)
        task.cancel()  # what Chainlit does on Stop
        held.release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
    progress = [out for out in shown() if "Stop cancels it" in out]
    assert any("embedding" in out and "new chunks" in out for out in progress), shown()
    assert "Stopped: nothing was added to the library" in shown()[-1]
    assert fake.calls == []  # not answered again after Stop
    assert Library.of(cfg).notes() == [] and _library_files(cfg) == []
    folder, after = open_current(cfg)  # every checksum verified
    assert folder == published and after.built_at == manifest.built_at
    builds = location(cfg).builds
    assert sorted(p.name for p in builds.iterdir()) == [published.name]  # no half build left
    assert not sync_library(cfg, embedder=embedder).changed  # index and library agree


def test_who_may_add_is_validated():
    """Mutation caught: the cross-check of who_may_add against ui.auth dropped (a 'listed'
    setting without sign-in, where every user is "local", accepted)."""
    with pytest.raises(ConfigError, match="who_may_add: listed needs ui.auth: password"):
        load_config(overrides={"library": {"who_may_add": "listed", "may_add": ["ann"]}})
    with pytest.raises(ConfigError, match="may_add names no user"):
        load_config(overrides={"ui": {"auth": "password"}, "library": {"who_may_add": "listed"}})
    with pytest.raises(ConfigError, match="set who_may_add: listed"):
        load_config(overrides={"library": {"may_add": ["ann"]}})
    listed = load_config(overrides={"ui": {"auth": "password"},
                                    "library": {"who_may_add": "listed", "may_add": ["ann"]}})
    assert pubmed_chat.may_add(listed, "ann") and not pubmed_chat.may_add(listed, "bob")
    nobody = load_config(overrides={"library": {"who_may_add": "nobody"}})
    assert not pubmed_chat.may_add(nobody, "local")
    assert pubmed_chat.may_add(load_config(), "local")


@pytest.mark.asyncio
async def test_a_user_not_allowed_to_add_is_told_and_pubmed_is_not_asked(
    tmp_path, pool, monkeypatch,
):
    """Mutation caught: ``may_add`` not checked before the addition (``if False``: a user outside
    library.may_add gets the addition attempted instead of the refusal)."""
    with ReplayServer(pool) as replay:
        cfg = make_cfg(tmp_path, replay.base_url).model_copy(update={
            "ui": load_config(overrides={"ui": {"auth": "password"}}).ui,
            "library": load_config(overrides={"ui": {"auth": "password"}, "library": {
                "dir": str(tmp_path / "library"), "who_may_add": "listed",
                "may_add": ["ann"]}}).library,
        })  # fmt: skip
        emitter = new_session()
        fake = FakeAssistant()
        monkeypatch.setattr(ui, "_CFG", cfg)
        monkeypatch.setattr(ui, "BACKEND", Backend(lambda: fake))
        monkeypatch.setattr(ui, "_user_name", lambda: "bob")
        await ui._on_message(message("/pubmed laparoscopic"))
        assert replay.requests == []
    step = [d for d in emitter.of("update_step") if d.get("name") == "Search PubMed"][-1]
    assert "not open to bob" in step["output"] and "library.who_may_add" in step["output"]
    assert len(fake.calls) == 1 and Library.of(cfg).notes() == []
    question = "Does dapagliflozin reduce cardiovascular death in heart failure?"
    await pubmed_chat.offer_after(question, SimpleNamespace(missing_concepts=["dapagliflozin"]),
                                  cfg, "bob")
    sent = [d for k, d in emitter.events if k == "send_step"]
    assert "not open to bob" in sent[-1]["output"] and not sent[-1].get("actions")


@pytest.mark.asyncio
async def test_a_follow_ups_offer_searches_its_conversations_topic():
    """Seen in stop 72's browser walk: after "Do preemies end up with a lower IQ as
    grown-ups?", the follow-up "and does breastfeeding help them catch up?" (searched as
    "preemies end up with a lower IQ as grown-ups: breastfeeding help catch?") was offered a
    PubMed search for "breastfeeding" alone. Mutation caught: ``offer_after`` not passing the
    result's ``searched_question`` on -> the query lacks "preemies"."""
    emitter = new_session()
    searched = "preemies end up with a lower IQ as grown-ups: breastfeeding help catch?"
    await pubmed_chat.offer_after("and does breastfeeding help them catch up?", SimpleNamespace(
        missing_concepts=["preemies"], absent_concepts=[], searched_question=searched))
    sent = [d for k, d in emitter.events if k == "send_step"]
    assert sent, "no offer was shown"
    query = pubmed_chat.pubmed_query(searched, ["preemies"])
    assert "preemies" in query and "breastfeeding" in query, query
    assert f"Search PubMed for `{query}`" in sent[-1]["output"]
