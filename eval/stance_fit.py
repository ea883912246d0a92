"""``python -m eval.stance_fit``: fit the stance classifier on PubMedQA's DEV split.

PubMedQA's expert labels are per-article stances: each question is answered by one abstract's
conclusion (``long_answer``). The classifier (multinomial logistic regression over
:data:`grounding.stance.STANCE_FEATURES`, stored as plain JSON numbers in
``prompts/stance.classifier.json``) reads a source's answer sentences and gates the rules'
stance: a source's yes/no counts only when the classifier agrees with at least ``bar``
probability. Cross-validated precision and coverage on dev are printed and stored for each bar;
the test split is never read here (``eval verdicts`` reports it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from eval.grounding import SHARED_QUESTIONS
from eval.verdict.fit import fit_classifier
from grounding.concepts import question_stems
from grounding.stance import STANCE_FEATURES, stance_features
from ingest.sentences import split_sentences

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "prompts" / "stance.classifier.json"


def rows_for(question: str, conclusion: str) -> dict[str, float]:
    sentences = [s.text for s in split_sentences(conclusion)]
    return stance_features(sentences, question, question_stems(question))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", default=str(SHARED_QUESTIONS))
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    args = parser.parse_args(argv)
    path = Path(args.questions)
    if not path.is_file():
        print(f"question file not found: {path}", file=sys.stderr)
        return 2
    dev = [
        row
        for row in map(json.loads, path.read_text(encoding="utf-8").splitlines())
        if row.get("split") == "dev" and row.get("long_answer")
    ]
    features = [rows_for(r["question"], r["long_answer"]) for r in dev]
    gold = [r["answer"] for r in dev]
    clf, report = fit_classifier(features, gold, STANCE_FEATURES, Cs=(0.03, 0.1, 0.3))
    clf.meta = {"trained_on": "PubMedQA pqal dev (500)", "cv": report}
    Path(args.out).write_text(json.dumps(clf.to_dict(), indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
