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
# "In children with NF1, does simvastatin ...?", "When a child ..., do IQ scores drop?", "Fast
# foods - are they a risk factor for asthma?" (a dash joins the clauses as a colon does)
_CLAUSE_YES_NO = re.compile(r"(?:[,:;.?]|\s[-–—]|[–—])\s+" + _AUX_RX
                            + r"[^.?]*\?\s*$", re.IGNORECASE)
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


# A follow-up that carries no question of its own kind: "what about adults?", "how about in
# women?", "and in teenagers?", "or with a lower dose?"
_ELLIPTICAL = re.compile(r"^\s*(?:(?:what|how)\s+about|and|but|or|also)\b", re.IGNORECASE)


def asks_yes_no(question: str, earlier: list[str] | None = None) -> bool:
    """Whether ``question`` wants a yes or no. A follow-up that is no question of its own kind
    (``elliptical``: "what about adults?", "and in women?", or no wh-word and no auxiliary:
    "any long-term side effects?") asks what the question it continues asked: the last of
    ``earlier`` (the conversation's questions, oldest first) that is not elliptical too.
    ``earlier`` is given only for a follow-up read in the context of the conversation."""
    if is_yes_no_question(question):
        return True
    if not earlier or not _elliptical(question):
        return False
    own = [q for q in earlier if not _elliptical(q) or is_yes_no_question(q)]
    return bool(own) and is_yes_no_question(own[-1])


def _elliptical(question: str) -> bool:
    text = question or ""
    return bool(_ELLIPTICAL.match(text)) or not (_WH.match(text) or is_yes_no_question(text))
