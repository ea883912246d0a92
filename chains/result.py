"""The result shape every chain mode returns, and the events a streaming run yields.

This is the contract between the chains and their consumers (CLI, eval, Chainlit UI).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

# Retrieval confidence (retrievers.hybrid) at which a source is labelled "high" / "medium"; below
# MEDIUM it is "low", and the answer quotes such a source only when nothing better can open it.
HIGH_CONFIDENCE = 0.66
MEDIUM_CONFIDENCE = 0.33


class EvidenceSpan(BaseModel):
    """A key finding: ``abstract[start:end] == text`` of the source it belongs to."""

    text: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    section: str | None = None


class Source(BaseModel):
    """One abstract the LLM saw, numbered as cited in the answer ([n])."""

    n: int
    pmid: str
    title: str
    url: str
    year: int | None = None
    journal: str = ""
    authors: list[str] = Field(default_factory=list)
    # for the reference list and the RIS/BibTeX export (chains.references)
    author_last_names: list[str] = Field(default_factory=list)  # parallel to authors; "" unknown
    volume: str = ""
    issue: str = ""
    pages: str = ""
    mesh_terms: list[str] = Field(default_factory=list)
    confidence: float = Field(0.0, ge=0, le=1)
    passage: str = ""  # the retrieved chunk (what the prompt shows)
    abstract: str = ""  # the whole abstract, which ``evidence`` offsets point into
    evidence: list[EvidenceSpan] = Field(default_factory=list)  # its key findings
    rrf_score: float | None = None  # fusion rrf, or several searches fused (follow-up, multi-query)
    fused_score: float | None = None  # retrieval.fusion convex: weighted normalised scores
    ranks: dict[str, int | None] = Field(default_factory=dict)
    scores: dict[str, float | None] = Field(default_factory=dict)
    # what this abstract says to a yes/no question (grounding.stance): None when it does not
    # address every essential concept of the question, or the question is not yes/no
    stance: Literal["yes", "no", "unclear"] | None = None
    stance_sentence: str = ""  # the sentence that decided it (a substring of ``abstract``)
    addresses: bool = True  # covers every essential concept of the question (grounding.concepts)
    # what PubMed says about the article (index metadata schema 2; ingest.design)
    design: str | None = None  # ingest.design.DESIGNS key
    design_rule: str = ""  # the rule that set it, shown for checking
    design_source: str = ""  # "publication type" or "abstract wording"
    retracted: bool = False
    retraction_notices: list[str] = Field(default_factory=list)  # PMIDs of the notices
    doi: str | None = None
    pmc: str | None = None
    mesh_major: list[str] = Field(default_factory=list)
    publication_types: list[str] = Field(default_factory=list)

    @property
    def confidence_label(self) -> str:
        if self.confidence >= HIGH_CONFIDENCE:
            return "high"
        if self.confidence >= MEDIUM_CONFIDENCE:
            return "medium"
        return "low"

    @property
    def first_author_et_al(self) -> str:
        if not self.authors:
            return ""
        return self.authors[0] + (" et al." if len(self.authors) > 1 else "")


class CitedSentence(BaseModel):
    """A displayed answer sentence and the sources it cites (each supports it)."""

    text: str
    citations: list[int] = Field(default_factory=list)


class DroppedSentence(BaseModel):
    """A generated sentence that was not shown, and why (the support check's reason)."""

    text: str
    reason: str


KEY_FINDINGS = "Key findings"
RELATED_FINDINGS = "Related findings (they do not answer the question)"

AnswerStyleUsed = Literal["generative", "extractive", "abstain", "refused", "none"]


class AnswerResult(BaseModel):
    answer: str
    mode: str  # a name in chains.modes.MODE_TABLE
    question: str
    searched_question: str
    sub_queries: list[str] = Field(default_factory=list)
    filters: dict[Any, Any] = Field(default_factory=dict)  # validated as a bare dict was
    sources: list[Source] = Field(default_factory=list)
    refused: bool = False
    verdict: Literal["yes", "no", "maybe"] | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    # how the searched question was made (retrievers.followup.PATHS): llm | fallback | unchanged |
    # fused | standalone
    rewrite: str = "unchanged"
    # grounding: what the answer is made of ("none": a refusal of the question itself)
    style: AnswerStyleUsed = "none"
    sentences: list[CitedSentence] = Field(default_factory=list)
    verdict_sources: list[int] = Field(default_factory=list)
    dropped: list[DroppedSentence] = Field(default_factory=list)
    # the answer as a whole (grounding.consensus): does any source address the question, and
    # if not, what is missing; why a yes/no verdict is shown or withheld
    addresses_question: bool = True
    missing_concepts: list[str] = Field(default_factory=list)
    absent_concepts: list[str] = Field(default_factory=list)  # in no indexed abstract at all
    verdict_reason: str = ""  # agree | mixed | unclear | weak | not_addressed | not_yes_no
    stance_summary: str = ""  # "3 studies: 3 no"
    lead: str = ""  # the answer's first sentence for a yes/no or unanswered question
    lead_by: Literal["stances", "model", ""] = ""  # composed from the stances, or the model's

    def key_findings(self) -> list[tuple[int, EvidenceSpan]]:
        """(source number, evidence sentence) of every source, in source order."""
        return [(s.n, e) for s in self.sources for e in s.evidence]

    def findings_title(self) -> str:
        """The heading over :meth:`key_findings`: when the answer abstained (no source
        addresses the question) they are the closest sentences found, not findings that answer
        it, and a reader skimming for "Key findings" must not take them for the answer."""
        return RELATED_FINDINGS if self.style == "abstain" else KEY_FINDINGS


class PreparedEvent(BaseModel):
    """Retrieval is done; the answer tokens follow."""

    type: Literal["prepared"] = "prepared"
    searched_question: str
    sub_queries: list[str] = Field(default_factory=list)
    filters: dict[Any, Any] = Field(default_factory=dict)  # validated as a bare dict was
    sources: list[Source] = Field(default_factory=list)
    rewrite: str = "unchanged"  # one of retrievers.followup.PATHS


class TokenEvent(BaseModel):
    """A piece of the final answer (never of the rewrite or the sub-queries)."""

    type: Literal["token"] = "token"
    text: str


class DoneEvent(BaseModel):
    type: Literal["done"] = "done"
    result: AnswerResult


AnswerEvent = PreparedEvent | TokenEvent | DoneEvent
