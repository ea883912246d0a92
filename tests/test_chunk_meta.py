"""ingest.metadata.ChunkMeta: a chunk's article fields read back typed, in one place (the
answer's sources and grounding read them through it)."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator
from pathlib import Path

from ingest.metadata import ChunkMeta, chunk_metadata
from ingest.models import Article, PublicationType
from tests.helpers import parse_python

REPO = Path(__file__).resolve().parents[1]
# the packages above ingest (tests/test_layers.py), whose readers go through ChunkMeta
READERS = ("indexing", "retrievers", "grounding", "llms", "chains", "eval", "bench", "app")
# article fields still read by their string key, and why
KEPT = {
    # the Milvus row's columns are written from the metadata as stored (the index format)
    ("indexing/milvus_rows.py", "title"), ("indexing/milvus_rows.py", "year"),
    ("indexing/milvus_rows.py", "journal"), ("indexing/milvus_rows.py", "authors"),
    # the filter benchmark copies real rows' values, raw, into the metadata of synthetic chunks
    ("bench/filtered.py", "pmid"), ("bench/filtered.py", "year"),
    ("bench/filtered.py", "title"), ("bench/filtered.py", "authors"),
}


def test_what_ingest_writes_reads_back_as_it_was() -> None:
    article = Article(pmid="123", title="T", abstract="A " * 80, authors=["Ann Lee"], year=2015,
                      doi="10.1/x", pmc="PMC9", retraction_notices=["77"],
                      publication_types=[PublicationType(name="Randomized Controlled Trial")])
    meta = ChunkMeta.from_metadata(chunk_metadata(article))
    assert (meta.pmid, meta.year, meta.doi, meta.pmc) == ("123", 2015, "10.1/x", "PMC9")
    assert meta.url == "https://pubmed.ncbi.nlm.nih.gov/123/" and meta.retracted
    assert meta.design == "rct" and meta.publication_types == ["Randomized Controlled Trial"]


def test_absent_or_odd_fields_read_as_their_defaults() -> None:
    meta = ChunkMeta.from_metadata({"pmid": 42, "year": "n/a", "doi": "", "authors": None})
    assert meta.pmid == "42" and meta.year is None and meta.doi is None and meta.authors == []
    assert meta.url == "https://pubmed.ncbi.nlm.nih.gov/42/"  # an index without urls
    assert ChunkMeta.from_metadata({"year": "2019"}).year == 2019


def _is_metadata(node: ast.expr) -> bool:
    """``<anything>.metadata`` or a name the code gives a metadata dict (metadata, md, meta)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "metadata"
    return isinstance(node, ast.Name) and node.id in {"metadata", "md", "meta"}


def metadata_key_reads(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, key) of each ``metadata["key"]`` and ``metadata.get("key", ...)`` in ``tree``."""
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Subscript) and _is_metadata(node.value):
            key = node.slice
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "get" and _is_metadata(node.func.value) and node.args):
            key = node.args[0]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            yield node.lineno, key.value


def test_article_fields_are_read_through_the_record_above_ingest() -> None:
    """A reader above ingest that reads an article field by its string key again (not through
    ChunkMeta) is named here; retrieval's own keys (score, ranks, confidence, chunk_index) and
    fields the record does not carry (humans) stay keys. The kept reads must still be found:
    the scan is seen to work, and the list stays current."""
    fields = {f.name for f in dataclasses.fields(ChunkMeta)}
    strays, kept = [], set()
    for package in READERS:
        for path in sorted((REPO / package).rglob("*.py")):
            name = path.relative_to(REPO).as_posix()
            for line, key in metadata_key_reads(parse_python(path)):
                if key not in fields:
                    continue
                if (name, key) in KEPT:
                    kept.add((name, key))
                else:
                    strays.append(f"{name}:{line} reads {key!r} by key; use ChunkMeta")
    assert not strays, "\n".join(strays)
    assert kept == KEPT
