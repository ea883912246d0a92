"""``ChatOpenAI`` for any OpenAI-compatible server, with its capabilities declared (imported only
when ``llm.backend: openai``)."""

from __future__ import annotations

from typing import ClassVar

from langchain_openai import ChatOpenAI

from chains.capabilities import Capabilities


class OpenAICompatibleChatModel(ChatOpenAI):
    """Generation only: the server's log-probabilities and tokenizer are not relied upon."""

    capabilities: ClassVar[Capabilities] = Capabilities(max_tokens_kwarg="max_tokens")
