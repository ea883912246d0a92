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

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from app.config import Config
from app.errors import UserFacingError
from chains.budget import fit_prompt
from chains.citations import CitationStreamFilter, clean_citations
from chains.prompts import Prompts
from chains.result import (
    MODES,
    AnswerResult,
    DoneEvent,
    PreparedEvent,
    Source,
    TokenEvent,
)
from chains.steps import (
    answer_messages,
    make_answer_step,
    make_multi_query_step,
    make_retrieve_step,
    make_rewrite_step,
)
from chains.verdict import can_continue
from chains.yesno import Calibration, calibration_path, is_yes_no_question

log = logging.getLogger(__name__)

Event = PreparedEvent | TokenEvent | DoneEvent
TokenCounter = Callable[[Sequence[BaseMessage]], int]


class InvalidModeError(UserFacingError):
    """An unknown chain mode."""


def to_source(n: int, doc: Document) -> Source:
    md = doc.metadata
    conf = md.get("confidence")
    year = md.get("year")
    return Source(
        n=n,
        pmid=str(md.get("pmid", "")),
        title=str(md.get("title") or ""),
        url=str(md.get("url") or f"https://pubmed.ncbi.nlm.nih.gov/{md.get('pmid', '')}/"),
        year=int(year) if isinstance(year, int | str) and str(year).isdigit() else None,
        journal=str(md.get("journal") or ""),
        authors=[str(a) for a in md.get("authors") or []],
        confidence=min(1.0, max(0.0, float(conf))) if conf is not None else 0.0,
        passage=doc.page_content,
        rrf_score=md.get("rrf_score"),
        ranks=dict(md.get("ranks") or {}),
        scores=dict(md.get("scores") or {}),
    )


def _filters_dict(filters: Any) -> dict:
    if filters is None:
        return {}
    if hasattr(filters, "as_dict"):
        return dict(filters.as_dict())
    return dict(filters) if isinstance(filters, dict) else {}


class Assistant:
    """Retrieval + LLM for the three modes; the LLM is loaded on first use unless given."""

    def __init__(
        self,
        cfg: Config,
        retriever: Any,
        llm: BaseChatModel | None = None,
        *,
        count_tokens: TokenCounter | None = None,
        calibration: Calibration | None = None,
    ) -> None:
        self.cfg = cfg
        self.retriever = retriever
        self.prompts = Prompts.from_config(cfg)
        self._llm = llm
        self._count_tokens = count_tokens
        self._llm_lock = threading.Lock()
        self.calibration = calibration or Calibration.load(
            calibration_path(self.prompts.yes_no_path), "rag"
        )
        self.retrieve_step = make_retrieve_step(retriever)
        # (article tails, evidence template, channel template), made on the first yes/no verdict
        self._verdict_inputs: tuple[Any, str, str] | None = None

    @classmethod
    def from_config(
        cls,
        cfg: Config,
        *,
        retriever: Any = None,
        llm: BaseChatModel | None = None,
        count_tokens: TokenCounter | None = None,
    ) -> Assistant:
        """Load what is not given: the retriever now (fails fast without an index), the LLM
        lazily on the first question that needs it."""
        if retriever is None:
            from retrievers.loading import load_retriever

            retriever = load_retriever(cfg)
        return cls(cfg, retriever, llm, count_tokens=count_tokens)

    # ---- lazily loaded LLM -------------------------------------------------------------------
    @property
    def llm(self) -> BaseChatModel:
        if self._llm is None:
            with self._llm_lock:
                if self._llm is None:
                    from chains.llm import get_llm

                    self._llm = get_llm(self.cfg.llm, root=self.cfg.root)
        return self._llm

    def count_tokens(self, messages: Sequence[BaseMessage]) -> int:
        if self._count_tokens is None:
            from chains.llm import message_token_counter

            self._count_tokens = message_token_counter(self.llm)
        return self._count_tokens(messages)

    async def _ensure_llm(self) -> BaseChatModel:
        if self._llm is None:
            await asyncio.to_thread(lambda: self.llm)
        return self.llm

    # ---- the chain ---------------------------------------------------------------------------
    async def astream(
        self, question: str, *, mode: str, history: list[tuple[str, str]] | None = None
    ) -> AsyncIterator[Event]:
        if mode not in MODES:
            raise InvalidModeError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
        question = (question or "").strip()
        if not question:
            raise UserFacingError("the question is empty: type a question")
        cfg = self.cfg.chains
        t0 = time.perf_counter()
        timings: dict[str, float] = {}
        history = list(history or [])
        turns = history[-cfg.conversation_depth :] if cfg.conversation_depth else []

        searched = question
        rewrite_path = "unchanged"
        t = time.perf_counter()
        if mode == "conversational" and turns:
            retrieval = await self._followup_retrieval(question, turns, timings)
            rewrite_path = retrieval.path
        else:
            retrieval = await self.retrieve_step.ainvoke({"question": searched})
        timings["retrieve_s"] = round(time.perf_counter() - t - timings.get("rewrite_s", 0), 4)
        filters = _filters_dict(retrieval.filters)
        searched_text = getattr(retrieval, "query", None) or searched

        if retrieval.empty or not retrieval.documents:
            refusal = cfg.refusal
            yield PreparedEvent(
                searched_question=searched_text, filters=filters, rewrite=rewrite_path
            )
            timings["first_token_s"] = round(time.perf_counter() - t0, 4)
            yield TokenEvent(text=refusal)
            timings["total_s"] = round(time.perf_counter() - t0, 4)
            yield DoneEvent(
                result=AnswerResult(
                    answer=refusal,
                    mode=mode,  # type: ignore[arg-type]
                    question=question,
                    searched_question=searched_text,
                    filters=filters,
                    refused=True,
                    rewrite=rewrite_path,
                    timings=timings,
                )
            )
            return

        llm = await self._ensure_llm()
        documents = list(retrieval.documents)
        sub_queries: list[str] = []
        if mode == "multi-query":
            documents, sub_queries = await self._multi_query(llm, question, retrieval, timings)

        budget = self.cfg.llm.context_window - self.cfg.llm.max_new_tokens
        fitted = await asyncio.to_thread(
            fit_prompt,
            lambda docs, _hist: answer_messages(self.prompts.answer, question, docs),
            documents,
            [],
            self.count_tokens,
            budget,
        )
        sources = [to_source(i, d) for i, d in enumerate(fitted.documents, start=1)]
        yield PreparedEvent(
            searched_question=searched_text,
            sub_queries=sub_queries,
            filters=filters,
            sources=sources,
            rewrite=rewrite_path,
        )

        answer_prefix = ""
        verdict = None
        if is_yes_no_question(question):
            verdict = await self._verdict(llm, question, fitted.documents)
            if verdict:
                answer_prefix = verdict.capitalize() + ". "

        pieces: list[str] = []
        cite = CitationStreamFilter(len(sources))
        if answer_prefix:
            timings["first_token_s"] = round(time.perf_counter() - t0, 4)
            yield TokenEvent(text=answer_prefix)
        answer_llm: Any = llm
        if answer_prefix and can_continue(llm):
            # the model continues after "Yes. " so its explanation agrees with the verdict
            answer_llm = llm.bind(assistant_prefix=answer_prefix)
        async for piece in make_answer_step(answer_llm).astream(fitted.messages):
            if not piece:
                continue
            pieces.append(piece)
            shown = cite.feed(piece)
            if shown:
                timings.setdefault("first_token_s", round(time.perf_counter() - t0, 4))
                yield TokenEvent(text=shown)
        rest = cite.flush()
        if rest:
            yield TokenEvent(text=rest)
        timings.setdefault("first_token_s", round(time.perf_counter() - t0, 4))
        answer = answer_prefix + clean_citations("".join(pieces).strip(), len(sources))
        timings["total_s"] = round(time.perf_counter() - t0, 4)
        yield DoneEvent(
            result=AnswerResult(
                answer=answer.strip(),
                mode=mode,  # type: ignore[arg-type]
                question=question,
                searched_question=searched_text,
                sub_queries=sub_queries,
                filters=filters,
                sources=sources,
                verdict=verdict,
                timings=timings,
                rewrite=rewrite_path,
            )
        )

    async def _followup_retrieval(
        self, question: str, turns: list[tuple[str, str]], timings: dict[str, float]
    ) -> Any:
        """Conversational search: the follow-up as written fused with its context form
        (:mod:`retrievers.followup`); the LLM's guarded rewrite is the context form when
        ``chains.rewrite_with_llm`` is on and the follow-up needs context."""
        from chains.queries import needs_context
        from retrievers.followup import aretrieve_followup

        out = {"question": question, "raw": "", "fallback": False}
        if self.cfg.chains.rewrite_with_llm and needs_context(question):
            llm = await self._ensure_llm()
            t = time.perf_counter()
            out = await make_rewrite_step(llm, self.prompts.rewrite).ainvoke(
                {"question": question, "history": turns}
            )
            timings["rewrite_s"] = round(time.perf_counter() - t, 4)
        return await aretrieve_followup(
            self.retriever,
            question,
            [u for u, _ in turns],
            rewrite=out["question"] if out["raw"] else None,
            rewrite_fallback=bool(out["fallback"]),
            prior_weight=self.cfg.retrieval.followup_prior_weight,
            stands_alone=not needs_context(question),
        )

    async def _multi_query(
        self, llm: BaseChatModel, question: str, retrieval: Any, timings: dict[str, float]
    ) -> tuple[list[Document], list[str]]:
        from retrievers.fusion import reciprocal_rank_fusion

        t = time.perf_counter()
        step = make_multi_query_step(llm, self.prompts.multi_query, self.cfg.chains.n_queries)
        sub_queries: list[str] = await step.ainvoke({"question": question})
        timings["multi_query_s"] = round(time.perf_counter() - t, 4)
        t = time.perf_counter()
        lists = [list(retrieval.documents)]
        results = await asyncio.gather(
            *(
                self.retrieve_step.ainvoke({"question": q, "filters": retrieval.filters})
                for q in sub_queries
            )
        )
        lists.extend(list(r.documents) for r in results if not r.empty)
        timings["retrieve_sub_s"] = round(time.perf_counter() - t, 4)
        fused = reciprocal_rank_fusion(lists, c=self.cfg.retrieval.rrf_c)
        return fused[: self.cfg.retrieval.topk_rrf], sub_queries

    async def _verdict(self, llm: BaseChatModel, question: str, documents: list[Document]) -> Any:
        from chains.verdict import (
            ArticleTails,
            can_score,
            classify_verdict,
            load_channel_template,
            load_evidence_template,
            score_verdict,
        )

        cal = self.calibration
        if cal.method == "classifier" and cal.classifier is not None:
            # the same decision as `eval answers` (rag): the top article's conclusion, its wording
            # cues and the model's channel scores, fitted on the PubMedQA dev split
            if cal.classifier.needs_llm() and not can_score(llm):
                return None
            if self._verdict_inputs is None:
                path = self.prompts.yes_no_path
                self._verdict_inputs = (
                    ArticleTails(self.retriever),
                    load_evidence_template(path),
                    load_channel_template(path),
                )
            tails, evidence_template, channel_template = self._verdict_inputs
            out = await asyncio.to_thread(
                classify_verdict, llm, question, documents, cal,
                template=evidence_template, article_tail=tails,
                channel_template=channel_template,
            )  # fmt: skip
            return out.verdict
        if not can_score(llm):
            return None
        out = await asyncio.to_thread(
            score_verdict, llm, self.prompts.yes_no, question, documents, self.calibration
        )
        return out.verdict

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
        return box["r"]
