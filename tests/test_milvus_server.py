"""The Milvus backend against a real Milvus server: runs only when ``MILVUS_URI`` is set.

``MILVUS_URI=http://host:19530 MILVUS_TOKEN=user:pass pytest tests/test_milvus_server.py``
(the token only if the server asks for one) builds a throw-away collection of 40 small-test
articles, searches it, updates it and drops it. Unlike milvus-lite, a server reports BM25 as
positive scores; ranks are what is asserted.
"""

from __future__ import annotations

import os
import uuid

import pytest

from retrievers.filters import Filters
from tests.milvus_fixtures import milvus_cfg, require_milvus_lite

pytestmark = pytest.mark.slow

MILVUS_URI = os.environ.get("MILVUS_URI", "")


@pytest.fixture(scope="module")
def server_cfg(small_index_cfg, shared_articles):
    if not MILVUS_URI:
        pytest.skip("MILVUS_URI is not set: no Milvus server to test against")
    require_milvus_lite()  # pymilvus, in fact; the same requirement line installs both
    from indexing.milvus_index import build_milvus_index
    from indexing.milvus_store import connect
    from tests.conftest import small_selection

    collection = f"pubmed_test_{uuid.uuid4().hex[:12]}"
    cfg = milvus_cfg(small_index_cfg, MILVUS_URI, collection)  # type: ignore[arg-type]
    articles = small_selection(shared_articles)[:40]
    build_milvus_index(cfg, articles, corpus_checksum="server-test")
    yield cfg, articles
    connect(cfg).drop_collection(collection)


def test_search_update_and_filters_on_a_server(server_cfg) -> None:
    from indexing.milvus_index import build_milvus_index
    from retrievers.milvus_backend import MilvusBackend

    cfg, articles = server_cfg
    backend = MilvusBackend(cfg)
    target = articles[5]
    bm25 = backend.bm25_search(target.title, 5, Filters())
    assert bm25[0].metadata["pmid"] == target.pmid and bm25[0].metadata["score"] > 0
    dense = backend.dense_search(target.title, 5, 0.2, Filters())
    assert dense[0].metadata["pmid"] == target.pmid
    year = target.year or 2015
    within = backend.dense_search(target.title, 10, 0.0, Filters(year_min=year, year_max=year))
    assert within and all(d.metadata["year"] == year for d in within)
    manifest = build_milvus_index(cfg, articles[1:], reuse=True, corpus_checksum="v2")
    assert manifest.deleted_articles == 1 and manifest.written_articles == 0
    assert MilvusBackend(cfg).size == manifest.chunks
