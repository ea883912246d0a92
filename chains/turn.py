"""The state one question carries through a mode's chain (a plain dict, as LCEL steps pass it)."""

from __future__ import annotations

from typing import TypedDict

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage

from chains.result import DroppedSentence
from grounding.consensus import Judgement, Verdict
from grounding.evidence import EvidenceSentence
from grounding.sources import SourcePool
from retrievers.filters import Filters


class Turn(TypedDict, total=False):
    """Each step returns a copy with its keys added; ``timings`` collects seconds per step."""

    mode: str  # a name in chains.modes.MODE_TABLE
    question: str  # as the user asked it
    history: list[tuple[str, str]]  # earlier (question, answer) turns, already cut to depth
    searched_question: str  # the searched text after filters were taken out of it
    filters: Filters  # the retriever's (applied to sub-queries too)
    documents: list[Document]  # best first; after fit_context, exactly what the prompt shows
    refused: bool  # nothing retrieved: the refusal is streamed, the LLM is never called
    rewrite: str  # how a follow-up was searched: llm | fallback | fused | standalone (unchanged:
    # no history; retrievers.followup.PATHS)
    sub_queries: list[str]  # multi-query's alternative queries
    messages: list[BaseMessage]  # the answer prompt
    pool: SourcePool  # the whole abstracts, split and embedded
    evidence: list[list[EvidenceSentence]]  # per source, its key findings (grounding.evidence)
    abstain: bool  # no abstract sentence reaches the relevance bar: "do not answer this directly"
    judgement: Judgement | None  # coverage, stances, verdict and its reason
    verdict: Verdict | None  # yes / no / maybe for a decided yes/no question
    verdict_sources: list[int]  # the sources the verdict read (1-based)
    lead_dropped: DroppedSentence  # a model's lead that was not shown
    timings: dict[str, float]
