# ruff: noqa: F811 - the fixtures imported from tests.library_fixtures are parameters here
"""A library addition on a bad day, against the local E-utilities replay server (NCBI's wire
format, real PubMedQA records, NCBI's error bodies): no network, a DNS failure, a stalled answer,
a 429 storm, 5xx, a truncated EFetch body, NCBI error JSON/XML, and the process killed with
SIGKILL mid-fetch, mid-store, mid-embedding and mid-publish.

Each ends with one clear line for the user and an intact index: ``open_current`` verifies every
file against the manifest's checksums and the published build is the one from before; a killed
addition is either absent or completed by the next ``library sync`` / ``index build
--if-needed``. Each test names the mutation it was seen to catch."""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.error
from pathlib import Path

import pytest
import yaml

from app.cli import main
from indexing.build import read_article_hashes
from indexing.library_ops import add_search
from indexing.store import open_current
from ingest.errors import FetchError
from ingest.eutils import EUtilsClient
from ingest.library import Library, client_for, plain_message
from ingest.replay import ReplayServer, closed_port_url
from tests.conftest import REPO
from tests.library_fixtures import (  # noqa: F401 - fixtures
    SHIPPED,
    embedder,
    full_build,
    make_cfg,
    pool,
    write_corpus,
)

QUERY = "diabetes"


@pytest.fixture(scope="module")
def built(tmp_path_factory, pool, embedder):
    """A small real index (shipped corpus only) that no failed addition may change."""
    root = tmp_path_factory.mktemp("faults")
    write_corpus(root / "corpus", pool[:SHIPPED])
    full_build(make_cfg(root, "http://unused/"), embedder)
    return root


def intact(cfg, folder: Path) -> None:
    """The published build is the one from before, every checksum verified; the library holds
    nothing (no note, no corpus file)."""
    now, manifest = open_current(cfg)
    assert now == folder and manifest.articles == SHIPPED
    assert Library.of(cfg).notes() == [] and Library.of(cfg).files() == []


def failing_add(cfg, sleeps: list[float]) -> FetchError:
    client = client_for(cfg, sleep=sleeps.append)
    with pytest.raises(FetchError) as err:
        add_search(cfg, QUERY, 10, client=client)
    return err.value


def test_no_network_fails_at_once_with_one_line(built, capsys):
    """Nothing listens on the port (no network). Mutation caught: ``fail_fast_offline``
    ignored (the client backs off 1 s, 2 s... before saying anything)."""
    cfg = make_cfg(built, closed_port_url())
    folder = open_current(cfg)[0]
    sleeps: list[float] = []
    err = failing_add(cfg, sleeps)
    assert err.kind == "offline" and not [s for s in sleeps if s >= 1.0]
    assert plain_message(err).startswith("PubMed could not be reached")
    intact(cfg, folder)
    cfg_file = built / "offline.yaml"
    cfg_file.write_text(yaml.safe_dump({
        "corpus": {"paths": [str(built / "corpus")], "min_abstract_chars": 20,
                   "fetch": {"base_url": closed_port_url()}},
        "index": {"dir": str(built / "indices"), "name": "t", "embedding_backend": "torch"},
        "library": {"dir": str(built / "library")}}))
    assert main(["--config", str(cfg_file), "library", "add", QUERY]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: PubMed could not be reached")
    assert "nothing was added" in lines[0]
    intact(cfg, folder)


def test_a_dns_failure_is_offline_too():
    """Mutation caught: ``unreachable`` not recognising socket.gaierror (retried as a
    transient error)."""
    calls: list[str] = []

    def transport(url, data, timeout):
        calls.append(url)
        raise urllib.error.URLError(socket.gaierror(-2, "Name or service not known"))

    client = EUtilsClient(transport=transport, sleep=lambda s: None, fail_fast_offline=True)
    with pytest.raises(FetchError) as err:
        client.esearch("x")
    assert err.value.kind == "offline" and len(calls) == 1


def test_a_stalled_answer_times_out_and_says_so(built, pool):
    """Mutation caught: timeouts classified as a bad answer (``timed_out`` returning False)."""
    with ReplayServer(pool) as replay:
        replay.faults.stall_s = 2.0
        cfg = make_cfg(built, replay.base_url, timeout_s=0.3, max_retries=1)
        folder = open_current(cfg)[0]
        err = failing_add(cfg, [])
        assert err.kind == "timeout" and plain_message(err).startswith("PubMed did not answer")
        intact(cfg, folder)


def test_a_429_storm_backs_off_then_gives_up_cleanly(built, pool):
    """NCBI's 429 JSON on every request, with Retry-After. Mutation caught: 429 dropped from
    the retried statuses (one request, reported as an NCBI error instead of a busy service)."""
    with ReplayServer(pool) as replay:
        replay.faults.status, replay.faults.status_next = 429, -1
        replay.faults.retry_after = "3"
        cfg = make_cfg(built, replay.base_url, max_retries=2)
        folder = open_current(cfg)[0]
        sleeps: list[float] = []
        err = failing_add(cfg, sleeps)
        assert err.kind == "busy" and sleeps.count(3.0) == 2  # Retry-After honoured, twice
        assert [r.status for r in replay.requests] == [429, 429, 429]
        assert plain_message(err).startswith("PubMed is refusing requests")
        intact(cfg, folder)


def test_server_errors_then_recovery_complete_the_addition(tmp_path, pool, embedder):
    """Two 502s, then a body cut short (Content-Length of the whole), then normal answers:
    the addition completes with every article. Mutation caught: 5xx not retried."""
    write_corpus(tmp_path / "corpus", pool[:SHIPPED])
    with ReplayServer(pool) as replay:
        cfg = make_cfg(tmp_path, replay.base_url, max_retries=3)
        full_build(cfg, embedder)
        replay.faults.status, replay.faults.status_next = 502, 2
        replay.faults.truncate_efetch = 1
        outcome = add_search(cfg, QUERY, 6, client=client_for(cfg, sleep=lambda s: None),
                             embedder=embedder)
        assert outcome.note.fetched == 6 and outcome.note.new + outcome.note.already_indexed == 6
        assert set(outcome.note.pmids) <= set(read_article_hashes(open_current(cfg)[0]))


@pytest.mark.parametrize("how", ["connection cut", "sent as if complete"])
def test_a_truncated_efetch_body_adds_nothing(built, pool, how):
    """Every EFetch answer cut to a third: either the connection closes before Content-Length
    (IncompleteRead) or a proxy sends the cut body as complete. Mutation caught: a cut answer
    accepted as far as it parses (``_parse_batch`` without its end-of-set check and BadRecord
    check: a partial search would be stored)."""
    with ReplayServer(pool) as replay:
        if how == "connection cut":
            replay.faults.truncate_efetch = -1
        else:
            replay.faults.truncate_clean = -1
        cfg = make_cfg(built, replay.base_url, max_retries=1)
        folder = open_current(cfg)[0]
        err = failing_add(cfg, [])
        assert err.kind == "bad-answer"
        assert plain_message(err).startswith("PubMed's answer was cut off or unreadable")
        intact(cfg, folder)


@pytest.mark.parametrize("fault", ["esearch ERROR", "efetch ERROR"])
def test_ncbi_error_bodies_are_reported_not_retried_forever(built, pool, fault):
    """NCBI's own error bodies: ESearch's JSON ``ERROR``, EFetch's ``eFetchResult``. Mutation
    caught: the eFetchResult check removed (an error page parsed as zero articles and an empty
    search stored)."""
    with ReplayServer(pool) as replay:
        if fault == "esearch ERROR":
            replay.faults.esearch_error = "Search Backend failed: unknown field"
        else:
            replay.faults.efetch_error = -1
        cfg = make_cfg(built, replay.base_url)
        folder = open_current(cfg)[0]
        err = failing_add(cfg, [])
        assert err.kind == "ncbi" and plain_message(err).startswith("PubMed answered with an error")
        intact(cfg, folder)


# -- killed mid-addition -----------------------------------------------------------------------
def child_add(cfg_file: Path, step: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "tests.library_child", "--kill-at", step, "--",
           "--config", str(cfg_file), "library", "add", QUERY, "--max", "8"]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)


def write_cfg(root: Path, base_url: str) -> Path:
    path = root / "cfg.yaml"
    path.write_text(yaml.safe_dump({
        "corpus": {"paths": [str(root / "corpus")], "min_abstract_chars": 20,
                   "fetch": {"base_url": base_url}},
        "index": {"dir": str(root / "indices"), "name": "t", "embedding_backend": "torch"},
        "library": {"dir": str(root / "library"), "efetch_batch": 4}}))
    return path


@pytest.mark.parametrize("step", ["fetch", "store", "embed", "publish"])
def test_an_addition_killed_leaves_the_index_as_it_was_then_completes(
    tmp_path, pool, embedder, step, capsys,
):
    """SIGKILL at each stage of a real ``python -m app library add``. Before the search's XML
    landed (fetch, store) nothing was added; after it (embed, publish) the published index is
    still the old one, verified, and ``library sync`` (or ``make run``'s ``index build
    --if-needed``) completes the addition. Mutations caught: the XML written in place instead of
    through a temporary name (store: a partial corpus file), ``notes()`` listing a search whose
    XML never landed (store: a phantom search), the sync not appending the library's pending
    articles (embed/publish: never completed)."""
    write_corpus(tmp_path / "corpus", pool[:SHIPPED])
    with ReplayServer(pool) as replay:
        cfg_file = write_cfg(tmp_path, replay.base_url)
        cfg = make_cfg(tmp_path, replay.base_url, efetch_batch=4)
        full_build(cfg, embedder)
        folder = open_current(cfg)[0]
        done = child_add(cfg_file, step)
        assert done.returncode == -9, done.stderr[-2000:]
        assert f"killed at {step}" in done.stderr
        now, manifest = open_current(cfg)  # integrity: every checksum verified
        assert now == folder and manifest.articles == SHIPPED
        library = Library.of(cfg)
        if step in ("fetch", "store"):
            assert library.notes() == [] and library.files() == []
            assert not list(library.folder.glob("*.xml.gz"))
            assert main(["--config", str(cfg_file), "library", "list"]) == 0
            assert "the library is empty" in capsys.readouterr().out
            assert library.clean_interrupted() == ([1] if step == "store" else [])
            left = list(library.folder.iterdir()) if library.folder.is_dir() else []
            assert [p.name for p in left if p.name != ".lock"] == []
            return
        pending = library.notes()
        assert len(pending) == 1 and pending[0].new + pending[0].already_indexed == 8
        if step == "embed":  # the next `make run`
            assert main(["--config", str(cfg_file), "index", "build", "--if-needed",
                         "--quiet"]) == 0
        else:
            assert main(["--config", str(cfg_file), "library", "sync"]) == 0
        after_folder, after = open_current(cfg)
        assert after.articles == SHIPPED + pending[0].new
        assert set(pending[0].pmids) <= set(read_article_hashes(after_folder))
        assert after.library_pmids == pending[0].pmids
