"""The yes/no verdict classifier: evidence selection, cues, the JSON-stored model, article tails."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import ClassVar

import pytest
from langchain_core.documents import Document

from eval.verdict import (
    CLASSIFIER_FEATURES,
    EVIDENCE_TEMPLATE,
    LLM_FEATURES,
    VERDICTS,
    ArticleTails,
    Calibration,
    Evidence,
    VerdictClassifier,
    classify_verdict,
    conclusion_sentences,
    cue_features,
    evidence_messages,
    fit_classifier,
    load_evidence_template,
    save_calibration,
    verdict_evidence,
    verdict_features,
    verdict_passage,
)
from llms.capabilities import Capabilities
from settings.config import Config
from tests.fake_retriever import FakeBackendBase

ABSTRACT = (
    "BACKGROUND: Statins lower cholesterol. We asked whether they prevent migraine. "
    "METHODS: 200 adults were randomised. RESULTS: Migraine days fell by 2 a month with statins "
    "versus 0.5 with placebo (P<0.01). CONCLUSIONS: Statins reduced migraine frequency. "
    "Larger trials are warranted."
)


def test_conclusion_sentences_after_the_label() -> None:
    sents, labelled = conclusion_sentences(ABSTRACT)
    assert labelled
    assert sents == ["Statins reduced migraine frequency.", "Larger trials are warranted."]


def test_conclusion_sentences_without_label_are_the_last_ones() -> None:
    sents, labelled = conclusion_sentences("One thing. Two things. Three things here.")
    assert not labelled and sents == ["Two things.", "Three things here."]
    assert conclusion_sentences("") == ([], False)


def test_verdict_passage_adds_the_best_overlapping_sentence_and_caps_words() -> None:
    ev = verdict_passage("Do statins prevent migraine days?", ABSTRACT)
    assert ev.labelled
    assert ev.text.startswith("Migraine days fell")
    assert ev.text.endswith("Larger trials are warranted.")
    assert ev.conclusion == "Statins reduced migraine frequency. Larger trials are warranted."
    short = verdict_passage("Do statins prevent migraine days?", ABSTRACT, max_words=5)
    assert len(short.text.split()) == 5 and len(short.conclusion.split()) == 5


def test_cue_features_polarity() -> None:
    neg = cue_features("Does X improve Y?", "There was no significant difference in Y.")
    pos = cue_features("Does X improve Y?", "X significantly improved Y.")
    hedge = cue_features("Does X improve Y?", "The role of X remains unclear; further studies...")
    assert neg["cue_null_finding"] > 0 and pos["cue_null_finding"] == 0
    assert pos["cue_affirmative"] > neg["cue_affirmative"]
    assert hedge["cue_doubt"] > 0 and hedge["cue_further_study"] > 0
    assert neg["q_compares"] == 1.0 and neg["q_negated"] == 0.0
    assert set(CLASSIFIER_FEATURES) <= set(neg)
    assert all(math.isfinite(v) for v in neg.values())


def _toy_rows(n: int = 60) -> tuple[list[dict[str, float]], list[str]]:
    rows, gold = [], []
    for i in range(n):
        label = VERDICTS[i % 3]
        rows.append({"a": float(label == "no") + 0.01 * i, "b": float(label == "maybe")})
        gold.append(label)
    return rows, gold


def test_fit_classifier_cross_validates_and_round_trips_through_json() -> None:
    rows, gold = _toy_rows()
    clf, report = fit_classifier(rows, gold, ["a", "b"], Cs=(0.1, 1.0), repeats=1, folds=3)
    assert report["cv_accuracy"] > 0.9 and report["C"] in (0.1, 1.0)
    assert [clf.decide(r) for r in rows] == gold
    again = VerdictClassifier.from_dict(json.loads(json.dumps(clf.to_dict())))
    assert again == clf
    probs = again.probabilities(rows[1])
    assert abs(sum(probs.values()) - 1) < 1e-9 and max(probs, key=probs.get) == "no"
    assert not clf.needs_llm()


def test_fit_classifier_with_two_classes_never_predicts_the_absent_one() -> None:
    rows = [{"a": float(i % 2)} for i in range(20)]
    gold = ["yes" if i % 2 else "no" for i in range(20)]
    clf, _ = fit_classifier(rows, gold, ["a"], Cs=(1.0,), repeats=1, folds=2)
    assert clf.decide({"a": 1.0}) == "yes" and clf.decide({"a": 0.0}) == "no"


def test_classifier_rejects_inconsistent_shapes() -> None:
    with pytest.raises(ValueError):
        VerdictClassifier.from_dict(
            {"features": ["a"], "coef": [[1.0], [0.0]], "intercept": [0, 0, 0],
             "mean": [0], "scale": [1]}  # fmt: skip
        )
    with pytest.raises(ValueError):
        VerdictClassifier.from_dict(
            {"features": ["a", "b"], "coef": [[1.0]] * 3, "intercept": [0, 0, 0],
             "mean": [0], "scale": [1]}  # fmt: skip
        )


def _lp_classifier() -> VerdictClassifier:
    # "no" when lp_no is high, else "yes"; maybe never
    return VerdictClassifier(
        ["lp_no", "cue_null_finding"], [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]], [0.0, 0.0, -5.0],
        [0.0, 0.0], [1.0, 1.0],
    )  # fmt: skip


def test_calibration_file_keeps_the_classifier_and_survives_damage(tmp_path: Path) -> None:
    path = tmp_path / "yes_no.calibration.json"
    cal = Calibration({"yes": 0.0, "no": -1.0, "maybe": 2.0}, "classifier", {"n": 3},
                      _lp_classifier())  # fmt: skip
    save_calibration(path, "rag", cal)
    loaded = Calibration.load(path, "rag")
    assert loaded.method == "classifier" and loaded.classifier == cal.classifier
    assert loaded.bias["no"] == -1.0 and loaded.classifier.needs_llm()
    data = json.loads(path.read_text())
    data["rag"]["classifier"]["coef"] = [[1.0]]
    path.write_text(json.dumps(data))
    broken = Calibration.load(path, "rag")
    assert broken.method == "score" and broken.classifier is None


class _Backend(FakeBackendBase):
    def __init__(self, docs: list[Document]) -> None:
        self.docs = docs

    def article_chunks(self, pmid: str) -> list[Document]:
        return [d for d in self.docs if d.metadata["pmid"] == pmid]


def _chunk(pmid: str, idx: int, text: str) -> Document:
    return Document(page_content=text, metadata={"pmid": pmid, "chunk_index": idx})


def test_article_tails_ask_the_retrievers_article_chunks() -> None:
    from retrievers.hybrid import HybridRetriever

    docs = [_chunk("1", 0, "first"), _chunk("1", 2, "last"), _chunk("1", 1, "mid")]
    retriever = HybridRetriever.from_backend(_Backend(docs), Config())  # type: ignore[arg-type]
    assert [d.page_content for d in retriever.article_chunks("1")] == ["first", "last", "mid"]
    tails = ArticleTails(retriever)
    assert tails(_chunk("1", 0, "first")) == "last"
    assert tails(_chunk("9", 0, "other")) is None

    class WithMethod:
        def article_chunks(self, pmid: str) -> list[Document]:
            return [_chunk(pmid, 1, "tail"), _chunk(pmid, 0, "head")] if pmid == "5" else []

    tails = ArticleTails(WithMethod())
    assert tails(_chunk("5", 0, "head")) == "tail" and tails(_chunk("6", 0, "x")) is None


def test_verdict_evidence_prefers_the_article_tail() -> None:
    top = _chunk("1", 0, "BACKGROUND: Statins lower cholesterol. METHODS: Adults were randomised.")
    evidence = verdict_evidence("Do statins prevent migraine?", [top], lambda d: ABSTRACT)
    assert "Statins reduced migraine frequency." in evidence.text
    assert evidence.conclusion.startswith("Statins reduced") and evidence.labelled
    assert verdict_evidence("Q?", [], None).text == ""
    assert "randomised" in verdict_evidence("Q?", [top], None).text


class _ScoringLLM:
    """Stands in for LocalHFChatModel.score_continuations: "no" is likely after "no significant"."""

    capabilities = Capabilities(scores_likelihoods=True)

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def score_continuations(self, messages, continuations, prefix=""):
        text = str(messages[0].content)
        self.prompts.append(text)
        no = "no significant" in text
        table = {"yes": -0.5 if not no else -3.0, "no": -3.0 if not no else -0.5, "maybe": -4.0}
        return [table[c.lower()] for c in continuations]


def test_evidence_prompt_and_features_with_a_scoring_model(tmp_path: Path) -> None:
    msgs = evidence_messages(EVIDENCE_TEMPLATE, "Does X help?", "X had no significant effect.")
    assert msgs[0].content.startswith("X had no significant effect.")
    assert "Question: Does X help?" in msgs[0].content
    llm = _ScoringLLM()
    ev = Evidence("X was tested. X had no significant effect.", "X had no significant effect.")
    feats, lps = verdict_features(llm, "Does X help?", ev)
    assert set(LLM_FEATURES) <= set(feats) and feats["lp_no"] > 0 and set(lps) == set(VERDICTS)
    assert feats["cue_null_finding"] > 0 and llm.prompts[-1].startswith("X was tested.")
    plain = Evidence("X helps.", "X helps.")
    feats, lps = verdict_features(llm, "Does X help?", plain, with_llm=False)
    assert "lp_no" not in feats and lps == {}
    (tmp_path / "yes_no.txt").write_text("x", encoding="utf-8")
    assert load_evidence_template(tmp_path / "yes_no.txt") == EVIDENCE_TEMPLATE
    (tmp_path / "yes_no.evidence.txt").write_text("E: {evidence} Q: {question}", encoding="utf-8")
    assert load_evidence_template(tmp_path / "yes_no.txt") == "E: {evidence} Q: {question}"


def test_classify_verdict_uses_the_tail_and_the_classifier() -> None:
    cal = Calibration(method="classifier", classifier=_lp_classifier())
    llm = _ScoringLLM()
    top = _chunk("1", 0, "BACKGROUND: X is common. METHODS: We looked.")
    out = classify_verdict(
        llm, "Does X help?", [top], cal,
        article_tail=lambda d: "CONCLUSIONS: X had no significant effect.",
    )  # fmt: skip
    assert out.verdict == "no" and out.evidence.endswith("no significant effect.")
    assert "no significant effect" in llm.prompts[-1] and not out.invalid
    out = classify_verdict(llm, "Does X help?", [top], cal)
    assert out.verdict == "yes"
    with pytest.raises(ValueError, match="no classifier"):
        classify_verdict(llm, "Does X help?", [top], Calibration())


def test_fit_classifier_with_too_few_questions() -> None:
    clf, report = fit_classifier([{"a": 1.0}, {"a": 0.0}], ["yes", "no"], ["a"])
    assert report["cv_accuracy"] is None and clf.decide({"a": 1.0}) in VERDICTS
    clf, report = fit_classifier([{"a": 1.0}, {"a": 0.0}], ["maybe", "maybe"], ["a"])
    assert clf.decide({"a": 5.0}) == "maybe" and report["C"] is None
    json.dumps(report)


def test_assistant_verdict_is_the_stances_for_a_scoring_model_too() -> None:
    """The chat's verdict comes from the sources' stances (grounding.consensus), not from this
    classifier (which ``eval answers`` still measures): a model that scores gets the same."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from app.config import Config
    from chains.assistant import Assistant
    from tests.fake_retriever import FakeEncoder, FakeRetriever, make_doc

    class ScoringFake(FakeListChatModel):
        capabilities: ClassVar[Capabilities] = Capabilities(scores_likelihoods=True)

        def score_continuations(self, messages, continuations, prefix=""):
            return _ScoringLLM().score_continuations(messages, continuations, prefix)

    docs = [make_doc("11", "Stimulants", "CONCLUSIONS: Stimulants had no significant effect.")]
    for llm in (ScoringFake(responses=["They did not help [1]."]),
                FakeListChatModel(responses=["They did not help [1]."])):  # fmt: skip
        a = Assistant(Config(answer={"style": "auto"}), FakeRetriever(docs, k=1), llm,
                      count_tokens=lambda m: 10, encoder=FakeEncoder())  # fmt: skip
        r = a.ask("Are stimulants helpful?", mode="plain")
        # the verdict names its source; the unsupported generated sentence is not shown, so auto
        # falls back to the abstract's own finding
        assert r.verdict == "no" and r.verdict_sources == [1]
        assert r.answer == "No (1 study) [1]. Stimulants had no significant effect [1]."
        assert [d.text for d in r.dropped] == ["They did not help [1]."]


def _cue_classifier() -> VerdictClassifier:
    # cues only: "no" on a null finding, else "yes"; maybe never
    return VerdictClassifier(
        ["cue_null_finding"], [[0.0], [2.0], [0.0]], [0.5, 0.0, -5.0], [0.0], [1.0]
    )


def test_calibration_serves_a_model_that_cannot_score_with_the_cues_only_fallback(
    tmp_path: Path,
) -> None:
    main, cues = _lp_classifier(), _cue_classifier()
    cal = Calibration(method="classifier", classifier=main, fallback=cues)
    assert cal.classifier_for(can_score=True) is main
    assert cal.classifier_for(can_score=False) is cues
    assert Calibration(method="classifier", classifier=main).classifier_for(False) is None
    # a fallback that needs the model is no fallback
    assert Calibration(classifier=main, fallback=main).classifier_for(False) is None
    path = tmp_path / "yes_no.calibration.json"
    save_calibration(path, "rag", cal)
    loaded = Calibration.load(path, "rag")
    assert loaded.classifier == main and loaded.fallback == cues
    data = json.loads(path.read_text())
    data["rag"]["fallback_classifier"]["coef"] = [[1.0]]
    path.write_text(json.dumps(data))
    assert Calibration.load(path, "rag").fallback is None  # damaged: no fallback, main kept
    assert Calibration.load(path, "rag").classifier == main
