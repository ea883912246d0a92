"""Which questions are yes/no questions (they get a verdict: :mod:`grounding.consensus`)."""

from __future__ import annotations

import re
from typing import Literal

# A yes/no question's answer (the PubMedQA labels); the chat shows yes or no only
# (grounding.consensus.Verdict), "maybe" is the evaluation's third class.
AnswerLabel = Literal["yes", "no", "maybe"]
ANSWER_LABELS: tuple[AnswerLabel, ...] = ("yes", "no", "maybe")

_AUX = [
    "is",
    "are",
    "am",
    "was",
    "were",
    "do",
    "does",
    "did",
    "can",
    "could",
    "should",
    "shall",
    "will",
    "would",
    "has",
    "have",
    "had",
    "may",
    "might",
    "must",
]
_AUX_RX = "(?:" + "|".join(_AUX) + r")(?:n't|\s+not)?\b"
# A follow-up may open with a connective: "And does it ...?", "So, is ...?", "But do ...?"
_CONNECTIVE = r"(?:(?:and|but|so|also|then|ok(?:ay)?|well|and\s+so|but\s+then)\b[\s,]*)?"
_YES_NO = re.compile(r"^\s*" + _CONNECTIVE + _AUX_RX, re.IGNORECASE)
# "In children with NF1, does simvastatin ...?", "When a child ..., do IQ scores drop?"
_CLAUSE_YES_NO = re.compile(r"[,:;.?]\s+" + _AUX_RX + r"[^.?]*\?\s*$", re.IGNORECASE)
_WH = re.compile(
    r"^\s*" + _CONNECTIVE + r"(?:what|which|who|whom|whose|how|why|where)\b", re.IGNORECASE
)


def is_yes_no_question(question: str) -> bool:
    """Rule-based: the question opens with an auxiliary verb (Is, Does, Can, Should, ...), or
    its last clause does after an opening phrase or a title ("Among adults over 60, is ...?",
    "Breast cancer clinics: do they work?"), unless it opens with a wh-word."""
    text = question or ""
    if _YES_NO.match(text):
        return True
    return not _WH.match(text) and bool(_CLAUSE_YES_NO.search(text))
