"""A streaming LangChain chat model over a loaded ``gpt4all.GPT4All`` (local GGUF, no download).

Why not ``GPT4All.generate``/``chat_session``: gpt4all 2.8.2 wraps every prompt in its own
"### Human/### Assistant" template and cannot continue an assistant turn that is already begun.
Here the prompt is the model's own chat template (the GGUF's ``tokenizer.chat_template``: ChatML
for SmolLM2) rendered exactly as the transformers backend renders it, and handed to llama.cpp raw
(``%1%2`` template, special tokens parsed) through the binding's ``llmodel_prompt``. Its two
callbacks give what the public API hides: the prompt's token ids (:meth:`token_ids`) and a way to
stop generation (a callback returning False, set when the consumer stops reading).

What llama.cpp in gpt4all 2.8.2 does not give: token log-probabilities, so no
``score_continuations`` (the yes/no verdict is skipped on this backend; docs/models.md,
"GPT4All backend").
"""

from __future__ import annotations

import ctypes
import logging
import queue
import threading
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk
from pydantic import ConfigDict, Field, PrivateAttr

from llms.capabilities import Capabilities
from llms.hf_chat import to_chat_dicts
from llms.streaming import StreamingChatModel, emit_chunks
from settings.errors import UserFacingError

RAW_TEMPLATE = "%1%2"  # the prompt as is, and no text decoded after the reply
_DONE = object()

log = logging.getLogger(__name__)


class GenerationError(UserFacingError):
    """llama.cpp refused the prompt (e.g. longer than the context window)."""


class GPT4AllChatModel(StreamingChatModel):
    """Chat model over an already loaded ``gpt4all.GPT4All`` client."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: Any = Field(exclude=True)
    # HF ``tokenizers.Tokenizer`` of the same GGUF (ids proven equal: ``eval tokenizer``), for
    # counting prompt tokens without running the model; None: counts are estimated
    tokenizer: Any = Field(default=None, exclude=True)
    chat_template: str | None = None
    model_name: str = "gpt4all"
    temperature: float = 0.0
    top_p: float = 0.9
    max_new_tokens: int = 128
    repetition_penalty: float = 1.1
    context_window: int = 2048
    n_batch: int = 128

    # capabilities the chains ask about (see eval/verdict/)
    # no log-probabilities from gpt4all 2.8.2 (so no yes/no option scoring); the raw prompt can end
    # with an ``assistant_prefix``; prompt tokens are counted with the GGUF's own tokenizer
    capabilities: ClassVar[Capabilities] = Capabilities(
        continues_prefix=True, counts_tokens=True, max_tokens_kwarg="max_new_tokens"
    )

    # one llama.cpp context: calls from several threads/sessions take turns
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "gpt4all-chat"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "temperature": self.temperature}

    # ---- prompt -------------------------------------------------------------------------
    def render(self, messages: Sequence[BaseMessage], *, add_generation_prompt: bool = True) -> str:
        """The prompt text: the GGUF's chat template over the messages (as transformers does)."""
        chat = to_chat_dicts(messages)
        if not self.chat_template:  # a base model without a template: plain concatenation
            return "\n\n".join(m["content"] for m in chat) + "\n"
        from transformers.utils.chat_template_utils import render_jinja_template

        # (rendered conversations, generation indices); typed loosely upstream
        out: Any = render_jinja_template(
            [chat], chat_template=self.chat_template, add_generation_prompt=add_generation_prompt
        )
        return str(out[0][0])

    def encode_messages(
        self, messages: Sequence[BaseMessage], *, add_generation_prompt: bool = True
    ) -> list[int]:
        """Token ids of the templated prompt, from the HF tokenizer of the same file."""
        if self.tokenizer is None:
            raise RuntimeError(f"no tokenizer for {self.model_name}: token counts are estimated")
        text = self.render(messages, add_generation_prompt=add_generation_prompt)
        return list(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def get_num_tokens(self, text: str) -> int:
        if self.tokenizer is None:
            return super().get_num_tokens(text)
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def get_num_tokens_from_messages(self, messages: list[BaseMessage], tools: Any = None) -> int:
        if self.tokenizer is None:
            return super().get_num_tokens_from_messages(messages)
        return len(self.encode_messages(messages))

    # ---- llama.cpp through the binding ---------------------------------------------------
    def _run_prompt(
        self,
        prompt: str,
        *,
        n_predict: int,
        temperature: float,
        special: bool,
        on_prompt_token: Any,
        on_response: Any,
    ) -> None:
        """One ``llmodel_prompt`` call from a fresh context (the whole prompt is re-read)."""
        from gpt4all import _pyllmodel as binding

        lm = self.client.model
        greedy = temperature <= 0
        lm.buffer.clear()  # the UTF-8 reassembly state of the binding's response decoder
        lm.buff_expecting_cont_bytes = 0
        lm._set_context(
            n_predict=n_predict,
            top_k=1 if greedy else 40,
            top_p=self.top_p,
            min_p=0.0,
            temp=0.0 if greedy else temperature,
            n_batch=self.n_batch,
            repeat_penalty=self.repetition_penalty,
            # penalise every token in the context, as transformers' repetition_penalty does
            repeat_last_n=self.context_window,
            context_erase=0.75,
            reset_context=True,
        )
        prompt_cb = binding.PromptCallback(on_prompt_token)
        response_cb = binding.ResponseCallback(lm._callback_decoder(on_response))
        binding.llmodel.llmodel_prompt(
            lm.model,
            ctypes.c_char_p(prompt.encode("utf-8")),
            ctypes.c_char_p(RAW_TEMPLATE.encode()),
            prompt_cb,
            response_cb,
            True,  # allow a context shift (never needed: fit_prompt keeps prompts in budget)
            lm.context,
            special,
            ctypes.c_char_p(),
        )

    def token_ids(self, text: str, *, special: bool = False) -> list[int]:
        """llama.cpp's own token ids for ``text`` (the prompt callback reports each one).

        Costs one forward pass over the text: for checks (``eval tokenizer``), not for budgets.
        """
        ids: list[int] = []
        errors: list[str] = []

        def on_prompt(token_id: int) -> bool:
            ids.append(token_id)
            return True

        def on_response(token_id: int, response: str) -> bool:
            if token_id == -1:
                errors.append(response)
            return False

        with self._lock:
            self._run_prompt(text, n_predict=0, temperature=0.0, special=special,
                             on_prompt_token=on_prompt, on_response=on_response)  # fmt: skip
        if errors:
            raise GenerationError(f"gpt4all could not tokenize the text: {errors[0]}")
        return ids

    # ---- generation ---------------------------------------------------------------------
    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        prompt = self.render(messages) + str(kwargs.pop("assistant_prefix", "") or "")
        n_predict = int(kwargs.get("max_new_tokens") or self.max_new_tokens)
        temperature = float(kwargs.get("temperature", self.temperature))
        # Set when the consumer stops reading (Stop button, closed tab, stop string, error):
        # both callbacks then return False and llama.cpp ends at its next token or batch.
        cancelled = kwargs.pop("cancel_event", None) or threading.Event()
        pieces: queue.Queue[Any] = queue.Queue()
        errors: list[BaseException] = []
        generated = [0]

        def on_prompt(_token_id: int) -> bool:
            return not cancelled.is_set()

        def on_response(token_id: int, response: str) -> bool:
            if token_id == -1:  # llama.cpp reports a refused prompt through this callback
                errors.append(GenerationError(f"gpt4all refused the prompt: {response}"))
                return False
            if cancelled.is_set():
                return False
            generated[0] += 1
            pieces.put(response)
            return True

        def work() -> None:
            try:
                with self._lock:
                    if not cancelled.is_set():
                        self._run_prompt(prompt, n_predict=n_predict, temperature=temperature,
                                         special=True, on_prompt_token=on_prompt,
                                         on_response=on_response)  # fmt: skip
                # whether a reader that left early (Stop, a closed tab) really ended it
                log.info("generation ended after %d new tokens (max_new_tokens %d): %s",
                         generated[0], n_predict,
                         "stopped by its reader" if cancelled.is_set() else "finished")
            except BaseException as err:  # noqa: BLE001 - re-raised in the consumer thread
                errors.append(err)
            finally:
                pieces.put(_DONE)

        def drain() -> Iterator[str]:
            while (piece := pieces.get()) is not _DONE:
                yield piece

        thread = threading.Thread(target=work, name="gpt4all-generate", daemon=True)
        thread.start()
        try:
            yield from emit_chunks(drain(), stop, run_manager)
        finally:
            cancelled.set()
            thread.join()
        if errors:
            raise errors[0]
