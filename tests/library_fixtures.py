"""Shared by the library tests: real PubMedQA records served by the local E-utilities replay
server (``ingest.replay``), the real MiniLM embedder, a small shipped corpus and a config whose
index, library and E-utilities base URL live in a temporary folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from indexing.build import build_index
from indexing.embeddings import build_embedder
from indexing.incremental import library_stamp
from ingest.corpus import find_corpus_files, load_corpus
from ingest.replay import ReplayRecord, ReplayServer, read_records
from settings.config import load_config
from tests.helpers import need

PQAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "pubmed" / "pubmedqa_pqal.xml.gz"
SHIPPED = 12  # the first records of PubMedQA are the "shipped corpus" of these tests


@pytest.fixture(scope="module")
def pool() -> list[ReplayRecord]:
    return read_records([need(PQAL)])


@pytest.fixture(scope="module")
def server(pool):
    with ReplayServer(pool) as replay:
        yield replay


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    cfg = load_config(overrides={"index": {"dir": str(tmp_path_factory.mktemp("models")),
                                           "embedding_backend": "torch"}})
    return build_embedder(cfg)


def write_corpus(folder: Path, records: list[ReplayRecord]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "shipped.xml").write_bytes(
        b"<?xml version=\"1.0\"?>\n<PubmedArticleSet>\n"
        + b"\n".join(r.xml for r in records) + b"\n</PubmedArticleSet>\n")


def make_cfg(root: Path, base_url: str, name: str = "t", **library):
    return load_config(overrides={
        "corpus": {"paths": [str(root / "corpus")], "min_abstract_chars": 20,
                   "fetch": {"base_url": base_url}},
        "index": {"dir": str(root / "indices"), "name": name, "embedding_backend": "torch"},
        "library": {"dir": str(root / "library"), **library},
    })


def full_build(cfg, embedder):
    """What `index build` does: the whole corpus (library included), from scratch."""
    files = find_corpus_files(cfg)
    corpus = load_corpus(cfg, files)
    base, lib = library_stamp(cfg, files, corpus.articles)
    return build_index(cfg, corpus.articles, corpus_checksum=corpus.report.checksum,
                       corpus_files=[str(f) for f in files], embedder=embedder,
                       base_checksum=base, library_pmids=lib)


def vectors(folder: Path) -> np.ndarray:
    import faiss

    index = faiss.read_index(str(folder / "dense.faiss"))
    return index.reconstruct_n(0, index.ntotal)


