"""The verdict's labels, which questions get one, and reading the JSON a model writes."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["yes", "no", "maybe"]
VERDICTS: tuple[Verdict, ...] = ("yes", "no", "maybe")

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


def _norm_verdict(value: object) -> Verdict | None:
    if not isinstance(value, str):
        return None
    m = re.match(r"\s*[\"']?\s*(yes|no|maybe)\b", value, re.IGNORECASE)
    return m.group(1).lower() if m else None  # type: ignore[return-value]


@dataclass
class ParsedVerdict:
    verdict: Verdict | None
    draft: str = ""
    valid_json: bool = False


def parse_verdict_json(text: str) -> ParsedVerdict:
    """Read ``{"draft": ..., "answer": ...}`` however broken: code fences, single quotes,
    missing braces, extra text, or only a bare "answer": yes."""
    text = (text or "").strip()
    body = re.sub(r"^```(?:json)?|```$", "", text, flags=re.IGNORECASE | re.MULTILINE).strip()
    m = re.search(r"\{.*\}", body, re.DOTALL)
    if m:
        for candidate in (m.group(0), m.group(0).replace("'", '"')):
            try:
                data = json.loads(candidate)
            except ValueError:
                continue
            if isinstance(data, dict):
                lower = {str(k).lower(): v for k, v in data.items()}
                verdict = _norm_verdict(lower.get("answer"))
                draft = lower.get("draft")
                return ParsedVerdict(
                    verdict, draft if isinstance(draft, str) else "", verdict is not None
                )
    draft_m = re.search(
        r"[\"']?draft[\"']?\s*:\s*[\"']?(.*?)[\"']?\s*(?:,|\n|$)", body, re.IGNORECASE
    )
    draft = draft_m.group(1).strip() if draft_m else ""
    ans = re.search(r"[\"']?answer[\"']?\s*[:=]\s*[\"']?\s*(yes|no|maybe)\b", body, re.IGNORECASE)
    if ans:
        return ParsedVerdict(ans.group(1).lower(), draft)  # type: ignore[arg-type]
    return ParsedVerdict(None, draft)
