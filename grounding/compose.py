"""Answers built without trusting the LLM: extractive composition, honest abstention, ``auto``.

``extractive``: the key findings themselves (for a yes/no question the judgement's lead first), each
ending with its [n]; no LLM text at all. ``generative``: the LLM's sentences that passed the support
check. ``auto``: generative, falling back to extractive when no generated sentence survived.
When no evidence sentence reaches the relevance bar, every style abstains the same way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from grounding.consensus import Judgement
from grounding.evidence import EvidenceSentence, answers_question
from grounding.stance import RECOMMENDATION
from grounding.support import CheckedSentence, with_citations
from settings.grounding import GroundingSettings

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
    lead: str = ""  # the judgement's first sentence (grounding.consensus), citations included
    beside: list[int] = field(default_factory=list)  # sources beside the question: no findings

    @property
    def abstained(self) -> bool:
        return self.style == "abstain"

    @property
    def verdict_text(self) -> str:
        """What opens the answer: the judgement's lead sentence, else the bare verdict word."""
        if self.lead:
            return self.lead
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
    sources the retrieval itself rates low; they may lead (when nothing else can) but never pad.
    A sentence that states no finding (:func:`states_finding`) or leans on the one before it
    ("Finally, ...") opens only when no other can, and the first comes after every finding."""
    # a sentence stating no finding (an aim, a recommendation, future work) comes after those
    # that do, each kind by its score
    flat = sorted((e for per in evidence for e in per), key=_finding_order)
    best = flat[0].score if flat else 0.0  # the best finding's: the floor is relative to it
    opening = _opening_sentence(
        [e for e in flat if e.source in lead and e.similarity >= relevance_bar],
        [e for e in flat if e is flat[0] or (e.similarity >= relevance_bar
                                             and e.score >= relative_floor * best
                                             and e.source not in weak)],
    )  # fmt: skip
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


# a sentence that leans on the one before it ("Finally, ...", "However, this pattern ...", "And
# this improvement ...") reads as a reply to nothing when it opens the answer
_LEANS_BACK = re.compile(
    r"^(?:finally|moreover|furthermore|in addition|additionally|also|however|nevertheless|"
    r"nonetheless|similarly|likewise|conversely|besides|lastly|second(?:ly)?|third(?:ly)?|"
    r"in contrast|on the other hand|in turn)\s*,|^(?:and|but|so)\s",
    re.IGNORECASE,
)


def states_finding(text: str) -> bool:
    """Whether a sentence may report a finding: not an aim, a recommendation or future work
    ("More research is warranted ...", "The main purpose of this paper is ...";
    :data:`grounding.stance.RECOMMENDATION`, which never decides a stance either)."""
    return not RECOMMENDATION.search(text)


def _finding_order(e: EvidenceSentence) -> tuple[bool, float]:
    """Findings first, each kind by its score."""
    return not states_finding(e.text), -e.score


def _opening_sentence(
    led: Sequence[EvidenceSentence], others: Sequence[EvidenceSentence]
) -> EvidenceSentence | None:
    """The sentence the answer opens with: the lead sources' (``led``) best finding that stands
    alone, else any source's (``others``); else the first that at least stands alone; else the
    first (None for none)."""
    def finding_alone(e: EvidenceSentence) -> bool:
        return states_finding(e.text) and not _leans_back(e)

    def alone(e: EvidenceSentence) -> bool:
        return not _leans_back(e)

    for fits in (finding_alone, alone):
        for ranked in (led, others):
            found = next((e for e in ranked if fits(e)), None)
            if found is not None:
                return found
    return next(iter(led or others), None)


def _leans_back(e: EvidenceSentence) -> bool:
    return bool(_LEANS_BACK.match(e.text.lstrip()))


def abstention(titles: Sequence[str], limit: int = 3, message: str = ABSTAIN) -> ComposedAnswer:
    """The honest refusal for on-topic questions the abstracts do not answer (``message``: what
    is missing, when known), then the closest sources by title as related reading (each cited,
    so the user can open them)."""
    closest = [
        AnswerSentence(f"Related reading: {t.strip().rstrip('.?')}.", [i + 1])
        for i, t in enumerate(titles[:limit])
        if t and t.strip()
    ]
    return ComposedAnswer("abstain", [AnswerSentence(message, []), *closest])


def compose_extractive(
    evidence: Sequence[Sequence[EvidenceSentence]],
    *,
    titles: Sequence[str] = (),
    judgement: Judgement | None = None,
    weak_sources: Sequence[int] = (),
    settings: GroundingSettings | None = None,
    in_context: bool = False,
    other_age: Sequence[int] = (),
) -> ComposedAnswer:
    """The key findings as the answer. With a ``judgement``: a question no source addresses
    gets its missing-concept message and the sources as related reading; otherwise its lead
    sentence ("No (3 of 3 studies) [1–3]: Working memory training did not improve fluid
    intelligence [1].") comes first, then the deciding sentences of the sources it names (not
    the one the lead states), then the other findings.
    ``weak_sources`` (retrieval confidence "low") add no finding after the first; nor do, in a
    follow-up searched with its conversation (``in_context``), :func:`_beside_the_question`;
    nor ``other_age``, studies of an age group not asked about (:func:`_opening`)."""
    settings = settings or GroundingSettings()
    if judgement is not None and not judgement.addressed:
        return abstention(titles, message=judgement.lead or ABSTAIN)
    if not answers_question(list(map(list, evidence)), settings):
        return abstention(titles)
    verdict = judgement.verdict if judgement else None
    verdict_sources = judgement.verdict_sources if judgement else []
    # the deciding sentence the lead already states is not quoted again (nor found again below)
    quoted = _key(judgement.lead_quotes) if judgement and judgement.lead_quotes else ""
    # what the verdict rests on, quoted; a source the retrieval rates low is quoted only first
    deciding = [
        d for i, d in enumerate(_deciding_sentences(judgement, skip=quoted))
        if (i == 0 and not quoted) or d.citations[0] not in weak_sources
    ]  # fmt: skip
    addressing = judgement.addressing if judgement else []
    aside = _beside_the_question(evidence, addressing) if in_context else []
    lead, other = _opening(evidence, addressing, other_age)
    findings = key_findings(
        evidence,
        settings.extractive_findings,
        relevance_bar=settings.relevance_bar,
        relative_floor=settings.findings_relative_floor,
        lead=verdict_sources or lead,
        weak=sorted({*weak_sources, *aside, *other}),
    )
    if verdict_sources:
        findings.sort(key=lambda e: (e.source not in verdict_sources, *_finding_order(e)))
    shown = {_key(d.claim) for d in deciding} | ({quoted} if quoted else set())
    rest = [
        AnswerSentence(e.text, [e.source])
        for e in findings
        if _key(e.text) not in shown
        # a weak source leads or says nothing
        and not ((deciding or quoted) and e.source in weak_sources)
    ]
    # the lead's finding is one of the findings shown
    limit = max(settings.extractive_findings - bool(quoted), 1)
    sentences = (deciding + rest)[: max(limit, len(deciding))]
    return ComposedAnswer(
        "extractive", sentences, verdict, list(verdict_sources),
        judgement.lead if judgement else "", aside,
    )  # fmt: skip


def _opening(
    evidence: Sequence[Sequence[EvidenceSentence]], addressing: Sequence[int],
    other_age: Sequence[int],
) -> tuple[list[int], set[int]]:
    """The source the findings open with (the first addressing one, else the first with
    evidence), and the sources of another age group that add none: while another source is
    left, the ones that studied only an age group the question does not ask about
    (``other_age``, :func:`ingest.ages.studies_other_age_group`) neither open the findings
    nor add one (children's studies for "... in adults?")."""
    cited = {e.source for per in evidence for e in per}
    other = set(other_age) if cited - set(other_age) else set()
    on_topic = [n for n in addressing if n not in other]
    first = next((n for n in sorted(cited) if n not in other), 1)
    return on_topic[:1] or [first], other


def _beside_the_question(
    evidence: Sequence[Sequence[EvidenceSentence]], addressing: Sequence[int]
) -> list[int]:
    """The sources ([n]) that do not address a follow-up searched in its conversation when
    another does: they add no finding. Its as-written search, a few words of its own, finds
    papers off the topic (an opioid review for "any long-term side effects?" in a conversation
    about stimulants). A plain question's related sources still add theirs (a paper on another
    part of an open question's subject often holds a useful finding)."""
    if not addressing:
        return []
    return sorted({e.source for per in evidence for e in per} - set(addressing))


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def _deciding_sentences(judgement: Judgement | None, skip: str = "") -> list[AnswerSentence]:
    """The sentences that decided the shown verdict (its sources'; two, or one besides the one
    the lead states: ``skip``), or, when the evidence is mixed, one deciding sentence per side:
    what the lead sentence rests on, quoted."""
    if judgement is None:
        return []
    if judgement.verdict:
        chosen = [s for s in judgement.stances if s.stance == judgement.verdict and s.sentence]
        chosen = [s for s in chosen if _key(s.sentence) != skip][: 1 if skip else 2]
        return [AnswerSentence(s.sentence, [s.source]) for s in chosen]
    if judgement.reason == "mixed":
        sides = [
            next((s for s in judgement.stances if s.stance == side and s.sentence), None)
            for side in ("yes", "no")
        ]
        return [AnswerSentence(s.sentence, [s.source]) for s in sides if s is not None]
    return []


def compose_answer(
    generated: Sequence[CheckedSentence],
    extractive: ComposedAnswer,
    *,
    writes: bool,
    falls_back_to_extractive: bool,
    titles: Sequence[str] = (),
) -> ComposedAnswer:
    """What the user sees, as a pure function of the checked generated sentences and the
    extractive answer (:func:`compose_extractive`, composed once per question; the chain streams
    generated sentences as they pass, this decides the end). ``writes``: the LLM's sentences are
    used at all; ``falls_back_to_extractive``: when none passed, the findings (``auto``) rather
    than an abstention (``generative``), which keeps the verdict and lead that opened the answer;
    see ``chains.policy.AnswerPolicy``."""
    if not writes or extractive.abstained:
        return extractive
    kept = [AnswerSentence(s.claim, s.citations) for s in generated if s.kept]
    if kept:
        return ComposedAnswer(
            "generative", kept, extractive.verdict, extractive.verdict_sources, extractive.lead
        )
    if falls_back_to_extractive:
        return extractive  # auto, nothing generated survived
    abstained = abstention(titles)
    return ComposedAnswer(
        "abstain", abstained.sentences, extractive.verdict, list(extractive.verdict_sources),
        extractive.lead,
    )  # fmt: skip
