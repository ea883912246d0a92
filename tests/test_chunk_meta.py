"""ingest.metadata.ChunkMeta: a chunk's article fields read back typed, in one place (the
answer's sources and grounding read them through it)."""

from __future__ import annotations

from ingest.metadata import ChunkMeta, chunk_metadata
from ingest.models import Article, PublicationType


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
