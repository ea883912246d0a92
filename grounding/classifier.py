"""The stance classifier (and the PubMedQA evaluation's verdict classifier): a linear model
stored as plain JSON numbers next to the prompts, and its loading for the chat."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from grounding.stance import StanceClassifier
from grounding.yes_no import ANSWER_LABELS as CLASSES
from grounding.yes_no import AnswerLabel

log = logging.getLogger(__name__)

STANCE_CLASSIFIER = "stance.classifier.json"


@dataclass
class LinearClassifier:
    """Multinomial logistic regression over named features (cues, option log-prob differences),
    stored as plain JSON numbers next to the prompt: standardise, linear scores, argmax. One
    class per label of :data:`CLASSES` (yes, no, maybe)."""

    features: list[str]
    coef: list[list[float]]  # one row per class in CLASSES
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
            for v, row, b in zip(CLASSES, self.coef, self.intercept, strict=True)
        }

    def probabilities(self, values: dict[str, float]) -> dict[str, float]:
        s = self.scores(values)
        m = max(s.values())
        z = sum(math.exp(x - m) for x in s.values())
        return {v: math.exp(x - m) / z for v, x in s.items()}

    def decide(self, values: dict[str, float]) -> AnswerLabel:
        s = self.scores(values)
        return max(CLASSES, key=lambda v: s[v])

    def uses(self, names: Sequence[str]) -> bool:
        return any(name in self.features for name in names)

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
    def from_dict(cls, data: dict[str, Any]) -> Self:
        features = [str(f) for f in data["features"]]
        coef = [[float(w) for w in row] for row in data["coef"]]
        intercept = [float(b) for b in data["intercept"]]
        mean = [float(m) for m in data["mean"]]
        scale = [float(s) for s in data["scale"]]
        if len(coef) != len(CLASSES) or len(intercept) != len(CLASSES):
            raise ValueError("a classifier needs one coefficient row per class")
        if any(len(row) != len(features) for row in coef) or not (
            len(mean) == len(scale) == len(features)
        ):
            raise ValueError("classifier: features, coef, mean and scale disagree")
        return cls(features, coef, intercept, mean, scale, dict(data.get("meta", {})))


def load_stance_classifier(folder: Path) -> StanceClassifier | None:
    """The fitted stance classifier next to the prompts (``python -m eval.stance_fit``), as a
    function from stance features to probabilities; None (rules alone) when absent or damaged."""
    path = folder / STANCE_CLASSIFIER
    try:
        clf = LinearClassifier.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as err:
        log.warning("no stance classifier (%s): stances from the rules alone", err)
        return None
    return clf.probabilities
