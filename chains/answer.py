"""The answering tail every mode ends with: fit the sources into the prompt, find each source's
evidence sentences, decide a yes/no verdict, stream the grounded answer as events, then
post-process the event stream.

``build_answer_tail`` composes::

    fit_context | find_evidence | decide_lead | stream_answer | clean_citations | *postprocessors

``find_evidence`` also judges the answer as a whole (:func:`chains.grounded.judge_sources`): which
sources address the question's essential concepts, what each says (its stance), and the verdict
they support, if any, and the lead sentence stating it. ``decide_lead`` (:mod:`chains.lead`)
lets a model that can write that lead instead, shown only when it passes the checks.

``stream_answer`` yields one :class:`PreparedEvent` (with the numbered sources the LLM sees, each
with its whole abstract and key findings), the displayed :class:`TokenEvent` pieces (only
sentences that pass the support check: :mod:`chains.grounded`) and one :class:`DoneEvent`.
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
    RunnableConfig,
    RunnableGenerator,
    RunnableLambda,
    RunnablePassthrough,
)

from chains.budget import TokenCounter, fit_prompt
from chains.citations import CitationStreamFilter, clean_citations
from chains.deadline import Deadline, stopped_note
from chains.grounded import (
    AnswerWriter,
    EncoderProvider,
    evidence_spans,
    make_evidence_step,
)
from chains.policy import AnswerPolicy
from chains.result import AnswerEvent, AnswerResult, DoneEvent, PreparedEvent, Source, TokenEvent
from chains.steps import answer_messages
from chains.turn import Turn
from grounding.concepts import CorpusTerms, question_concepts
from grounding.consensus import Judgement, names
from grounding.evidence import EvidenceSentence
from grounding.sources import ArticleTexts
from grounding.stance import StanceClassifier
from settings.grounding import GroundingSettings

EventTransform = Callable[[AsyncIterator[AnswerEvent]], AsyncIterator[AnswerEvent]]


def to_source(
    n: int, doc: Document, abstract: str = "", evidence: list[EvidenceSentence] | None = None
) -> Source:
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
        author_last_names=[str(a) for a in md.get("author_last_names") or []],
        volume=str(md.get("volume") or ""),
        issue=str(md.get("issue") or ""),
        pages=str(md.get("pages") or ""),
        mesh_terms=[str(t) for t in md.get("mesh_terms") or []],
        confidence=min(1.0, max(0.0, float(conf))) if conf is not None else 0.0,
        passage=doc.page_content,
        abstract=abstract or doc.page_content,
        evidence=evidence_spans(evidence or []),
        rrf_score=md.get("rrf_score"),
        fused_score=md.get("fused_score"),
        ranks=dict(md.get("ranks") or {}),
        scores=dict(md.get("scores") or {}),
        **evidence_fields(md),
    )


def evidence_fields(md: dict[str, Any]) -> dict[str, Any]:
    """The :class:`Source` fields of the chunk's schema-2 metadata (absent ones left default)."""
    def text(key: str) -> str | None:
        value = md.get(key)
        return str(value) if value not in (None, "") else None

    return {
        "design": text("design"),
        "design_rule": str(md.get("design_rule") or ""),
        "design_source": str(md.get("design_source") or ""),
        "retracted": bool(md.get("retracted")),
        "retraction_notices": [str(x) for x in md.get("retraction_notices") or []],
        "doi": text("doi"),
        "pmc": text("pmc"),
        "mesh_major": [str(x) for x in md.get("mesh_major") or []],
        "publication_types": [str(x) for x in md.get("publication_types") or []],
    }


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
        if turn.get("refused") or not writes:
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


def make_stream_step(
    answer: Runnable[Any, Any],
    refusal: str,
    policy: AnswerPolicy,
    timeout_s: float | None = None,
    settings: GroundingSettings | None = None,
    corpus: CorpusTerms | None = None,
) -> Runnable[Any, Any]:
    """Turn -> events: the sources, the displayed answer pieces, the result. A refused turn
    (nothing retrieved) streams the refusal without calling the LLM; so do the extractive style
    and abstention (:class:`chains.grounded.AnswerWriter`). Generation stops after
    ``timeout_s`` (llm.timeout_s) and the answer says so."""
    settings = settings or GroundingSettings()

    async def stream(turn: Turn, config: RunnableConfig) -> AsyncIterator[AnswerEvent]:
        searched = turn.get("searched_question") or turn["question"]
        filters = filters_dict(turn.get("filters"))
        base: dict[str, Any] = {
            "mode": turn["mode"],
            "question": turn["question"],
            "searched_question": searched,
            "filters": filters,
            "timings": turn.get("timings", {}),
            "rewrite": turn.get("rewrite", "unchanged"),
        }
        if turn.get("refused"):
            yield PreparedEvent(
                searched_question=searched, filters=filters, rewrite=base["rewrite"]
            )
            absent = absent_words(turn["question"], corpus)
            said = f"{refusal} No indexed abstract mentions {names(absent)}." if absent else refusal
            if filters and not absent:  # the filters may be what emptied the result: say so
                said = f"{said} {filters_note(filters)}"
            yield TokenEvent(text=said)
            yield DoneEvent(
                result=AnswerResult(
                    answer=said, refused=True, style="refused", **base,
                    addresses_question=not absent, missing_concepts=absent,
                    absent_concepts=absent, verdict_reason="not_addressed" if absent else "",
                )  # fmt: skip
            )
            return
        pool, evidence = turn["pool"], turn["evidence"]
        judgement: Judgement | None = turn.get("judgement")
        stances = {s.source: s for s in judgement.stances} if judgement else {}
        yes_no = judgement is not None and judgement.reason != "not_yes_no"
        # a source's key findings must bear on the question (the bar abstention uses): an
        # off-topic source that retrieval ranked third shows none rather than its best sentence
        sources = [
            to_source(
                i,
                d,
                pool.sources[i - 1].abstract,
                [e for e in evidence[i - 1] if e.similarity >= settings.relevance_bar],
            ).model_copy(
                update={
                    "stance": stances[i].stance if i in stances and yes_no else None,
                    "stance_sentence": stances[i].sentence if i in stances and yes_no else "",
                    "addresses": judgement is None or i in judgement.addressing,
                }
            )
            for i, d in enumerate(turn["documents"], start=1)
        ]
        sub_queries = list(turn.get("sub_queries") or [])
        yield PreparedEvent(
            searched_question=searched,
            sub_queries=sub_queries,
            filters=filters,
            sources=sources,
            rewrite=base["rewrite"],
        )
        writer = AnswerWriter(turn, settings, policy)
        for piece in writer.opening():
            yield TokenEvent(text=piece)
        note = ""
        if writer.uses_llm:
            prefix = verdict_prefix(turn.get("verdict"))
            inp = {"messages": turn["messages"], "answer_prefix": prefix}
            deadline = Deadline.after(timeout_s) if timeout_s is not None else None
            generated = answer.astream(inp, config)
            async for piece in deadline.limit(generated) if deadline else generated:
                shown = writer.feed(piece) if piece else ""
                if shown:
                    yield TokenEvent(text=shown)
            if deadline is not None and deadline.expired and timeout_s is not None:
                note = stopped_note(timeout_s)
                base["timings"] = {**base["timings"], "stopped_at_limit_s": timeout_s}
        rest = writer.finish()
        if rest:
            yield TokenEvent(text=rest)
        if note:
            yield TokenEvent(text=note)
        yield DoneEvent(
            result=AnswerResult(
                answer=writer.shown + note,
                sub_queries=sub_queries,
                sources=sources,
                verdict=turn.get("verdict") if writer.composed.verdict else None,
                **writer.record(),
                **base,
            )
        )

    return RunnableLambda(stream).with_config(run_name="stream_answer")


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
    template: str,
    count_tokens: TokenCounter,
    budget: Callable[[], int],
    answer: Runnable[Any, Any],
    refusal: str,
    encoder: EncoderProvider,
    policy: AnswerPolicy,
    article_text: ArticleTexts | None = None,
    settings: GroundingSettings | None = None,
    timeout_s: float | None = None,
    postprocessors: Sequence[Runnable[Any, Any]] = (),
    corpus: CorpusTerms | None = None,
    classify_stance: StanceClassifier | None = None,
    lead: Runnable[Any, Any] | None = None,
) -> Runnable[Any, Any]:
    """Turn -> events (see the module docstring). ``lead``: the ``decide_lead`` step
    (:func:`chains.lead.make_lead_step`); without it the lead is the stances' always.
    ``policy``: how the answer is made (:class:`chains.policy.AnswerPolicy`, resolved once by
    the Assistant); no step reads ``answer.style`` itself."""
    settings = settings or GroundingSettings()
    chain = (
        make_fit_step(template, count_tokens, budget, writes=policy.writes)
        | make_evidence_step(encoder, article_text, settings, corpus, classify_stance)
        | (lead or RunnablePassthrough())
        | make_stream_step(answer, refusal, policy, timeout_s, settings, corpus)
        | make_citation_step()
    )
    for step in postprocessors:
        chain = chain | step
    return chain.with_config(run_name="answer_tail")
