# ruff: noqa: F811 - the fixtures imported from tests.library_fixtures are parameters here
"""The user's library, for real: PubMed searches served by the local E-utilities replay server
(``ingest.replay``: NCBI's wire format, real PubMedQA records), added with the real MiniLM
embedder into a small real index, and compared with an index built from scratch.

Each test names the mutation it was seen to catch."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from indexing.bm25 import BM25Index
from indexing.build import read_article_hashes, read_chunks
from indexing.commands.common import index_state
from indexing.incremental import sync_library
from indexing.library_ops import add_search, listing, remove
from indexing.store import open_current
from ingest import eutils
from ingest.corpus import load_corpus
from ingest.library import Library, LibraryError, search_pubmed
from ingest.replay import ReplayServer
from retrievers.hybrid import HybridRetriever
from retrievers.live import LiveIndex
from tests.library_fixtures import (  # noqa: F401 - fixtures
    SHIPPED,
    embedder,
    full_build,
    make_cfg,
    pool,
    server,
    vectors,
    write_corpus,
)

QUERIES = ("diabetes", "laparoscopic", "heart failure")
PROBES = ("insulin resistance in type 2 diabetes", "laparoscopic surgery complications",
          "heart failure mortality", "children")


def assert_same_index(incremental_cfg, scratch_cfg, bm25_cfg) -> None:
    a_dir, a = open_current(incremental_cfg)  # every checksum verified
    b_dir, b = open_current(scratch_cfg)
    ca, cb = read_chunks(a_dir), read_chunks(b_dir)
    assert ca.chunk_ids == cb.chunk_ids and ca.texts == cb.texts
    assert ca.metadata == cb.metadata
    assert read_article_hashes(a_dir) == read_article_hashes(b_dir)
    assert (a.articles, a.chunks, a.library_pmids) == (b.articles, b.chunks, b.library_pmids)
    assert a.corpus_checksum == b.corpus_checksum
    np.testing.assert_allclose(vectors(a_dir), vectors(b_dir), atol=2e-5)
    pw = bm25_cfg.retrieval.bm25.phrase_weight
    ia, ib = BM25Index.load(a_dir, phrase_weight=pw), BM25Index.load(b_dir, phrase_weight=pw)
    for probe in PROBES:
        np.testing.assert_allclose(ia.scores(probe), ib.scores(probe), rtol=1e-6)


def test_additions_and_removals_equal_a_build_from_scratch(tmp_path, pool, server, embedder):
    """Mutations caught: new chunks appended in another order than the library's (reversed
    ``add``); BM25 not rebuilt (the old build's BM25 files copied); removed PMIDs' chunks kept;
    the manifest's corpus checksum left at the old corpus (``index_state`` then 'stale');
    ``LiveIndex`` loading the model again on a library build (a new query embedder)."""
    write_corpus(tmp_path / "corpus", pool[:SHIPPED])
    cfg = make_cfg(tmp_path, server.base_url)
    full_build(cfg, embedder)
    before = open_current(cfg)[1].articles
    live = LiveIndex(cfg)  # the chat's view of the index
    query_embedder = live.loaded.embedder

    first = add_search(cfg, QUERIES[0], 12, user="ann", embedder=embedder)
    assert first.note.count == server.state.search.__call__(QUERIES[0]).__len__()
    assert first.note.fetched == 12 and first.note.new == 12 - first.note.already_indexed
    assert first.sync.added == first.note.new and first.sync.chunks_embedded > 0
    # the chat picks the new build up on its next search, keeping its loaded query embedder
    pmid = first.note.pmids[0]
    title = read_chunks(open_current(cfg)[0]).metadata[-first.sync.chunks_embedded]["title"]
    found = HybridRetriever.from_backend(live, cfg).retrieve(title).documents
    assert live.reloads == 1 and live.loaded.embedder is query_embedder
    assert found and any(d.metadata["pmid"] in first.note.pmids for d in found[:3]), pmid
    second = add_search(cfg, QUERIES[1], 8, user="bob", embedder=embedder)
    assert open_current(cfg)[1].articles == before + first.note.new + second.note.new

    # the same index from scratch over the same corpus (shipped files + the library's)
    scratch = make_cfg(tmp_path, server.base_url, name="scratch")
    full_build(scratch, embedder)
    assert_same_index(cfg, scratch, cfg)
    assert index_state(cfg, load_corpus(cfg).report.checksum) == "current"

    # removal: one article, then a whole search
    gone = first.note.pmids[1]
    removed, _ = remove(cfg, pmids=[gone], embedder=embedder)
    assert removed == 1 and gone not in read_article_hashes(open_current(cfg)[0])
    removed, _ = remove(cfg, QUERIES[1].upper(), embedder=embedder)  # case-insensitive query
    assert removed == second.note.new
    full_build(scratch, embedder)
    assert_same_index(cfg, scratch, cfg)
    rows = listing(cfg)
    assert [(r.note.query, r.note.new, r.indexed) for r in rows] == [
        (QUERIES[0], first.note.new - 1, first.note.new - 1)]
    # a search already in the index adds nothing, and says so
    again = add_search(cfg, QUERIES[0], 12, user="ann", embedder=embedder)
    assert again.note.new == 1 and again.note.pmids == [gone]  # only the removed one is new
    assert sync_library(cfg, embedder=embedder).changed is False


def test_the_full_rebuild_includes_the_library_and_the_shipped_corpus_is_untouched(
    tmp_path, pool, server, embedder,
):
    """Mutation caught: find_corpus_files without the library (the rebuild loses it)."""
    write_corpus(tmp_path / "corpus", pool[:SHIPPED])
    shipped = (tmp_path / "corpus" / "shipped.xml").read_bytes()
    cfg = make_cfg(tmp_path, server.base_url)
    full_build(cfg, embedder)
    outcome = add_search(cfg, QUERIES[2], 5, embedder=embedder)
    assert outcome.note.new > 0
    rebuilt = full_build(cfg, embedder)  # `index build`
    assert set(outcome.note.pmids) <= set(rebuilt.library_pmids)
    assert rebuilt.articles == SHIPPED + outcome.note.new
    assert (tmp_path / "corpus" / "shipped.xml").read_bytes() == shipped
    assert sorted(p.name for p in (tmp_path / "corpus").iterdir()) == ["shipped.xml"]


def test_the_per_user_limit_refuses_before_anything_is_written(tmp_path, pool, server, embedder):
    """Mutation caught: the quota check after fetching removed (the library grows past it)."""
    write_corpus(tmp_path / "corpus", pool[:SHIPPED])
    cfg = make_cfg(tmp_path, server.base_url, per_user_daily=6)
    full_build(cfg, embedder)
    add_search(cfg, QUERIES[1], 4, user="ann", embedder=embedder)
    folder = open_current(cfg)[0]
    with pytest.raises(LibraryError, match="library.per_user_daily"):
        add_search(cfg, QUERIES[2], 4, user="ann", embedder=embedder)
    assert [n.query for n in Library.of(cfg).notes()] == [QUERIES[1]]
    assert open_current(cfg)[0] == folder
    add_search(cfg, QUERIES[2], 4, user="bob", embedder=embedder)  # another user's own limit


def test_concurrent_users_share_one_rate_limit(tmp_path, pool):
    """Three users search at once; the replay server answers 429 to a fourth request within a
    second, as NCBI does without an API key. Mutation caught: a limiter per client instead of
    the process-wide one (``limiter_for`` returning a new RateLimiter)."""
    with ReplayServer(pool) as replay:
        cfg = make_cfg(tmp_path, replay.base_url, efetch_batch=2)
        errors: list[BaseException] = []

        def user() -> None:
            try:
                search_pubmed(cfg, QUERIES[0], 4)
            except BaseException as err:  # noqa: BLE001 - reported below
                errors.append(err)

        threads = [threading.Thread(target=user) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert len(replay.requests) == 9  # 3 x (ESearch + 2 EFetch batches): nothing retried
        assert {r.status for r in replay.requests} == {200}


def test_ncbi_settings_come_from_the_environment(tmp_path, pool, monkeypatch):
    """Mutation caught: the tool name hard-coded (NCBI_TOOL ignored)."""
    monkeypatch.setenv("NCBI_API_KEY", "k-123")
    monkeypatch.setenv("NCBI_EMAIL", "me@example.org")
    monkeypatch.setenv("NCBI_TOOL", "my-assistant")
    with ReplayServer(pool) as replay:
        cfg = make_cfg(tmp_path, replay.base_url)
        search_pubmed(cfg, QUERIES[1], 3)
        assert all((r.params.get("api_key"), r.params.get("email"), r.params.get("tool"))
                   == ("k-123", "me@example.org", "my-assistant") for r in replay.requests)
        assert all(r.method == "POST" for r in replay.requests)  # the key never in a URL
        assert eutils.EUtilsClient.from_env("x", 1).min_interval_s == pytest.approx(0.11)


def test_the_rate_limiter_spaces_every_client_of_the_process():
    """Three clients on three threads, one fake clock: their requests get slots 0.34 s apart
    (3 a second without a key), never two in one slot. (Bio.Entrez also spaces its own calls;
    this is the limiter every transport goes through.) Mutation caught: a new RateLimiter per
    request (``limiter_for`` not sharing)."""
    now = [0.0]
    lock = threading.Lock()
    slots: list[float] = []

    def clock() -> float:
        return now[0]

    def sleep(seconds: float) -> None:  # the slot this request was given
        with lock:
            slots.append(round(now[0] + seconds, 2))

    def transport(url, data, timeout):
        return b"{}"

    clients = [eutils.EUtilsClient(transport=transport, clock=clock, sleep=sleep)
               for _ in range(3)]
    threads = [threading.Thread(target=lambda c=c: [c.request("einfo.fcgi", {})
                                                     for _ in range(2)]) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(slots) == [0.34, 0.68, 1.02, 1.36, 1.7]  # the first request waits for none
