"""``decide``: everything the answer will say, decided once, before a word of it is written.

After ``find_evidence`` (each source's key findings, :mod:`chains.grounded`) this step takes every
decision about the answer into one :class:`Decision`:

- does any source address the question's essential concepts; each addressing source's stance;
  the verdict they support, if any (:func:`chains.grounded.judge_sources`); no verdict is shown
  when no sentence reaches the relevance bar (:func:`grounding.evidence.answers_question`);
- the lead sentence: composed from the stances, or the model's when it may write one and its
  sentence passes the checks (:class:`chains.lead.LeadWriter`);
- the extractive answer (the findings, or the abstention), composed once
  (:func:`grounding.compose.compose_extractive`), and whether the model writes the rest.

``write_answer`` (:mod:`chains.answer`) streams the answer from it; no later step changes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from langchain_core.runnables import Runnable, RunnableLambda

from chains.grounded import EncoderProvider, judge_sources
from chains.lead import LeadWriter
from chains.policy import AnswerPolicy
from chains.result import MEDIUM_CONFIDENCE, DroppedSentence
from chains.turn import Decision, Turn
from grounding.compose import compose_extractive
from grounding.concepts import CorpusTerms
from grounding.consensus import Judgement, Verdict
from grounding.evidence import answers_question
from grounding.sources import SourcePool
from grounding.stance import StanceClassifier
from grounding.yes_no import asks_yes_no
from ingest.ages import studies_other_age_group
from retrievers.followup import IN_CONTEXT
from settings.grounding import GroundingSettings


def weak_sources(turn: Turn) -> list[int]:
    """The sources retrieval itself rates low ([n]): they may lead, never pad."""
    return [
        n
        for n, doc in enumerate(turn.get("documents") or [], start=1)
        if float(doc.metadata.get("confidence", 1.0)) < MEDIUM_CONFIDENCE
    ]


def other_age_sources(turn: Turn) -> list[int]:
    """The sources ([n]) that studied only the age group the (searched) question does not ask
    about: children's studies for "... in adults?" (:mod:`ingest.ages`)."""
    question = turn.get("searched_question") or turn["question"]
    pool: SourcePool = turn["pool"]
    return [s.n for s in pool.sources if studies_other_age_group(s.title, s.abstract, question)]


def in_context(turn: Turn) -> bool:
    """Whether the turn is a follow-up searched with its conversation (its few own words were
    searched as written too, which can find papers off the topic)."""
    return turn.get("rewrite", "unchanged") in IN_CONTEXT


def extractive_answer(turn: Turn, judgement: Judgement, settings: GroundingSettings) -> Any:
    """The findings answer, or the abstention (:func:`grounding.compose.compose_extractive`),
    composed once for the turn."""
    pool: SourcePool = turn["pool"]
    return compose_extractive(
        turn["evidence"], titles=[s.title for s in pool.sources], judgement=judgement,
        weak_sources=weak_sources(turn), settings=settings, in_context=in_context(turn),
        other_age=other_age_sources(turn),
    )  # fmt: skip


def make_decide_step(
    settings: GroundingSettings,
    policy: AnswerPolicy,
    encoder: EncoderProvider,
    corpus: CorpusTerms | None = None,
    classify: StanceClassifier | None = None,
    lead: LeadWriter | None = None,
) -> Runnable[Any, Any]:
    """Turn (after ``find_evidence``) -> Turn with its :class:`Decision` (``decision``)."""

    def judged(turn: Turn) -> tuple[Judgement, Verdict | None]:
        searched = turn.get("searched_question") or turn["question"]
        evidence = turn["evidence"]
        # a follow-up read in its conversation ("what about adults?") asks what it continues
        earlier = [q for q, _ in turn.get("history", [])] if in_context(turn) else None
        judgement = judge_sources(
            turn["question"], searched, turn["pool"], evidence, settings, encoder(), corpus,
            classify, asks_yes_no(turn["question"], earlier),
        )  # fmt: skip
        return judgement, judgement.verdict if answers_question(evidence, settings) else None

    def lead_step(turn: Turn, judgement: Judgement, verdict: Verdict | None) -> Callable[
        [], Any
    ] | None:
        """The model's lead as a coroutine factory, when a verdict is shown and a lead writer is
        given; else None."""
        if lead is None or verdict is None or not judgement.addressed:
            return None
        searched = turn.get("searched_question") or turn["question"]
        return lambda: lead(turn["question"], searched, judgement, turn["pool"])

    def concluded(
        turn: Turn, judgement: Judgement, verdict: Verdict | None, dropped: DroppedSentence | None
    ) -> Turn:
        extractive = extractive_answer(turn, judgement, settings)
        decision = Decision(
            turn["pool"], turn["evidence"], judgement, verdict, extractive,
            uses_llm=policy.writes and not extractive.abstained, lead_dropped=dropped,
        )  # fmt: skip
        return {**turn, "decision": decision}

    async def decide(turn: Turn) -> Turn:
        judgement, verdict = judged(turn)
        written = lead_step(turn, judgement, verdict)
        dropped = None
        if written is not None:
            judgement, dropped = await written()
        return concluded(turn, judgement, verdict, dropped)

    def decide_sync(turn: Turn) -> Turn:
        judgement, verdict = judged(turn)
        written = lead_step(turn, judgement, verdict)
        dropped = None
        if written is not None:
            judgement, dropped = asyncio.run(written())
        return concluded(turn, judgement, verdict, dropped)

    return RunnableLambda(decide_sync, afunc=decide).with_config(run_name="decide")
