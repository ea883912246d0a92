"""Yes/no questions: detection, robust parsing of the JSON verdict, and calibrated decisions.

The tiny model breaks JSON and says "yes" to nearly everything, so the verdict can also come from
the log-probabilities of "yes"/"no"/"maybe" in the answer slot, shifted by per-class offsets, or
(better: ``method: classifier``) from a logistic regression over the retrieved article's
conclusion: general wording cues (null findings, negation, doubt) and the model's channel scores.
Both are learned on the PubMedQA dev split (``eval answers --calibrate``) and stored as plain JSON
next to the prompt (``prompts/yes_no.calibration.json``).
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
    """How the verdict is decided for one setting (learned on the dev split): ``score`` adds
    per-class offsets to the option log-probs before the argmax; ``classifier`` feeds evidence cues
    and option log-prob differences to a :class:`VerdictClassifier`; ``json`` asks for the JSON."""

    bias: dict[str, float] = field(default_factory=lambda: {v: 0.0 for v in VERDICTS})
    method: Literal["score", "json", "classifier"] = "score"
    meta: dict = field(default_factory=dict)
    classifier: VerdictClassifier | None = None

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
        classifier = None
        if entry.get("classifier"):
            try:
                classifier = VerdictClassifier.from_dict(entry["classifier"])
            except (KeyError, TypeError, ValueError):
                classifier = None
        if method == "classifier" and classifier is None:
            method = "score"  # a damaged classifier entry: fall back to the offsets
        if method not in ("score", "json", "classifier"):
            method = "score"
        return cls(bias, method, entry.get("meta", {}), classifier)

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
    entry: dict = {"method": cal.method, "bias": cal.bias, "meta": cal.meta}
    if cal.classifier is not None:
        entry["classifier"] = cal.classifier.to_dict()
    data[setting] = entry
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


# ---- evidence selection -------------------------------------------------------------------------
# A 135M model reads a few sentences far better than three abstracts: the verdict is taken from the
# retrieved article's conclusion (abstracts keep their section labels) plus the one sentence that
# shares most content words with the question.

_CONCLUSION_LABEL = re.compile(
    r"\b(?:CONCLUSIONS?(?: AND (?:CLINICAL )?(?:RELEVANCE|IMPLICATIONS?))?|INTERPRETATIONS?"
    r"|IMPLICATIONS?(?: FOR (?:PRACTICE|CLINICAL PRACTICE))?|SUMMARY|DISCUSSION)\s*:\s*"
)
_ANY_LABEL = re.compile(r"\b[A-Z][A-Z &/]{2,}[A-Z]\s*:\s*")  # "RESULTS:", "METHODS AND FINDINGS:"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[])")
_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "a an the of in on at to for and or is are was were be been do does did can could should "
    "would will may might must has have had with without by from as that this these those it its "
    "their there than which what who whom whose how when where why not no into among between "
    "versus vs patients patient study".split()
)


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split((text or "").strip()) if s.strip()]


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and len(w) > 2}


def conclusion_sentences(text: str, n_last: int = 2) -> tuple[list[str], bool]:
    """The sentences after the last "CONCLUSION(S):"-like label (up to the next label), or the
    last ``n_last`` sentences when the text has none. Returns (sentences, labelled)."""
    labels = list(_CONCLUSION_LABEL.finditer(text or ""))
    if labels:
        tail = text[labels[-1].end() :]
        nxt = _ANY_LABEL.search(tail)
        sentences = split_sentences(tail[: nxt.start()] if nxt else tail)
        if sentences:
            return sentences, True
    return split_sentences(_ANY_LABEL.sub("", text or ""))[-n_last:], False


def best_overlap_sentence(question: str, text: str, exclude: Sequence[str] = ()) -> str | None:
    """The sentence sharing most content words with the question (length-damped)."""
    q = content_words(question)
    best, best_score = None, 0.0
    for s in split_sentences(_ANY_LABEL.sub("", text or "")):
        if any(s in e or e in s for e in exclude):
            continue
        words = content_words(s)
        score = len(q & words) / (1 + math.log1p(len(words)))
        if score > best_score:
            best, best_score = s, score
    return best


@dataclass
class Evidence:
    """What the verdict reads: ``text`` (the sentence closest to the question, then the conclusion;
    shown to the model) and ``conclusion`` (the conclusion alone; its wording gives the cues)."""

    text: str
    conclusion: str
    labelled: bool = False  # a "CONCLUSION(S):"-like label was found


def select_evidence(question: str, text: str, max_words: int = 90) -> Evidence:
    """Conclusion-like sentences, preceded by the best-overlapping sentence when there is room;
    at most ``max_words`` words each."""
    chosen, labelled = conclusion_sentences(text)
    conclusion = " ".join(" ".join(chosen).split()[:max_words])
    words = sum(len(s.split()) for s in chosen)
    if words < max_words:
        extra = best_overlap_sentence(question, text, exclude=chosen)
        if extra and words + len(extra.split()) <= max_words * 1.5:
            chosen = [extra, *chosen]
    return Evidence(" ".join(" ".join(chosen).split()[:max_words]), conclusion, labelled)


# ---- evidence polarity cues ----------------------------------------------------------------------


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


# ---- the verdict classifier ----------------------------------------------------------------------


@dataclass
class VerdictClassifier:
    """Multinomial logistic regression over named features (cues, option log-prob differences),
    stored as plain JSON numbers next to the prompt: standardise, linear scores, argmax."""

    features: list[str]
    coef: list[list[float]]  # one row per class in VERDICTS
    intercept: list[float]
    mean: list[float]
    scale: list[float]
    meta: dict = field(default_factory=dict)

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

    def to_dict(self) -> dict:
        return {
            "features": self.features,
            "coef": self.coef,
            "intercept": self.intercept,
            "mean": self.mean,
            "scale": self.scale,
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, data: dict) -> VerdictClassifier:
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


def fit_classifier(
    rows: Sequence[dict[str, float]],
    gold: Sequence[str],
    features: Sequence[str],
    *,
    Cs: Sequence[float] = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0),
    folds: int = 5,
    repeats: int = 3,
    seed: int = 0,
) -> tuple[VerdictClassifier, dict]:
    """Fit the classifier on (dev) rows; the inverse regularisation C is picked by repeated
    stratified cross-validated accuracy (macro-F1 breaks ties; smaller C preferred), then the
    model is refit on all rows. Returns (classifier, cross-validation report)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.model_selection import StratifiedKFold

    names = list(features)
    x = np.array([[float(r.get(n, 0.0)) for n in names] for r in rows], dtype=float)
    y = np.array([VERDICTS.index(g) for g in gold])  # type: ignore[arg-type]
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    xs = (x - mean) / scale
    counts = np.bincount(y, minlength=len(VERDICTS))
    present = counts[counts > 0]
    if len(present) < 2:  # one class only: always say it
        only = int(np.flatnonzero(counts)[0]) if len(y) else 0
        intercept = [0.0 if i == only else -1e3 for i in range(len(VERDICTS))]
        model = VerdictClassifier(
            names, [[0.0] * len(names) for _ in VERDICTS], intercept,
            [float(m) for m in mean], [float(s) for s in scale],
        )  # fmt: skip
        return model, {"C": None, "cv_accuracy": None, "cv_macro_f1": None, "cv": []}
    folds = int(min(folds, present.min()))
    if folds < 2:  # too few questions to cross-validate: no choice of C
        Cs, repeats = (1.0,), 0
    per_c: list[dict] = []
    for c in Cs:
        if repeats == 0:
            per_c.append({"C": c, "cv_accuracy": float("nan"), "cv_macro_f1": float("nan")})
            continue
        accs, f1s = [], []
        for rep in range(repeats):
            pred = np.empty_like(y)
            skf = StratifiedKFold(folds, shuffle=True, random_state=seed + rep)
            for tr, te in skf.split(xs, y):
                clf = LogisticRegression(C=c, max_iter=5000).fit(xs[tr], y[tr])
                pred[te] = _predict_all(clf, xs[te])
            accs.append(accuracy_score(y, pred))
            f1s.append(f1_score(y, pred, labels=[0, 1, 2], average="macro", zero_division=0))
        per_c.append(
            {"C": c, "cv_accuracy": float(np.mean(accs)), "cv_macro_f1": float(np.mean(f1s))}
        )
    best = max(
        per_c, key=lambda r: (round(r["cv_accuracy"], 4), round(r["cv_macro_f1"], 4), -r["C"])
    )
    clf = LogisticRegression(C=best["C"], max_iter=5000).fit(xs, y)
    coef, intercept = _full_rows(clf, len(names))
    model = VerdictClassifier(
        names, coef, intercept, [float(m) for m in mean], [float(s) for s in scale]
    )
    def _num(v: float) -> float | None:
        return None if math.isnan(v) else round(v, 4)

    report = {
        "C": best["C"],
        "cv_accuracy": _num(best["cv_accuracy"]),
        "cv_macro_f1": _num(best["cv_macro_f1"]),
        "cv": [{k: _num(v) for k, v in r.items()} for r in per_c] if repeats else [],
        "folds": folds,
        "repeats": repeats,
    }
    return model, report


def _full_rows(clf, n_features: int) -> tuple[list[list[float]], list[float]]:  # noqa: ANN001
    """Coefficients for all three classes, also when a class was absent from the training rows."""
    coef = [[0.0] * n_features for _ in VERDICTS]
    intercept = [-1e3] * len(VERDICTS)
    classes = [int(c) for c in clf.classes_]
    if len(classes) == 2:  # sklearn keeps one row: the second class against the first
        intercept[classes[0]] = 0.0
        coef[classes[1]] = [float(w) for w in clf.coef_[0]]
        intercept[classes[1]] = float(clf.intercept_[0])
        return coef, intercept
    for row, cls in enumerate(classes):
        coef[cls] = [float(w) for w in clf.coef_[row]]
        intercept[cls] = float(clf.intercept_[row])
    return coef, intercept


def _predict_all(clf, x):  # noqa: ANN001, ANN202 - numpy
    return clf.predict(x)


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
