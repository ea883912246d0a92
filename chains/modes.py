"""The three modes, each one runnable from a :class:`~chains.turn.Turn` to answer events::

    plain          = search | answer_tail
    conversational = condense_question | search | answer_tail
                     (condense_question = RunnableBranch: rewrite only a follow-up with history
                      that needs it, else search the question as asked)
    multi-query    = search | expand_queries | answer_tail
                     (expand_queries = RunnableBranch: nothing found -> as is, else
                      generate_queries | retrieve.map() over the sub-queries | fuse by RRF)

``answer_tail`` is :func:`chains.answer.build_answer_tail` (the same for all three). Built once
per :class:`~chains.assistant.Assistant`; steps are named runs (``astream_events`` shows them).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import (
    Runnable,
    RunnableBranch,
    RunnableConfig,
    RunnableLambda,
    RunnablePassthrough,
)

from chains.queries import needs_context
from chains.turn import Turn
from retrievers.fusion import reciprocal_rank_fusion


@dataclass(frozen=True)
class ModeParts:
    """The steps the modes are composed of (see :mod:`chains.steps`, :mod:`chains.answer`)."""

    retrieve: Runnable  # {"question", "filters"?} -> Retrieval
    rewrite: Runnable  # {"question", "history"} -> {"question", "raw", "fallback"}
    generate_queries: Runnable  # {"question"} -> [sub-query, ...]
    answer_tail: Runnable  # Turn -> events
    rrf_c: float  # RRF constant for fusing the sub-queries' results
    n_sources: int  # sources kept after that fusion (retrieval.topk_rrf)


def timed(key: str, step: Runnable, run_name: str) -> Runnable:
    """Turn -> ``step(turn)`` with the step's seconds recorded as ``timings[key]``."""

    def stamp(out: Turn, t0: float) -> Turn:
        seconds = round(time.perf_counter() - t0, 4)
        return {**out, "timings": {**out.get("timings", {}), key: seconds}}

    def _sync(turn: Turn, config: RunnableConfig) -> Turn:
        t0 = time.perf_counter()
        return stamp(step.invoke(turn, config), t0)

    async def _async(turn: Turn, config: RunnableConfig) -> Turn:
        t0 = time.perf_counter()
        return stamp(await step.ainvoke(turn, config), t0)

    return RunnableLambda(_sync, afunc=_async).with_config(run_name=run_name)


def make_search_step(retrieve: Runnable) -> Runnable:
    """Turn -> Turn with ``searched_question``, ``filters``, ``documents`` and ``refused``."""

    def unpack(turn: dict[str, Any]) -> Turn:
        out: dict[str, Any] = dict(turn)
        retrieval = out.pop("retrieval")
        searched = turn.get("searched") or turn["question"]
        documents = list(retrieval.documents)
        out.update(
            searched=searched,
            searched_question=getattr(retrieval, "query", None) or searched,
            filters=retrieval.filters,
            documents=documents,
            refused=bool(retrieval.empty or not documents),
        )
        return out  # type: ignore[return-value]

    def query(turn: dict[str, Any]) -> dict[str, Any]:
        return {"question": turn.get("searched") or turn["question"]}

    find = RunnableLambda(query) | retrieve
    search = RunnablePassthrough.assign(retrieval=find) | RunnableLambda(unpack)
    return timed("retrieve_s", search, "search")


def make_condense_step(rewrite: Runnable) -> Runnable:
    """A follow-up that leans on the conversation ("and in children?") is rewritten into a
    standalone question; a first turn, or a follow-up that stands on its own ("Who won the World
    Cup?"), is searched as asked: a tiny model's rewrite would only drag the old topic into it."""

    def needs_rewrite(turn: Turn) -> bool:
        return bool(turn.get("history")) and needs_context(turn["question"])

    def as_asked(turn: Turn) -> Turn:
        return {**turn, "searched": turn["question"]}

    def use_rewrite(turn: dict[str, Any]) -> Turn:
        out = {k: v for k, v in turn.items() if k != "rewrite"}
        return {**out, "searched": turn["rewrite"]["question"]}  # type: ignore[typeddict-item]

    rewrite_turn = RunnablePassthrough.assign(rewrite=rewrite) | RunnableLambda(use_rewrite)
    return RunnableBranch(
        (needs_rewrite, timed("rewrite_s", rewrite_turn, "rewrite")),
        RunnableLambda(as_asked),
    ).with_config(run_name="condense_question")


def make_expand_step(parts: ModeParts) -> Runnable:
    """Multi-query: the LLM's alternative queries are searched (in one batch, with the original
    question's filters) and every result list is fused with the original one by RRF."""

    def sub_inputs(turn: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"question": q, "filters": turn.get("filters")} for q in turn["sub_queries"]]

    def fuse(turn: dict[str, Any]) -> Turn:
        out = {k: v for k, v in turn.items() if k != "sub_results"}
        lists = [list(turn["documents"])]
        lists.extend(list(r.documents) for r in turn["sub_results"] if not r.empty)
        fused = reciprocal_rank_fusion(lists, c=parts.rrf_c)
        return {**out, "documents": fused[: parts.n_sources]}  # type: ignore[typeddict-item]

    queries = RunnablePassthrough.assign(sub_queries=parts.generate_queries)
    searches = RunnablePassthrough.assign(
        sub_results=(RunnableLambda(sub_inputs) | parts.retrieve.map()).with_config(
            run_name="retrieve_sub_queries"
        )
    )
    expand = (
        timed("multi_query_s", queries, "sub_queries")
        | timed("retrieve_sub_s", searches, "search_sub_queries")
        | RunnableLambda(fuse).with_config(run_name="fuse")
    )
    return RunnableBranch(
        (lambda turn: bool(turn.get("refused")), RunnablePassthrough()), expand
    ).with_config(run_name="expand_queries")


def build_plain_chain(parts: ModeParts) -> Runnable:
    return (make_search_step(parts.retrieve) | parts.answer_tail).with_config(run_name="plain")


def build_conversational_chain(parts: ModeParts) -> Runnable:
    return (
        make_condense_step(parts.rewrite) | make_search_step(parts.retrieve) | parts.answer_tail
    ).with_config(run_name="conversational")


def build_multi_query_chain(parts: ModeParts) -> Runnable:
    return (
        make_search_step(parts.retrieve) | make_expand_step(parts) | parts.answer_tail
    ).with_config(run_name="multi-query")


def build_mode_chains(parts: ModeParts) -> dict[str, Runnable]:
    """mode name -> its runnable (keys are :data:`chains.result.MODES`)."""
    return {
        "plain": build_plain_chain(parts),
        "conversational": build_conversational_chain(parts),
        "multi-query": build_multi_query_chain(parts),
    }
