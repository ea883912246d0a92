"""Yes/no questions: detection, robust parsing of the JSON verdict, and calibrated scoring.

The tiny model breaks JSON and says "yes" to nearly everything, so the verdict can also come from
the log-probabilities of "yes"/"no"/"maybe" in the answer slot, shifted by per-class offsets
learned on the PubMedQA dev split (``eval answers --calibrate``) and stored next to the prompt.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
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
_YES_NO = re.compile(r"^\s*(?:" + "|".join(_AUX) + r")(?:n't|\s+not)?\b", re.IGNORECASE)


def is_yes_no_question(question: str) -> bool:
    """Rule-based: the question opens with an auxiliary verb (Is, Does, Can, Should, ...)."""
    return bool(_YES_NO.match(question or ""))


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


@dataclass
class Calibration:
    """Per-class log-prob offsets added before the argmax (learned on the dev split)."""

    bias: dict[str, float] = field(default_factory=lambda: {v: 0.0 for v in VERDICTS})
    method: Literal["score", "json"] = "score"
    meta: dict = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path, setting: str = "rag") -> Calibration:
        """The calibration for ``setting`` from a JSON file; no offsets when absent/unreadable."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls()
        entry = data.get(setting) or data.get("rag") or {}
        bias = {v: float(entry.get("bias", {}).get(v, 0.0)) for v in VERDICTS}
        method = entry.get("method", "score")
        return cls(bias, method if method in ("score", "json") else "score", entry.get("meta", {}))

    def decide(self, logprobs: dict[str, float]) -> Verdict:
        return max(VERDICTS, key=lambda v: logprobs.get(v, -math.inf) + self.bias.get(v, 0.0))


def calibration_path(yes_no_prompt: Path) -> Path:
    """``prompts/yes_no.txt`` -> ``prompts/yes_no.calibration.json``."""
    return yes_no_prompt.with_suffix(".calibration.json")


def save_calibration(path: Path, setting: str, cal: Calibration) -> None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    data[setting] = {"method": cal.method, "bias": cal.bias, "meta": cal.meta}
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def fit_bias(
    logprobs: Sequence[dict[str, float]], gold: Sequence[str], *, step: float = 0.1, span: float = 6
) -> tuple[dict[str, float], float]:
    """Grid-search offsets for "no" and "maybe" ("yes" fixed at 0) maximising accuracy, with
    macro-F1 as the tie-breaker and smaller offsets preferred. Returns (bias, accuracy)."""
    import numpy as np

    scores = np.array([[lp.get(v, -np.inf) for v in VERDICTS] for lp in logprobs], dtype=float)
    scores = np.nan_to_num(scores, neginf=-1e9)
    truth = np.array([VERDICTS.index(g) for g in gold])  # type: ignore[arg-type]
    n_steps = round(span / step)
    grid = np.round(np.arange(-n_steps, n_steps + 1) * step, 6)
    best_key: tuple[float, float, float] = (-1.0, -1.0, 0.0)
    best_bias = {v: 0.0 for v in VERDICTS}
    for b_no in grid:
        # all "maybe" offsets at once: (len(grid), n) predictions
        shifted = scores[None, :, :] + np.stack(
            [np.zeros_like(grid), np.full_like(grid, b_no), grid], axis=1
        )[:, None, :]
        preds = shifted.argmax(axis=2)
        accs = (preds == truth[None, :]).mean(axis=1)
        for j in np.flatnonzero(accs >= best_key[0] - 1e-9):
            f1 = _macro_f1(truth, preds[j])
            key = (float(accs[j]), f1, -(abs(float(b_no)) + abs(float(grid[j]))))
            if key > best_key:
                best_key = key
                b_maybe = round(float(grid[j]), 3)
                best_bias = {"yes": 0.0, "no": round(float(b_no), 3), "maybe": b_maybe}
    return best_bias, best_key[0]


def _macro_f1(truth, pred) -> float:  # noqa: ANN001 - numpy int arrays
    f1s = []
    for c in range(len(VERDICTS)):
        tp = float(((pred == c) & (truth == c)).sum())
        fp = float(((pred == c) & (truth != c)).sum())
        fn = float(((pred != c) & (truth == c)).sum())
        f1s.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return sum(f1s) / len(f1s)
