"""The one facade the CLI, the evaluation and the Chainlit UI use.

``Assistant.astream(question, mode=..., history=...)`` yields one :class:`PreparedEvent` (after
retrieval / rewrite / sub-queries, with the numbered sources the LLM will see), then
:class:`TokenEvent` pieces of the final answer, then exactly one :class:`DoneEvent`. When nothing
is retrieved it refuses without calling the answering LLM. ``ask`` is the synchronous form.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from chains.answer import (
    build_answer_tail,
    make_fit_step,
    make_refusal_step,
    make_write_step,
    to_source,
)
from chains.decision import make_decide_step
from chains.grounded import make_evidence_step
from chains.lead import LeadWriter
from chains.modes import ModeParts, build_mode_chains, make_followup_search_step
from chains.policy import AnswerPolicy
from chains.prompts import Prompts
from chains.question_checks import language_refusal, refusal_events, validate_question
from chains.result import AnswerResult, DoneEvent, PreparedEvent, TokenEvent
from chains.steps import (
    make_answer_step,
    make_multi_query_step,
    make_retrieve_step,
    make_rewrite_step,
)
from chains.turn import Turn
from grounding.classifier import load_stance_classifier
from grounding.sources import SentenceEncoder, load_encoder
from retrievers.service import SearchService
from settings.config import Config
from settings.errors import UserFacingError

log = logging.getLogger(__name__)

Event = PreparedEvent | TokenEvent | DoneEvent
TokenCounter = Callable[[Sequence[BaseMessage]], int]

__all__ = ["Assistant", "InvalidModeError", "to_source"]


class InvalidModeError(UserFacingError):
    """An unknown chain mode."""


class Assistant:
    """Retrieval + LLM for the three modes; the LLM is loaded on first use unless given."""

    def __init__(
        self,
        cfg: Config,
        retriever: SearchService,
        llm: BaseChatModel | None = None,
        *,
        count_tokens: TokenCounter | None = None,
        postprocessors: Sequence[Runnable[Any, Any]] = (),
        encoder: SentenceEncoder | None = None,
    ) -> None:
        self.cfg = cfg
        self.retriever = retriever
        self._encoder = encoder
        self.prompts = Prompts.from_config(cfg)
        self._llm = llm
        self._count_tokens = count_tokens
        self._llm_lock = threading.Lock()
        # how answers are made (answer.style with the model's capabilities), decided once here
        self.policy = AnswerPolicy.resolve(cfg.answer.style)
        self.chains = self._build_chains(postprocessors)

    @classmethod
    def from_config(
        cls,
        cfg: Config,
        *,
        retriever: SearchService | None = None,
        llm: BaseChatModel | None = None,
        count_tokens: TokenCounter | None = None,
        postprocessors: Sequence[Runnable[Any, Any]] = (),
        encoder: SentenceEncoder | None = None,
    ) -> Assistant:
        """Load what is not given: the retriever now (fails fast without an index), the LLM
        lazily on the first question that needs it. ``postprocessors`` are event-stream steps
        composed after citation cleaning (see :mod:`chains.answer`). ``encoder`` embeds
        abstract sentences for grounding (default: the index's own MiniLM embedder)."""
        if retriever is None:
            from retrievers.loading import load_retriever

            retriever = load_retriever(cfg)
        return cls(
            cfg, retriever, llm, count_tokens=count_tokens, postprocessors=postprocessors,
            encoder=encoder,
        )  # fmt: skip

    # ---- lazily loaded LLM -------------------------------------------------------------------
    @property
    def llm(self) -> BaseChatModel:
        if self._llm is None:
            with self._llm_lock:
                if self._llm is None:
                    from llms.llm import get_llm

                    self._llm = get_llm(self.cfg.llm, root=self.cfg.root)
        return self._llm

    def encoder(self) -> SentenceEncoder:
        """The sentence embedder for grounding: the search backend's own (no second MiniLM in
        memory), else one built from the index config."""
        if self._encoder is None:
            with self._llm_lock:
                if self._encoder is None:
                    found = self.retriever.embedder
                    self._encoder = found if found is not None else load_encoder(self.cfg)
        return self._encoder

    def count_tokens(self, messages: Sequence[BaseMessage]) -> int:
        if self._count_tokens is None:
            from llms.llm import message_token_counter

            self._count_tokens = message_token_counter(self.llm)
        return self._count_tokens(messages)

    # ---- the chains ---------------------------------------------------------------------------
    def _build_chains(
        self, postprocessors: Sequence[Runnable[Any, Any]]
    ) -> dict[str, Runnable[Any, Any]]:
        cfg = self.cfg
        prompts = self.prompts
        policy = self.policy
        corpus = self.retriever.corpus
        tail = build_answer_tail(
            fit=make_fit_step(
                prompts.answer, self.count_tokens,
                lambda: cfg.llm.context_window - cfg.llm.max_new_tokens, writes=policy.writes,
            ),
            find=make_evidence_step(self.encoder, cfg.answer),
            decide=make_decide_step(
                cfg.answer, policy, self.encoder, corpus,
                load_stance_classifier(prompts.yes_no_path.parent),
                LeadWriter(self._model, prompts.lead, cfg.answer, policy, cfg.llm.timeout_s),
            ),
            write=make_write_step(
                make_answer_step(self._model), policy, cfg.answer, cfg.llm.timeout_s
            ),
            refuse=make_refusal_step(cfg.chains.refusal, corpus,
                                     meaning_ready=lambda: self.retriever.hybrid),
            postprocessors=postprocessors,
        )  # fmt: skip
        parts = ModeParts(
            retrieve=make_retrieve_step(self.retriever),
            followup_search=make_followup_search_step(
                self.retriever,
                make_rewrite_step(self._model, prompts.rewrite),
                use_llm_rewrite=cfg.chains.rewrite_with_llm,
                corpus=corpus,
            ),
            generate_queries=make_multi_query_step(
                self._model, prompts.multi_query, cfg.chains.n_queries,
                encoder=self.encoder, corpus=self.retriever.corpus,
            ),  # fmt: skip
            answer_tail=tail,
            rrf_c=cfg.retrieval.rrf_c,
            n_sources=cfg.retrieval.topk_rrf,
        )
        return build_mode_chains(parts)

    def _model(self) -> BaseChatModel:
        return self.llm

    async def astream(
        self, question: str, *, mode: str, history: list[tuple[str, str]] | None = None
    ) -> AsyncIterator[Event]:
        if mode not in self.chains:
            raise InvalidModeError(f"unknown mode {mode!r}: use one of {', '.join(self.chains)}")
        # empty, too long, control characters: refused before any work, with a clear message
        # (once: a question the CLI or the chat validated already is a ValidQuestion)
        question = validate_question(question, self.cfg.chains.max_question_chars)
        t0 = time.perf_counter()
        not_english = language_refusal(question)
        if not_english:
            for refusal in refusal_events(question, mode, not_english, t0):
                yield refusal
            return
        depth = self.cfg.chains.conversation_depth
        turns = list(history or [])[-depth:] if depth else []
        turn: Turn = {"mode": mode, "question": question, "history": turns, "timings": {}}
        first_token: float | None = None
        async for event in self.chains[mode].astream(turn):
            if isinstance(event, TokenEvent) and first_token is None:
                first_token = round(time.perf_counter() - t0, 4)
            elif isinstance(event, DoneEvent):
                timings = event.result.timings
                timings["first_token_s"] = (
                    first_token if first_token is not None else round(time.perf_counter() - t0, 4)
                )
                timings["total_s"] = round(time.perf_counter() - t0, 4)
            yield event

    # ---- sync ---------------------------------------------------------------------------------
    async def arun(
        self, question: str, *, mode: str, history: list[tuple[str, str]] | None = None
    ) -> AnswerResult:
        result: AnswerResult | None = None
        async for event in self.astream(question, mode=mode, history=history):
            if isinstance(event, DoneEvent):
                result = event.result
        assert result is not None
        return result

    def ask(
        self, question: str, *, mode: str, history: list[tuple[str, str]] | None = None
    ) -> AnswerResult:
        """Synchronous: safe to call from plain code or from a thread beside a running loop."""
        coro = self.arun(question, mode=mode, history=history)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        box: dict[str, Any] = {}

        def runner() -> None:
            try:
                box["r"] = asyncio.run(coro)
            except BaseException as err:  # noqa: BLE001 - re-raised in the caller
                box["e"] = err

        th = threading.Thread(target=runner)
        th.start()
        th.join()
        if "e" in box:
            raise box["e"]
        result: AnswerResult = box["r"]
        return result
