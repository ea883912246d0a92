"""The grounding settings live in :mod:`settings.grounding` (they are the ``answer:`` section of
cfg.yaml, and the config may import nothing above ``settings``); this name is kept for imports."""

from settings.grounding import AnswerStyle, EvidenceWeights, GroundingSettings

__all__ = ["AnswerStyle", "EvidenceWeights", "GroundingSettings"]
