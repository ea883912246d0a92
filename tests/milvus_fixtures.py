"""A small real milvus-lite index of the same articles as conftest's ``small_index_cfg``.

Built once and cached under ``.cache/test-milvus/<key>.db``; the key covers the FAISS test index
(itself keyed by the article selection and the index code), the Milvus code and the installed
pymilvus / milvus-lite versions. Vectors come from the small FAISS index, so no chunk is
re-embedded. Import the fixtures into a test module (``from tests.milvus_fixtures import ...``).

milvus-lite lets one process open a database at a time, so each test session, and each server
subprocess (the browser test), searches its own copy, made by :func:`copy_lite_db`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import shutil
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MILVUS_CODE = [
    "indexing/milvus_index.py",
    "indexing/milvus_rows.py",
    "indexing/milvus_sync.py",
    "indexing/milvus_store.py",
    "indexing/milvus_fields.py",
    "retrievers/milvus_filters.py",
]


def require_milvus_lite() -> None:
    pytest.importorskip("pymilvus", reason="pymilvus is not installed (requirements.txt)")
    pytest.importorskip("milvus_lite", reason="milvus-lite is not installed (requirements.txt)")


def milvus_cfg(base, uri: str | Path, collection: str = "pubmed_chunks", **milvus):
    """``base`` (a Config) searching the milvus-lite database at ``uri``."""
    out = base.model_copy(deep=True)
    out.retrieval.backend = "milvus"
    out.retrieval.milvus = out.retrieval.milvus.model_copy(
        update={"uri": str(uri), "collection": collection, **milvus}
    )
    return out


def _key(small_cfg) -> str:
    h = hashlib.sha256(small_cfg.index.name.encode())
    for rel in MILVUS_CODE:
        h.update((REPO / rel).read_bytes())
    h.update(f"{version('pymilvus')}|{version('milvus-lite')}".encode())
    return h.hexdigest()[:16]


@contextlib.contextmanager
def _fixture_lock(db: Path) -> Iterator[None]:
    with open(f"{db}.fixture-lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def copy_lite_db(cfg, folder: Path):
    """A private copy of cfg's milvus-lite database in ``folder``, and a cfg pointing at it."""
    source = cfg.resolve(cfg.retrieval.milvus.uri)
    target = folder / source.name
    with _fixture_lock(source):
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("LOCK"))
    return milvus_cfg(cfg, target, cfg.retrieval.milvus.collection)


@pytest.fixture(scope="session")
def small_milvus_source(small_index_cfg, shared_articles):
    """The cached milvus-lite index of the small test articles (closed: copy it to use it).

    Other engineers' test runs share the cache, and milvus-lite allows one process per
    database, so every session searches its own copy (:func:`copy_lite_db`).
    """
    require_milvus_lite()
    from indexing.milvus_index import build_milvus_index
    from indexing.milvus_store import release
    from tests.conftest import small_selection

    folder = REPO / ".cache" / "test-milvus"
    folder.mkdir(parents=True, exist_ok=True)
    cfg = milvus_cfg(small_index_cfg, folder / f"{_key(small_index_cfg)}.db")
    with _fixture_lock(cfg.resolve(cfg.retrieval.milvus.uri)):
        try:
            build_milvus_index(cfg, small_selection(shared_articles), if_missing=True)
        finally:
            release(cfg)
    return cfg


@pytest.fixture(scope="session")
def small_milvus_cfg(small_milvus_source, tmp_path_factory):
    """A Config searching this session's own copy of the small milvus-lite index."""
    return copy_lite_db(small_milvus_source, tmp_path_factory.mktemp("milvus"))


@pytest.fixture(scope="session")
def small_milvus_backend(small_milvus_cfg):
    from retrievers.milvus_backend import MilvusBackend

    return MilvusBackend(small_milvus_cfg)
