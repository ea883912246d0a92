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
import time
from collections.abc import Awaitable, Callable
from typing import Any

import chainlit as cl

from grounding.concepts import question_concepts
from indexing.library_ops import AddOutcome, add_search
from ingest.errors import FetchError
from ingest.library import plain_message
from settings.config import Config
from settings.errors import UserFacingError

PREFIX = "/pubmed"
ACTION = "pubmed_search"
OFFLINE_TAIL = "Answering from the local index only."

Answer = Callable[[str], Awaitable[None]]  # answers a question in this chat session


def pubmed_text(text: str) -> str | None:
    """What follows ``/pubmed`` at the start of a message (None: not the command)."""
    head, _, rest = text.strip().partition(" ")
    return rest.strip() if head.casefold() == PREFIX else None


def pubmed_query(question: str) -> str:
    """The PubMed search for a question: its concepts (runs of content words), those with an
    essential word first-class, joined by AND. Text that is already a query (field tags,
    boolean operators) is sent as written."""
    text = " ".join(question.split())
    if "[" in text or " AND " in text or " OR " in text:
        return text
    concepts = question_concepts(text)
    chosen = [c.text for c in concepts if c.essential] or [c.text for c in concepts]
    return " AND ".join(chosen) or text


def step_text(outcome: AddOutcome, seconds: float) -> str:
    note = outcome.note
    return (f"Query: `{note.query}`\n\nPubMed: {note.count:,} matches; {note.fetched} fetched; "
            f"**{note.new} new** to the index ({note.already_indexed} already there); indexed and "
            f"published in {seconds:.1f} s. Added to your library as search {note.id} "
            f"({note.added_at[:10]}).")


async def search_and_answer(cfg: Config, question: str, query: str, answer: Answer,
                            user: str, embedder: Any = None) -> AddOutcome | None:
    """Run ``query`` as a library addition in a visible step, then answer ``question``."""
    outcome: AddOutcome | None = None
    async with cl.Step(name="Search PubMed", type="tool") as step:
        step.input = query
        started = time.perf_counter()
        try:
            outcome = await asyncio.to_thread(add_search, cfg, query, user=user,
                                              embedder=embedder)
            step.output = step_text(outcome, time.perf_counter() - started)
        except FetchError as err:
            step.output = f"{plain_message(err)} {OFFLINE_TAIL}"
        except UserFacingError as err:  # over the limit, index busy, no index
            step.output = f"{err} {OFFLINE_TAIL}"
    await answer(question)
    return outcome


def offer_actions(question: str, missing: list[str]) -> tuple[str, list[cl.Action]]:
    query = pubmed_query(question)
    text = (f"Not in the local index: {', '.join(missing)}. Search PubMed for `{query}` and add "
            "what it finds? (Or send `/pubmed` with your own query.)")
    action = cl.Action(name=ACTION, label="Search PubMed", icon="search",
                       payload={"question": question, "query": query})
    return text, [action]


async def offer_after(question: str, result: Any) -> None:
    """After an answer that abstained for a missing concept: the offer, with its query."""
    missing = list(getattr(result, "missing_concepts", None) or [])
    if not missing:
        return
    text, actions = offer_actions(question, missing)
    await cl.Message(content=text, actions=actions).send()


def install(cfg_of: Callable[[], Config], answer: Answer,
            user_of: Callable[[], str], embedder_of: Callable[[], Awaitable[Any]]) -> None:
    """Register the offer's button (called once by ui.py)."""

    @cl.action_callback(ACTION)
    async def _clicked(action: cl.Action) -> None:
        payload = action.payload or {}
        await action.remove()
        await search_and_answer(cfg_of(), payload.get("question", ""), payload.get("query", ""),
                                answer, user_of(), await embedder_of())
