"""A streaming LangChain chat model over a loaded ``gpt4all.GPT4All`` (local GGUF, no download)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk
from pydantic import ConfigDict, Field

from chains.capabilities import Capabilities
from chains.streaming import StreamingChatModel, emit_chunks


class GPT4AllChatModel(StreamingChatModel):
    """System messages become the session's system prompt; earlier turns are replayed as text."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    # generation only: gpt4all's Python API gives no log-probabilities or token ids
    capabilities: ClassVar[Capabilities] = Capabilities(max_tokens_kwarg="max_new_tokens")

    client: Any = Field(exclude=True)
    model_name: str = "gpt4all"
    temperature: float = 0.0
    top_p: float = 0.9
    max_new_tokens: int = 128
    repetition_penalty: float = 1.1

    @property
    def _llm_type(self) -> str:
        return "gpt4all-chat"

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        system = "\n".join(str(m.content) for m in messages if m.type == "system")
        turns = [m for m in messages if m.type != "system"]
        prompt = "\n\n".join(
            ("Assistant: " if m.type == "ai" else "") + str(m.content) for m in turns
        )
        temp = float(kwargs.get("temperature", self.temperature))
        with self.client.chat_session(system_prompt=system or None):
            pieces = self.client.generate(
                prompt,
                max_tokens=int(kwargs.get("max_new_tokens") or self.max_new_tokens),
                temp=temp,
                top_k=1 if temp <= 0 else 40,
                top_p=self.top_p,
                repeat_penalty=self.repetition_penalty,
                streaming=True,
            )
            yield from emit_chunks(pieces, stop, run_manager)
