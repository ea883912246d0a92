"""The verdict's labels and reading the JSON a model writes (which questions get a verdict:
:func:`grounding.yes_no.is_yes_no_question`, re-exported here)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from grounding.yes_no import ANSWER_LABELS, AnswerLabel, is_yes_no_question

# the order the verdict's classifiers and calibration use (the PubMedQA labels)
VERDICTS: tuple[AnswerLabel, ...] = ANSWER_LABELS

__all__ = ["VERDICTS", "AnswerLabel", "ParsedVerdict", "is_yes_no_question", "parse_verdict_json"]


def _norm_verdict(value: object) -> AnswerLabel | None:
    if not isinstance(value, str):
        return None
    m = re.match(r"\s*[\"']?\s*(yes|no|maybe)\b", value, re.IGNORECASE)
    return m.group(1).lower() if m else None  # type: ignore[return-value]


@dataclass
class ParsedVerdict:
    verdict: AnswerLabel | None
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
