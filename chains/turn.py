"""The state one question carries through a mode's chain (a plain dict, as LCEL steps pass it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage

from chains.result import DroppedSentence
from grounding.compose import ComposedAnswer
from grounding.consensus import Judgement, Verdict
from grounding.evidence import EvidenceSentence
from grounding.sources import SourcePool
from retrievers.filters import Filters


@dataclass(frozen=True)
class Decision:
    """One question's answer, decided: read by every later step, changed by none."""

    pool: SourcePool  # the whole abstracts, split and embedded
    evidence: list[list[EvidenceSentence]]  # per source, its key findings (none if retracted)
    judgement: Judgement  # coverage, stances, verdict reason and the lead sentence shown
    verdict: Verdict | None  # the verdict shown (None: none, or no sentence relevant enough)
    extractive: ComposedAnswer  # the findings answer, or the abstention
    uses_llm: bool  # the model writes after the opening (it writes, and the answer abstains not)
    lead_dropped: DroppedSentence | None = None  # a model's lead that was not shown

    @property
    def titles(self) -> list[str]:
        return [s.title for s in self.pool.sources]


class Turn(TypedDict, total=False):
    """Each step returns a copy with its keys added; ``timings`` collects seconds per step."""

    mode: str  # a name in chains.modes.MODE_TABLE
    question: str  # as the user asked it
    history: list[tuple[str, str]]  # earlier (question, answer) turns, already cut to depth
    searched_question: str  # the searched text after filters were taken out of it
    shown_question: str  # searched_question as the user reads it (a resolved follow-up led by
    # its topic's question words: retrievers.followup.led); never searched nor judged
    filters: Filters  # the retriever's (applied to sub-queries too)
    documents: list[Document]  # best first; after fit_context, exactly what the prompt shows
    refused: bool  # nothing retrieved: the refusal is streamed, the LLM is never called
    rewrite: str  # how a follow-up was searched: llm | fallback | fused | standalone (unchanged:
    # no history; retrievers.followup.PATHS)
    sub_queries: list[str]  # multi-query's alternative queries
    messages: list[BaseMessage]  # the answer prompt
    pool: SourcePool  # the whole abstracts, split and embedded
    evidence: list[list[EvidenceSentence]]  # per source, its key findings (grounding.evidence)
    decision: Decision  # everything the answer says, decided once (chains.decision.decide)
    timings: dict[str, float]


def nothing_found(turn: Turn) -> bool:
    """The one test of a refused turn (nothing retrieved): the answer tail's head branch refuses
    it, and multi-query does not expand it."""
    return bool(turn.get("refused"))
