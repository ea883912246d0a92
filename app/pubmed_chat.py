"""Search PubMed from the chat: ``/pubmed QUERY``, and the offer after an abstention.

When an answer abstains because a concept of the question is in no indexed abstract ("No indexed
abstract mentions dapagliflozin"), the chat offers "Search PubMed" and shows the query it would
send: the question's concepts (``grounding.concepts``, the finder that decided the abstention)
joined by AND. Clicking it, or sending ``/pubmed`` followed by a query or a question (a question
is turned into a query the same way), runs ``library add`` for the user
(:func:`indexing.library_ops.add_search`: fetch, keep what is new, embed only that, publish with
the atomic swap) in a "Search PubMed" step that reports PubMed's match count, how many were
fetched, how many were new, and how long it took, then answers the question again from the grown
index. Offline, or when PubMed refuses, the step says so in one line and the question is answered
from the local index only.

ui.py calls :func:`install` once (the action callback) and :func:`offer_after` after each answer;
:func:`pubmed_text` routes a ``/pubmed`` message here.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import chainlit as cl

from app.render import escape_markdown
from grounding.concepts import question_concepts, search_term
from indexing.library_ops import AddOutcome, add_search
from ingest.errors import FetchError
from ingest.library import AdditionStopped, Library, LibraryError, SearchNote, plain_message
from settings.config import Config
from settings.errors import UserFacingError

PREFIX = "/pubmed"
ACTION = "pubmed_search"
OFFLINE_TAIL = "Answering from the local index only."
log = logging.getLogger("app.pubmed_chat")

Answer = Callable[[str], Awaitable[None]]  # answers a question in this chat session


def pubmed_text(text: str) -> str | None:
    """What follows ``/pubmed`` at the start of a message (None: not the command)."""
    head, _, rest = text.strip().partition(" ")
    return rest.strip() if head.casefold() == PREFIX else None


def pubmed_query(question: str, missing: Sequence[str] = ()) -> str:
    """The PubMed search for a question: its concepts (runs of content words, without verbs:
    :func:`grounding.concepts.search_term`), those with an essential word or named ``missing``
    by the answer ("baby walker", two everyday words the index judged together) first-class,
    joined by AND; drugs asked as alternatives ("Zoloft or Prozac") joined by OR in
    parentheses. Text that is already a query (field tags, boolean operators) is sent as
    written."""
    text = " ".join(question.split())
    if "[" in text or " AND " in text or " OR " in text:
        return text
    concepts = question_concepts(text)
    lacking = {w for name in missing for w in name.lower().split()}
    chosen = [c for c in concepts if c.essential or lacking & set(c.words)] or concepts
    terms: list[list[str]] = []
    for c in chosen:
        if c.alternative_of and terms and terms[-1][-1] == search_term(c.alternative_of):
            terms[-1].append(search_term(c.text))
        else:
            terms.append([search_term(c.text)])
    parts = [t[0] if len(t) == 1 else f"({' OR '.join(t)})" for t in terms]
    return " AND ".join(parts) or text


PROGRESS_POLL_S = 0.5  # how often the step shows the addition's latest progress
NOT_ALLOWED = ("Adding PubMed searches to the shared library is not open to {user} on this "
               "server (library.who_may_add in cfg.yaml).")


def may_add(cfg: Config, user: str) -> bool:
    """Whether ``user`` may add to the shared library from the chat (``library.who_may_add``;
    ``listed`` needs sign-in, which the configuration checks)."""
    who = cfg.library.who_may_add
    if who == "listed":
        return cfg.ui.auth == "password" and user in cfg.library.may_add
    return who == "everyone"


def step_text(outcome: AddOutcome, seconds: float) -> str:
    note = outcome.note
    matches = "1 match" if note.count == 1 else f"{note.count:,} matches"
    return (f"Query: `{note.query}`\n\nPubMed: {matches}; {note.fetched} fetched; "
            f"**{note.new} new** to the index ({note.already_indexed} already there); indexed and "
            f"published in {seconds:.1f} s. Added to your library as search {note.id} "
            f"({note.added_at[:10]}).")


def progress_text(query: str, lines: list[str], seconds: float) -> str:
    """The step while the addition runs: the query, then its latest progress line."""
    latest = lines[-1] if lines else "searching PubMed"
    return f"Query: `{query}`\n\n{escape_markdown(latest)} ({seconds:.0f} s; Stop cancels it)"


async def _run_addition(step: cl.Step, cfg: Config, query: str, user: str,
                        embedder: Any) -> AddOutcome:
    """``add_search`` on a worker thread, its progress shown in ``step`` as it goes. Stop
    (the task cancelled) asks the worker to stop and waits until it has: the addition is then
    either undone (library and index as they were) or, past the publish, complete."""
    lines: list[str] = []
    stop = threading.Event()
    started = time.perf_counter()
    work = asyncio.ensure_future(asyncio.to_thread(
        add_search, cfg, query, user=user, embedder=embedder, progress=lines.append, stop=stop))
    shown = -1
    try:
        while True:
            done, _ = await asyncio.wait({work}, timeout=PROGRESS_POLL_S)
            if done:
                return work.result()
            if len(lines) != shown:
                shown = len(lines)
                step.output = progress_text(query, lines, time.perf_counter() - started)
                await step.update()
    except asyncio.CancelledError:
        stop.set()
        log.info("library addition stopped by the user: waiting for it to undo")
        try:
            outcome = await asyncio.shield(work)
        except AdditionStopped:
            step.output = (f"Query: `{query}`\n\nStopped: nothing was added to the library; "
                           "the index is as it was.")
        except Exception as err:  # noqa: BLE001 - said in the step; the stop goes on
            step.output = f"Query: `{query}`\n\nStopped ({escape_markdown(str(err))})."
        else:
            step.output = (step_text(outcome, time.perf_counter() - started)
                           + "\n\nStop came after the new index was published: the addition "
                           "is complete (`library remove` takes it out).")
        raise


async def search_and_answer(cfg: Config, question: str, query: str, answer: Answer,
                            user: str, embedder: Any = None) -> AddOutcome | None:
    """Run ``query`` as a library addition in a visible step, then answer ``question``."""
    outcome: AddOutcome | None = None
    stopped = False
    async with cl.Step(name="Search PubMed", type="tool") as step:
        step.input = query
        started = time.perf_counter()
        if not may_add(cfg, user):
            step.output = f"{NOT_ALLOWED.format(user=user)} {OFFLINE_TAIL}"
        else:
            try:
                outcome = await _run_addition(step, cfg, query, user, embedder)
                step.output = step_text(outcome, time.perf_counter() - started)
            except asyncio.CancelledError:  # Stop: the step says what became of the addition
                stopped = True  # (raised below: inside, the step would show the bare error)
            except FetchError as err:
                step.output = f"{plain_message(err)} {OFFLINE_TAIL}"
            except UserFacingError as err:  # over the limit, index busy, no index
                step.output = f"{err} {OFFLINE_TAIL}"
    if stopped:
        raise asyncio.CancelledError
    await answer(question)
    return outcome


def not_found(missing: list[str], absent: list[str]) -> str:
    """What the local index lacks, as the answer said it: in no indexed abstract at all, or only
    in none of the closest ("preemies", whose clinical name the index holds)."""
    if absent:
        return f"Not in the local index: {', '.join(absent)}."
    return f"Not in the closest abstracts: {', '.join(missing)}."


def offer_actions(question: str, lacking: str, missing: Sequence[str] = (),
                  searched: str = "") -> tuple[str, list[cl.Action]]:
    """The offer and its button. The query is made from ``searched`` (the text the answer
    searched and judged) when given: a follow-up ("and does breastfeeding help them catch
    up?") is about its conversation's topic, and its missing concepts were found in that
    text, not in the follow-up's own words."""
    query = pubmed_query(searched or question, missing)
    text = (f"{lacking} Search PubMed for `{query}` and add "
            "what it finds? (Or send `/pubmed` with your own query.)")
    action = cl.Action(name=ACTION, label="Search PubMed", icon="search",
                       payload={"question": question, "query": query})
    return text, [action]


async def offer_after(question: str, result: Any, cfg: Config | None = None,
                      user: str = "local") -> None:
    """After an answer that abstained for a missing concept: the offer, with its query (to a
    user who may add to the library; others read that they may not). A follow-up's query is
    its searched question's, the topic of the conversation included."""
    missing = list(getattr(result, "missing_concepts", None) or [])
    if not missing:
        return
    lacking = not_found(missing, list(getattr(result, "absent_concepts", None) or []))
    if cfg is not None and not may_add(cfg, user):
        await cl.Message(content=f"{lacking} " + NOT_ALLOWED.format(user=user)).send()
        return
    searched = str(getattr(result, "searched_question", "") or "")
    text, actions = offer_actions(question, lacking, missing, searched)
    await cl.Message(content=text, actions=actions).send()


def added_from(cfg: Config) -> dict[str, SearchNote]:
    """PMID -> the library search that added it (the sources' side panels say so)."""
    try:
        return {p: n for n in Library.of(cfg).notes() for p in n.pmids}
    except LibraryError as err:  # a damaged note: the panels go without the mark
        log.warning("library notes unreadable: %s", err)
        return {}


def added_line(note: SearchNote | None) -> str:
    """The side panel's mark of an article added from a PubMed search: query and date."""
    if note is None:
        return ""
    return (f"**Added to your library** from the PubMed search "
            f"\u201c{escape_markdown(note.query)}\u201d on {note.added_at[:10]} "
            f"(search {note.id}; `library remove {note.id}` takes it out).")


def install(cfg_of: Callable[[], Config], answer: Answer,
            user_of: Callable[[], str], embedder_of: Callable[[], Awaitable[Any]]) -> None:
    """Register the offer's button (called once by ui.py)."""

    @cl.action_callback(ACTION)
    async def _clicked(action: cl.Action) -> None:
        payload = action.payload or {}
        await action.remove()
        await search_and_answer(cfg_of(), payload.get("question", ""), payload.get("query", ""),
                                answer, user_of(), await embedder_of())
