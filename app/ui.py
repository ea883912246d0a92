"""The Chainlit chat handlers (``python -m app serve``): the mode buttons, starters, and
one answer per message, streamed with its search step and numbered PubMed sources.

What they use lives beside them: :mod:`app.render` (escaped markdown), :mod:`app.relay` (the
assistant on its worker thread) and :mod:`app.offline_html` (the page without external tags,
installed at startup). Nothing is constructed at import: the backend is made on first use.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

_REPO_ROOT = Path(__file__).resolve().parent.parent
if str(_REPO_ROOT) not in sys.path:  # Chainlit loads this file by path, not as ``app.ui``
    sys.path.insert(0, str(_REPO_ROOT))

import chainlit as cl  # noqa: E402
from chainlit.utils import utc_now  # noqa: E402

from app import auth, dense_build, pubmed_chat  # noqa: E402
from app import history as saved  # noqa: E402
from app.chainlit_files import install_private_files_folder  # noqa: E402
from app.followup_hint import followup_hint  # noqa: E402
from app.help_page import install_help_summary  # noqa: E402
from app.index_status import SemanticStatus, search_line, semantic_status  # noqa: E402
from app.index_summary import index_summary  # noqa: E402
from app.mode_control import mode_after_resume, mode_for_message, show_mode_buttons  # noqa: E402
from app.offline_html import install_offline_html, strip_external_tags  # noqa: E402
from app.relay import AssistantLike, Backend, LoopThread, RelayedStream  # noqa: E402
from app.render import (  # noqa: E402
    EMPTY_QUESTION_TEXT,
    HISTORY_LIMIT,
    LOADING_TEXT,
    QUEUED_TEXT,
    STARTERS,
    escape_answer,
    escape_markdown,
    friendly_error,
    key_findings_block,
    linkable_markers,
    passage_markdown,
    queued_text,
    search_summary,
    source_label,
    source_line,
    sources_block,
    too_long_text,
)
from chains.modes import mode_buttons, mode_names  # noqa: E402
from chains.question_checks import is_blank, validate_question  # noqa: E402
from chains.references import EXPORTS  # noqa: E402
from chains.result import AnswerResult, DoneEvent, PreparedEvent, TokenEvent  # noqa: E402
from settings.config import Config, load_config  # noqa: E402
from settings.errors import UserFacingError  # noqa: E402

log = logging.getLogger("app.ui")


def _default_factory() -> AssistantLike:
    # Heavy (torch, transformers): imported here, on the worker thread, not at server start.
    from chains.assistant import Assistant

    assistant = Assistant.from_config(app_config())
    llm = assistant.llm  # load the model now (~20 s) rather than during the first answer
    log.info("language model loaded: %s (llm.backend: %s)", type(llm).__name__,
             app_config().llm.backend)
    return assistant


_CFG: Config | None = None


def app_config() -> Config:
    """The server's configuration (``$PUBMED_ASSISTANT_CFG`` or the repo's cfg.yaml)."""
    global _CFG
    if _CFG is None:
        _CFG = load_config()
    return _CFG


BACKEND: Backend | None = None  # made on first use; tests and the browser harness may set it


def backend() -> Backend:
    global BACKEND
    if BACKEND is None:
        BACKEND = Backend(_default_factory)
    return BACKEND


def _served() -> bool:
    """Chainlit is serving this file (``serve``, ``chainlit run``), not a test importing it."""
    from chainlit.config import config as chainlit_config

    return bool(chainlit_config.run.module_name)


if _served():  # history (a database) and sign-in (ui.auth): docs/history.md
    saved.install(app_config)
    auth.install(app_config())
    from app.api.service import install_on_chainlit  # noqa: E402 - the API on this backend

    install_on_chainlit(backend, app_config)  # docs/api.md


@cl.on_app_startup
async def _preload() -> None:
    """Serve the page offline, and start loading the model in the background so the first
    question does not wait for it."""
    install_offline_html()
    install_private_files_folder()  # not .files, which any other server's exit removes
    install_help_summary(app_config)  # Help says what the index holds (app/index_summary.py)
    _restrict_origins()

    async def load() -> None:
        try:
            await backend().assistant()
        except Exception as err:  # reported to the user when they ask
            log.warning("assistant not loaded at startup: %s", err)

    asyncio.get_running_loop().create_task(load())


def _restrict_origins() -> None:
    """Only pages served by this server (or listed in .chainlit/config.toml) may connect."""
    import chainlit.server as cl_server
    from chainlit.config import config as chainlit_config

    from app.web_security import restrict_socket_origins

    restrict_socket_origins(cl_server.sio, chainlit_config.project.allow_origins)


@cl.set_starters
async def _starters(user: Any = None, language: str | None = None) -> list[cl.Starter]:
    return [cl.Starter(label=label, message=q) for label, q in STARTERS]


def _current_mode() -> str:
    mode = cl.user_session.get("mode")
    return mode if mode in mode_names() else app_config().chains.mode


INDEX_POLL_S = 2.0  # how often an open chat re-reads the semantic index's progress


def current_semantic_status() -> SemanticStatus | None:
    cfg = app_config()
    return semantic_status(cfg, building=dense_build.running(),
                           log=str(dense_build.log_path(cfg)))


async def _show_index_status() -> None:
    """While the semantic index builds, a message says how far it is, kept up to date; when it
    is published, the retriever is switched to it at once and the message says hybrid is on."""
    status = current_semantic_status()
    if status is None or status.ready:
        return
    msg = cl.Message(content=status.text)
    await msg.send()
    task = asyncio.get_running_loop().create_task(_follow_index(msg, status.text))
    cl.user_session.set("index_status_task", task)


async def _follow_index(msg: cl.Message, shown: str) -> None:
    while True:
        await asyncio.sleep(INDEX_POLL_S)
        status = await asyncio.to_thread(current_semantic_status)
        if status is None:
            return
        if status.ready:
            await _switch_to_new_build()
        if status.text != shown:
            msg.content = shown = status.text
            await msg.update()
            if status.ready and cl.user_session.get("history"):
                await cl.Message(content=status.text).send()  # said where the user reads now
        if status.ready:
            return


async def _switch_to_new_build() -> None:
    """Load a newly published build into the assistant's retriever now (off the server loop),
    so the next question is hybrid without waiting for the load."""
    current = backend()
    if not current.loaded:  # the first question loads the assistant, and the new build with it
        return
    retriever = (await current.assistant()).retriever
    if retriever is not None:
        await asyncio.to_thread(retriever.snapshot)


def _retrieval_line(assistant: AssistantLike) -> str | None:
    retriever = assistant.retriever
    if retriever is None:
        return None
    hybrid = retriever.hybrid
    return search_line(hybrid, None if hybrid else current_semantic_status())


@cl.on_chat_start
async def _chat_start() -> None:
    await _show_index_status()
    mode = app_config().chains.mode
    cl.user_session.set("mode", mode)
    cl.user_session.set("history", [])  # a new chat (also "New chat") starts with no history
    await show_mode_buttons(mode)  # the mode buttons beside the message box (app/mode_control)
    await _tell_page()


async def _tell_page(mode: str | None = None) -> None:
    """Send the page's own script (public/pubmed-ui.js) what it shows: the index summary under
    the starters and, for a reopened conversation, the mode button to highlight (the page keeps
    the one it had, another conversation's, otherwise)."""
    summary = await asyncio.to_thread(index_summary, app_config())
    data: dict[str, str] = {}
    if summary is not None:
        data["indexSummary"] = summary.landing()
    if mode is not None:
        data["modeButton"] = mode_buttons()[mode]
    if data:
        await cl.send_window_message({"pubmedAssistant": data})


@cl.on_chat_resume
async def _chat_resume(thread: Any) -> None:
    """A conversation reopened from the sidebar: its mode and its conversational history come
    from what was stored (not from the browser), so a follow-up continues it."""
    mode, turns = saved.resumed(thread, app_config().chains.mode, HISTORY_LIMIT)
    cl.user_session.set("mode", mode)
    cl.user_session.set("resumed_mode", mode)
    cl.user_session.set("history", turns)
    log.info("conversation resumed: %d turns, mode %s", len(turns), mode)
    await _show_index_status()
    await show_mode_buttons(mode)  # highlights it: a reloaded page has none highlighted
    await _tell_page(mode)  # ... and a page that had another conversation's highlighted


@cl.on_chat_end
async def _chat_end() -> None:
    """A closed tab (or a dropped connection) cancels its answer or its place in the queue, so
    the questions of other tabs do not wait for an answer nobody will read."""
    task = cl.context.session.current_task
    if task is not None and not task.done():
        task.cancel()
    status_task = cl.user_session.get("index_status_task")
    if status_task is not None and not status_task.done():
        status_task.cancel()


@cl.on_message
async def _on_message(message: cl.Message) -> None:
    if is_blank(message.content):  # whitespace, zero-width or control characters only
        await message.remove()  # no empty bubble (the page's script stops most before sending)
        await cl.Message(content=EMPTY_QUESTION_TEXT).send()
        return
    limit = app_config().chains.max_question_chars
    if len(message.content.strip()) > limit:  # said in the user's words; the question not echoed
        await cl.ErrorMessage(content=too_long_text(len(message.content.strip()), limit)).send()
        return
    await saved.store_question(message)  # a server killed from here on keeps the question
    try:
        # length, control characters: checked before any work, with a message at once
        question = validate_question(message.content, app_config().chains.max_question_chars)
        wanted = pubmed_chat.pubmed_text(question)
        if wanted:  # /pubmed QUERY: search PubMed, add what is new, answer (app/pubmed_chat.py)
            await _pubmed(wanted)
            return
        default = app_config().chains.mode
        mode, unselected = mode_for_message(getattr(message, "command", None), default)
        mode, resumed = mode_after_resume(mode, default, cl.user_session.get("resumed_mode"),
                                          unselected)
        cl.user_session.set("resumed_mode", resumed)
        cl.user_session.set("mode", mode)
        if unselected:  # no mode button was highlighted: highlight the one answering
            await show_mode_buttons(mode)
        await answer(backend(), question, _current_mode())
    except asyncio.CancelledError:
        raise
    except Exception as err:  # no stack trace in the chat; the server keeps serving
        if isinstance(err, UserFacingError):
            log.warning("answer failed: %s", err)
        else:
            log.exception("answer failed")
        await cl.ErrorMessage(content=friendly_error(err)).send()


async def _notice(text: str) -> cl.Message:
    message = cl.Message(content=text)
    await message.send()
    return message


async def answer(backend: Backend, question: str, mode: str) -> None:
    """Answer one question in this chat session: search step, streamed answer, sources."""
    memory: list[tuple[str, str]] = cl.user_session.get("history") or []
    notice: cl.Message | None = None
    try:
        if not backend.loaded:
            notice = await _notice(LOADING_TEXT)
        assistant = await backend.assistant()

        async def queued(ahead: int) -> None:  # while it waits: how many questions come first
            nonlocal notice
            if notice is None:
                notice = await _notice(queued_text(ahead))
            elif notice.content != queued_text(ahead):
                notice.content = queued_text(ahead)
                await notice.update()

        async with backend.turn(on_wait=queued):
            if notice is not None:
                await notice.remove()
                notice = None
            # read once its turn has come: what another tab on this conversation answered
            # meanwhile is stored by then (docs/history.md "Restarts and two tabs")
            history = await saved.conversation_history(memory, HISTORY_LIMIT)
            result = await _stream_answer(backend, assistant, question, mode, history)
    finally:
        if notice is not None:
            await notice.remove()
    asked_before = bool(history)
    if result is not None and not result.refused:
        history.append((question, result.answer))
        cl.user_session.set("history", history[-HISTORY_LIMIT:])
    await saved.after_answer(mode)
    # abstained for a missing concept: offer to search PubMed (to a user who may add)
    await pubmed_chat.offer_after(question, result, app_config(), _user_name())
    hint = followup_hint(mode, asked_before, question) if result is not None else None
    if hint:  # a follow-up asked in a mode that answers each question alone
        await cl.Message(content=hint).send()


async def _stream_answer(backend: Backend, assistant: AssistantLike, question: str, mode: str,
                         history: list[tuple[str, str]]) -> AnswerResult | None:
    # dated when it starts: a streamed message is stored by update(), which does not date it
    msg = cl.Message(content="", created_at=utc_now())
    prepared: PreparedEvent | None = None
    result: AnswerResult | None = None
    try:
        async with backend.stream(assistant, question, mode, history) as events:
            async for event in events:
                if isinstance(event, PreparedEvent):
                    prepared = event
                    await _send_search_step(question, event, _retrieval_line(assistant))
                    msg.created_at = utc_now()  # stored after its search step
                elif isinstance(event, TokenEvent):
                    await msg.stream_token(escape_answer(event.text))
                elif isinstance(event, DoneEvent):
                    result = event.result
    except asyncio.CancelledError:
        log.info("answer cancelled (stop button or closed tab) after %d characters shown",
                 len(msg.content))
        if msg.content:
            msg.content += "\n\n*Stopped.*"
            await msg.update()
        raise
    if result is None:
        raise RuntimeError("the answer stream ended without a result")
    log.info("answered in %s mode: %d sources, style=%s, dropped=%d, refused=%s, timings=%s",
             result.mode, len(result.sources), result.style, len(result.dropped), result.refused,
             result.timings)
    sources = result.sources or (prepared.sources if prepared else [])
    body = (escape_answer(linkable_markers(result.answer))
            if result.answer else msg.content)
    findings = key_findings_block(result)
    msg.content = "\n\n".join(
        x for x in (body, findings, sources_block(sources, result.mode or mode)) if x
    )
    added = await asyncio.to_thread(pubmed_chat.added_from, app_config()) if sources else {}
    elements: list[Any] = [
        cl.Text(name=source_label(s),
                content=passage_markdown(s, pubmed_chat.added_line(added.get(s.pmid))),
                display="side")
        for s in sources
    ]
    if sources:  # the sources as files for a reference manager (chains.references)
        elements += [cl.File(name=name, content=write(sources).encode(), mime=mime,
                             display="inline") for write, name, mime in EXPORTS.values()]
    msg.metadata = {saved.ANSWER_KEY: saved.answer_record(question, result, mode, app_config())}
    # the panels before the final text: a page that draws the text first leaves its markers as
    # plain text, never links, when the panels arrive later (seen on a loaded machine)
    sent = await _send_panels(msg.id, elements)
    if msg.streaming:
        await msg.update()  # msg.elements is empty: Chainlit would send them again
    else:
        await msg.send()
    msg.elements = sent
    return result


async def _send_panels(for_id: str, elements: list[Any]) -> list[Any]:
    """Send an answer's side panels and export files; Chainlit writes each to a file (.files):
    on a full disk they are lost, logged, and the answer is still shown."""
    try:
        await asyncio.gather(*(element.send(for_id=for_id) for element in elements))
    except OSError as err:
        log.error("the answer's source panels and export files could not be written (%s: "
                  "is the disk full?); the answer is shown without them", err)
        return []
    return elements


async def _send_search_step(question: str, prepared: PreparedEvent,
                            retrieval: str | None = None) -> None:
    async with cl.Step(name="Search", type="tool", show_input=False, default_open=False) as step:
        step.output = "\n\n".join(x for x in (search_summary(question, prepared), retrieval) if x)


__all__ = [
    "QUEUED_TEXT", "Backend", "LoopThread", "RelayedStream", "answer", "escape_answer",
    "escape_markdown", "friendly_error", "passage_markdown", "search_summary", "source_label",
    "source_line", "sources_block", "strip_external_tags",
]  # fmt: skip


# -- /pubmed and the offer after an abstention (app/pubmed_chat.py) --------------------------
def _user_name() -> str:
    user = cl.user_session.get("user")
    return str(getattr(user, "identifier", None) or "local")


async def _query_embedder() -> Any:
    """The loaded retriever's query embedder, reused to embed additions (None: not loaded)."""
    current = backend()
    if not current.loaded:
        return None
    retriever = (await current.assistant()).retriever
    return getattr(retriever, "embedder", None)


async def _answer_again(question: str) -> None:
    await _switch_to_new_build()
    await answer(backend(), question, _current_mode())


async def _pubmed(text: str) -> None:
    await pubmed_chat.search_and_answer(app_config(), text, pubmed_chat.pubmed_query(text),
                                        _answer_again, _user_name(), await _query_embedder())


if _served():
    pubmed_chat.install(app_config, _answer_again, _user_name, _query_embedder)
