"""The Milvus backend for real, on milvus-lite, against the FAISS backend on the same articles.

milvus-lite is a Python re-implementation of Milvus: its BM25 uses per-segment statistics and
reports scores negated, so these tests assert on ranks and on the documents returned, never on
BM25 score values. The dense score is checked to be the cosine (it is the threshold's unit).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from app.errors import IndexMissingError
from indexing.store import IndexMismatchError
from retrievers.filters import Filters
from tests.milvus_fixtures import (  # noqa: F401 - fixtures
    milvus_cfg,
    small_milvus_backend,
    small_milvus_cfg,
    small_milvus_source,
)

pytestmark = pytest.mark.slow

LACE = "Do mitochondria play a role in remodelling lace plant leaves during programmed cell death?"
LACE_PMID = "21645374"


@pytest.fixture(scope="module")
def milvus_retriever(small_milvus_cfg, small_milvus_backend):  # noqa: F811
    from retrievers.loading import load_retriever

    return load_retriever(small_milvus_cfg, small_milvus_backend)


def test_collection_holds_every_chunk_of_the_faiss_index(
    small_milvus_cfg, small_retriever  # noqa: F811
) -> None:
    from indexing.commands import stats

    faiss_backend = small_retriever.snapshot()
    stats_out = _capture(lambda: stats.run(small_milvus_cfg, argparse.Namespace(json=True)))
    data = json.loads(stats_out)
    assert data["backend"] == "milvus" and data["state"] == "complete"
    assert data["rows"] == data["chunks"] == faiss_backend.size
    assert data["embedded_articles"] == 0  # every vector came from the FAISS index
    assert data["size_bytes"] > 0


def test_documents_are_the_faiss_backends_documents(
    small_milvus_backend, small_retriever  # noqa: F811
) -> None:
    faiss_backend = small_retriever.snapshot()
    milvus = small_milvus_backend.dense_search(LACE, 10, 0.0, Filters())
    faiss = faiss_backend.dense_search(LACE, 10, 0.0, Filters())
    assert [d.id for d in milvus[:5]] == [d.id for d in faiss[:5]]
    by_id = {d.id: d for d in faiss}
    for doc in milvus[:5]:
        twin = by_id[doc.id]
        assert doc.page_content == twin.page_content
        strip = lambda m: {k: v for k, v in m.items() if k != "score"}  # noqa: E731
        assert strip(doc.metadata) == strip(twin.metadata)


def test_article_chunks_are_the_faiss_backends(
    small_milvus_backend, small_retriever  # noqa: F811
) -> None:
    faiss_backend = small_retriever.snapshot()
    pmid = max({d.metadata["pmid"] for d in faiss_backend.docs},
               key=lambda p: len(faiss_backend.article_chunks(p)))
    want = faiss_backend.article_chunks(pmid)
    got = small_milvus_backend.article_chunks(pmid)
    assert len(want) > 1
    assert [(d.id, d.page_content) for d in got] == [(d.id, d.page_content) for d in want]
    assert small_milvus_backend.article_chunks("0") == []


def test_dense_score_is_the_cosine_and_the_threshold_cuts_on_it(
    small_milvus_backend,  # noqa: F811
) -> None:
    backend = small_milvus_backend
    docs = backend.dense_search(LACE, 20, 0.0, Filters())
    query = backend.embedder.embed_query_array(LACE)
    texts = [f"{d.metadata['title']}\n{d.page_content}" for d in docs[:3]]
    cosines = backend.embedder.encode(texts) @ query
    assert np.allclose([d.metadata["score"] for d in docs[:3]], cosines, atol=2e-2)
    cut = docs[2].metadata["score"]
    kept = backend.dense_search(LACE, 20, cut, Filters())
    assert kept and all(d.metadata["score"] >= cut for d in kept)
    assert len(kept) < len(docs)


def test_gold_article_ranks_first_on_both_backends(
    milvus_retriever, small_retriever, small_milvus_backend  # noqa: F811
) -> None:
    for retriever in (milvus_retriever, small_retriever):
        docs = retriever.retrieve(LACE).documents
        assert docs[0].metadata["pmid"] == LACE_PMID
    bm25 = small_milvus_backend.bm25_search(LACE, 10, Filters())
    assert bm25[0].metadata["pmid"] == LACE_PMID
    assert [d.metadata["score"] for d in bm25] == sorted((d.metadata["score"] for d in bm25),
                                                        reverse=True)
    assert small_milvus_backend.hybrid_search(LACE, 5, Filters())[0].metadata["pmid"] == LACE_PMID


def test_result_metadata_matches_the_faiss_backends(
    milvus_retriever, small_retriever  # noqa: F811
) -> None:
    milvus = milvus_retriever.retrieve(LACE).documents
    faiss = small_retriever.retrieve(LACE).documents
    assert set(milvus[0].metadata) == set(faiss[0].metadata)
    for key in ("scores", "confidence", "rrf_score", "ranks"):
        if key in faiss[0].metadata:
            assert key in milvus[0].metadata


@pytest.mark.parametrize(
    "filters",
    [
        Filters(year_min=2019),
        Filters(year_max=2014),
        Filters(year_min=2015, year_max=2016),
        Filters(title_contains=["intelligence"]),
        Filters(title_contains=["children", "intelligence"]),
        Filters(designs=["cohort", "cross_sectional"]),  # design, species: JSON metadata clauses
        Filters(exclude_designs=["cohort", "other"], humans=True),
    ],
    ids=lambda f: f.describe(),
)
def test_filters_select_what_faiss_selects(
    filters: Filters, small_milvus_backend, small_retriever  # noqa: F811
) -> None:
    faiss_backend = small_retriever.snapshot()
    question = "Is childhood intelligence associated with adult health?"
    milvus_dense = small_milvus_backend.dense_search(question, 10, 0.0, filters)
    faiss_dense = faiss_backend.dense_search(question, 10, 0.0, filters)
    assert milvus_dense, "the filter should leave some articles"
    assert all(filters.matches(d.metadata) for d in milvus_dense)
    assert [d.id for d in milvus_dense[:5]] == [d.id for d in faiss_dense[:5]]
    milvus_bm25 = small_milvus_backend.bm25_search(question, 20, filters)
    assert milvus_bm25 and all(filters.matches(d.metadata) for d in milvus_bm25)
    faiss_pmids = {d.metadata["pmid"] for d in faiss_backend.bm25_search(question, 40, filters)}
    top = {d.metadata["pmid"] for d in milvus_bm25[:5]}
    assert len(top & faiss_pmids) >= 3  # another tokenizer: the same articles, near the top


def test_author_filter_from_the_question(
    milvus_retriever, small_milvus_backend  # noqa: F811
) -> None:
    hits = small_milvus_backend.dense_search("childhood intelligence", 20, 0.0, Filters())
    doc = next(d for d in hits if d.metadata["authors"] and d.metadata["authors"][0][0].isupper())
    surname = doc.metadata["authors"][0].split()[0]
    title = doc.metadata["title"].rstrip(".?")
    result = milvus_retriever.retrieve(f"{title} by {surname}?")
    assert result.filters.author == surname
    assert doc.metadata["pmid"] in [d.metadata["pmid"] for d in result.documents]
    assert all(result.filters.matches(d.metadata) for d in result.documents)


def test_sync_and_async_retrieval_agree(milvus_retriever) -> None:
    question = "Is childhood intelligence associated with adult mortality published after 2015?"
    sync = milvus_retriever.retrieve(question)
    async_ = asyncio.run(milvus_retriever.aretrieve(question))
    assert [d.id for d in sync.documents] == [d.id for d in async_.documents]
    assert sync.filters == async_.filters and sync.filters.year_min == 2016


def test_off_topic_question_finds_nothing(milvus_retriever) -> None:
    assert milvus_retriever.retrieve("Who won the 2014 football World Cup?").empty


def test_missing_collection_says_how_to_build(small_milvus_cfg) -> None:  # noqa: F811
    from retrievers.milvus_backend import MilvusBackend

    cfg = milvus_cfg(small_milvus_cfg, Path(small_milvus_cfg.retrieval.milvus.uri), "absent")
    with pytest.raises(IndexMissingError, match="index build"):
        MilvusBackend(cfg)


def test_other_chunking_than_the_collection_is_refused(small_milvus_cfg) -> None:  # noqa: F811
    from retrievers.milvus_backend import MilvusBackend

    cfg = small_milvus_cfg.model_copy(deep=True)
    cfg.index.chunk_size = 120
    with pytest.raises(IndexMismatchError, match="chunk_size"):
        MilvusBackend(cfg)


def test_interrupted_build_resumes_and_update_upserts_deletes_and_appends(
    small_milvus_cfg, shared_articles  # noqa: F811
) -> None:
    from indexing.milvus_index import build_milvus_index, scan_present
    from indexing.milvus_store import connect
    from retrievers.milvus_backend import MilvusBackend
    from tests.conftest import small_selection

    cfg = milvus_cfg(
        small_milvus_cfg, Path(small_milvus_cfg.retrieval.milvus.uri), "sync_test",
        insert_batch=16,
    )
    articles = small_selection(shared_articles)[:24]

    class Interrupt(Exception):
        pass

    def stop_after_first(n: int) -> None:
        if n == 0:
            raise Interrupt

    with pytest.raises(Interrupt):
        build_milvus_index(cfg, articles, corpus_checksum="c1", after_batch=stop_after_first)
    with pytest.raises(IndexMissingError, match="did not finish"):
        MilvusBackend(cfg)
    client = connect(cfg)
    done_first = len(scan_present(client, "sync_test"))
    assert 0 < done_first < len(articles)

    resumed = build_milvus_index(cfg, articles, corpus_checksum="c1")
    assert resumed.state == "complete" and resumed.articles == len(articles)
    assert resumed.written_articles == len(articles) - done_first  # the rest only

    # update: one article changed (fewer chunks), one removed, one added
    present = scan_present(client, "sync_test")
    multi = next(a for a in articles[1:] if len(present[a.pmid].ids) > 1)
    changed = multi.model_copy(update={"abstract": "A much shorter abstract about sepsis."})
    removed, added = articles[0], small_selection(shared_articles)[30]
    new_set = [changed if a.pmid == multi.pmid else a for a in articles[1:]] + [added]
    updated = build_milvus_index(cfg, new_set, reuse=True, corpus_checksum="c2")
    assert updated.written_articles == 2 and updated.deleted_articles == 1
    assert updated.embedded_articles == 1  # the changed one; the added one is in FAISS
    present = scan_present(client, "sync_test")
    assert set(present) == {a.pmid for a in new_set} and removed.pmid not in present
    assert present[multi.pmid].ids == {f"{multi.pmid}-0"}
    backend = MilvusBackend(cfg)
    hit = backend.bm25_search("much shorter abstract sepsis", 3, Filters())[0]
    assert hit.id == f"{multi.pmid}-0" and hit.page_content == changed.abstract
    assert backend.size == sum(len(p.ids) for p in present.values())

    # append (a shard of a larger corpus): adds, deletes nothing else
    extra = small_selection(shared_articles)[31]
    appended = build_milvus_index(cfg, [extra], reuse=True, append=True, corpus_checksum="c3")
    assert appended.deleted_articles == 0 and appended.written_articles == 1
    assert appended.articles == len(new_set) + 1
    assert set(scan_present(client, "sync_test")) == {a.pmid for a in new_set} | {extra.pmid}
    client.drop_collection("sync_test")


def _capture(fn) -> str:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn()
    return buf.getvalue()


def test_eval_compares_both_backends_and_bench_times_milvus(
    small_milvus_cfg, capsys: pytest.CaptureFixture  # noqa: F811
) -> None:
    from bench import retrieval as bench_retrieval
    from eval import retrieval as eval_retrieval
    from tests.conftest import EVAL_DIR

    questions = EVAL_DIR / "pubmedqa_pqal.jsonl"
    eval_retrieval.run(small_milvus_cfg, argparse.Namespace(
        questions=questions, split=None, limit=3, json=True, backend="faiss,milvus"))
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {"faiss", "milvus"}
    for backend in result.values():
        assert backend["hybrid"]["n"] == 3 and backend["hybrid"]["hit@1"] == 1.0

    # milvus alone: the FAISS-only growth tests (rank-bm25 on 3x the chunks) are skipped
    bench_retrieval.run(small_milvus_cfg, argparse.Namespace(
        questions=[questions], n=6, sizes=[100_000], json=True, backend="milvus"))
    report = json.loads(capsys.readouterr().out)
    assert report["real_index"]["backend"] == "milvus" and report["real_index"]["questions"] == 6
    assert report["real_index"]["bm25_search_p50_ms"] > 0
    assert "dense_scale" not in report and "bm25_growth" not in report
