"""How a verdict is decided, as learned on the dev split and stored as plain JSON next to the
prompt (``prompts/yes_no.calibration.json``): per-class offsets on the option log-probs
(``score``), a small classifier over evidence cues and the model's channel scores
(``classifier``), or the model's own JSON (``json``). Fitting lives in :mod:`.fit`."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from chains.verdict.cues import CHANNEL_FEATURES, LLM_FEATURES
from chains.verdict.labels import VERDICTS, Verdict

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

    def decide(self, logprobs: dict[str, float]) -> Verdict:
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


@dataclass
class VerdictClassifier:
    """Multinomial logistic regression over named features (cues, option log-prob differences),
    stored as plain JSON numbers next to the prompt: standardise, linear scores, argmax."""

    features: list[str]
    coef: list[list[float]]  # one row per class in VERDICTS
    intercept: list[float]
    mean: list[float]
    scale: list[float]
    meta: dict[str, Any] = field(default_factory=dict)

    def scores(self, values: dict[str, float]) -> dict[str, float]:
        x = [
            (float(values.get(name, mu)) - mu) / (sd or 1.0)
            for name, mu, sd in zip(self.features, self.mean, self.scale, strict=True)
        ]
        return {
            v: b + sum(w * xi for w, xi in zip(row, x, strict=True))
            for v, row, b in zip(VERDICTS, self.coef, self.intercept, strict=True)
        }

    def probabilities(self, values: dict[str, float]) -> dict[str, float]:
        s = self.scores(values)
        m = max(s.values())
        z = sum(math.exp(x - m) for x in s.values())
        return {v: math.exp(x - m) / z for v, x in s.items()}

    def decide(self, values: dict[str, float]) -> Verdict:
        s = self.scores(values)
        return max(VERDICTS, key=lambda v: s[v])

    def uses(self, names: Sequence[str]) -> bool:
        return any(name in self.features for name in names)

    def needs_llm(self) -> bool:
        """Whether a feature comes from the model (LLM_FEATURES, CHANNEL_FEATURES)."""
        return self.uses(LLM_FEATURES) or self.uses(CHANNEL_FEATURES)

    def to_dict(self) -> dict[str, Any]:
        return {
            "features": self.features,
            "coef": self.coef,
            "intercept": self.intercept,
            "mean": self.mean,
            "scale": self.scale,
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VerdictClassifier:
        features = [str(f) for f in data["features"]]
        coef = [[float(w) for w in row] for row in data["coef"]]
        intercept = [float(b) for b in data["intercept"]]
        mean = [float(m) for m in data["mean"]]
        scale = [float(s) for s in data["scale"]]
        if len(coef) != len(VERDICTS) or len(intercept) != len(VERDICTS):
            raise ValueError("a verdict classifier needs one coefficient row per class")
        if any(len(row) != len(features) for row in coef) or not (
            len(mean) == len(scale) == len(features)
        ):
            raise ValueError("verdict classifier: features, coef, mean and scale disagree")
        return cls(features, coef, intercept, mean, scale, dict(data.get("meta", {})))
