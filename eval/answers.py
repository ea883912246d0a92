"""``python -m app eval answers``: PubMedQA-style yes/no/maybe accuracy and macro-F1.

Settings: ``gold`` gives the model the question's own ``contexts`` (the abstract without its
conclusion: the official reasoning-required setting); ``rag`` retrieves from the index like the
assistant does. Methods: ``score`` (calibrated log-probabilities of yes/no/maybe; one forward
pass a question) and ``json`` (the model writes ``{"draft", "answer"}``; broken output is counted
as invalid and decided by scoring). ``--calibrate`` learns per-class offsets on the dev split and
stores them next to the yes/no prompt; evaluate on test afterwards.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from langchain_core.documents import Document

from app.config import Config
from app.errors import UserFacingError

SHARED_QUESTIONS = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "eval" / "pubmedqa_pqal.jsonl"
)
LABELS = ("yes", "no", "maybe")
MAJORITY_TEST = 0.552  # share of "yes" in the PubMedQA test split (anchor for the printed table)


class QuestionFileError(UserFacingError):
    """The question file is absent or not in the expected shape."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--questions", default=str(SHARED_QUESTIONS), help="JSONL question file")
    parser.add_argument("--split", default="test", help="test, dev or all (default test)")
    parser.add_argument("--setting", choices=("gold", "rag"), default="rag")
    parser.add_argument("--method", choices=("score", "json"), default=None,
                        help="default: the calibration file's, else score")  # fmt: skip
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--calibrate", action="store_true",
                        help="fit yes/no/maybe offsets on the DEV split and save them")  # fmt: skip
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
        from chains.llm import get_llm, message_token_counter
        from chains.prompts import Prompts

        self.cfg = cfg
        self.setting = setting
        self.prompts = Prompts.from_config(cfg)
        self.retriever = None
        if setting == "rag":
            from retrievers.loading import load_retriever

            self.retriever = load_retriever(cfg)
        self.llm = get_llm(cfg.llm, root=cfg.root)
        self.count = message_token_counter(self.llm)

    def documents(self, row: dict) -> list[Document]:
        if self.setting == "gold":
            return gold_documents(row)
        retrieval = self.retriever.retrieve(row["question"])  # type: ignore[union-attr]
        return [] if retrieval.empty else list(retrieval.documents)

    def fit(self, question: str, docs: list[Document], max_words: int | None) -> list[Document]:
        from chains.budget import fit_prompt
        from chains.verdict import yes_no_messages

        budget = self.cfg.llm.context_window - 80
        fitted = fit_prompt(
            lambda d, _h: yes_no_messages(self.prompts.yes_no, question, d, max_words),
            docs,
            [],
            self.count,
            budget,
        )
        return fitted.documents


def run(cfg: Config, args: argparse.Namespace) -> int:
    from chains.verdict import can_score, generate_verdict, score_verdict
    from chains.yesno import Calibration, calibration_path, fit_bias, save_calibration

    split = "dev" if args.calibrate else args.split
    rows = load_questions(Path(args.questions), split, args.limit)
    scorer = Scorer(cfg, args.setting)
    cal_file = calibration_path(scorer.prompts.yes_no_path)
    calibration = (
        Calibration() if (args.raw or args.calibrate) else Calibration.load(cal_file, args.setting)
    )
    method = args.method or calibration.method
    if method == "score" and not can_score(scorer.llm):
        method = "json"  # remote/gpt4all models give no log-probabilities
    max_words = None if args.setting == "gold" else 160

    gold: list[str] = []
    outcomes = []
    t0 = time.perf_counter()
    progress = _progress(len(rows), args.json)
    for row in rows:
        docs = scorer.fit(row["question"], scorer.documents(row), max_words)
        if method == "score":
            out = score_verdict(
                scorer.llm, scorer.prompts.yes_no, row["question"], docs, calibration,
                max_words=max_words,
            )  # fmt: skip
        else:
            out = generate_verdict(
                scorer.llm, scorer.prompts.yes_no, row["question"], docs, calibration,
                max_words=max_words,
            )  # fmt: skip
        outcomes.append(out)
        gold.append(str(row["answer"]).lower())
        progress(1)
    progress(0, close=True)
    elapsed = time.perf_counter() - t0

    if args.calibrate:
        if method != "score":
            raise UserFacingError("--calibrate needs --method score (log-probabilities)")
        bias, acc = fit_bias([o.logprobs for o in outcomes], gold)
        cal = Calibration(
            bias,
            "score",
            {
                "split": "dev",
                "n": len(rows),
                "dev_accuracy": acc,
                "model": scorer.llm._identifying_params.get("model_name"),
            },
        )
        save_calibration(cal_file, args.setting, cal)
        calibration = cal
        print(f"saved calibration for setting {args.setting!r} to {cal_file}: {bias}",
              file=sys.stderr)  # fmt: skip

    pred = [
        (calibration.decide(o.logprobs) if o.logprobs and args.calibrate else o.verdict) or "yes"
        for o in outcomes
    ]
    invalid = sum(o.invalid for o in outcomes) if method == "json" else 0
    report = {
        **metrics(gold, pred),
        "invalid_rate": round(invalid / len(rows), 4),
        "n": len(rows),
        "setting": args.setting,
        "split": split,
        "method": method,
        "calibrated": any(calibration.bias.values()),
        "model": str(scorer.llm._identifying_params.get("model_name", type(scorer.llm).__name__)),
        "seconds_per_question": round(elapsed / len(rows), 3),
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_table(report)
    return 0


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
