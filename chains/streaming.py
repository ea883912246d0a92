"""What the local chat models share: text pieces in, chunks out, and ``_generate`` for free."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
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
