"""The Chainlit chat: streamed answers with numbered PubMed sources (``python -m app serve``).

Three parts, top to bottom:

* rendering: every piece of abstract or user text is escaped before it reaches Chainlit's markdown
  renderer, so a title such as ``<img src=x onerror=alert(1)>`` shows as text;
* :class:`Backend`: the one :class:`~chains.assistant.Assistant` of this process. The model is not
  thread-safe and slow, so all of its work runs on one background thread with its own event loop
  (the server's loop never blocks) and one request at a time holds the generation slot (others see
  a "Queued" message). Stopping a request cancels the stream on that thread, not just the display;
* the Chainlit handlers: settings (answer mode), starters, and one answer per message.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import re
import sys
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from pathlib import Path
from typing import Any, Protocol, Self
from urllib.parse import quote

_REPO_ROOT = Path(__file__).resolve().parent.parent
if str(_REPO_ROOT) not in sys.path:  # Chainlit loads this file by path, not as ``app.ui``
    sys.path.insert(0, str(_REPO_ROOT))

import chainlit as cl  # noqa: E402
import chainlit.server as _cl_server  # noqa: E402
from chainlit.input_widget import Select  # noqa: E402

from app.config import Config, load_config  # noqa: E402
from app.errors import IndexMissingError, ModelLoadError, UserFacingError  # noqa: E402
from chains.result import (  # noqa: E402
    MODES,
    AnswerResult,
    DoneEvent,
    PreparedEvent,
    Source,
    TokenEvent,
)

log = logging.getLogger("app.ui")

PUBMED_URL = "https://pubmed.ncbi.nlm.nih.gov/{pmid}/"
MODE_LABELS = {
    "plain": "Plain",
    "conversational": "Conversational (follow-up questions)",
    "multi-query": "Multi-query (several searches)",
}
QUEUED_TEXT = "Queued: waiting for another answer to finish…"
LOADING_TEXT = "Loading the language model and the search index (first question only)…"
STARTER_QUESTIONS = (
    "Is childhood intelligence associated with health in later life?",
    "Does working memory training improve fluid intelligence?",
    "How is emotional intelligence related to burnout in nurses?",
    "Is intelligence associated with a lower risk of dementia?",
)
HISTORY_LIMIT = 20

# --------------------------------------------------------------------------------------------------
# Rendering: escape everything that did not come from this file.
# --------------------------------------------------------------------------------------------------

_ALL_PUNCT = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character
# In the answer: block raw HTML/entities, images, inline links, code spans and emphasis, but keep
# "[n]" citation markers intact so Chainlit links them to the source passages.
_ANSWER_PUNCT = re.compile(r"([\\`*_<>&!()~|#$])")
_INVISIBLE = re.compile(r"[\u200b\u200c\u200d\u2060\ufeff\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def escape_markdown(text: str) -> str:
    """Text that Chainlit's markdown renderer shows literally (one line: newlines become spaces).

    CommonMark renders a backslash-escaped ASCII punctuation character as itself, so escaping all
    of them leaves no markup, link, image or HTML tag in the text. Zero-width characters are
    dropped (Chainlit uses U+200B as its streaming-cursor marker).
    """
    return _escape_inline(text).strip()


def _escape_inline(text: str) -> str:
    """escape_markdown without trimming (for pieces of a longer line)."""
    text = re.sub(r"\s+", " ", _INVISIBLE.sub("", text or ""))
    return _ALL_PUNCT.sub(r"\\\1", text)


def escape_paragraphs(text: str) -> str:
    """Like :func:`escape_markdown` but keeps line breaks as paragraph breaks."""
    lines = (escape_markdown(line) for line in (text or "").splitlines())
    return "\n\n".join(line for line in lines if line)


def escape_answer(text: str) -> str:
    """An answer piece from the LLM, made inert but with its ``[n]`` markers left linkable.

    Works on any split of the text (each character is escaped on its own), so streamed tokens can
    be escaped one by one.
    """
    return _ANSWER_PUNCT.sub(r"\\\1", _INVISIBLE.sub("", text or ""))


def pubmed_url(pmid: str) -> str:
    return PUBMED_URL.format(pmid=quote(str(pmid).strip(), safe=""))


def source_label(source: Source) -> str:
    """The element name of a source's passage; the same text as its inline marker in the answer."""
    return f"[{source.n}]"


def source_line(source: Source) -> str:
    """A list item: ``[n] [Title](pubmed) — First et al. · Journal · Year · confidence: high``."""
    title = escape_markdown(source.title) or f"PMID {escape_markdown(source.pmid)}"
    details = [
        escape_markdown(source.first_author_et_al),
        escape_markdown(source.journal),
        str(source.year) if source.year else "",
        f"confidence: {source.confidence_label}",
    ]
    tail = " · ".join(d for d in details if d)
    return f"- {source_label(source)} [{title}]({pubmed_url(source.pmid)}) — {tail}"


def sources_block(sources: Iterable[Source], mode: str) -> str:
    """The part under an answer: its numbered sources, then the mode it was answered in."""
    lines = [source_line(s) for s in sorted(sources, key=lambda s: s.n)]
    parts = ["**Sources**\n\n" + "\n".join(lines)] if lines else []
    parts.append(f"*Mode: {escape_markdown(mode)}*")
    return "\n\n".join(parts)


def passage_markdown(source: Source) -> str:
    """The side panel of one source: title, authors, journal, year, link, and the passage."""
    authors = ", ".join(source.authors[:6]) + (" et al." if len(source.authors) > 6 else "")
    meta = " · ".join(
        x for x in (escape_markdown(authors), escape_markdown(source.journal),
                    str(source.year) if source.year else "") if x
    )
    title = escape_markdown(source.title) or "PMID " + escape_markdown(source.pmid)
    head = f"**{escape_markdown(source_label(source))} {title}**"
    link = f"[PubMed {escape_markdown(source.pmid)}]({pubmed_url(source.pmid)})"
    body = escape_paragraphs(source.passage) or "*(no passage text)*"
    return "\n\n".join(x for x in (head, meta, f"{link} · confidence: {source.confidence_label}",
                                    body) if x)


def search_summary(question: str, prepared: PreparedEvent) -> str:
    """The collapsed "what was searched" step: rewritten question, sub-queries, parsed filters."""
    searched = prepared.searched_question or question
    label = "Rewritten question" if searched.strip() != question.strip() else "Searched for"
    lines = [f"**{label}:** {escape_markdown(searched)}"]
    if prepared.rewrite != "unchanged":  # how the follow-up kept its topic (retrievers.followup)
        lines.append(f"**Rewrite:** {escape_markdown(prepared.rewrite)}")
    if prepared.sub_queries:
        lines.append("**Sub-queries:**\n\n" + "\n".join(
            f"{i}. {escape_markdown(q)}" for i, q in enumerate(prepared.sub_queries, 1)))
    if prepared.filters:
        shown = "; ".join(f"{escape_markdown(str(k))} = {escape_markdown(str(v))}"
                          for k, v in prepared.filters.items())
        lines.append(f"**Filters:** {shown}")
    else:
        lines.append("**Filters:** none")
    lines.append(f"**Sources found:** {len(prepared.sources)}")
    return "\n\n".join(lines)


def _error_text(err: BaseException) -> str:
    """The error's own message, escaped except for `code spans` (inert, and how our messages
    show commands)."""
    parts = str(err).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code spans then
        return escape_markdown(str(err))
    return "".join(_escape_inline(p) if i % 2 == 0 else f"`{' '.join(p.split())}`"
                   for i, p in enumerate(parts)).strip()


def friendly_error(err: BaseException) -> str:
    """A short chat message for a failure; never a traceback (that goes to the server log)."""
    if isinstance(err, IndexMissingError):
        text = f"**The search index is not available.** {_error_text(err)}"
        if "index build" not in str(err):
            text += "\n\nBuild it with `make run` or `python -m app index build`."
        return text + "\n\nThen ask again."
    if isinstance(err, ModelLoadError):
        return ("**The language model could not be loaded.** " + _error_text(err) +
                "\n\nCheck the `llm` section of cfg.yaml, then ask again.")
    if isinstance(err, UserFacingError):
        return _error_text(err)
    return ("**Sorry, something went wrong while answering.** The details were written to the "
            "server log; please try again.")


# --------------------------------------------------------------------------------------------------
# Backend: one assistant, one worker thread, one request generating at a time.
# --------------------------------------------------------------------------------------------------


class AssistantLike(Protocol):
    def astream(self, question: str, *, mode: str,
                history: list[tuple[str, str]]) -> AsyncIterator[Any]: ...


class LoopThread:
    """A daemon thread running its own asyncio loop; coroutines submitted here run off the server's
    loop, one thread for all model work (the backend is not thread-safe)."""

    def __init__(self, name: str = "assistant-worker") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._guard = threading.Lock()

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._guard:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name=self._name, daemon=True).start()
                self._loop = loop
            return self._loop

    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coro, self._ensure())


_END = object()


class RelayedStream:
    """Runs ``make_stream()`` (an async iterator) on a :class:`LoopThread` and hands its events to
    the caller's loop. Leaving the ``async with`` early (stop button, error) cancels the stream on
    the worker and waits until it has really stopped, so the next request never overlaps it."""

    def __init__(self, worker: LoopThread, make_stream: Callable[[], AsyncIterator[Any]]) -> None:
        self._worker = worker
        self._make_stream = make_stream
        self._queue: asyncio.Queue = asyncio.Queue()
        self._finished = asyncio.Event()
        self._future: concurrent.futures.Future | None = None

    async def _relay(self, home: asyncio.AbstractEventLoop) -> None:
        put = self._queue.put_nowait
        stream = None
        try:
            stream = self._make_stream()
            async for event in stream:
                home.call_soon_threadsafe(put, (True, event))
        except asyncio.CancelledError:
            raise
        except BaseException as err:  # handed to the caller, raised there
            home.call_soon_threadsafe(put, (False, err))
        finally:
            try:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()
            finally:
                home.call_soon_threadsafe(put, (True, _END))
                home.call_soon_threadsafe(self._finished.set)

    async def __aenter__(self) -> Self:
        self._future = self._worker.submit(self._relay(asyncio.get_running_loop()))
        return self

    def __aiter__(self) -> RelayedStream:
        return self

    async def __anext__(self) -> Any:
        ok, item = await self._queue.get()
        if not ok:
            raise item
        if item is _END:
            raise StopAsyncIteration
        return item

    async def __aexit__(self, *exc: object) -> None:
        if self._future is not None and not self._finished.is_set():
            self._future.cancel()  # cancels the relay task on the worker loop
        await _wait_even_if_cancelled(self._finished)


async def _wait_even_if_cancelled(event: asyncio.Event) -> None:
    """Wait for ``event``; a cancellation meanwhile is re-raised only once the event is set."""
    cancelled = False
    while not event.is_set():
        try:
            await asyncio.shield(event.wait())
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError


class Backend:
    """The assistant of this server process, loaded once on the worker thread, and the queue in
    front of it (an asyncio lock: one request generates, the others wait their turn)."""

    def __init__(self, factory: Callable[[], AssistantLike], worker: LoopThread | None = None):
        self._factory = factory
        self._worker = worker or LoopThread()
        self._assistant: AssistantLike | None = None
        self._loading: concurrent.futures.Future | None = None
        self._slot = asyncio.Lock()

    @property
    def loaded(self) -> bool:
        return self._assistant is not None

    @property
    def busy(self) -> bool:
        return self._slot.locked()

    async def _load_on_worker(self) -> AssistantLike:
        return self._factory()

    async def assistant(self) -> AssistantLike:
        """The assistant, loading it on the worker thread if needed. A failed load is retried by the
        next call (for example once the index has been built); an interrupted wait is not."""
        if self._assistant is not None:
            return self._assistant
        failed = self._loading is not None and self._loading.done() and (
            self._loading.cancelled() or self._loading.exception() is not None)
        if self._loading is None or failed:
            self._loading = self._worker.submit(self._load_on_worker())
        self._assistant = await asyncio.shield(asyncio.wrap_future(self._loading))
        return self._assistant

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Hold the generation slot (waits while another request generates)."""
        async with self._slot:
            yield

    def stream(self, assistant: AssistantLike, question: str, mode: str,
               history: list[tuple[str, str]]) -> RelayedStream:
        history = list(history)
        return RelayedStream(
            self._worker, lambda: assistant.astream(question, mode=mode, history=history))


def _default_factory() -> AssistantLike:
    # Heavy (torch, transformers): imported here, on the worker thread, not at server start.
    from chains.assistant import Assistant

    assistant = Assistant.from_config(app_config())
    _ = assistant.llm  # load the model now (~20 s) rather than during the first answer
    return assistant


_CFG: Config | None = None


def app_config() -> Config:
    """The server's configuration (``$PUBMED_ASSISTANT_CFG`` or the repo's cfg.yaml)."""
    global _CFG
    if _CFG is None:
        _CFG = load_config()
    return _CFG


BACKEND = Backend(_default_factory)

# --------------------------------------------------------------------------------------------------
# Offline page: the stock index.html links Google Fonts and a CDN stylesheet; drop those tags.
# --------------------------------------------------------------------------------------------------

_EXTERNAL_TAG = re.compile(
    r"<(?:link|script)\b[^>]*\b(?:href|src)\s*=\s*[\"'](?:https?:)?//[^>]*>(?:\s*</script>)?",
    re.IGNORECASE,
)


def strip_external_tags(html: str) -> str:
    """Remove ``<link>``/``<script>`` tags that load from another host (fonts, CDN CSS)."""
    return _EXTERNAL_TAG.sub("", html)


def _install_offline_html() -> None:
    original = _cl_server.get_html_template
    if getattr(original, "_offline", False):
        return

    def offline_html_template(root_path: str) -> str:
        return strip_external_tags(original(root_path))

    offline_html_template._offline = True  # type: ignore[attr-defined]
    _cl_server.get_html_template = offline_html_template


_install_offline_html()

# --------------------------------------------------------------------------------------------------
# Chainlit handlers
# --------------------------------------------------------------------------------------------------


@cl.on_app_startup
async def _preload() -> None:
    """Start loading the model in the background so the first question does not wait for it."""

    async def load() -> None:
        try:
            await BACKEND.assistant()
        except Exception as err:  # reported to the user when they ask
            log.warning("assistant not loaded at startup: %s", err)

    asyncio.get_running_loop().create_task(load())


@cl.set_starters
async def _starters(user: Any = None, language: str | None = None) -> list[cl.Starter]:
    return [cl.Starter(label=q, message=q) for q in STARTER_QUESTIONS]


def _current_mode() -> str:
    mode = cl.user_session.get("mode")
    return mode if mode in MODES else app_config().chains.mode


@cl.on_chat_start
async def _chat_start() -> None:
    mode = app_config().chains.mode
    cl.user_session.set("mode", mode)
    cl.user_session.set("history", [])
    await cl.ChatSettings([
        Select(
            id="mode",
            label="Answer mode",
            items={label: value for value, label in MODE_LABELS.items()},
            initial_value=mode,
            description="Plain answers each question on its own; conversational rewrites "
                        "follow-ups using the chat so far; multi-query searches several "
                        "rephrasings of the question.",
        )
    ]).send()


@cl.on_settings_update
async def _settings_update(settings: dict[str, Any]) -> None:
    mode = settings.get("mode")
    if mode in MODES:
        cl.user_session.set("mode", mode)


@cl.on_message
async def _on_message(message: cl.Message) -> None:
    question = (message.content or "").strip()
    if not question:
        return
    try:
        await answer(BACKEND, question, _current_mode())
    except asyncio.CancelledError:
        raise
    except Exception as err:  # no stack trace in the chat; the server keeps serving
        if isinstance(err, UserFacingError):
            log.warning("answer failed: %s", err)
        else:
            log.exception("answer failed")
        await cl.ErrorMessage(content=friendly_error(err)).send()


async def _notice(text: str) -> cl.Message:
    return await cl.Message(content=text).send()


async def answer(backend: Backend, question: str, mode: str) -> None:
    """Answer one question in this chat session: search step, streamed answer, sources."""
    history: list[tuple[str, str]] = cl.user_session.get("history") or []
    notice: cl.Message | None = None
    try:
        if not backend.loaded:
            notice = await _notice(LOADING_TEXT)
        assistant = await backend.assistant()
        if backend.busy:
            if notice is None:
                notice = await _notice(QUEUED_TEXT)
            else:
                notice.content = QUEUED_TEXT
                await notice.update()
        async with backend.turn():
            if notice is not None:
                await notice.remove()
                notice = None
            result = await _stream_answer(backend, assistant, question, mode, history)
    finally:
        if notice is not None:
            await notice.remove()
    if result is not None and not result.refused:
        history.append((question, result.answer))
        cl.user_session.set("history", history[-HISTORY_LIMIT:])


async def _stream_answer(backend: Backend, assistant: AssistantLike, question: str, mode: str,
                         history: list[tuple[str, str]]) -> AnswerResult | None:
    msg = cl.Message(content="")
    prepared: PreparedEvent | None = None
    result: AnswerResult | None = None
    try:
        async with backend.stream(assistant, question, mode, history) as events:
            async for event in events:
                if isinstance(event, PreparedEvent):
                    prepared = event
                    await _send_search_step(question, event)
                elif isinstance(event, TokenEvent):
                    await msg.stream_token(escape_answer(event.text))
                elif isinstance(event, DoneEvent):
                    result = event.result
    except asyncio.CancelledError:
        if msg.content:
            msg.content += "\n\n*Stopped.*"
            await msg.update()
        raise
    if result is None:
        raise RuntimeError("the answer stream ended without a result")
    log.info("answered in %s mode: %d sources, refused=%s, timings=%s",
             result.mode, len(result.sources), result.refused, result.timings)
    sources = result.sources or (prepared.sources if prepared else [])
    body = escape_answer(result.answer) if result.answer else msg.content
    msg.content = body + "\n\n" + sources_block(sources, result.mode or mode)
    msg.elements = [
        cl.Text(name=source_label(s), content=passage_markdown(s), display="side")
        for s in sources
    ]
    if msg.streaming:
        await msg.update()
    else:
        await msg.send()
    return result


async def _send_search_step(question: str, prepared: PreparedEvent) -> None:
    async with cl.Step(name="Search", type="tool", show_input=False, default_open=False) as step:
        step.output = search_summary(question, prepared)


__all__ = [
    "Backend",
    "LoopThread",
    "RelayedStream",
    "answer",
    "escape_answer",
    "escape_markdown",
    "friendly_error",
    "passage_markdown",
    "search_summary",
    "source_line",
    "sources_block",
    "strip_external_tags",
]

