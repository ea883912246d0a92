"""MEDLINE text parser: unit tests, every MEDLINE fixture, and agreement with the XML parser on
the records present in both formats."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

from ingest.medline import iter_medline
from ingest.models import Article
from ingest.pubmed_xml import BadRecord, iter_pubmed_xml
from ingest.sources import iter_file
from tests.helpers import need

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
MEDLINE = SHARED / "fixtures" / "medline"
INTELLIGENCE = SHARED / "pubmed" / "intelligence_2013_2022.xml.gz"

RECORD = """\
PMID- 16403221
DP  - 2006 Jan 10
TI  - A high level interface to SCOP and ASTRAL
      implemented in python.
AB  - BACKGROUND: Benchmarking algorithms is
      hard. RESULTS: We have designed modules. CONCLUSION: They work.
FAU - Casbon, James A
AU  - Casbon JA
AD  - Queen Mary, University of London.
AU  - Crooks GE
CN  - SCOP Consortium
TA  - BMC Bioinformatics
JT  - BMC bioinformatics
MH  - *Software
MH  - Information Storage and Retrieval/*methods
AID - 1471-2105-7-10 [pii]
AID - 10.1186/1471-2105-7-10 [doi]
"""


def test_fields_continuations_labels_and_authors():
    (a,) = list(iter_medline(RECORD.splitlines(keepends=True)))
    assert a.pmid == "16403221"
    assert a.title == "A high level interface to SCOP and ASTRAL implemented in python."
    assert a.abstract.split("\n") == [
        "BACKGROUND: Benchmarking algorithms is hard.",
        "RESULTS: We have designed modules.",
        "CONCLUSION: They work.",
    ]
    assert a.authors == ["James A Casbon", "GE Crooks", "SCOP Consortium"]
    assert (a.year, a.month, a.day) == (2006, 1, 10)
    assert a.journal == "BMC Bioinformatics"
    assert a.doi == "10.1186/1471-2105-7-10"
    assert a.mesh_terms == ["Software", "Information Storage and Retrieval"]


def test_records_split_on_pmid_or_blank_line_and_bad_records_are_reported():
    text = (
        "PMID- 1\nTI  - One\n\nTI  - no pmid here\n\nPMID- 3\nTI  - Three\nthis is junk\nPMID- 4\n"
    )
    records = list(iter_medline(text.splitlines(), name="x.txt"))
    assert [type(r).__name__ for r in records] == ["Article", "BadRecord", "BadRecord", "Article"]
    assert "without a PMID" in records[1].reason and records[1].position.startswith("line 4,")
    assert records[2].pmid == "3" and "line 8" in records[2].reason
    assert records[3].pmid == "4"


def test_text_without_records_is_one_bad_record():
    (bad,) = list(iter_medline(["hello world\n"], name="notes.txt"))
    assert isinstance(bad, BadRecord)


@pytest.mark.parametrize(
    "path", sorted(MEDLINE.glob("*.txt")) or [MEDLINE / "missing.txt"], ids=str
)
def test_every_medline_fixture_parses(path):
    records = list(iter_file(need(path)))
    assert records and all(isinstance(r, Article) for r in records)
    assert all(r.pmid.isdigit() and r.title and r.year for r in records)


def test_medline_fixture_details():
    records = {r.pmid: r for p in sorted(need(MEDLINE).glob("*.txt")) for r in iter_file(p)}
    assert len(records) == 16
    assert records["32167262"].authors == ["Kadircan Keskinbora", "Fatih Güven"]
    assert records["29407344"].abstract.startswith("BACKGROUND: ")
    assert records["12230038"].mesh_terms[0] == "Computational Biology"  # "*" dropped


def _xml_records(path: Path, pmids: set[str]) -> bytes:
    """Just the records for ``pmids``, cut from the raw file (parsing all 15.7k is left to the
    one session-wide load in test_ingest_corpus.py)."""
    raw = gzip.decompress(path.read_bytes())
    chunks = []
    for pmid in pmids:
        at = raw.find(f'<PMID Version="1">{pmid}</PMID>'.encode())
        if at >= 0:
            start = raw.rindex(b"<PubmedArticle>", 0, at)
            end = raw.index(b"</PubmedArticle>", at) + len(b"</PubmedArticle>")
            chunks.append(raw[start:end])
    return b"<PubmedArticleSet>" + b"".join(chunks) + b"</PubmedArticleSet>"


def test_medline_and_xml_agree_on_the_same_records():
    sample = {r.pmid: r for r in iter_file(need(MEDLINE / "intelligence_sample.medline.txt"))}
    data = _xml_records(need(INTELLIGENCE), set(sample))
    xml = {r.pmid: r for r in iter_pubmed_xml(io.BytesIO(data))}
    assert len(xml) == 4  # the sample PMIDs that are also in the XML corpus
    for pmid, from_xml in xml.items():
        from_medline = sample[pmid]
        assert from_medline.title == from_xml.title
        assert from_medline.abstract == from_xml.abstract
        assert from_medline.doi == from_xml.doi
        # this XML corpus drops many forenames ("R Rehman"), so compare surnames
        surnames = [name.split()[-1] for name in from_medline.authors]
        assert surnames == [name.split()[-1] for name in from_xml.authors]
