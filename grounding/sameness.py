"""Questions that ask whether two things are the SAME, and the wording that answers them.

"Are ISF concentrations equivalent to plasma concentrations?" or "Does practice at teaching
sites reflect community practice?" turn the stance cues around (:mod:`grounding.stance`): a
difference found says no, a similarity found says yes.
"""

from __future__ import annotations

import re


def _rx(*alternatives: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b", re.IGNORECASE)


# A question that asks whether two things are the SAME ("Are ISF concentrations equivalent to
# plasma concentrations?", "Does practice at teaching sites reflect community practice?") turns
# the cues around: a difference found says no, a similarity found says yes.
ASKS_SAMENESS = _rx(
    r"same", r"similar(?:ly)?", r"equivalent", r"equal(?:ly)?", r"comparable", r"identical",
    r"interchangeabl[ey]", r"reflects?", r"as (?:good|effective|safe|accurate|reliable) as",
    r"non-?inferior",
)  # fmt: skip
DIFFERENCE_FOUND = _rx(
    r"significant(?:ly)? (?:\w+ )?(?:higher|lower|greater|smaller|more|less|better|worse|"
    r"different|differ\w*)", r"differ(?:s|ed)? (?:significantly|markedly)?", r"higher", r"lower",
    r"greater", r"more", r"less", r"better", r"worse", r"superior", r"inferior",
    r"significant differences?",
)  # fmt: skip
SAMENESS_FOUND = _rx(
    r"similar", r"comparable", r"equivalent", r"identical", r"indistinguishable", r"same",
    r"non-?inferior", r"no (?:statistically )?(?:significant )?differences?",
    r"(?:did|does|do) not (?:significantly )?differ", r"not (?:significantly )?different",
)  # fmt: skip


# "siblings FROM THE SAME family", "IN a similar setting": a sameness word after a preposition
# describes what was studied; it is not what the question asks.
_DESCRIBES = re.compile(
    r"\b(?:from|in|at|of|within|on|for|by|to|with|among|under|into)\s+(?:the\s+|a\s+|an\s+)?$",
    re.IGNORECASE,
)


def asks_sameness(question: str) -> bool:
    """Does the question ask whether two things are the same (not whether they differ)?"""
    return any(
        _DESCRIBES.search(question[: m.start()]) is None for m in ASKS_SAMENESS.finditer(question)
    )
