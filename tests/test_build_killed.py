"""A real ``python -m app index build`` killed with ``SIGKILL``, mid-embedding and mid-publish.

The builds run as subprocesses (:mod:`tests.build_child`: the real command line, with embedding
shards of a few chunks so that 20 real PubMedQA articles span several of them, and a ``SIGKILL``
just before a chosen file operation of the publish step). What must hold, as store.py promises:

- a killed build never leaves a partial index visible: ``open_current`` either returns a complete
  build (its checksums and row counts verified) or raises the project's ``IndexMissingError``
  with its message, never anything else;
- the build run again resumes the embedding from the killed run's shards (it says so on its
  output, with the number of chunks reused) and ends with the same articles, chunks and vectors
  as a build that was never interrupted, and the index finds an article by its own title.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.conftest import REPO
from tests.test_cli_paths import pmid, real_records, write_xml

ARTICLES = 20
SHARD_ROWS = 6  # chunks per embedding shard in these builds (the product's default is 1024)
RESUMED = re.compile(r"resumed an interrupted build: (\d+) of (\d+) chunk embeddings reused")
RESUMING = re.compile(r"resuming an interrupted build: (\d+) of \d+ chunk embeddings already")
TITLE = re.compile(rb"<ArticleTitle>(.*?)</ArticleTitle>", re.DOTALL)


@dataclass
class Corpus:
    folder: Path
    records: list[bytes]


@dataclass
class Built:
    cfg_file: Path
    folder: Path  # the published build
    manifest: dict


def write_cfg(path: Path, corpus: Path, root: Path, name: str) -> Path:
    path.write_text(yaml.safe_dump({
        "corpus": {"paths": [str(corpus)], "min_abstract_chars": 20},
        "index": {"dir": str(root), "name": name, "embedding_backend": "torch"},
    }))  # fmt: skip
    return path


def child(*args: str) -> list[str]:
    return [sys.executable, "-m", "tests.build_child", *args]


def build_cmd(cfg_file: Path, *, kill_before: str | None = None) -> list[str]:
    kill = ["--kill-before", kill_before] if kill_before else []
    return child("--shard-rows", str(SHARD_ROWS), *kill, "--",
                 "--config", str(cfg_file), "index", "build", "--quiet", "--json")  # fmt: skip


def run(cmd: list[str], timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)


def load_cfg(cfg_file: Path):  # settings.config.Config
    from settings.config import load_config

    return load_config(cfg_file)


def vectors(folder: Path) -> np.ndarray:
    import faiss

    index = faiss.read_index(str(folder / "dense.faiss"))
    return index.reconstruct_n(0, index.ntotal)


def chunk_ids(folder: Path) -> list[str]:
    from indexing.build import read_chunks

    return read_chunks(folder).chunk_ids


def visible_state(cfg_file: Path) -> Path | None:
    """The build ``open_current`` serves (fully verified), or None when it says there is none.
    Any other outcome (a damaged build, a traceback) fails the test."""
    from indexing.store import DamagedIndexError, IndexMissingError, open_current

    try:
        folder, manifest = open_current(load_cfg(cfg_file))
    except DamagedIndexError as err:
        pytest.fail(f"a killed build left a damaged index visible: {err}")
    except IndexMissingError as err:
        assert "no search index" in str(err) and "index build" in str(err)
        return None
    assert vectors(folder).shape[0] == manifest.chunks == len(chunk_ids(folder))
    return folder


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    records = real_records(ARTICLES)
    folder = tmp_path_factory.mktemp("corpus")
    write_xml(folder / "a.xml", records)
    return Corpus(folder, records)


@pytest.fixture(scope="module")
def reference(corpus: Corpus, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """An uninterrupted build of the same corpus with the same shard size."""
    tmp = tmp_path_factory.mktemp("reference")
    cfg_file = write_cfg(tmp / "cfg.yaml", corpus.folder, tmp / "indices", "ref")
    out = run(build_cmd(cfg_file))
    assert out.returncode == 0, out.stderr
    assert not RESUMED.search(out.stderr)  # nothing to resume in a fresh folder
    folder = visible_state(cfg_file)
    assert folder is not None
    return Built(cfg_file, folder, json.loads(out.stdout))


def wait_for_shards(proc: subprocess.Popen, work: Path, at_least: int) -> int:
    """Wait until the build has saved ``at_least`` embedding shards, then kill it; the number of
    shards on disk at the kill."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if len(list(work.glob("emb-*.npy"))) >= at_least:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.02)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, "the build ended before it could be killed"
    return len(list(work.glob("emb-*.npy")))


def test_a_build_killed_mid_embedding_then_mid_publish_resumes_to_the_same_index(
    corpus: Corpus, reference: Built, tmp_path: Path
) -> None:
    root = tmp_path / "indices"
    cfg_file = write_cfg(tmp_path / "cfg.yaml", corpus.folder, root, "pubmed")
    total = reference.manifest["chunks"]
    shards = -(-total // SHARD_ROWS)
    assert shards >= 6, "the corpus should span several embedding shards"

    # 1. SIGKILL once two shards of embeddings are on disk
    log = (tmp_path / "killed.log").open("w")
    proc = subprocess.Popen(build_cmd(cfg_file), cwd=REPO, stdout=log, stderr=log)
    done = wait_for_shards(proc, root / "pubmed.work", at_least=2)
    assert 2 <= done < shards, f"killed after {done} of {shards} shards: not mid-embedding"
    assert visible_state(cfg_file) is None
    stats = run([sys.executable, "-m", "app", "--config", str(cfg_file), "index", "stats"])
    assert stats.returncode == 1 and "index build" in stats.stderr
    assert "Traceback" not in stats.stderr

    # 2. run again: it resumes from those shards; SIGKILL it just before the link is swapped in
    # (its build folder is complete, manifest included, but not published)
    out = run(build_cmd(cfg_file, kill_before="replace .pubmed.link"))
    assert out.returncode == -signal.SIGKILL, out.stderr
    resumed = RESUMED.search(out.stderr)
    assert resumed, f"the second run did not resume the killed one's embeddings:\n{out.stderr}"
    assert int(resumed.group(1)) >= min(done * SHARD_ROWS, total)
    assert int(resumed.group(2)) == total
    # said before embedding starts too (what the chat's background build log shows at once)
    resuming = RESUMING.search(out.stderr)
    assert resuming and int(resuming.group(1)) == int(resumed.group(1)), out.stderr
    assert out.stderr.index(resuming.group(0)) < out.stderr.index(resumed.group(0))
    assert [p.name for p in (root / "pubmed.builds").iterdir() if (p / "manifest.json").is_file()]
    assert visible_state(cfg_file) is None  # written, but never published

    # 3. run again, uninterrupted: every embedding comes from the shards; the index is the same
    out = run(build_cmd(cfg_file))
    assert out.returncode == 0, out.stderr
    resumed = RESUMED.search(out.stderr)
    assert resumed and int(resumed.group(1)) == total, out.stderr
    manifest = json.loads(out.stdout)
    for key in ("articles", "chunks", "corpus_checksum"):
        assert manifest[key] == reference.manifest[key], key
    folder = visible_state(cfg_file)
    assert folder is not None
    assert chunk_ids(folder) == chunk_ids(reference.folder)
    np.testing.assert_allclose(vectors(folder), vectors(reference.folder), atol=1e-5)
    assert [p.name for p in (root / "pubmed.builds").iterdir()] == [folder.name]  # no leftovers
    assert not (root / "pubmed.work").exists()

    # the index works: an article's own title finds it first (shipped retrieval settings)
    from retrievers.loading import load_retriever

    record = corpus.records[3]
    title = TITLE.search(record)
    assert title
    hits = load_retriever(load_cfg(cfg_file)).retrieve(title.group(1).decode()).documents
    assert hits and hits[0].metadata["pmid"] == pmid(record)


# ---- every point of the publish step ---------------------------------------------------------


def prepare(reference: Built, root: Path, *, previous: bool) -> tuple[Path, Path, Path]:
    """An index folder (with the reference build published in it when ``previous``) holding an
    unpublished copy of the reference build and a stale unfinished build; the config, the new
    build's folder and its manifest (as the builder hands it to publish)."""
    if previous:
        shutil.copytree(reference.folder.parents[1], root, symlinks=True)
    builds = root / "ref.builds"
    builds.mkdir(parents=True, exist_ok=True)
    new = builds / "new-build"
    new.mkdir()
    for f in reference.folder.iterdir():
        if f.name != "manifest.json":
            shutil.copy(f, new / f.name)
    (builds / "killed-earlier").mkdir()  # an unfinished build, pruned by the next publish
    (builds / "killed-earlier" / "chunks.parquet").write_bytes(b"half")
    manifest = json.loads((reference.folder / "manifest.json").read_text())
    manifest.update(file_sha256={}, manifest_sha256="", built_at="2030-01-01T00:00:00+00:00")
    manifest_file = root.parent / f"{root.name}-manifest.json"
    manifest_file.write_text(json.dumps(manifest))
    cfg_file = write_cfg(root.parent / f"{root.name}.yaml", root / "unused", root, "ref")
    return cfg_file, new, manifest_file


@pytest.mark.parametrize("previous", [True, False], ids=["over-a-previous-build", "first-build"])
def test_a_publish_killed_at_any_step_shows_the_old_or_the_new_index(
    reference: Built, tmp_path: Path, previous: bool
) -> None:
    """``publish`` (real, in a child) killed before each of its file operations in turn: what
    ``open_current`` serves is always a complete build: the previous one until the swap, the new
    one from then on; with no previous build, "no search index" until the swap."""
    seen: list[str] = []
    for step in range(40):
        root = tmp_path / f"kill-{step}" / "indices"
        cfg_file, new, manifest_file = prepare(reference, root, previous=previous)
        old = (root / "ref").resolve() if previous else None
        out = run(child("--kill-before", str(step), "--publish", str(new), str(manifest_file),
                        str(cfg_file)), timeout=60)  # fmt: skip
        served = visible_state(cfg_file)
        if served is None:
            assert not previous, f"step {step}: the previous build vanished"
            seen.append("none")
        else:
            assert served in (old, new.resolve()), f"step {step}: serves {served}"
            seen.append("new" if served == new.resolve() else "old")
        if out.returncode == 0:
            break
        assert out.returncode == -signal.SIGKILL, out.stderr
        assert f"publish step {step}:" in out.stderr.splitlines()[-1]
    else:
        pytest.fail("publish never finished")
    before = "old" if previous else "none"
    swap = seen.index("new")
    assert seen == [before] * swap + ["new"] * (len(seen) - swap), seen
    assert swap >= 9  # 7 checksums + the manifest come before the swap
    assert not (root / "ref.builds" / "killed-earlier").exists()  # pruned once published
