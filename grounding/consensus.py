"""The answer as a whole: a verdict only when the sources that address the question agree.

``judge`` combines the question's concept coverage (:mod:`grounding.concepts`) and each
addressing source's stance (:mod:`grounding.stance`) into a :class:`Judgement`: the verdict (or
none, and why), the stance counts, and the plain lead sentence the user reads first, composed
deterministically from the stances (no free text from the model):

- not addressed: "No indexed abstract mentions dapagliflozin." / "None of the closest abstracts
  mentions pacifier use.": no verdict, the sources are related reading;
- agreement, plainly stated: "No (3 of 3 studies) [1–3]." then the deciding findings, quoted;
  with the pool's support check (:func:`grounding.lead.with_finding`) the line goes on to state
  the deciding finding: "No (3 of 3 studies) [1–3]: Working memory training did not improve
  fluid intelligence [1]." (a model that can may write the lead instead: ``chains.lead``);
- disagreement: "Mixed evidence (2 yes [1, 3], 1 no [2])." then one finding of each side;
- nothing stated plainly: "No clear answer (1 study, not plainly yes or no) [1]."

The verdict line makes no claim of its own about any abstract (it counts the stances); every
finding after it (or after its colon) is an abstract's own sentence, cited.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from grounding.concepts import Coverage, Gap
from grounding.stance import SourceStance

Verdict = Literal["yes", "no"]
VerdictReason = Literal[
    "agree",  # the addressing sources agree, plainly enough: the verdict is shown
    "mixed",  # some say yes, some no
    "unclear",  # none states a yes or a no
    "weak",  # they agree, but no source states it plainly enough (below the bar)
    "not_addressed",  # an essential concept of the question is in no source
    "not_yes_no",  # not a yes/no question: no verdict is asked for
]

# The weakest stance strength (the stance classifier's probability) that shows a verdict, chosen
# on PubMedQA dev by cross-validation (docs/verdicts.md).
VERDICT_BAR = 0.6


@dataclass
class Judgement:
    """Whether and how the sources answer the question."""

    addressed: bool
    gaps: list[Gap] = field(default_factory=list)  # what the closest sources lack
    stances: list[SourceStance] = field(default_factory=list)  # of the addressing sources
    addressing: list[int] = field(default_factory=list)  # sources covering every concept
    verdict: Verdict | None = None
    reason: VerdictReason = "not_yes_no"
    lead: str = ""  # the first sentence the user reads (citations included)
    lead_quotes: str = ""  # the deciding sentence the lead states (not quoted again after it)
    lead_by: Literal["stances", "model", ""] = ""  # who wrote the lead ("" when there is none)

    @property
    def missing(self) -> list[str]:
        return [g.name for g in self.gaps]

    @property
    def absent_from_index(self) -> list[str]:
        return [g.name for g in self.gaps if g.absent_from_index]

    @property
    def verdict_sources(self) -> list[int]:
        return [s.source for s in self.stances if self.verdict and s.stance == self.verdict]

    def counts(self) -> dict[str, int]:
        out = {"yes": 0, "no": 0, "unclear": 0}
        for s in self.stances:
            out[s.stance] += 1
        return out

    @property
    def summary(self) -> str:
        """One line over the sources: "3 studies: 3 no", "2 studies: 1 yes, 1 unclear"."""
        if not self.stances:
            return ""
        n = len(self.stances)
        parts = [f"{k} {label}" for label, k in self.counts().items() if k]
        return f"{n} {'study' if n == 1 else 'studies'}: " + ", ".join(parts)


def cite(numbers: Sequence[int]) -> str:
    """"[1]", "[1, 3]", "[1–3]" (a run of three or more as a range)."""
    ns = sorted(set(numbers))
    if not ns:
        return ""
    if len(ns) >= 3 and ns[-1] - ns[0] == len(ns) - 1:
        return f"[{ns[0]}–{ns[-1]}]"
    return "[" + ", ".join(str(n) for n in ns) + "]"


def names(names: Sequence[str]) -> str:
    names = list(dict.fromkeys(names))
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " or " + names[-1]


def missing_text(coverage: Coverage) -> str:
    """What the abstracts lack, in a sentence naming it."""
    gaps = coverage.gaps
    absent = [g.name for g in gaps if g.absent_from_index]
    if absent:
        return f"No indexed abstract mentions {names(absent)}."
    nowhere = [g.name for g in gaps if not g.in_some_source]
    if nowhere:
        return f"None of the closest abstracts mentions {names(nowhere)}."
    covered = [c.text for c in coverage.concepts if c.essential and c.text not in
               {g.name for g in gaps}]  # fmt: skip
    together = f" together with {names(covered)}" if covered else ""
    return f"None of the closest abstracts addresses {names([g.name for g in gaps])}{together}."


def _studies(n: int) -> str:
    return f"{n} {'study' if n == 1 else 'studies'}"


def agreeing(j: Judgement) -> str:
    """How many addressing studies give the shown verdict: "3 of 3 studies", "1 study"."""
    assert j.verdict is not None
    n = len(j.stances)
    k = j.counts()[j.verdict]
    return _studies(n) if k == n == 1 else f"{k} of {_studies(n)}"


def verdict_count(j: Judgement) -> str:
    """The shown verdict and how many addressing studies give it: "No (3 of 3 studies)",
    "No (1 study)"."""
    assert j.verdict is not None
    return f"{j.verdict.capitalize()} ({agreeing(j)})"


def lead_sentence(j: Judgement) -> str:
    """The verdict line that opens the answer to a yes/no question, cited: the verdict and how
    many addressing studies give it ("No (3 of 3 studies) [1–3]."), "Mixed evidence (1 yes [3],
    2 no [1, 2])." or "No clear answer (1 study, not plainly yes or no) [1]."; "" when there is
    nothing to say. The findings it rests on follow it, quoted (see grounding.compose)."""
    n = len(j.stances)
    if j.reason == "agree" and j.verdict is not None:
        return f"{verdict_count(j)} {cite(j.verdict_sources)}."
    if j.reason == "mixed":
        yes = [s.source for s in j.stances if s.stance == "yes"]
        no = [s.source for s in j.stances if s.stance == "no"]
        return f"Mixed evidence ({len(yes)} yes {cite(yes)}, {len(no)} no {cite(no)})."
    if j.reason in ("unclear", "weak") and n:
        return (f"No clear answer ({_studies(n)}, not plainly yes or no) "
                f"{cite([s.source for s in j.stances])}.")  # fmt: skip
    return ""


def judge(
    coverage: Coverage,
    stances: Sequence[SourceStance],
    *,
    yes_no: bool,
    bar: float = VERDICT_BAR,
) -> Judgement:
    """The judgement from the coverage and the stances of the addressing sources."""
    if not coverage.addressed:
        j = Judgement(False, coverage.gaps, reason="not_addressed")
        j.addressing = list(coverage.addressing)
        j.lead = missing_text(coverage)
        j.lead_by = "stances"
        return j
    j = Judgement(True, stances=list(stances), addressing=list(coverage.addressing))
    if not yes_no:
        j.reason = "not_yes_no"
        return j
    said = {s.stance for s in stances if s.stance != "unclear"}
    if len(said) > 1:
        j.reason = "mixed"
    elif not said:
        j.reason = "unclear"
    else:
        verdict: Verdict = "yes" if "yes" in said else "no"
        plain = max(s.strength for s in stances if s.stance == verdict) >= bar
        j.reason = "agree" if plain else "weak"
        j.verdict = verdict if plain else None
    j.lead = lead_sentence(j)
    j.lead_by = "stances" if j.lead else ""
    return j
