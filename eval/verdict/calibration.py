"""How a verdict is decided, as learned on the dev split and stored as plain JSON next to the
prompt (``prompts/yes_no.calibration.json``): per-class offsets on the option log-probs
(``score``), a small classifier over evidence cues and the model's channel scores
(``classifier``), or the model's own JSON (``json``). Fitting lives in :mod:`.fit`."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from eval.verdict.cues import CHANNEL_FEATURES, LLM_FEATURES
from eval.verdict.labels import VERDICTS
from grounding.classifier import LinearClassifier
from grounding.yes_no import AnswerLabel

Method = Literal["score", "json", "classifier"]


@dataclass
class Calibration:
    """How the verdict is decided for one setting (learned on the dev split): ``score`` adds
    per-class offsets to the option log-probs before the argmax; ``classifier`` feeds evidence cues
    and option log-prob differences to a :class:`VerdictClassifier`; ``json`` asks for the JSON."""

    bias: dict[str, float] = field(default_factory=lambda: {v: 0.0 for v in VERDICTS})
    method: Method = "score"
    meta: dict[str, Any] = field(default_factory=dict)
    classifier: VerdictClassifier | None = None
    # Cues only, no model features: decides for models that give no log-probabilities (gpt4all,
    # OpenAI-compatible servers), fitted with ``eval answers --calibrate --fallback``.
    fallback: VerdictClassifier | None = None

    def classifier_for(self, can_score: bool) -> VerdictClassifier | None:
        """The classifier this model can serve: the main one, else the cues-only fallback."""
        if self.classifier is not None and (can_score or not self.classifier.needs_llm()):
            return self.classifier
        if self.fallback is not None and not self.fallback.needs_llm():
            return self.fallback
        return None

    @classmethod
    def load(cls, path: Path, setting: str = "rag") -> Calibration:
        """The calibration for ``setting`` from a JSON file; no offsets when absent/unreadable."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls()
        entry = data.get(setting) or data.get("rag") or {}
        bias: dict[str, float] = {v: float(entry.get("bias", {}).get(v, 0.0)) for v in VERDICTS}
        method = entry.get("method", "score")
        classifier = _classifier(entry.get("classifier"))
        fallback = _classifier(entry.get("fallback_classifier"))
        if method == "classifier" and classifier is None:
            method = "score"  # a damaged classifier entry: fall back to the offsets
        if method not in ("score", "json", "classifier"):
            method = "score"
        return cls(bias, method, entry.get("meta", {}), classifier, fallback)

    def decide(self, logprobs: dict[str, float]) -> AnswerLabel:
        return max(VERDICTS, key=lambda v: logprobs.get(v, -math.inf) + self.bias.get(v, 0.0))


def _classifier(data: object) -> VerdictClassifier | None:
    """A stored classifier, or None when absent or damaged."""
    if not isinstance(data, dict) or not data:
        return None
    try:
        return VerdictClassifier.from_dict(data)
    except (KeyError, TypeError, ValueError):
        return None


def calibration_path(yes_no_prompt: Path) -> Path:
    """``prompts/yes_no.txt`` -> ``prompts/yes_no.calibration.json``."""
    return yes_no_prompt.with_suffix(".calibration.json")


def save_calibration(path: Path, setting: str, cal: Calibration) -> None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    entry: dict[str, Any] = {"method": cal.method, "bias": cal.bias, "meta": cal.meta}
    if cal.classifier is not None:
        entry["classifier"] = cal.classifier.to_dict()
    if cal.fallback is not None:
        entry["fallback_classifier"] = cal.fallback.to_dict()
    data[setting] = entry
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


class VerdictClassifier(LinearClassifier):
    """The verdict's classifier: a :class:`grounding.classifier.LinearClassifier` that can say
    whether it reads the model's scores."""

    def needs_llm(self) -> bool:
        """Whether a feature comes from the model (LLM_FEATURES, CHANNEL_FEATURES)."""
        return self.uses(LLM_FEATURES) or self.uses(CHANNEL_FEATURES)
