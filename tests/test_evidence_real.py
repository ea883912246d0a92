"""The evidence features on a real index (tests/evidence_fixtures.py): "RCTs only" keeps only
trials in every backend path, and a retracted trial is shown, last, and never decides the
verdict (the real MiniLM, the shipped stance classifier, cfg.yaml's extractive style)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.evidence_fixtures import RETRACTED_PMID, evidence_index_cfg  # noqa: F401 - fixture

pytestmark = pytest.mark.slow

STATINS = "Are statins effective? RCTs only"
NF1 = ("In children with neurofibromatosis type 1, does a year of simvastatin raise full-scale IQ "
       "or reduce attention problems compared with placebo?")


@pytest.fixture(scope="module")
def retriever(evidence_index_cfg: Any) -> Any:  # noqa: F811
    from retrievers.loading import load_retriever

    return load_retriever(evidence_index_cfg)


def test_rcts_only_returns_only_trials(retriever: Any, evidence_index_cfg: Any) -> None:  # noqa: F811
    from retrievers.backend import FaissBM25Backend
    from retrievers.hybrid import HybridRetriever

    unfiltered = retriever.retrieve("Are statins effective?", k=10).documents
    assert {d.metadata["design"] for d in unfiltered} - {"rct"}  # the filter has work to do
    found = retriever.retrieve(STATINS, k=10)
    assert found.filters.designs == ["rct"] and found.query == "Are statins effective?"
    assert found.documents and {d.metadata["design"] for d in found.documents} == {"rct"}
    # each backend search applies it itself: BM25 and dense hits before fusion, BM25 alone
    backend = retriever.snapshot()
    assert {d.metadata["design"] for d in backend.bm25_search("statins", 50, found.filters)} == {
        "rct"}
    dense = backend.dense_search("statins", 50, 0.0, found.filters)
    assert dense and {d.metadata["design"] for d in dense} == {"rct"}
    lexical = HybridRetriever.from_backend(
        FaissBM25Backend(evidence_index_cfg, load_dense=False), evidence_index_cfg)
    assert {d.metadata["design"] for d in lexical.retrieve(STATINS, k=10).documents} <= {"rct"}


def test_a_retracted_trial_is_listed_last_and_never_decides_the_verdict(
    retriever: Any, evidence_index_cfg: Any  # noqa: F811
) -> None:
    from chains.assistant import Assistant

    r = Assistant.from_config(evidence_index_cfg, retriever=retriever).ask(NF1, mode="plain")
    retracted = [s for s in r.sources if s.pmid == RETRACTED_PMID]
    assert retracted and retracted[0].retracted, [s.pmid for s in r.sources]
    n = retracted[0].n
    assert n == max(s.n for s in r.sources)  # the best match, listed after the others
    assert retracted[0].stance is None and n not in r.verdict_sources
    assert f"[{n}]" not in r.answer and not retracted[0].evidence  # no finding quoted from it
