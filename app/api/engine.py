"""The one engine behind the three doors (JSON API, OpenAI-compatible, MCP): the process's
:class:`~app.relay.Backend` (the assistant loaded once, on its worker thread, and the queue in
front of it, shared with the chat), plus what the doors need around it: readiness, the queue
limit, request filters, searches without the model, stored articles, citation export.

Errors are :class:`fastapi.HTTPException` with a message for the caller (never a traceback):
503 while the index and model load (or when they cannot), 429 when the queue is full, 404 for an
unknown PMID, 422 for a question the assistant refuses to take (empty, too long).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from fastapi import HTTPException
from fastapi.exceptions import RequestValidationError

from app.relay import AssistantLike, Backend
from chains.answer import to_source
from chains.question_checks import validate_question
from chains.record import links
from chains.references import EXPORTS, vancouver, vancouver_list
from chains.result import Source
from retrievers.articles import whole_abstract
from retrievers.filters import Filters, parse_filters
from retrievers.request_filters import merge, set_for_task
from settings.config import Config
from settings.errors import IndexMissingError, UserFacingError

log = logging.getLogger("app.api")

QA = tuple[str, str]
EXPORT_MIME = {"ris": EXPORTS["ris"][2], "bibtex": EXPORTS["bibtex"][2],
               "vancouver": "text/plain; charset=utf-8"}
TYPICAL_ANSWER_S = 10  # Retry-After per question ahead (docs/measurements-chat-load.md p50)
LOAD_RETRY_S = 15


def field_error(field: Sequence[str | int], message: str) -> RequestValidationError:
    """A 422 naming ``field`` (its location in the body), as FastAPI's own validation says it."""
    return RequestValidationError([{"loc": ("body", *field), "msg": message,
                                    "type": "value_error", "input": None}])


class _Filtered:
    """The assistant with a request's filters applied to every search of one answer (set in
    the task that runs the answer, on the worker thread: no other request sees them)."""

    def __init__(self, assistant: AssistantLike, filters: Filters | None) -> None:
        self._assistant = assistant
        self._filters = filters

    @property
    def retriever(self) -> Any:
        return self._assistant.retriever

    async def astream(self, question: str, *, mode: str,
                      history: list[tuple[str, str]]) -> AsyncIterator[Any]:
        set_for_task(self._filters)
        async for event in self._assistant.astream(question, mode=mode, history=history):
            yield event


class Ticket:
    """An admitted API question's place (:meth:`Engine.admit`), given back once."""

    def __init__(self, engine: Engine) -> None:
        self._engine: Engine | None = engine

    def release(self) -> None:
        if self._engine is not None:
            self._engine._admitted -= 1  # noqa: SLF001
            self._engine = None

    def __del__(self) -> None:  # a request that ended before its answer began
        self.release()


class Engine:
    def __init__(self, cfg: Config, backend: Backend, *, model_label: str,
                 wait_for_load: bool = False) -> None:
        self.cfg = cfg
        self.backend = backend
        self.model_label = model_label
        self.wait_for_load = wait_for_load  # one client (MCP over stdio): wait, not 503
        self._admitted = 0  # API questions admitted and not finished
        self._registered = 0  # of those, the ones in the backend's queue now

    # ---- state -------------------------------------------------------------------------------
    def index_state(self) -> str:
        if not self.backend.loaded:
            return "missing" if self.backend.load_error else "loading"
        retriever = getattr(self._loaded(), "retriever", None)
        if retriever is None:
            return "hybrid"
        return "hybrid" if retriever.hybrid or self._dense_published() else "keyword-only"

    def _dense_published(self) -> bool:
        """A build with its dense index published since the last search: the next question loads
        and searches it (retrievers.live), so it is what a client gets now."""
        from indexing.store import location, read_manifest

        try:
            folder = location(self.cfg).current()
            return folder is not None and read_manifest(folder).dense_ready
        except (OSError, IndexMissingError):
            return False

    def _loaded(self) -> AssistantLike | None:
        return self.backend._assistant  # noqa: SLF001 - read-only peek, never loads

    async def assistant(self) -> AssistantLike:
        """The loaded assistant, or 503 (its load is started, so a retry finds it ready)."""
        loaded = self._loaded()
        if loaded is not None:
            return loaded
        if self.wait_for_load:
            try:
                return await self.backend.assistant()
            except Exception as err:
                raise HTTPException(503, f"the assistant cannot start: {err}") from None
        error = self.backend.load_error
        task = asyncio.ensure_future(self.backend.assistant())  # (re)starts the load
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # reported below
        if error:
            raise HTTPException(503, f"the assistant cannot start: {error}",
                                headers={"Retry-After": str(LOAD_RETRY_S)})
        raise HTTPException(503, "the index and the model are loading; try again shortly",
                            headers={"Retry-After": str(LOAD_RETRY_S)})

    def queue_length(self) -> int:
        """Questions waiting or being answered: the chat's and the API's in the backend's queue,
        and the API's admitted but not there yet (so a burst is counted as it arrives)."""
        return self.backend.queue_length - self._registered + self._admitted

    def admit(self) -> Ticket:
        """A place in the queue, or 429 when ``api.max_queue`` questions are waiting or being
        answered already. The ticket is given back when the answer ends (or never starts)."""
        queued = self.queue_length()
        if queued >= self.cfg.api.max_queue:
            wait = max(1, math.ceil(queued * TYPICAL_ANSWER_S))
            raise HTTPException(429, f"the answer queue is full ({queued} questions waiting or "
                                "being answered); try again later",
                                headers={"Retry-After": str(wait)})
        self._admitted += 1
        return Ticket(self)

    async def admitted(self) -> tuple[Ticket, AssistantLike]:
        """A place in the queue (:meth:`admit`) and the loaded assistant (:meth:`assistant`); the
        place is given back when the assistant cannot be had."""
        ticket = self.admit()
        try:
            return ticket, await self.assistant()
        except BaseException:
            ticket.release()
            raise

    def question(self, text: str, field: str = "question") -> str:
        try:
            return validate_question(text, self.cfg.chains.max_question_chars)
        except UserFacingError as err:
            raise field_error((field,), str(err)) from None

    # ---- answering ---------------------------------------------------------------------------
    async def events(self, ticket: Ticket, assistant: AssistantLike, question: str, mode: str,
                     history: list[QA], filters: Filters | None,
                     on_wait: Callable[[int], Any] | None = None) -> AsyncIterator[Any]:
        """The answer's events, after waiting for this request's turn in the queue. Leaving the
        iteration early (a client gone) cancels the answer or the place in the queue."""
        granted = False
        self._registered += 1
        try:
            async with self.backend.turn(on_wait=on_wait):
                granted = True
                async with self.backend.stream(_Filtered(assistant, filters), question, mode,
                                               history) as events:
                    async for event in events:
                        yield event
        except (asyncio.CancelledError, GeneratorExit):
            log.info("API: the client went away %s", "during its answer: the answer is stopped"
                     if granted else "while waiting: its place in the queue is freed")
            raise
        finally:
            self._registered -= 1
            ticket.release()

    # ---- retrieval without the model ----------------------------------------------------------
    async def search(self, query: str, filters: Filters | None, k: int) -> tuple[str, Filters,
                                                                                 list[Source]]:
        assistant = await self.assistant()
        retriever = assistant.retriever
        if retriever is None:
            raise HTTPException(503, "this server has no search index")
        searched, parsed = parse_filters(query)
        searched = searched or query
        active = merge(parsed, filters) if filters is not None else parsed
        found = await asyncio.to_thread(retriever.retrieve, searched, k=k, filters=active)
        return found.query or searched, found.filters, [
            to_source(i, doc) for i, doc in enumerate(found.documents, 1)]

    async def article(self, pmid: str) -> Source:
        assistant = await self.assistant()
        retriever = assistant.retriever
        if retriever is None:
            raise HTTPException(503, "this server has no search index")
        chunks = await asyncio.to_thread(retriever.article_chunks, pmid)
        if not chunks:
            raise HTTPException(404, f"PMID {pmid} is not in the index")
        chunks = sorted(chunks, key=lambda d: int(d.metadata.get("chunk_index", 0)))
        return to_source(1, chunks[0], whole_abstract(chunks))

    async def articles(self, pmids: Sequence[str]) -> list[Source]:
        out, missing = [], []
        for n, pmid in enumerate(pmids, 1):
            try:
                source = await self.article(pmid)
            except HTTPException as err:
                if err.status_code != 404:
                    raise
                missing.append(pmid)
                continue
            out.append(source.model_copy(update={"n": n}))
        if missing:
            raise HTTPException(404, f"not in the index: PMID {', '.join(missing)}")
        return out


def export_text(sources: Sequence[Source], fmt: str) -> str:
    if fmt == "vancouver":
        return "\n".join(vancouver_list(sources)) + "\n"
    return str(EXPORTS[fmt][0](sources))


def article_record(source: Source) -> dict[str, Any]:
    data = source.model_dump(include={
        "pmid", "title", "year", "journal", "authors", "volume", "issue", "pages", "doi", "pmc",
        "design", "design_rule", "design_source", "publication_types", "mesh_terms",
        "mesh_major", "retracted", "retraction_notices"})
    data["abstract"] = source.abstract
    data["links"] = links(source.pmid, source.doi, source.pmc)
    data["reference"] = vancouver(source)
    return data
