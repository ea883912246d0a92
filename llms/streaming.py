"""What the local chat models share: text pieces in, chunks out, and ``_generate`` for free."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult


def emit_chunks(
    pieces: Iterable[str],
    stop: list[str] | None,
    run_manager: CallbackManagerForLLMRun | None,
) -> Iterator[ChatGenerationChunk]:
    """Wrap generated text pieces as chunks, reporting each token; end at a stop string."""
    text = ""
    for piece in pieces:
        if not piece:
            continue
        text += piece
        if stop and any(s in text for s in stop):
            break
        chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
        if run_manager:
            run_manager.on_llm_new_token(piece, chunk=chunk)
        yield chunk


class StreamingChatModel(BaseChatModel):
    """A chat model that implements ``_stream``; the non-streaming call joins the chunks."""

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = "".join(c.text for c in self._stream(messages, stop, run_manager, **kwargs))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        """``_stream`` in a worker thread, told to stop the moment its async reader leaves.

        LangChain's default runs ``_stream`` in a thread too, but a cancelled reader (the Stop
        button, a closed tab) only abandons the sync generator, which runs on until it is garbage
        collected: the model generated 191 more tokens after a Stop. Here the reader's exit sets
        ``cancel_event``, which ``_stream`` implementations pass to the model's stop hook."""
        cancel = threading.Event()
        sync_manager = run_manager.get_sync() if run_manager else None
        iterator = self._stream(messages, stop, sync_manager, cancel_event=cancel, **kwargs)
        done = object()
        try:
            while (chunk := await asyncio.to_thread(next, iterator, done)) is not done:
                yield chunk  # type: ignore[misc]
        finally:
            cancel.set()
