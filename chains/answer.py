"""The answering tail every mode ends with: one branch at its head, then one pass::

    answer_tail = RunnableBranch((nothing_found, refuse), answer) | clean_citations | *post
    answer      = fit_context | find_evidence | decide | write_answer

``refuse`` streams the refusal (nothing retrieved) without the model. Otherwise ``fit_context``
cuts the sources to the prompt, ``find_evidence`` picks each source's key findings
(:mod:`chains.grounded`), ``decide`` takes every decision about the answer into one
:class:`~chains.decision.Decision` (addresses the question? stances, verdict, the lead sentence,
the extractive answer), and ``write_answer`` streams the answer from it
(:class:`~chains.writer.AnswerWriter`): one :class:`PreparedEvent` (with the numbered sources the
LLM sees, each with its whole abstract and key findings), the displayed :class:`TokenEvent`
pieces (only sentences that pass the support check) and one :class:`DoneEvent`.

A *post-processor* is a runnable from an event stream to an event stream
(:func:`event_postprocessor` makes one from an async generator function): it sees the sources
first, then every token, and may rewrite the final result. Citation cleaning is the first (a
safety net: grounded text only cites listed sources); further ones are passed to
:class:`chains.assistant.Assistant` and composed after it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import (
    Runnable,
    RunnableBranch,
    RunnableConfig,
    RunnableGenerator,
    RunnableLambda,
)

from chains.budget import TokenCounter, fit_prompt
from chains.citations import CitationStreamFilter, clean_citations
from chains.deadline import Deadline, stopped_note
from chains.grounded import evidence_spans
from chains.policy import AnswerPolicy
from chains.result import AnswerEvent, AnswerResult, DoneEvent, PreparedEvent, Source, TokenEvent
from chains.steps import answer_messages
from chains.turn import Decision, Turn, nothing_found
from chains.writer import AnswerWriter
from grounding.concepts import CorpusTerms, question_concepts
from grounding.consensus import names
from grounding.evidence import EvidenceSentence
from ingest.design import current_design
from ingest.metadata import ChunkMeta
from settings.grounding import GroundingSettings

EventTransform = Callable[[AsyncIterator[AnswerEvent]], AsyncIterator[AnswerEvent]]


def to_source(
    n: int, doc: Document, abstract: str = "", evidence: list[EvidenceSentence] | None = None
) -> Source:
    """Source [n]: the chunk's article fields (:class:`ingest.metadata.ChunkMeta`), the
    retrieval's scores, the whole abstract and its key findings."""
    md = doc.metadata
    conf = md.get("confidence")
    fields = ChunkMeta.from_metadata(md).fields()
    # the design as today's rules read the whole abstract (an index built before a rule change
    # keeps its old guess; the filters use the stored one until `index build`)
    design = current_design(fields["design"], fields["design_source"], fields["design_rule"],
                            fields["title"], abstract)
    if design is not None:
        fields.update(design=design.label, design_source=design.source, design_rule=design.rule)
    return Source(
        n=n,
        confidence=min(1.0, max(0.0, float(conf))) if conf is not None else 0.0,
        passage=doc.page_content,
        abstract=abstract or doc.page_content,
        evidence=evidence_spans(evidence or []),
        rrf_score=md.get("rrf_score"),
        fused_score=md.get("fused_score"),
        ranks=dict(md.get("ranks") or {}),
        scores=dict(md.get("scores") or {}),
        **fields,
    )


def filters_dict(filters: Any) -> dict[str, Any]:
    if filters is None:
        return {}
    if hasattr(filters, "as_dict"):
        return dict(filters.as_dict())
    return dict(filters) if isinstance(filters, dict) else {}


def verdict_prefix(verdict: str | None) -> str:
    """What the answer opens with for a decided yes/no question ("Yes. ")."""
    return verdict.capitalize() + ". " if verdict else ""


# ---- steps ------------------------------------------------------------------------------------


def make_fit_step(
    template: str, count_tokens: TokenCounter, budget: Callable[[], int], *, writes: bool = True
) -> Runnable[Any, Any]:
    """Turn -> Turn with ``documents`` cut to what fits and the answer ``messages``. When the LLM
    ``writes`` no answer (:attr:`AnswerPolicy.writes` false: the extractive style) there is no
    prompt to fit, and counting its tokens would load the model for nothing."""

    def fit(turn: Turn) -> Turn:
        if not writes:
            return turn
        fitted = fit_prompt(
            lambda docs, _hist, question: answer_messages(template, question, docs),
            turn["documents"],
            [],
            count_tokens,
            budget(),
            question=turn["question"],  # a long question is cut last: the prompt always fits
        )
        return {**turn, "documents": fitted.documents, "messages": fitted.messages}

    return RunnableLambda(fit).with_config(run_name="fit_context")


def absent_words(question: str, corpus: CorpusTerms | None) -> list[str]:
    """The question's essential words that no indexed abstract holds: a refused question (nothing
    retrieved) is told which, so the user knows to extend the corpus rather than rephrase."""
    if corpus is None:
        return []
    return list(dict.fromkeys(w for c in question_concepts(question, corpus) for w in c.absent))


def filters_note(filters: dict[str, Any]) -> str:
    """What a refused question with filters is told: which filters applied, and to try
    without them (they may be what left nothing)."""
    from retrievers.filters import Filters

    try:
        described = Filters(**filters).describe()
    except (TypeError, ValueError):
        described = ", ".join(f"{k} = {v}" for k, v in filters.items())
    return f"No indexed abstract on this matches the filters ({described}); try without them."


def refusal_text(refusal: str, absent: Sequence[str], filters: dict[str, Any]) -> str:
    """What a refused question reads: the refusal as a sentence of its own, then the question's
    words no indexed abstract holds, or else the filters that may have emptied the result."""
    if not absent and not filters:
        return refusal
    head = refusal if refusal.rstrip().endswith((".", "!", "?")) else f"{refusal.rstrip()}."
    if absent:
        return f"{head} No indexed abstract mentions {names(absent)}."
    return f"{head} {filters_note(filters)}"


def result_base(turn: Turn) -> dict[str, Any]:
    """The :class:`AnswerResult` fields every answer has, refused or not."""
    return {
        "mode": turn["mode"],
        "question": turn["question"],
        "searched_question": (turn.get("shown_question") or turn.get("searched_question")
                              or turn["question"]),
        "filters": filters_dict(turn.get("filters")),
        "timings": turn.get("timings", {}),
        "rewrite": turn.get("rewrite", "unchanged"),
    }


# What a question refused while only the keyword index exists is told (the chat's first minutes
# after `make run`): BM25 alone cannot tell a question worded unlike the abstracts from one
# outside medicine ("Is Zoloft safe to take while pregnant ...?" scores as low as the plot of a
# film), so it says what it knows and when to ask again, not that the question is off-topic.
KEYWORD_ONLY_REFUSAL = (
    "No indexed abstract matches these words closely. Search by meaning, which finds abstracts "
    "worded differently, is not ready yet: ask again once it is."
)


def make_refusal_step(refusal: str, corpus: CorpusTerms | None = None,
                      meaning_ready: Callable[[], bool] = lambda: True) -> Runnable[Any, Any]:
    """Turn (nothing retrieved) -> events: the refusal (:data:`KEYWORD_ONLY_REFUSAL` while
    ``meaning_ready()`` is False: no dense index yet), naming the question's words that no
    indexed abstract holds; the LLM is never called."""

    async def refuse(turn: Turn) -> AsyncIterator[AnswerEvent]:
        base = result_base(turn)
        yield PreparedEvent(searched_question=base["searched_question"], filters=base["filters"],
                            rewrite=base["rewrite"])  # fmt: skip
        absent = absent_words(turn["question"], corpus)
        head = refusal if meaning_ready() else KEYWORD_ONLY_REFUSAL
        said = refusal_text(head, absent, base["filters"])
        yield TokenEvent(text=said)
        yield DoneEvent(
            result=AnswerResult(
                answer=said, refused=True, style="refused", **base,
                addresses_question=not absent, missing_concepts=absent,
                absent_concepts=absent, verdict_reason="not_addressed" if absent else "",
            )  # fmt: skip
        )

    return RunnableLambda(refuse).with_config(run_name="refuse")


def numbered_sources(
    documents: Sequence[Document], decision: Decision, settings: GroundingSettings
) -> list[Source]:
    """The sources as the answer cites them ([n]), each with its whole abstract, its key findings
    and what it says to a yes/no question (from the decision)."""
    judgement = decision.judgement
    stances = {s.source: s for s in judgement.stances}
    yes_no = judgement.reason != "not_yes_no"
    # a source's key findings must bear on the question (the bar abstention uses): an
    # off-topic source that retrieval ranked third shows none rather than its best sentence;
    # nor does one beside a follow-up's question (grounding.compose._beside_the_question)
    beside = set(decision.extractive.beside)
    return [
        to_source(
            i,
            d,
            decision.pool.sources[i - 1].abstract,
            [e for e in decision.evidence[i - 1]
             if e.similarity >= settings.relevance_bar and i not in beside],
        ).model_copy(
            update={
                "stance": stances[i].stance if i in stances and yes_no else None,
                "stance_sentence": stances[i].sentence if i in stances and yes_no else "",
                "addresses": i in judgement.addressing,
            }
        )
        for i, d in enumerate(documents, start=1)
    ]


async def generate(
    answer: Runnable[Any, Any],
    inp: dict[str, Any],
    writer: AnswerWriter,
    deadline: Deadline | None,
    config: RunnableConfig,
) -> AsyncIterator[str]:
    """The model's answer as the writer shows it, piece by piece, until ``deadline``."""
    generated = answer.astream(inp, config)
    async for piece in deadline.limit(generated) if deadline else generated:
        shown = writer.feed(piece) if piece else ""
        if shown:
            yield shown


def make_write_step(
    answer: Runnable[Any, Any],
    policy: AnswerPolicy,
    settings: GroundingSettings,
    timeout_s: float | None = None,
) -> Runnable[Any, Any]:
    """Turn with its decision -> events: the sources, the displayed answer pieces, the result.
    The extractive style and abstention never call the LLM; generation stops after
    ``timeout_s`` (llm.timeout_s) and the answer says so."""

    async def write(turn: Turn, config: RunnableConfig) -> AsyncIterator[AnswerEvent]:
        decision: Decision = turn["decision"]
        base = result_base(turn)
        sources = numbered_sources(turn["documents"], decision, settings)
        sub_queries = list(turn.get("sub_queries") or [])
        yield PreparedEvent(searched_question=base["searched_question"], sub_queries=sub_queries,
                            filters=base["filters"], sources=sources, rewrite=base["rewrite"])
        writer = AnswerWriter(decision, settings, policy)
        for piece in writer.opening():
            yield TokenEvent(text=piece)
        note = ""
        if writer.uses_llm:
            inp = {"messages": turn["messages"], "answer_prefix": verdict_prefix(decision.verdict)}
            deadline = Deadline.after(timeout_s) if timeout_s is not None else None
            async for shown in generate(answer, inp, writer, deadline, config):
                yield TokenEvent(text=shown)
            if deadline is not None and deadline.expired and timeout_s is not None:
                note = stopped_note(timeout_s)
                base["timings"] = {**base["timings"], "stopped_at_limit_s": timeout_s}
        for text in (writer.finish(), note):
            if text:
                yield TokenEvent(text=text)
        yield DoneEvent(result=AnswerResult(answer=writer.shown + note, sub_queries=sub_queries,
                                            sources=sources, **writer.record(), **base))

    return RunnableLambda(write).with_config(run_name="write_answer")


def event_postprocessor(transform: EventTransform, name: str) -> Runnable[Any, Any]:
    """A named step over the event stream (``AsyncIterator[event] -> AsyncIterator[event]``)."""
    return RunnableGenerator(transform).with_config(run_name=name)


async def _clean_citations(events: AsyncIterator[AnswerEvent]) -> AsyncIterator[AnswerEvent]:
    """Citations to unlisted sources never reach the user: tokens are filtered as they stream
    (text inside an open ``[`` is held until it closes), the final answer is cleaned whole."""
    cite: CitationStreamFilter | None = None
    async for event in events:
        if isinstance(event, PreparedEvent):
            cite = CitationStreamFilter(len(event.sources)) if event.sources else None
            yield event
        elif isinstance(event, TokenEvent):
            shown = cite.feed(event.text) if cite else event.text
            if shown:
                yield TokenEvent(text=shown)
        elif isinstance(event, DoneEvent):
            result = event.result
            if cite is not None and not result.refused:
                rest = cite.flush()
                if rest:
                    yield TokenEvent(text=rest)
                result.answer = clean_citations(result.answer, len(result.sources)).strip()
            yield event
        else:
            yield event


def make_citation_step() -> Runnable[Any, Any]:
    return event_postprocessor(_clean_citations, "clean_citations")


def build_answer_tail(
    *,
    fit: Runnable[Any, Any],
    find: Runnable[Any, Any],
    decide: Runnable[Any, Any],
    write: Runnable[Any, Any],
    refuse: Runnable[Any, Any],
    postprocessors: Sequence[Runnable[Any, Any]] = (),
) -> Runnable[Any, Any]:
    """Turn -> events (see the module docstring), from its steps: ``fit``
    (:func:`make_fit_step`), ``find`` (:func:`chains.grounded.make_evidence_step`), ``decide``
    (:func:`chains.decision.make_decide_step`), ``write`` (:func:`make_write_step`) and
    ``refuse`` (:func:`make_refusal_step`), each built once by the Assistant, which resolves how
    the answer is made (:class:`chains.policy.AnswerPolicy`) and passes it in: no step reads
    ``answer.style`` itself."""
    answer = (fit | find | decide | write).with_config(run_name="grounded_answer")
    chain = RunnableBranch((nothing_found, refuse), answer) | make_citation_step()
    for step in postprocessors:
        chain = chain | step
    return chain.with_config(run_name="answer_tail")
