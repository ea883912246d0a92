"""``python -m app eval answers``: PubMedQA-style yes/no/maybe accuracy and macro-F1.

Settings: ``gold`` gives the model the question's own ``contexts`` (the abstract without its
conclusion: the official reasoning-required setting); ``rag`` retrieves from the index like the
assistant does. Methods: ``classifier`` (the default once calibrated: the top article's conclusion
is selected (rag: its last chunk) and a logistic regression over the conclusion's wording cues and
the model's channel scores, log P(conclusion | "Yes."/"No."/"Maybe."), decides), ``score``
(calibrated log-probabilities of yes/no/maybe after the JSON prompt; one forward pass a question)
and ``json`` (the model writes ``{"draft", "answer"}``; broken output is counted as invalid and
decided by scoring).
``--calibrate`` fits on the DEV split (the classifier, or with ``--method score`` per-class
offsets) and stores it next to the yes/no prompt; evaluate on test afterwards.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from langchain_core.documents import Document

from eval.verdict import (
    CHANNEL_FEATURES,
    CLASSIFIER_FEATURES,
    LLM_FEATURES,
    Calibration,
    Method,
    VerdictDecider,
    VerdictOutcome,
    calibration_path,
    fit_bias,
    save_calibration,
)
from settings.config import Config
from settings.errors import UserFacingError

SHARED_QUESTIONS = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "eval" / "pubmedqa_pqal.jsonl"
)
LABELS = ("yes", "no", "maybe")
FEATURE_SETS = ("cues+channel", "cues+lp", "all", "cues")
MAJORITY_TEST = 0.552  # share of "yes" in the PubMedQA test split (anchor for the printed table)


class QuestionFileError(UserFacingError):
    """The question file is absent or not in the expected shape."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--questions", default=str(SHARED_QUESTIONS), help="JSONL question file")
    parser.add_argument("--split", default="test", help="test, dev or all (default test)")
    parser.add_argument("--setting", choices=("gold", "rag"), default="rag")
    parser.add_argument("--method", choices=("classifier", "score", "json"), default=None,
                        help="default: the calibration file's, else score "
                        "(with --calibrate: classifier)")  # fmt: skip
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--calibrate", action="store_true",
                        help="fit yes/no/maybe offsets on the DEV split and save them")  # fmt: skip
    parser.add_argument("--features", choices=FEATURE_SETS, default="cues+channel",
                        help="--calibrate --method classifier: the evidence cues plus the model's "
                        "channel scores (cues+channel, default), its option log-probs after the "
                        "short prompt (cues+lp), both (all), or no model (cues)")  # fmt: skip
    parser.add_argument("--features-cache", default=None, metavar="FILE.jsonl",
                        help="reuse/record per-question classifier features (refits without "
                        "rerunning the model)")  # fmt: skip
    parser.add_argument("--torch-threads", type=int, default=None, metavar="N",
                        help="torch CPU threads after loading (1 is much faster on a busy "
                        "machine; default: as loaded)")  # fmt: skip
    parser.add_argument("--fallback", action="store_true",
                        help="the cues-only classifier that decides for models without "
                        "log-probabilities (gpt4all, openai): with --calibrate fit it (the "
                        "stored main one is kept), else decide with it for any model")  # fmt: skip
    parser.add_argument("--raw", action="store_true", help="ignore the stored calibration")
    parser.add_argument("--json", action="store_true", help="print the metrics as JSON")


def load_questions(path: Path, split: str, limit: int | None = None) -> list[dict]:
    if not path.is_file():
        raise QuestionFileError(
            f"question file not found: {path} (pass --questions FILE.jsonl with question, "
            "answer and, for --setting gold, contexts)"
        )
    rows: list[dict] = []
    with path.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as err:
                raise QuestionFileError(f"{path}:{i}: not JSON ({err})") from None
            if str(row.get("answer", "")).lower() not in LABELS or not row.get("question"):
                continue
            if split != "all" and row.get("split", split) != split:
                continue
            rows.append(row)
            if limit and len(rows) >= limit:
                break
    if not rows:
        raise QuestionFileError(
            f"{path} has no questions with a yes/no/maybe answer in split {split!r}"
        )
    return rows


def gold_documents(row: dict) -> list[Document]:
    contexts = row.get("contexts") or []
    if isinstance(contexts, dict):  # the original PubMedQA layout
        contexts = contexts.get("contexts", [])
    if not contexts:
        raise QuestionFileError(
            f"question {row.get('qid', '?')} has no contexts for --setting gold"
        )
    pmid = str((row.get("gold_pmids") or [""])[0])
    return [Document(page_content=" ".join(contexts), metadata={"pmid": pmid, "title": ""})]


def metrics(gold: list[str], pred: list[str]) -> dict[str, Any]:
    from sklearn.metrics import accuracy_score, f1_score

    return {
        "accuracy": round(float(accuracy_score(gold, pred)), 4),
        "macro_f1": round(
            float(f1_score(gold, pred, labels=list(LABELS), average="macro", zero_division=0)), 4
        ),
        "predicted": dict(Counter(pred)),
        "gold": dict(Counter(gold)),
    }


class Scorer:
    """Everything one question needs: the LLM, prompts, the retriever (rag) and the budget."""

    def __init__(self, cfg: Config, setting: str) -> None:
        from chains.prompts import Prompts
        from llms.llm import get_llm, message_token_counter

        self.cfg = cfg
        self.setting = setting
        self.prompts = Prompts.from_config(cfg)
        self.retriever = None
        if setting == "rag":
            from retrievers.loading import load_retriever

            self.retriever = load_retriever(cfg)
        self.llm = get_llm(cfg.llm, root=cfg.root)
        self.count = message_token_counter(self.llm)

    def decider(self, method: Method, calibration: Calibration) -> VerdictDecider:
        """rag: the verdict reads the top article's conclusion (its last chunk) and passages of
        160 words; gold: the given contexts (the abstract without its conclusion) are the whole
        evidence."""
        return VerdictDecider.from_prompts(
            self.prompts, calibration, context_window=self.cfg.llm.context_window,
            retriever=self.retriever, method=method,
            max_words=None if self.setting == "gold" else 160,
        )  # fmt: skip

    def documents(self, row: dict) -> list[Document]:
        if self.setting == "gold":
            return gold_documents(row)
        retrieval = self.retriever.retrieve(row["question"])  # type: ignore[union-attr]
        return [] if retrieval.empty else list(retrieval.documents)


def run(cfg: Config, args: argparse.Namespace) -> int:
    from llms.capabilities import as_scorer

    split = "dev" if args.calibrate else args.split
    rows = load_questions(Path(args.questions), split, args.limit)
    scorer = Scorer(cfg, args.setting)
    if getattr(args, "torch_threads", None):
        import torch

        torch.set_num_threads(args.torch_threads)  # the embedder sets all cores when it loads
    cal_file = calibration_path(scorer.prompts.yes_no_path)
    stored = Calibration.load(cal_file, args.setting)
    calibration = Calibration() if (args.raw or args.calibrate) else stored
    fallback = bool(getattr(args, "fallback", False))
    if fallback and not args.calibrate:
        if stored.fallback is None:
            raise UserFacingError(
                f"no cues-only verdict classifier for setting {args.setting!r} in {cal_file}: "
                f"fit one with `eval answers --calibrate --fallback --setting {args.setting}`"
            )
        calibration = replace(stored, classifier=stored.fallback)
    method: Method = args.method or ("classifier" if args.calibrate else calibration.method)
    if method == "score" and as_scorer(scorer.llm) is None:
        method = "json"  # remote/gpt4all models give no log-probabilities
    can_score = as_scorer(scorer.llm) is not None
    if (method == "classifier" and not args.calibrate
            and calibration.classifier_for(can_score) is None):  # fmt: skip
        raise UserFacingError(
            f"no verdict classifier this model can serve for setting {args.setting!r} in "
            f"{cal_file}: fit one with `eval answers --calibrate --setting {args.setting}` "
            "(dev split; add --fallback for models without log-probabilities)"
        )
    decider = scorer.decider(method, calibration)
    wanted = _wanted_features(
        "cues" if fallback else (getattr(args, "features", None) or FEATURE_SETS[0])
    )
    cache = _FeatureCache(getattr(args, "features_cache", None), args.setting)

    gold: list[str] = []
    outcomes = []
    t0 = time.perf_counter()
    progress = _progress(len(rows), args.json)
    for row in rows:
        outcomes.append(
            _answer(scorer, decider, row, cache, args.calibrate, wanted)
        )
        gold.append(str(row["answer"]).lower())
        progress(1)
    progress(0, close=True)
    cache.close()
    elapsed = time.perf_counter() - t0

    if args.calibrate:
        calibration = _calibrate(scorer, method, outcomes, gold, rows, stored, wanted)
        # --fallback keeps the stored main classifier; the new one serves models that cannot score
        saved = replace(stored, fallback=calibration.classifier) if fallback else calibration
        save_calibration(cal_file, args.setting, saved)
        print(f"saved {method} calibration for setting {args.setting!r} to {cal_file}: "
              f"{calibration.meta}", file=sys.stderr)  # fmt: skip

    decided = [_decided(o, calibration, method) if args.calibrate else o.verdict for o in outcomes]
    pred: list[str] = [p or "yes" for p in decided]
    invalid = sum(o.invalid for o in outcomes) if method == "json" else 0
    report = {
        **metrics(gold, pred),
        "invalid_rate": round(invalid / len(rows), 4),
        "n": len(rows),
        "setting": args.setting,
        "split": split,
        "method": method,
        "calibrated": method == "classifier" or any(calibration.bias.values()),
        "classifier": _which_classifier(method, calibration, fallback, as_scorer(scorer.llm)),
        "model": str(scorer.llm._identifying_params.get("model_name", type(scorer.llm).__name__)),
        "seconds_per_question": round(elapsed / len(rows), 3),
    }
    if args.calibrate:
        report["note"] = "in-sample: fitted on these questions (see cv_accuracy in the file)"
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_table(report)
    return 0


def _answer(
    scorer: Scorer,
    decider: VerdictDecider,
    row: dict,
    cache: _FeatureCache,
    calibrating: bool,
    wanted: tuple[str, ...],
) -> VerdictOutcome:
    question = row["question"]
    if decider.method == "classifier" and calibrating:  # the classifier is fitted afterwards
        hit = cache.get(row)
        if hit is not None and all(name in hit[0] for name in wanted):
            return VerdictOutcome(None, hit[1], features=hit[0])
        out = decider.features(scorer.llm, question, scorer.documents(row), scorer.count, wanted)
        cache.put(row, out.features, out.logprobs)
        return out
    return decider.decide(scorer.llm, question, scorer.documents(row), scorer.count)


def _calibrate(
    scorer: Scorer,
    method: str,
    outcomes: list,
    gold: list[str],
    rows: list[dict],
    stored: Any,
    wanted: tuple[str, ...],
) -> Any:
    from eval.verdict import fit_classifier

    model = scorer.llm._identifying_params.get("model_name")
    if method == "score":
        bias, acc = fit_bias([o.logprobs for o in outcomes], gold)
        return Calibration(
            bias, "score", {"split": "dev", "n": len(rows), "dev_accuracy": acc, "model": model},
            stored.classifier,
        )  # fmt: skip
    if method != "classifier":
        raise UserFacingError("--calibrate needs --method classifier or score")
    usable = [o.features for o in outcomes]
    names = [n for n in wanted if all(n in f for f in usable)]  # no model features: cues only
    clf, report = fit_classifier(usable, gold, names)
    uses_model = clf.needs_llm()
    meta = {
        "split": "dev",
        "n": len(rows),
        "features": names,
        "model": model if uses_model else None,
        **report,
    }
    clf.meta = meta
    return Calibration(stored.bias, "classifier", meta, clf)


def _which_classifier(method: str, calibration: Any, fallback: bool, scorer: Any) -> str | None:
    """``main`` or ``fallback`` (cues only): which classifier decided, for the report."""
    if method != "classifier":
        return None
    if fallback:
        return "fallback"
    chosen = calibration.classifier_for(scorer is not None)
    return "main" if chosen is calibration.classifier else "fallback"


def _wanted_features(feature_set: str) -> tuple[str, ...]:
    extra = {"cues": (), "cues+lp": LLM_FEATURES, "cues+channel": CHANNEL_FEATURES,
             "all": LLM_FEATURES + CHANNEL_FEATURES}[feature_set]  # fmt: skip
    return tuple(CLASSIFIER_FEATURES) + tuple(extra)


def _decided(outcome: Any, calibration: Any, method: str) -> str | None:
    if method == "classifier" and calibration.classifier is not None:
        return calibration.classifier.decide(outcome.features)
    if method == "score" and outcome.logprobs:
        return calibration.decide(outcome.logprobs)
    return outcome.verdict


class _FeatureCache:
    """Per-question classifier inputs in a JSONL file (``--features-cache``), keyed by setting,
    question id and question text, so that refits on the dev split need not rerun the model."""

    def __init__(self, path: str | None, setting: str) -> None:
        self.path = Path(path) if path else None
        self.setting = setting
        self.entries: dict[str, dict] = {}
        self._fh: TextIO | None = None
        if self.path and self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    e = json.loads(line)
                    self.entries[e["key"]] = e
                except (ValueError, KeyError, TypeError):
                    continue

    def _key(self, row: dict) -> str:
        return f"{self.setting}|{row.get('qid', '')}|{row['question']}"

    def get(self, row: dict) -> tuple[dict, dict] | None:
        e = self.entries.get(self._key(row))
        return (e["features"], e.get("logprobs") or {}) if e else None

    def put(self, row: dict, features: dict, logprobs: dict) -> None:
        if self.path is None:
            return
        if self._fh is None:
            self._fh = self.path.open("a", encoding="utf-8")
        e = {"key": self._key(row), "features": features, "logprobs": logprobs}
        self._fh.write(json.dumps(e) + "\n")
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()


def _progress(total: int, quiet: bool):
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        return lambda n, close=False: None
    bar = tqdm(total=total, file=sys.stderr, desc="questions", mininterval=5)

    def step(n: int, close: bool = False) -> None:
        if n:
            bar.update(n)
        if close:
            bar.close()

    return step


def _print_table(r: dict) -> None:
    rows = [
        ("setting", r["setting"]), ("split", r["split"]), ("method", r["method"]),
        ("calibrated", r["calibrated"]), ("model", r["model"]), ("questions", r["n"]),
        ("accuracy", f"{r['accuracy']:.3f}  (majority class on test: {MAJORITY_TEST:.3f})"),
        ("macro-F1", f"{r['macro_f1']:.3f}"), ("invalid JSON", f"{r['invalid_rate']:.1%}"),
        ("predicted", r["predicted"]), ("gold", r["gold"]),
        ("s / question", r["seconds_per_question"]),
    ]  # fmt: skip
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
