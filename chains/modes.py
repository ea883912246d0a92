"""The three modes, each one runnable from a :class:`~chains.turn.Turn` to answer events::

    plain          = search | answer_tail
    conversational = RunnableBranch(history: followup_search, else: search) | answer_tail
                     (followup_search = the follow-up as written AND in context, fused:
                      retrievers.followup; the in-context form is the LLM's guarded rewrite when
                      chains.rewrite_with_llm is on and the follow-up needs context, else the
                      previous question + the follow-up; a follow-up with a topic of its own
                      may lead, the context only re-ordering; the path taken is recorded)
    multi-query    = search | expand_queries | answer_tail
                     (expand_queries = RunnableBranch: nothing found -> as is, else
                      generate_queries | retrieve.map() over the sub-queries | fuse by RRF)

``answer_tail`` is :func:`chains.answer.build_answer_tail` (the same for all three). Built once
per :class:`~chains.assistant.Assistant`; steps are named runs (``astream_events`` shows them).

:data:`MODE_TABLE` is the one list of modes (name, label, builder): the Assistant builds its chains
from it, and the CLI's and bench's ``--mode`` choices, the chat's mode buttons and its labels read
it. Adding a mode is one :class:`ModeSpec` row and its builder; the config type checks
``chains.mode`` against :data:`settings.config.MODE_NAMES`, the same names kept in the lowest
layer (settings imports nothing of the project), which this module checks on import.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import (
    Runnable,
    RunnableBranch,
    RunnableConfig,
    RunnableLambda,
    RunnablePassthrough,
)

from chains.queries import needs_context
from chains.turn import Turn, nothing_found
from retrievers.articles import article_text
from retrievers.asked_age import asked_age_first
from retrievers.fusion import reciprocal_rank_fusion
from settings import config as _settings

if TYPE_CHECKING:
    from grounding.concepts import CorpusTerms
    from retrievers.service import SearchService


@dataclass(frozen=True)
class ModeParts:
    """The steps the modes are composed of (see :mod:`chains.steps`, :mod:`chains.answer`)."""

    retrieve: Runnable[Any, Any]  # {"question", "filters"?} -> Retrieval
    followup_search: Runnable[Any, Any]  # Turn with history -> Turn (see make_followup_search_step)
    generate_queries: Runnable[Any, Any]  # {"question"} -> [sub-query, ...]
    answer_tail: Runnable[Any, Any]  # Turn -> events
    rrf_c: float  # RRF constant for fusing the sub-queries' results
    n_sources: int  # sources kept after that fusion (retrieval.topk_rrf)


def timed(key: str, step: Runnable[Any, Any], run_name: str) -> Runnable[Any, Any]:
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


def make_search_step(retrieve: Runnable[Any, Any]) -> Runnable[Any, Any]:
    """Turn -> Turn with ``searched_question``, ``filters``, ``documents`` and ``refused``."""

    def unpack(turn: dict[str, Any]) -> Turn:
        out: dict[str, Any] = dict(turn)
        retrieval = out.pop("retrieval")
        documents = list(retrieval.documents)
        out.update(
            searched_question=retrieval.query or turn["question"],
            filters=retrieval.filters,
            documents=documents,
            refused=bool(retrieval.empty or not documents),
        )
        return out  # type: ignore[return-value]

    def query(turn: dict[str, Any]) -> dict[str, Any]:
        return {"question": turn["question"]}

    find = RunnableLambda(query) | retrieve
    search = RunnablePassthrough.assign(retrieval=find) | RunnableLambda(unpack)
    return timed("retrieve_s", search, "search")


def make_followup_search_step(
    retriever: SearchService,
    rewrite: Runnable[Any, Any],
    *,
    use_llm_rewrite: bool,
    corpus: CorpusTerms | None = None,
) -> Runnable[Any, Any]:
    """Turn with history -> Turn: the follow-up is searched as written and in the context of the
    previous question, and both lists are fused (:func:`retrievers.followup.aretrieve_followup`),
    so a follow-up that changed topic still finds its own articles. The context form is the LLM's
    guarded rewrite only when ``use_llm_rewrite`` (a model that can) and the follow-up leans on
    the conversation. A follow-up that names a topic of its own (:func:`names_own_topic`, its
    essential concepts found with ``corpus``, the index's word counts) may lead the search
    instead (:func:`retrievers.followup.topic_weights`). ``rewrite`` (llm | fallback | fused |
    standalone) records which path ran."""
    from chains.conversation import embedding_similarity, plan_followup
    from retrievers.followup import aretrieve_followup

    async def search(turn: Turn, config: RunnableConfig) -> Turn:
        question = turn["question"]
        history = list(turn.get("history") or [])
        previous = [q for q, _ in history]
        timings = dict(turn.get("timings", {}))
        embedder = retriever.embedder  # counterparts of a switch by MiniLM (None: no dense index)
        similar = embedding_similarity(embedder) if embedder is not None else None
        searched, previous, options = plan_followup(question, previous, corpus, similar)
        if use_llm_rewrite and needs_context(question) and previous:
            t0 = time.perf_counter()
            # the last two turns: a short prompt for the model
            out = await rewrite.ainvoke({"question": question, "history": history[-2:]}, config)
            timings["rewrite_s"] = round(time.perf_counter() - t0, 4)
            if out["raw"] and not out["fallback"]:  # failed the guard: the rules' resolution
                options = {**options, "rewrite": out["question"], "resolved": False}
        t0 = time.perf_counter()
        found = await aretrieve_followup(
            retriever,
            searched,
            previous,
            config=config,
            **options,  # type: ignore[arg-type]
        )
        timings["retrieve_s"] = round(time.perf_counter() - t0, 4)
        documents = list(found.documents)
        return {
            **turn,
            "searched_question": found.query or searched,
            "shown_question": found.shown or found.query or searched,
            "filters": found.filters,
            "documents": documents,
            "refused": not documents,
            "rewrite": found.path,
            "timings": timings,
        }

    return RunnableLambda(search).with_config(run_name="followup_search")


def make_expand_step(parts: ModeParts) -> Runnable[Any, Any]:
    """Multi-query: the LLM's alternative queries are searched (in one batch, with the original
    question's filters) and every result list is fused with the original one by RRF; when the
    question names one age group, the other group's studies come last (retrievers.asked_age)."""

    def sub_inputs(turn: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"question": q, "filters": turn.get("filters")} for q in turn["sub_queries"]]

    def fuse(turn: dict[str, Any]) -> Turn:
        out = {k: v for k, v in turn.items() if k != "sub_results"}
        lists = [list(turn["documents"])]
        lists.extend(list(r.documents) for r in turn["sub_results"] if not r.empty)
        fused = reciprocal_rank_fusion(lists, c=parts.rrf_c)
        # asked about one age group, the other group's studies come last, as in each search
        question = turn.get("searched_question") or turn["question"]
        fused = asked_age_first(fused, question, article_text)
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
    return RunnableBranch((nothing_found, RunnablePassthrough()), expand).with_config(
        run_name="expand_queries"
    )


def build_plain_chain(parts: ModeParts) -> Runnable[Any, Any]:
    return (make_search_step(parts.retrieve) | parts.answer_tail).with_config(run_name="plain")


def build_conversational_chain(parts: ModeParts) -> Runnable[Any, Any]:
    search = RunnableBranch(
        (lambda turn: bool(turn.get("history")), parts.followup_search),
        make_search_step(parts.retrieve),
    ).with_config(run_name="conversational_search")
    return (search | parts.answer_tail).with_config(run_name="conversational")


def build_multi_query_chain(parts: ModeParts) -> Runnable[Any, Any]:
    return (
        make_search_step(parts.retrieve) | make_expand_step(parts) | parts.answer_tail
    ).with_config(run_name="multi-query")


@dataclass(frozen=True)
class ModeSpec:
    """One chain mode: its name (cfg ``chains.mode``, ``--mode``), the chat's label for it, and
    the function that composes its runnable from the shared :class:`ModeParts`."""

    name: str
    label: str
    builder: Callable[[ModeParts], Runnable[Any, Any]]
    summary: str  # what it does, for the chat's mode buttons ("plain answers each question ...")
    button: str = ""  # the chat's one-word mode button beside the message box (default: label)
    follows_up: bool = False  # reads a question against the conversation so far

    @property
    def button_text(self) -> str:
        return self.button or self.label


MODE_TABLE: tuple[ModeSpec, ...] = (
    ModeSpec("plain", "Plain", build_plain_chain, "plain answers each question on its own"),
    ModeSpec(
        "conversational",
        "Conversational (follow-up questions)",
        build_conversational_chain,
        "conversational rewrites follow-ups using the chat so far",
        "Conversational",
        follows_up=True,
    ),
    ModeSpec(
        "multi-query",
        "Multi-query (several searches)",
        build_multi_query_chain,
        "multi-query searches several rephrasings of the question",
        "Multi-query",
    ),
)


def check_mode_names(table: tuple[ModeSpec, ...], names: tuple[str, ...]) -> None:
    """The table's names are exactly the names the config type accepts, in the same order."""
    found = tuple(spec.name for spec in table)
    if found != names:
        raise RuntimeError(
            f"chains.modes.MODE_TABLE names {found} != settings.config.MODE_NAMES {names}"
        )


check_mode_names(MODE_TABLE, _settings.MODE_NAMES)


def mode_names() -> tuple[str, ...]:
    """Every mode's name, in the table's order (read when called, so a test's table counts)."""
    return tuple(spec.name for spec in MODE_TABLE)


def mode_labels() -> dict[str, str]:
    """mode name -> the chat's label for it."""
    return {spec.name: spec.label for spec in MODE_TABLE}


def followup_modes() -> tuple[str, ...]:
    """The modes that read a question against the conversation so far."""
    return tuple(spec.name for spec in MODE_TABLE if spec.follows_up)


def mode_buttons() -> dict[str, str]:
    """mode name -> the text of its button beside the chat's message box (unique, no spaces)."""
    return {spec.name: spec.button_text for spec in MODE_TABLE}


def build_mode_chains(parts: ModeParts) -> dict[str, Runnable[Any, Any]]:
    """mode name -> its runnable, one per row of :data:`MODE_TABLE`."""
    return {spec.name: spec.builder(parts) for spec in MODE_TABLE}
