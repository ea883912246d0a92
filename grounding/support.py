"""The deterministic support check, with citation repair.

A generated sentence is supported by source [n] when every number it states appears in that
abstract, most of its words (``abstract_coverage``, the issue's own definition of grounded:
"mostly made of words found in the sources it cites"; generic words such as "found" count, a
compound counts as its words) occur in that abstract, and
either (a) at least ``coverage`` of its content terms occur in the two sentences of the abstract
that share most terms with it, or (b) its MiniLM cosine to the abstract's closest sentence
reaches ``similarity`` while it still shares ``coverage_floor`` of its terms (a close
paraphrase). A sentence keeps the citations of its cited sources that support it; when none of
them does (or it cites nothing) it is re-cited to the best source that does; failing all, it is
dropped. Sentences with too few content terms (filler, "[Note: ...]", a bare "No."), repeats
of an already kept sentence, questions, and restatements of a source's title (no finding in
them, though every word is in the abstract) are dropped too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from grounding.sources import SourcePool
from grounding.terms import citation_numbers, content_terms, numbers, strip_citations
from settings.grounding import GroundingSettings


@dataclass(frozen=True)
class SourceSupport:
    """How well one source supports a sentence."""

    n: int
    coverage: float  # of the sentence's content terms, in the source's two best-matching sentences
    abstract_coverage: float  # of the sentence's words (generic ones too), anywhere in the abstract
    similarity: float | None  # None: not needed, the words decided
    numbers_ok: bool
    supported: bool


@dataclass(frozen=True)
class CheckedSentence:
    """A generated sentence and the check's decision; ``text`` is the displayable form."""

    raw: str
    claim: str  # the sentence without its citations
    cited: list[int]
    citations: list[int]  # after repair; empty when dropped
    kept: bool
    reason: str  # "supported", "re-cited", "no citation matched", "unsupported", ...
    support: list[SourceSupport] = field(default_factory=list)

    @property
    def text(self) -> str:
        return with_citations(self.claim, self.citations) if self.kept else ""


# A sentence ALL of whose words are a source's title's, covering most of the title, restates it
# (see SupportChecker._restates_a_heading); one word more ("reduce") can be the whole finding.
RESTATED_SHARE = 1.0

_END = re.compile(r"([.!?]+[\"'”’]*)$")


def with_citations(claim: str, citations: list[int]) -> str:
    """``"Claim text [1, 2]."``: the citation goes before the closing punctuation."""
    claim = claim.strip()
    if not citations:
        return claim
    tag = "[" + ", ".join(str(n) for n in citations) + "]"
    m = _END.search(claim)
    if m:
        return f"{claim[: m.start()].rstrip()} {tag}{m.group(1)}"
    return f"{claim} {tag}."


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


class SupportChecker:
    """Checks generated sentences against one question's :class:`SourcePool`."""

    def __init__(self, pool: SourcePool, settings: GroundingSettings | None = None) -> None:
        self.pool = pool
        self.settings = settings or GroundingSettings()
        self._seen: set[str] = set()

    def source_support(self, claim: str, vector: np.ndarray | None = None) -> list[SourceSupport]:
        """Each source's support for ``claim``. The claim is embedded (when ``vector`` is not
        given) only if the words alone cannot decide for some source: a MiniLM pass per
        streamed sentence is the slowest part of the check."""
        s = self.settings
        terms = content_terms(claim)
        words = content_terms(claim, generic=True)
        nums = numbers(claim)
        lexical = []
        for source in self.pool.sources:
            best_two: set[str] = set()
            for t in sorted(source.terms, key=lambda t: -len(terms & t))[:2]:
                best_two |= t
            coverage = len(terms & best_two) / len(terms) if terms else 0.0
            abstract_coverage = len(words & source.words) / len(words) if words else 0.0
            numbers_ok = nums <= source.numbers
            gate = numbers_ok and abstract_coverage > s.abstract_coverage  # "mostly": more than
            lexical.append((coverage, abstract_coverage, numbers_ok, gate))
        undecided = any(
            gate and s.coverage_floor <= cov < s.coverage for cov, _, _, gate in lexical
        )
        if vector is None and undecided:
            vector = np.asarray(self.pool.encoder.encode([claim]), dtype=np.float32)[0]
        out: list[SourceSupport] = []
        for si, (coverage, abstract_coverage, numbers_ok, gate) in enumerate(lexical):
            rows = self.pool.sentence_rows(si)
            sim = (
                float((self.pool.vectors[rows] @ vector).max())
                if rows and vector is not None
                else None
            )
            supported = gate and (
                coverage >= s.coverage
                or (sim is not None and sim >= s.similarity and coverage >= s.coverage_floor)
            )
            out.append(
                SourceSupport(
                    self.pool.sources[si].n,
                    coverage,
                    abstract_coverage,
                    sim,
                    numbers_ok,
                    supported,
                )
            )
        return out

    def _restates_a_heading(self, claim: str) -> bool:
        """A source's title said again: its words are in the abstract, but it states no finding
        (a tiny model lists the titles it was shown). Restated = every word of the sentence is
        the title's and it covers most of the title. (The question said back as a
        statement is an answer, and is checked like any other sentence.)"""
        words = content_terms(claim, generic=True)
        if not words:
            return False
        for heading in (s.title for s in self.pool.sources):
            hw = content_terms(heading, generic=True)
            shared = len(words & hw)
            if hw and shared >= RESTATED_SHARE * len(words) and shared >= 0.6 * len(hw):
                return True
        return False

    def shown_already(self, claim: str) -> None:
        """``claim`` is on screen already (the lead's finding): a repeat of it is dropped."""
        self._seen.add(_norm(strip_citations(claim)))

    def check(self, sentence: str, vector: np.ndarray | None = None) -> CheckedSentence:
        """Decide one sentence; ``vector`` (its MiniLM embedding) is computed if needed.

        Stateful only in one way: an exact repeat of a kept sentence is dropped.
        """
        claim = strip_citations(sentence)
        cited = citation_numbers(sentence)
        if len(content_terms(claim)) < self.settings.min_terms:
            return CheckedSentence(sentence, claim, cited, [], False, "no checkable claim")
        key = _norm(claim)
        if key in self._seen:
            return CheckedSentence(sentence, claim, cited, [], False, "repeat")
        if claim.rstrip("\"'”’) ").endswith("?"):
            return CheckedSentence(sentence, claim, cited, [], False, "a question, not a claim")
        if self._restates_a_heading(claim):
            return CheckedSentence(sentence, claim, cited, [], False, "restates a title")
        support = self.source_support(claim, vector)
        passing = [s for s in support if s.supported]
        cited_passing = [s.n for s in passing if s.n in cited]
        if cited_passing:
            citations, reason = cited_passing, "supported"
        elif passing:
            best = max(passing, key=lambda s: (s.coverage, s.similarity or -1.0))
            citations = [best.n]
            reason = "re-cited" if cited else "citation added"
        else:
            return CheckedSentence(sentence, claim, cited, [], False, "unsupported", support)
        self._seen.add(key)
        return CheckedSentence(sentence, claim, cited, citations, True, reason, support)
