"""Training (``eval answers --calibrate``, on the dev split): never run per question."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from eval.verdict.calibration import VerdictClassifier
from eval.verdict.labels import VERDICTS


def fit_bias(
    logprobs: Sequence[dict[str, float]], gold: Sequence[str], *, step: float = 0.1, span: float = 6
) -> tuple[dict[str, float], float]:
    """Grid-search offsets for "no" and "maybe" ("yes" fixed at 0) maximising accuracy, with
    macro-F1 as the tie-breaker and smaller offsets preferred. Returns (bias, accuracy)."""
    import numpy as np

    scores = np.array([[lp.get(v, -np.inf) for v in VERDICTS] for lp in logprobs], dtype=float)
    scores = np.nan_to_num(scores, neginf=-1e9)
    truth = np.array([VERDICTS.index(g) for g in gold])
    n_steps = round(span / step)
    grid = np.round(np.arange(-n_steps, n_steps + 1) * step, 6)
    best_key: tuple[float, float, float] = (-1.0, -1.0, 0.0)
    best_bias: dict[str, float] = {v: 0.0 for v in VERDICTS}
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


def _macro_f1(truth: Any, pred: Any) -> float:  # numpy int arrays
    f1s = []
    for c in range(len(VERDICTS)):
        tp = float(((pred == c) & (truth == c)).sum())
        fp = float(((pred == c) & (truth != c)).sum())
        fn = float(((pred != c) & (truth == c)).sum())
        f1s.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return sum(f1s) / len(f1s)


def fit_classifier(
    rows: Sequence[dict[str, float]],
    gold: Sequence[str],
    features: Sequence[str],
    *,
    Cs: Sequence[float] = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0),
    folds: int = 5,
    repeats: int = 3,
    seed: int = 0,
) -> tuple[VerdictClassifier, dict[str, Any]]:
    """Fit the classifier on (dev) rows; the inverse regularisation C is picked by repeated
    stratified cross-validated accuracy (macro-F1 breaks ties; smaller C preferred), then the
    model is refit on all rows. Returns (classifier, cross-validation report)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.model_selection import StratifiedKFold

    names = list(features)
    x = np.array([[float(r.get(n, 0.0)) for n in names] for r in rows], dtype=float)
    y = np.array([VERDICTS.index(g) for g in gold])
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
    per_c: list[dict[str, Any]] = []
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


def _full_rows(clf: Any, n_features: int) -> tuple[list[list[float]], list[float]]:
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


def _predict_all(clf: Any, x: Any) -> Any:  # numpy
    return clf.predict(x)
