"""Every weight and threshold of grounding in one validated object: the ``answer:`` section of
cfg.yaml (``answer.style`` and the thresholds of the support check).

The values are the ones chosen on the PubMedQA DEV split (never test) with
``python -m eval.grounding_tune`` (docs/measurements-answers.md: the procedure and the figures).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

AnswerStyle = Literal["extractive", "generative", "auto"]


class EvidenceWeights(BaseModel):
    """Score of an abstract sentence as evidence for the question (each part in [0, 1])."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    similarity: float = Field(0.3, ge=0)  # MiniLM cosine of sentence and (searched) question
    overlap: float = Field(0.1, ge=0)  # BM25 of the sentence for the question, / the pool's max
    prior: float = Field(0.6, ge=0)  # results/conclusion section, or late position unlabelled


class GroundingSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # extractive for the 135M default (measured: docs/measurements-answers.md "Evidence-first
    # answers"); a stronger model: auto or generative
    style: AnswerStyle = "extractive"
    weights: EvidenceWeights = EvidenceWeights()
    evidence_per_source: int = Field(2, ge=1, le=5)
    # Abstract sentences confidently in another language (a record's translated abstract) are
    # never quoted; an ISO 639-1 code, or null to quote any language.
    evidence_language: str | None = Field("en", pattern=r"^[a-z]{2}$")
    # Evidence below this share of the best sentence's score in its source is not shown.
    evidence_relative_floor: float = Field(0.8, ge=0, le=1)
    # Honest abstention: no sentence of any source has at least this MiniLM cosine to the question.
    relevance_bar: float = Field(0.31, ge=-1, le=1)
    # Support, always: MORE than this share of the sentence's words occurs in the abstract
    # (fixed, not tuned: the "mostly made of words found in the sources it cites"; generic
    # words count, a compound counts as its words),
    abstract_coverage: float = Field(0.5, ge=0, le=1)
    # and: share of the sentence's content terms found in the best two sentences of a source,
    coverage: float = Field(0.3, ge=0, le=1)
    # or MiniLM cosine to the best sentence of a source with at least ``coverage_floor`` overlap.
    similarity: float = Field(0.5, ge=-1, le=1)
    coverage_floor: float = Field(0.0, ge=0, le=1)
    min_terms: int = Field(2, ge=0)  # a "sentence" with fewer content terms is no checkable claim
    extractive_findings: int = Field(3, ge=1, le=6)
    # A finding after the first must score at least this share of the best finding.
    findings_relative_floor: float = Field(0.8, ge=0, le=1)
