"""``embedding_backend: auto`` measures: the decision rule, its cache per CPU model, and a real run.

The unit tests feed fake timings and cosines (no model is loaded); the real test times torch fp32
and torch-bf16 MiniLM on 32 real chunks of the shared corpus, checks that the decision file is
written and reused, and that an index built with ``auto`` is queried with the backend it records.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.config import load_config
from indexing import auto_backend
from indexing.auto_backend import (
    Measurement,
    choose_backend,
    decide,
    measure_candidates,
    query_backend,
    resolve_for_build,
    wanted_backend,
)
from indexing.backend_cache import (
    DECISION_FILE,
    cached_backend,
    cpu_model,
    decision_key,
    decision_path,
    write_decision,
)
from tests.conftest import PUBMED_DIR, require_shared_data
from tests.helpers import cfg_at


def m(backend: str, rate: float, cos_min: float = 1.0, cos_mean: float | None = None,
      note: str = "") -> Measurement:
    return Measurement(backend, rate, cos_min, cos_min if cos_mean is None else cos_mean, 64, note)


# -- the rule ------------------------------------------------------------------------------------
def test_the_faster_backend_wins() -> None:
    assert choose_backend([m("torch", 10.0), m("torch-bf16", 24.0, 0.99995)]) == "torch-bf16"
    # the same flag, the other CPU: bf16 is slower there, so fp32 is kept
    assert choose_backend([m("torch", 10.0), m("torch-bf16", 6.8, 0.99995)]) == "torch"


def test_a_fast_backend_below_the_cosine_bar_loses() -> None:
    measured = [m("torch", 10.0), m("torch-bf16", 12.0, 0.9999), m("onnx-int8", 30.0, 0.991)]
    assert choose_backend(measured) == "torch-bf16"


def test_the_bar_is_on_the_min_cosine_not_the_mean() -> None:
    # one badly embedded chunk (min 0.995) among good ones (mean 0.9995) is not good enough
    measured = [m("torch", 10.0), m("onnx-int8", 30.0, cos_min=0.995, cos_mean=0.9995)]
    assert choose_backend(measured) == "torch"


def test_a_candidate_that_could_not_run_never_wins() -> None:
    measured = [m("torch", 10.0), m("onnx-int8", 0.0, note="not available: no onnxruntime")]
    assert choose_backend(measured) == "torch"


def test_measuring_times_each_candidate_and_compares_it_to_fp32() -> None:
    """Fake encoders on a fake clock: bf16 costs 1 s a pass, fp32 2 s, int8 0.5 s but off-angle."""
    now = [0.0]
    base = np.eye(4, dtype=np.float32)[[0, 1, 2, 3, 0, 1]]

    def encoder(cost: float, tilt: float):
        def encode(texts):
            now[0] += cost * len(texts) / 6
            out = base[: len(texts)].copy()
            out[:, 3 if tilt else 0] += tilt
            return out / np.linalg.norm(out, axis=1, keepdims=True)
        return encode

    texts = [f"chunk {i}" for i in range(6)]
    encoders = {"torch": encoder(2.0, 0.0), "torch-bf16": encoder(1.0, 0.0),
                "onnx-int8": encoder(0.5, 0.3)}
    measured = measure_candidates(texts, encoders, seconds=3.0, clock=lambda: now[0])
    rates = {x.backend: x.chunks_per_s for x in measured}
    assert rates == pytest.approx({"torch": 3.0, "torch-bf16": 6.0, "onnx-int8": 12.0})
    cos = {x.backend: x.cosine_min for x in measured}
    assert cos["torch"] == pytest.approx(1.0) and cos["torch-bf16"] == pytest.approx(1.0)
    assert cos["onnx-int8"] < 0.999
    assert choose_backend(measured) == "torch-bf16"


# -- the cache -----------------------------------------------------------------------------------
class CountingMeasure:
    def __init__(self, *measurements: Measurement) -> None:
        self.measurements = list(measurements)
        self.calls = 0

    def __call__(self) -> list[Measurement]:
        self.calls += 1
        return list(self.measurements)


FAST_BF16 = (m("torch", 10.0), m("torch-bf16", 24.0, 0.9999))


def test_the_decision_is_cached_and_reused(tmp_path) -> None:
    path, key = tmp_path / DECISION_FILE, decision_key("minilm", cpu="CPU A", torch="2.0")
    measure = CountingMeasure(*FAST_BF16)
    first = decide(path, key, measure)
    assert (first.backend, first.cached, measure.calls) == ("torch-bf16", False, 1)
    again = decide(path, key, CountingMeasure(m("torch", 99.0)))  # would choose fp32 if asked
    assert (again.backend, again.cached) == ("torch-bf16", True)
    assert [x.chunks_per_s for x in again.measurements] == [10.0, 24.0]  # printed with the choice
    stored = json.loads(path.read_text())["decisions"][key]
    assert stored["backend"] == "torch-bf16" and len(stored["candidates"]) == 2
    assert not list(tmp_path.glob("*.tmp"))  # the temp file was renamed into place


def test_another_cpu_model_measures_again_and_keeps_both(tmp_path) -> None:
    path = tmp_path / DECISION_FILE
    decide(path, decision_key("minilm", cpu="CPU A", torch="2.0"), CountingMeasure(*FAST_BF16))
    other = CountingMeasure(m("torch", 10.0), m("torch-bf16", 6.8, 0.9999))
    decision = decide(path, decision_key("minilm", cpu="CPU B", torch="2.0"), other)
    assert (decision.backend, decision.cached, other.calls) == ("torch", False, 1)
    entries = json.loads(path.read_text())["decisions"]
    assert sorted(e["backend"] for e in entries.values()) == ["torch", "torch-bf16"]


def test_the_key_holds_cpu_model_torch_version_and_model() -> None:
    keys = {
        decision_key("minilm", cpu="CPU A", torch="2.0"),
        decision_key("minilm", cpu="CPU B", torch="2.0"),
        decision_key("minilm", cpu="CPU A", torch="2.1"),
        decision_key("other-model", cpu="CPU A", torch="2.0"),
    }
    assert len(keys) == 4


@pytest.mark.parametrize("content", [
    "{not json",
    "",
    '["a list"]',
    '{"version": 1, "decisions": "nope"}',
    '{"version": 1, "decisions": {"KEY": {"backend": "gpu-magic"}}}',
    '{"version": 99, "decisions": {"KEY": {"backend": "torch"}}}',
])
def test_a_damaged_cache_file_is_measured_again_not_a_crash(tmp_path, content) -> None:
    path, key = tmp_path / DECISION_FILE, decision_key("minilm", cpu="CPU A", torch="2.0")
    path.write_text(content.replace("KEY", key))
    measure = CountingMeasure(*FAST_BF16)
    assert decide(path, key, measure).backend == "torch-bf16" and measure.calls == 1
    assert json.loads(path.read_text())["decisions"][key]["backend"] == "torch-bf16"


def test_cpu_model_is_the_model_name_line(tmp_path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: X\nmodel name\t: Example CPU 9000 @ 3GHz\n")
    assert cpu_model(info) == "Example CPU 9000 @ 3GHz"
    assert cpu_model(tmp_path / "missing")  # falls back to something, never raises


# -- auto in builds and queries ------------------------------------------------------------------
def test_auto_stays_auto_in_the_config(tmp_path) -> None:
    assert cfg_at(tmp_path).index.embedding_backend == "auto"


def test_a_build_uses_the_cached_decision_without_measuring(tmp_path, monkeypatch) -> None:
    cfg = cfg_at(tmp_path)
    write_decision(decision_path(cfg), decision_key(cfg.index.embedding_model),
                   {"backend": "onnx-int8", "candidates": []})

    def no_measuring(*_a, **_k):
        raise AssertionError("measured although a decision is cached for this CPU")

    monkeypatch.setattr(auto_backend, "load_candidates", no_measuring)
    notes: list[str] = []
    resolved, embedder = resolve_for_build(cfg, [], None, notes.append)
    assert resolved.index.embedding_backend == "onnx-int8" and embedder is None
    assert cfg.index.embedding_backend == "auto"  # the caller's config is not changed
    assert "onnx-int8" in notes[0] and "cached" in notes[0]


def test_explicit_backends_pass_through(tmp_path) -> None:
    for name in ("torch", "torch-bf16", "onnx-int8"):
        cfg = cfg_at(tmp_path, embedding_backend=name)
        assert resolve_for_build(cfg, [])[0] is cfg
        assert query_backend(cfg, "torch") == name and wanted_backend(cfg, "torch") == name


def test_queries_follow_the_index_and_builds_follow_this_cpus_decision(tmp_path) -> None:
    cfg = cfg_at(tmp_path)
    assert query_backend(cfg, "torch-bf16") == "torch-bf16"
    assert wanted_backend(cfg, "torch-bf16") == "torch-bf16"  # nothing measured here yet
    write_decision(decision_path(cfg), decision_key(cfg.index.embedding_model),
                   {"backend": "torch", "candidates": []})
    assert cached_backend(cfg) == "torch"
    assert wanted_backend(cfg, "torch-bf16") == "torch"  # `build --if-needed`: stale, re-embed
    assert query_backend(cfg, "torch-bf16") == "torch-bf16"  # the vectors' own backend


# -- real MiniLM ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real_articles():
    require_shared_data()
    from ingest.corpus import load_corpus

    small = PUBMED_DIR / "pubmedqa_pqal.xml.gz"
    cfg = load_config(overrides={"corpus": {"paths": [str(small)]}})
    return load_corpus(cfg).articles


def test_real_backends_are_measured_cached_and_the_index_is_queried_alike(
    tmp_path, real_articles, monkeypatch
) -> None:
    from indexing.build import build_index
    from retrievers.backend import FaissBM25Backend

    cfg = cfg_at(tmp_path)
    decision, chosen = auto_backend.decide_for_corpus(
        cfg, real_articles, candidates=("torch", "torch-bf16"), sample=32, seconds=1.0
    )
    rates = {x.backend: x for x in decision.measurements}
    assert set(rates) == {"torch", "torch-bf16"} and not decision.cached
    assert all(x.chunks == 32 and x.chunks_per_s > 0 for x in rates.values())
    assert rates["torch"].cosine_min == pytest.approx(1.0, abs=1e-5)
    assert rates["torch-bf16"].cosine_min > 0.99  # bf16 MiniLM stays close to fp32
    assert decision.backend == choose_backend(decision.measurements)
    assert chosen is not None and chosen.backend == decision.backend
    stored = json.loads(decision_path(cfg).read_text())["decisions"]
    assert stored[decision_key(cfg.index.embedding_model)]["backend"] == decision.backend

    def no_measuring(*_a, **_k):
        raise AssertionError("measured again on the same CPU")

    monkeypatch.setattr(auto_backend, "load_candidates", no_measuring)
    again, loaded = auto_backend.decide_for_corpus(cfg, real_articles)
    assert (again.backend, again.cached, loaded) == (decision.backend, True, None)

    notes: list[str] = []
    manifest = build_index(cfg, real_articles[:8], report=notes.append)
    assert manifest.embedding_backend == decision.backend
    assert "cached for this CPU" in notes[0] and "chunks/s" in notes[0]
    backend = FaissBM25Backend(cfg)
    assert backend.embedder.backend == manifest.embedding_backend
    hits = backend.dense_search(real_articles[3].title, 3, -1.0, _no_filters())
    assert hits and hits[0].metadata["pmid"] == real_articles[3].pmid


def _no_filters():
    from retrievers.filters import Filters

    return Filters()
