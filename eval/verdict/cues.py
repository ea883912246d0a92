"""Wording cues of a conclusion (null findings, negation, doubt, ...) and the classifier's
feature names."""

from __future__ import annotations

import math
import re

from eval.verdict.evidence import content_words


def _rx(*alternatives: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b", re.IGNORECASE)


# General wording of findings (not tied to any benchmark): "no significant difference" and plain
# negation point to "no"; doubt and hedging to "maybe"; affirmative findings to "yes".
CUES: dict[str, re.Pattern[str]] = {
    "null_finding": _rx(
        r"no (?:\w+ ){0,2}(?:significant|statistically|significantly|clear|clinically|apparent|"
        r"major|relevant|measurable|detectable|obvious|consistent|difference|differences|"
        r"association|associations|correlation|relationship|relation|effect|effects|evidence|"
        r"benefit|advantage|impact|influence|role|improvement|increase|reduction|change|changes|"
        r"predictive|prognostic|value)",
        r"not (?:\w+ )?(?:significantly|statistically|associated|related|correlated|different|"
        r"differ|superior|effective|affected|influenced|predictive|predict|improve\w*|"
        r"increase\w*|reduce\w*|necessary|needed|required|justified|recommended|useful|reliable|"
        r"sufficient|accurate|supported|influence|affect|alter|change)",
        r"independent of", r"irrespective of", r"regardless of", r"unrelated", r"insufficient",
        r"ineffective", r"unnecessary", r"no need", r"no longer",
    ),  # fmt: skip
    "negation": _rx(
        r"(?:did|does|do|was|were|is|are|could|can|would|has|have|had|should) not", r"\w+n't",
        r"fail(?:ed|s)? to", r"unable to", r"cannot", r"neither", r"nor", r"lack of", r"lacks?",
        r"absence of", r"none", r"not",
    ),  # fmt: skip
    "equivalence": _rx(
        r"similar", r"comparable", r"equivalent", r"equally", r"non-?inferior",
        r"as (?:good|effective|safe|accurate) as",
    ),  # fmt: skip
    "doubt": _rx(
        r"unclear", r"uncertain", r"inconclusive", r"controversial", r"conflicting", r"mixed",
        r"not clear", r"remains? to be", r"cannot be (?:excluded|ruled out)", r"questionable",
        r"debat\w+", r"unknown", r"only (?:in|for|a|partially|partly)", r"partially", r"partly",
        r"some", r"subgroups?", r"selected", r"however", r"although", r"but",
    ),  # fmt: skip
    "modal": _rx(
        r"may", r"might", r"could", r"possibly", r"possible", r"potential(?:ly)?", r"appears?",
        r"seems?", r"suggest\w*", r"trend", r"likely",
    ),  # fmt: skip
    "further_study": _rx(
        r"further (?:\w+ ){0,2}(?:studies|study|research|investigation|trials|evaluation|work"
        r"|data)",
        r"warrant\w*", r"larger", r"prospective", r"(?:is|are) needed", r"required to", r"limited",
    ),  # fmt: skip
    "affirmative": _rx(
        r"significant(?:ly)?", r"effective(?:ly)?", r"improv\w+", r"associated with",
        r"increase[sd]?", r"reduce[sd]?", r"benefit\w*", r"should", r"recommend\w*", r"superior",
        r"better", r"higher", r"lower", r"predict\w*", r"correlat\w+", r"useful", r"safe",
        r"feasible", r"valuable", r"reliable", r"accurate", r"important", r"confirm\w*",
        r"demonstrat\w+", r"shows?", r"showed", r"shown", r"clearly", r"strongly",
        r"risk factor", r"indicat\w+", r"support\w*",
    ),  # fmt: skip
}
_Q_NEGATED = _rx(r"not", r"\w+n't", r"no", r"without", r"never")
_Q_COMPARES = _rx(
    r"differ\w*", r"better", r"superior", r"more", r"less", r"worse", r"improve\w*",
    r"increase\w*", r"reduce\w*", r"affect\w*", r"effective", r"associated", r"related",
    r"predict\w*", r"influence\w*",
)  # fmt: skip


def cue_features(question: str, evidence: str) -> dict[str, float]:
    """log(1 + count) of each cue in the evidence, plus a few properties of the question."""
    f = {"cue_" + name: math.log1p(len(rx.findall(evidence or ""))) for name, rx in CUES.items()}
    q_negated = float(bool(_Q_NEGATED.search(question or "")))
    q_compares = float(bool(_Q_COMPARES.search(question or "")))
    f["q_negated"] = q_negated
    f["q_compares"] = q_compares
    f["equivalence_x_compares"] = f["cue_equivalence"] * q_compares
    f["negation_x_q_negated"] = (f["cue_null_finding"] + f["cue_negation"]) * q_negated
    q = content_words(question)
    f["overlap"] = len(q & content_words(evidence or "")) / max(1, len(q))
    return f


# The classifier's inputs: evidence cues always; the model's option log-prob differences when the
# calibration is fitted with them (``eval answers --calibrate``, default ``--features all``).
CLASSIFIER_FEATURES: tuple[str, ...] = (
    *("cue_" + name for name in CUES),
    "q_negated",
    "q_compares",
    "equivalence_x_compares",
    "negation_x_q_negated",
    "overlap",
)
LLM_FEATURES: tuple[str, ...] = ("lp_no", "lp_maybe")  # options after the short evidence prompt
CHANNEL_FEATURES: tuple[str, ...] = ("ch_no", "ch_maybe")  # the conclusion after each option
