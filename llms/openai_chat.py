"""``ChatOpenAI`` for any OpenAI-compatible server, with its capabilities declared (imported only
when ``llm.backend: openai``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any, ClassVar

import openai
from langchain_core.language_models import LanguageModelInput
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI

from llms.capabilities import Capabilities
from settings.errors import UserFacingError


class OpenAIServerError(UserFacingError):
    """The OpenAI-compatible server cannot be reached, or refused the request."""


class OpenAICompatibleChatModel(ChatOpenAI):
    """Generation only: the server's log-probabilities and tokenizer are not relied upon."""

    capabilities: ClassVar[Capabilities] = Capabilities(max_tokens_kwarg="max_tokens")

    def _get_request_payload(
        self, input_: LanguageModelInput, *, stop: list[str] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """The generation cap as ``max_tokens``: ChatOpenAI sends OpenAI's newer
        ``max_completion_tokens``, which local servers (Ollama, llama.cpp) do not read."""
        payload = super()._get_request_payload(input_, stop=stop, **kwargs)
        if "max_completion_tokens" in payload:
            payload["max_tokens"] = payload.pop("max_completion_tokens")
        return payload

    @contextlib.contextmanager
    def _server_errors(self) -> Iterator[None]:
        """The client's connection and HTTP errors as a message for the user."""
        url = self.openai_api_base
        try:
            yield
        except openai.APIConnectionError as err:  # refused, unresolvable, timed out
            cause = err.__cause__ or err
            raise OpenAIServerError(
                f"the OpenAI-compatible server at {url} cannot be reached ({cause}): start it, "
                "or set llm.openai_base_url in cfg.yaml to where it runs"
            ) from err
        except openai.APIStatusError as err:
            raise OpenAIServerError(
                f"the OpenAI-compatible server at {url} answered HTTP {err.status_code}: "
                f"{err.message} (check llm.openai_base_url and llm.openai_model "
                f"{self.model_name!r} in cfg.yaml)"
            ) from err

    def _stream(self, *args: Any, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        with self._server_errors():
            yield from super()._stream(*args, **kwargs)

    async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        with self._server_errors():
            async for chunk in super()._astream(*args, **kwargs):
                yield chunk

    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        with self._server_errors():
            return super()._generate(*args, **kwargs)

    async def _agenerate(self, *args: Any, **kwargs: Any) -> ChatResult:
        with self._server_errors():
            return await super()._agenerate(*args, **kwargs)
