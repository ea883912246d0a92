"""A LangChain chat model over a local transformers model (a folder or a GGUF file).

Why our own ``BaseChatModel`` rather than ``ChatHuggingFace(HuggingFacePipeline)``: we need three
things the pipeline wrapper does not give cleanly: (1) exact token counts from the model's own
tokenizer and chat template (the prompt budget), (2) the log-probability of short continuations
(the yes/no/maybe verdict), and (3) streaming with greedy decoding without the pipeline's extra
prompt re-tokenisation and its fixed 60 s streamer timeout. Generation itself is plain
``model.generate`` with a ``TextIteratorStreamer`` in a worker thread.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk
from pydantic import ConfigDict, Field, PrivateAttr

from llms.capabilities import Capabilities
from llms.streaming import StreamingChatModel, emit_chunks

_ROLES = {"human": "user", "ai": "assistant", "system": "system"}
log = logging.getLogger(__name__)


def to_chat_dicts(messages: Sequence[BaseMessage]) -> list[dict[str, str]]:
    """LangChain messages -> the ``[{"role", "content"}]`` list chat templates expect."""
    out = []
    for m in messages:
        role = _ROLES.get(m.type, "user")
        content = m.content if isinstance(m.content, str) else str(m.content)
        out.append({"role": role, "content": content})
    return out


class LocalHFChatModel(StreamingChatModel):
    """Chat model over an already loaded transformers model + tokenizer."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    capabilities: ClassVar[Capabilities] = Capabilities(
        scores_likelihoods=True,
        continues_prefix=True,
        counts_tokens=True,
        max_tokens_kwarg="max_new_tokens",
    )

    model: Any = Field(exclude=True)
    tokenizer: Any = Field(exclude=True)
    model_name: str = "local"
    temperature: float = 0.0
    top_p: float = 0.9
    max_new_tokens: int = 128
    repetition_penalty: float = 1.1
    context_window: int = 2048

    # generate() is not re-entrant on one model: serialise calls from several threads/sessions.
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "local-transformers"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "temperature": self.temperature}

    # ---- tokens -------------------------------------------------------------------------
    def encode_messages(
        self, messages: Sequence[BaseMessage], *, add_generation_prompt: bool = True
    ) -> list[int]:
        """Token ids of the chat-templated prompt."""
        chat = to_chat_dicts(messages)
        if getattr(self.tokenizer, "chat_template", None):
            text = self.tokenizer.apply_chat_template(
                chat, tokenize=False, add_generation_prompt=add_generation_prompt
            )
        else:  # a base model without a template: plain concatenation
            text = "\n\n".join(m["content"] for m in chat) + "\n"
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def get_num_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def get_num_tokens_from_messages(self, messages: list[BaseMessage], tools: Any = None) -> int:
        return len(self.encode_messages(messages))

    # ---- generation ---------------------------------------------------------------------
    def _gen_kwargs(self, **overrides: Any) -> dict[str, Any]:
        """generate() settings; ``max_new_tokens``/``temperature`` can be overridden per call."""
        max_new = int(overrides.get("max_new_tokens") or self.max_new_tokens)
        temperature = float(overrides.get("temperature", self.temperature))
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_new,
            "repetition_penalty": self.repetition_penalty,
            "pad_token_id": self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
        }
        if temperature <= 0:
            kwargs["do_sample"] = False  # greedy; no temperature/top_p (they would warn)
        else:
            kwargs.update(do_sample=True, temperature=temperature, top_p=self.top_p)
        return kwargs

    def _inputs(self, messages: Sequence[BaseMessage], prefix: str = "") -> dict[str, Any]:
        import torch

        ids = self.encode_messages(messages)
        if prefix:  # the assistant turn already begun: the model continues it
            ids += self.tokenizer(prefix, add_special_tokens=False)["input_ids"]
        device = getattr(self.model, "device", "cpu")
        input_ids = torch.tensor([ids], device=device)
        return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        from transformers import TextIteratorStreamer

        inputs = self._inputs(messages, str(kwargs.pop("assistant_prefix", "") or ""))
        streamer = TextIteratorStreamer(
            self.tokenizer, skip_prompt=True, skip_special_tokens=True, timeout=600.0
        )
        # Set when the consumer stops reading (Stop button, stop string, error): generate() then
        # ends at its next token instead of running on to max_new_tokens while holding the lock.
        cancelled = kwargs.pop("cancel_event", None) or threading.Event()
        stopper = _StopOnEvent(cancelled)
        gen_kwargs = {
            **inputs,
            **self._gen_kwargs(**kwargs),
            "streamer": streamer,
            "stopping_criteria": stopper.as_criteria(),
        }
        errors: list[BaseException] = []

        def work() -> None:
            import torch

            try:
                with self._lock, torch.inference_mode():
                    out = self.model.generate(**gen_kwargs)
                # whether a reader that left early (Stop, a closed tab) really ended it
                log.info("generation ended after %d new tokens (max_new_tokens %d): %s",
                         int(out.shape[-1] - inputs["input_ids"].shape[-1]),
                         gen_kwargs["max_new_tokens"],
                         "stopped by its reader" if stopper.fired else "finished")
            except BaseException as err:  # noqa: BLE001 - re-raised in the consumer thread
                errors.append(err)
                streamer.end()  # type: ignore[no-untyped-call]

        thread = threading.Thread(target=work, name="llm-generate", daemon=True)
        thread.start()
        try:
            yield from emit_chunks(streamer, stop, run_manager)
        finally:
            cancelled.set()
            thread.join()
        if errors:
            raise errors[0]

    # ---- scoring ------------------------------------------------------------------------
    def score_continuations(
        self, messages: Sequence[BaseMessage], continuations: Sequence[str], *, prefix: str = ""
    ) -> list[float]:
        """Log-probability of each continuation after the assistant turn opens with ``prefix``.

        One forward pass over the prompt (its KV cache is then reused for every option).
        """
        import torch

        prompt_ids = self.encode_messages(messages)
        if prefix:
            prompt_ids += self.tokenizer(prefix, add_special_tokens=False)["input_ids"]
        device = getattr(self.model, "device", "cpu")
        scores: list[float] = []
        with self._lock, torch.inference_mode():
            out = self.model(torch.tensor([prompt_ids], device=device), use_cache=True)
            first_logp = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
            past = out.past_key_values
            for cont in continuations:
                ids = self.tokenizer(cont, add_special_tokens=False)["input_ids"]
                if not ids:
                    scores.append(-math.inf)
                    continue
                total = float(first_logp[ids[0]])
                if len(ids) > 1:
                    import copy

                    rest = torch.tensor([ids[:-1]], device=device)
                    o2 = self.model(rest, past_key_values=copy.deepcopy(past), use_cache=True)
                    logp = torch.log_softmax(o2.logits[0].float(), dim=-1)
                    total += float(sum(logp[i, t] for i, t in enumerate(ids[1:])))
                scores.append(total)
        return scores

    def score_after_prefixes(
        self,
        messages: Sequence[BaseMessage],
        prefixes: Sequence[str],
        continuation: str,
        *,
        max_tokens: int | None = None,
    ) -> list[float]:
        """log P(continuation | prompt, the assistant turn opened with each prefix), over the
        continuation's first ``max_tokens`` tokens: one batched forward pass (right-padded)."""
        import torch

        tok = self.tokenizer
        prompt = self.encode_messages(messages)
        cont = tok(continuation, add_special_tokens=False)["input_ids"][:max_tokens]
        seqs = [prompt + tok(p, add_special_tokens=False)["input_ids"] for p in prefixes]
        starts = [len(s) for s in seqs]
        seqs = [s + cont for s in seqs]
        width = max(len(s) for s in seqs)
        pad = tok.pad_token_id or tok.eos_token_id or 0
        device = getattr(self.model, "device", "cpu")
        ids = torch.tensor([s + [pad] * (width - len(s)) for s in seqs], device=device)
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs], device=device)
        with self._lock, torch.inference_mode():
            logits = self.model(input_ids=ids, attention_mask=mask).logits.float()
        logp = torch.log_softmax(logits, dim=-1)
        targets = torch.tensor(cont, device=device)
        out: list[float] = []
        for row, start in enumerate(starts):
            positions = torch.arange(start - 1, start - 1 + len(cont), device=device)
            out.append(float(logp[row, positions, targets].sum()))
        return out


class _StopOnEvent:
    """Ends generate() at its next token once ``event`` is set; ``fired`` says it did (the reader
    stopped early) rather than the answer ending on its own."""

    def __init__(self, event: threading.Event) -> None:
        self.event = event
        self.fired = False

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> bool:
        if self.event.is_set():
            self.fired = True
        return self.fired

    def as_criteria(self) -> Any:  # a transformers StoppingCriteriaList
        from transformers import StoppingCriteria, StoppingCriteriaList

        outer = self

        class _OnEvent(StoppingCriteria):
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> bool:
                return outer(input_ids, scores, **kwargs)

        return StoppingCriteriaList([_OnEvent()])
