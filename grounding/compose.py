"""Answers built without trusting the LLM: extractive composition, honest abstention, ``auto``.

``extractive``: the key findings themselves (for a yes/no question the verdict word first), each
ending with its [n]; no LLM text at all. ``generative``: the LLM's sentences that passed the support
check. ``auto``: generative, falling back to extractive when no generated sentence survived.
When no evidence sentence reaches the relevance bar, every style abstains the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from grounding.evidence import EvidenceSentence, answers_question
from grounding.settings import AnswerStyle, GroundingSettings
from grounding.support import CheckedSentence, with_citations

ABSTAIN = "The retrieved abstracts do not answer this directly."
VERDICT_WORDS = {"yes": "Yes", "no": "No", "maybe": "Maybe"}


@dataclass(frozen=True)
class AnswerSentence:
    """A displayed sentence and the sources it cites."""

    claim: str
    citations: list[int]

    @property
    def text(self) -> str:
        return with_citations(self.claim, self.citations)


@dataclass
class ComposedAnswer:
    style: Literal["extractive", "generative", "abstain"]
    sentences: list[AnswerSentence] = field(default_factory=list)
    verdict: str | None = None
    verdict_sources: list[int] = field(default_factory=list)

    @property
    def abstained(self) -> bool:
        return self.style == "abstain"

    @property
    def verdict_text(self) -> str:
        if not self.verdict:
            return ""
        return with_citations(VERDICT_WORDS[self.verdict] + ".", self.verdict_sources)

    @property
    def text(self) -> str:
        parts = [self.verdict_text] if self.verdict_text else []
        return " ".join(parts + [s.text for s in self.sentences])


def key_findings(
    evidence: Sequence[Sequence[EvidenceSentence]],
    limit: int,
    *,
    relevance_bar: float = -1.0,
    relative_floor: float = 0.0,
    lead: Sequence[int] = (),
    weak: Sequence[int] = (),
) -> list[EvidenceSentence]:
    """The best evidence sentences over all sources, by score, without repeats. After the first,
    a finding must reach the relevance bar and ``relative_floor`` of the best score, so a weak
    sentence from an off-topic source does not pad the answer.

    ``lead``: sources ([n]) whose best sentence reaching the relevance bar comes first, when one
    does: the answer opens with the top-ranked article (or the one the verdict names), not with
    another article's conclusion that the position prior happens to score higher. ``weak``:
    sources the retrieval itself rates low; they may lead (when nothing else can) but never pad."""
    flat = sorted((e for per in evidence for e in per), key=lambda e: -e.score)
    best = flat[0].score if flat else 0.0
    opening = next((e for e in flat if e.source in lead and e.similarity >= relevance_bar), None)
    if opening is not None:
        flat = [opening, *(e for e in flat if e is not opening)]
    seen: set[str] = set()
    out: list[EvidenceSentence] = []
    for e in flat:
        key = " ".join(e.text.lower().split())
        if key in seen:
            continue
        if out and (
            e.similarity < relevance_bar or e.score < relative_floor * best or e.source in weak
        ):
            continue
        seen.add(key)
        out.append(e)
        if len(out) >= limit:
            break
    return out


def abstention(titles: Sequence[str], limit: int = 3) -> ComposedAnswer:
    """The honest refusal for on-topic questions the abstracts do not answer, then the closest
    sources by title (each cited, so the user can open them)."""
    closest = [
        AnswerSentence(f"Closest source: {t.strip().rstrip('.?')}.", [i + 1])
        for i, t in enumerate(titles[:limit])
        if t and t.strip()
    ]
    return ComposedAnswer("abstain", [AnswerSentence(ABSTAIN, []), *closest])


def compose_extractive(
    evidence: Sequence[Sequence[EvidenceSentence]],
    *,
    titles: Sequence[str] = (),
    verdict: str | None = None,
    verdict_sources: Sequence[int] = (),
    weak_sources: Sequence[int] = (),
    settings: GroundingSettings | None = None,
) -> ComposedAnswer:
    """The key findings as the answer; with a yes/no ``verdict``, the verdict word comes first
    (naming ``verdict_sources``) and the findings from those sources lead. ``weak_sources``
    (retrieval confidence "low") add no finding after the first."""
    settings = settings or GroundingSettings()
    if not answers_question(list(map(list, evidence)), settings):
        return abstention(titles)
    findings = key_findings(
        evidence,
        settings.extractive_findings,
        relevance_bar=settings.relevance_bar,
        relative_floor=settings.findings_relative_floor,
        lead=list(verdict_sources) if verdict and verdict_sources else [1],
        weak=weak_sources,
    )
    if verdict and verdict_sources:
        findings.sort(key=lambda e: (e.source not in verdict_sources, -e.score))
    return ComposedAnswer(
        "extractive",
        [AnswerSentence(e.text, [e.source]) for e in findings],
        verdict if verdict in VERDICT_WORDS else None,
        list(verdict_sources) if verdict in VERDICT_WORDS else [],
    )


def compose_answer(
    style: AnswerStyle,
    generated: Sequence[CheckedSentence],
    evidence: Sequence[Sequence[EvidenceSentence]],
    *,
    titles: Sequence[str] = (),
    verdict: str | None = None,
    verdict_sources: Sequence[int] = (),
    weak_sources: Sequence[int] = (),
    settings: GroundingSettings | None = None,
) -> ComposedAnswer:
    """What the user sees for a style, as a pure function of the checked generated sentences and
    the evidence (the chain streams generated sentences as they pass; this decides the end)."""
    settings = settings or GroundingSettings()
    extractive = compose_extractive(
        evidence,
        titles=titles,
        verdict=verdict,
        verdict_sources=verdict_sources,
        weak_sources=weak_sources,
        settings=settings,
    )
    if style == "extractive" or extractive.abstained:
        return extractive
    kept = [AnswerSentence(s.claim, s.citations) for s in generated if s.kept]
    if kept or style == "generative":
        if not kept:
            return abstention(titles)
        return ComposedAnswer("generative", kept, extractive.verdict, extractive.verdict_sources)
    return extractive  # auto, nothing generated survived
