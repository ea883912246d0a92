"""The lead sentence of a yes/no answer: the verdict, how many sources give it, and the finding
that decides it, cited.

Composed from the stances for every model (:func:`with_finding`): the verdict line of
:func:`grounding.consensus.lead_sentence` ("No (3 of 3 studies) [1–3]") and, after a colon, the
deciding sentence of the first verdict source that states it plainly, verbatim but for a leading
connective or reporting frame ("In conclusion, our results show that ..."; a scope such as "In the
present study" and a hedge such as "These results suggest that" are kept, so the lead claims no
more than the abstract):

    No (3 of 3 studies) [1–3]: Working memory training did not improve fluid intelligence [1].

The finding must pass the support check for its own source (:class:`FindingCheck`); when none
does, the lead is the verdict line alone, as before. Mixed, unclear and unaddressed questions keep
their lines ("Mixed evidence (2 yes [1, 3], 1 no [2]).").

A model that can write one (``chains.lead``) may write the lead instead; :func:`check_written_lead`
shows its sentence only when it states the stances' verdict (first word, and its finding read by
the stance rules is not the opposite), any count it gives is the stances' count, and the support
check passes it with a verdict source among its citations. :func:`choose_lead` is the choice.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from grounding.consensus import VERDICT_BAR, Judgement, cite, verdict_count
from grounding.sentences import split_answer
from grounding.stance import SourceStance, sentence_stance
from grounding.support import SupportChecker, with_citations
from grounding.terms import citation_numbers, strip_citations

# (claim without its citation, source n) -> does the support check pass the claim for [n]?
FindingCheck = Callable[[str, int], bool]

# Leading words that carry no finding: connectives, then a reporting frame that states no doubt.
_CONNECTIVE = re.compile(
    r"^(?:in conclusion|in summary|in sum|in short|to conclude|to summari[sz]e|overall|"
    r"taken together|together|collectively|altogether|thus|therefore|hence|consequently|"
    r"accordingly|finally|importantly|notably|in addition|additionally|moreover|furthermore|"
    r"however|in contrast|by contrast|conclusions?)"
    r"\s*[,:]\s*",
    re.IGNORECASE,
)
_REPORTING = re.compile(
    r"^(?:(?:our|these|the|this|present|current)\s+(?:(?:present|current|main|key|overall)\s+)?"
    r"(?:results?|findings?|data|study|studies|analys[ie]s|work|trial|review|meta-analysis|"
    r"experiments?)\s+(?:clearly\s+|also\s+)?(?:show(?:s|ed)?|demonstrat(?:e|es|ed)|"
    r"reveal(?:s|ed)?|confirm(?:s|ed)?|establish(?:es|ed)?|found)"
    r"|we\s+(?:(?:have|also)\s+)?(?:found|find|show(?:ed)?|shown|observed|demonstrated?|"
    r"confirmed?|conclude|concluded|report))\s+that\s+",
    re.IGNORECASE,
)


def finding_clause(sentence: str) -> str:
    """The deciding sentence as the lead quotes it: verbatim, less a leading connective ("In
    conclusion,", "However,": they join it to sentences the lead does not show) and a reporting
    frame that states no doubt ("our results show that"); the first letter capitalised. A scope
    ("In the present study,") and a hedge ("These results suggest that") are kept: the lead
    claims no more, and no more widely, than the abstract. The whole sentence when too little
    would be left."""
    text = " ".join(sentence.split())
    clause = text
    for _ in range(2):
        clause = _CONNECTIVE.sub("", clause, count=1)
    clause = _REPORTING.sub("", clause, count=1)
    if len(clause.split()) < 4:
        clause = text
    first = clause.split(" ", 1)[0]
    if clause[:1].islower() and not any(c.isupper() for c in first[1:]):  # not "mRNA"
        clause = clause[0].upper() + clause[1:]
    return clause


def deciding_order(j: Judgement) -> list[SourceStance]:
    """The verdict sources with a deciding sentence, in source (retrieval) order, those that
    state the verdict plainly enough to show it (:data:`VERDICT_BAR`) first."""
    chosen = [s for s in j.stances if s.stance == j.verdict and s.sentence]
    return sorted(chosen, key=lambda s: s.strength < VERDICT_BAR)  # stable: source order


def with_finding(j: Judgement, supports: FindingCheck) -> Judgement:
    """The judgement with its lead stating the deciding finding ("No (3 of 3 studies) [1–3]:
    Working memory training did not improve fluid intelligence [1]."), when a verdict is shown
    and a deciding sentence's clause passes the support check for its source; else unchanged
    (its verdict line, or its mixed / unclear / missing-concept line)."""
    if j.reason != "agree" or j.verdict is None:
        return j
    opening = verdict_count(j)
    for s in deciding_order(j):
        clause = finding_clause(s.sentence)
        if not supports(clause, s.source):
            continue
        sources = j.verdict_sources
        cited = f" {cite(sources)}" if sources != [s.source] else ""
        lead = f"{opening}{cited}: {with_citations(clause, [s.source])}"
        return replace(j, lead=lead, lead_quotes=s.sentence, lead_by="stances")
    return j


def support_check(checker_of: Callable[[], SupportChecker]) -> FindingCheck:
    """A :class:`FindingCheck` by the project's support check (a fresh checker per claim: the
    check drops repeats of what it already passed)."""

    def supports(claim: str, n: int) -> bool:
        checked = checker_of().check(with_citations(claim, [n]))
        return checked.kept and n in checked.citations

    return supports


# ---- a lead the model wrote --------------------------------------------------------------------

_VERDICT_WORD = re.compile(r"^\W*(yes|no)\b\W*", re.IGNORECASE)
_SMALL = ("zero one two three four five six seven eight nine ten eleven twelve").split()
_COUNT_WORD = r"(\d+|" + "|".join(_SMALL) + r")"
COUNT_PHRASE = re.compile(
    rf"\b(?:all\s+(?:the\s+)?)?{_COUNT_WORD}\s+(?:(?:of|out of)\s+(?:the\s+)?{_COUNT_WORD}\s+)?"
    r"(?:(?:included|relevant|available|retrieved|cited)\s+)?"
    r"(?:studies|study|sources?|trials?|abstracts?|articles?|papers?|reports?)\b",
    re.IGNORECASE,
)


def _value(word: str) -> int:
    return int(word) if word.isdigit() else _SMALL.index(word.lower())


@dataclass(frozen=True)
class WrittenLead:
    """The model's lead and the checks' decision."""

    sentence: str  # what the model wrote (its first sentence)
    shown: str  # the lead to show (citations as the support check kept them); "" if rejected
    reason: str  # "accepted", or why it is not shown

    @property
    def accepted(self) -> bool:
        return bool(self.shown)


def check_written_lead(
    written: str, j: Judgement, checker: SupportChecker, question_stems: set[str]
) -> WrittenLead:
    """Shown only when it states the stances' verdict and the support check passes it (module
    docstring); otherwise the reason it is not."""
    parts = split_answer(written.strip())
    sentence = parts[0].strip() if parts else ""

    def no(reason: str) -> WrittenLead:
        return WrittenLead(sentence, "", reason)

    if j.reason != "agree" or j.verdict is None:
        return no("no verdict to state")
    claim = strip_citations(sentence)
    said = _VERDICT_WORD.match(claim)
    if said is None:
        return no("states no verdict")
    if said.group(1).lower() != j.verdict:
        return no(f"states {said.group(1).lower()}; the stances say {j.verdict}")
    read = sentence_stance(claim[said.end() :], question_stems).stance
    if read in ("yes", "no") and read != j.verdict:
        return no(f"its finding reads {read}; the stances say {j.verdict}")
    counts = {len(j.stances), len(j.verdict_sources)}
    checkable = claim
    for m in COUNT_PHRASE.finditer(claim):
        stated = {_value(g) for g in m.groups() if g}
        if not stated <= counts:
            return no(f"counts {m.group(0)!r}; the stances: {len(j.verdict_sources)} "
                      f"of {len(j.stances)}")  # fmt: skip
        # the count is the stances', not a number the abstract must hold
        spelled = re.sub(r"\d+", lambda d: _SMALL[int(d.group())] if int(d.group()) < 13
                         else d.group(), m.group(0))  # fmt: skip
        checkable = checkable.replace(m.group(0), spelled, 1)
    checked = checker.check(with_citations(checkable, citation_numbers(sentence)))
    if not checked.kept:
        return no(f"unsupported ({checked.reason})")
    opposite = {s.source for s in j.stances if s.stance not in (j.verdict, "unclear")}
    if not set(checked.citations) & set(j.verdict_sources) or set(checked.citations) & opposite:
        return no(f"cites {cite(checked.citations)}; the verdict rests on "
                  f"{cite(j.verdict_sources)}")  # fmt: skip
    return WrittenLead(sentence, with_citations(claim, checked.citations), "accepted")


@dataclass(frozen=True)
class LeadChoice:
    judgement: Judgement  # with the lead shown
    written: WrittenLead | None = None  # the model's lead, when it wrote one


def choose_lead(
    j: Judgement,
    written: str | None,
    checker: SupportChecker,
    question_stems: set[str],
) -> LeadChoice:
    """The model's lead when it wrote one that passes :func:`check_written_lead`, else the lead
    composed from the stances. The verdict is the stances' either way."""
    if written is None:
        return LeadChoice(j)
    decided = check_written_lead(written, j, checker, question_stems)
    if not decided.accepted:
        return LeadChoice(j, decided)
    return LeadChoice(replace(j, lead=decided.shown, lead_quotes="", lead_by="model"), decided)
