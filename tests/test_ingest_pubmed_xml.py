"""PubMed XML parser: unit tests on small documents, then every efetch fixture and damaged copies
of the real corpus (the full corpora are counted once, in test_ingest_corpus.py)."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

from ingest.models import Article
from ingest.pubmed_xml import BadRecord, Deletion, iter_pubmed_xml
from ingest.sources import iter_file
from tests.helpers import need

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
EFETCH = SHARED / "fixtures" / "efetch"
PUBMEDQA = SHARED / "pubmed" / "pubmedqa_pqal.xml.gz"


def doc(*records: str, root: str = "PubmedArticleSet") -> bytes:
    body = "\n".join(records)
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2025//EN" '
        '"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n'
        f"<{root}>\n{body}\n</{root}>\n"
    ).encode()


def article(pmid: str = "1", inner: str = "", version: str = "1", extra: str = "") -> str:
    return (
        f'<PubmedArticle><MedlineCitation><PMID Version="{version}">{pmid}</PMID>'
        f"<Article>{inner}</Article>{extra}</MedlineCitation></PubmedArticle>"
    )


def parse(data: bytes) -> list:
    return list(iter_pubmed_xml(io.BytesIO(data), name="test.xml"))


def only_article(data: bytes) -> Article:
    (record,) = parse(data)
    assert isinstance(record, Article), record
    return record


def test_labelled_sections_become_label_lines_and_markup_keeps_its_text():
    a = only_article(
        doc(
            article(
                inner="<ArticleTitle>Risk of <i>TERT</i> variants</ArticleTitle><Abstract>"
                '<AbstractText Label="BACKGROUND">Short  telomeres.</AbstractText>'
                '<AbstractText Label="RESULTS">r<sup>2</sup>&lt;0.25 and p<sub>trend</sub>.'
                "</AbstractText><AbstractText>Unlabelled end.</AbstractText>"
                "<CopyrightInformation>(c) Publisher</CopyrightInformation></Abstract>"
            )
        )
    )
    assert a.title == "Risk of TERT variants"
    assert a.abstract.split("\n") == [
        "BACKGROUND: Short telomeres.",
        "RESULTS: r2<0.25 and ptrend.",
        "Unlabelled end.",
    ]


def test_run_together_section_names_are_split_but_clinicaltrials_is_not():
    a = only_article(
        doc(
            article(
                inner="<Abstract><AbstractText>We compared systems.ResultsThe best one won. "
                "Registered at ClinicalTrials.gov.ConclusionsIt works.</AbstractText></Abstract>"
            )
        )
    )
    assert a.abstract.split("\n") == [
        "We compared systems.",
        "RESULTS: The best one won. Registered at ClinicalTrials.gov.",
        "CONCLUSIONS: It works.",
    ]


def test_references_and_comments_do_not_leak_their_pmids_or_dois():
    refs = (
        "<CommentsCorrectionsList><CommentsCorrections><PMID>999</PMID>"
        "</CommentsCorrections></CommentsCorrectionsList>"
    )
    record = (
        "<PubmedArticle><MedlineCitation><PMID>42</PMID><Article><ArticleTitle>T</ArticleTitle>"
        f"</Article>{refs}</MedlineCitation><PubmedData><ArticleIdList>"
        '<ArticleId IdType="pubmed">42</ArticleId><ArticleId IdType="doi">10.1/own</ArticleId>'
        '</ArticleIdList><ReferenceList><Reference><ArticleIdList><ArticleId IdType="doi">'
        "10.9/other</ArticleId></ArticleIdList></Reference></ReferenceList></PubmedData>"
        "</PubmedArticle>"
    )
    a = only_article(doc(record))
    assert (a.pmid, a.doi) == ("42", "10.1/own")


def test_authors_dates_journal_doi_and_mesh():
    a = only_article(
        doc(
            article(
                inner="<Journal><JournalIssue><PubDate><MedlineDate>2013 Nov-Dec</MedlineDate>"
                "</PubDate></JournalIssue><Title>Journal of Things</Title>"
                "<ISOAbbreviation>J Things</ISOAbbreviation></Journal>"
                '<ELocationID EIdType="pii">S1</ELocationID>'
                '<ELocationID EIdType="doi" ValidYN="Y">10.5/x.1</ELocationID>'
                "<AuthorList><Author><LastName>Müller</LastName><ForeName>Jörg</ForeName>"
                "<Initials>J</Initials></Author>"
                "<Author><LastName>Silva</LastName><Initials>JC</Initials></Author>"
                '<Author ValidYN="N"><LastName>Wrong</LastName></Author>'
                "<Author><CollectiveName>The Study Group</CollectiveName></Author></AuthorList>",
                extra="<MeshHeadingList><MeshHeading><DescriptorName>Humans</DescriptorName>"
                "<QualifierName>methods</QualifierName></MeshHeading></MeshHeadingList>",
            )
        )
    )
    assert a.authors == ["Jörg Müller", "JC Silva", "The Study Group"]
    assert (a.year, a.month, a.day) == (2013, 11, None)
    assert a.journal == "J Things"
    assert a.doi == "10.5/x.1"
    assert a.mesh_terms == ["Humans"]


def test_pubdate_parts_and_article_date_fallback():
    dated = only_article(
        doc(
            article(
                inner="<Journal><JournalIssue><PubDate><Year>2017</Year><Month>06</Month>"
                "<Day>3</Day></PubDate></JournalIssue></Journal>"
            )
        )
    )
    assert (dated.year, dated.month, dated.day) == (2017, 6, 3)
    fallback = only_article(
        doc(
            article(
                inner="<Journal><JournalIssue><PubDate/></JournalIssue></Journal>"
                '<ArticleDate DateType="Electronic"><Year>2019</Year><Month>02</Month>'
                "<Day>11</Day></ArticleDate>"
            )
        )
    )
    assert (fallback.year, fallback.month, fallback.day) == (2019, 2, 11)


def test_version_book_article_and_deletions_in_file_order():
    book = (
        '<PubmedBookArticle><BookDocument><PMID Version="1">777</PMID><Book>'
        "<BookTitle>GeneReviews</BookTitle><PubDate><Year>2020</Year></PubDate></Book>"
        "<ArticleTitle>Chapter one</ArticleTitle><Abstract><AbstractText>Book text.</AbstractText>"
        "</Abstract></BookDocument></PubmedBookArticle>"
    )
    deletion = (
        '<DeleteCitation><PMID Version="1">5</PMID><PMID Version="1">6</PMID></DeleteCitation>'
    )
    records = parse(doc(article("5", version="2"), book, deletion))
    assert [type(r).__name__ for r in records] == ["Article", "Article", "Deletion"]
    assert records[0].version == 2
    assert (records[1].pmid, records[1].title, records[1].journal) == (
        "777",
        "Chapter one",
        "GeneReviews",
    )
    assert records[2] == Deletion(("5", "6"))


def test_malformed_record_is_reported_and_the_others_kept():
    bad = article("2", inner="<ArticleTitle>broken <b>tag</ArticleTitle>")
    records = parse(doc(article("1"), bad, article("3")))
    assert [r.pmid for r in records if isinstance(r, Article)] == ["1", "3"]
    (error,) = [r for r in records if isinstance(r, BadRecord)]
    assert error.pmid == "2" and "record 2" in error.position and "line 5" in error.position
    assert "malformed XML" in error.reason and "test.xml" in str(error)


def test_record_without_pmid_is_bad_not_fatal():
    records = parse(doc(article(""), article("9")))
    assert isinstance(records[0], BadRecord) and "without a PMID" in records[0].reason
    assert records[1].pmid == "9"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "empty file"),
        (
            b'<?xml version="1.0"?><eFetchResult><ERROR>Empty id list</ERROR></eFetchResult>',
            "error response",
        ),
        (b"<html><body>Not found</body></html>", "not PubMed XML"),
    ],
)
def test_files_that_are_not_article_sets_give_one_bad_record(data, expected):
    (record,) = parse(data)
    assert isinstance(record, BadRecord) and expected in record.reason


@pytest.mark.parametrize("path", sorted(EFETCH.glob("*.xml")) or [EFETCH / "missing.xml"], ids=str)
def test_every_efetch_fixture_parses_without_bad_records(path):
    records = list(iter_file(need(path)))
    assert records and all(isinstance(r, Article) for r in records)
    assert all(r.pmid.isdigit() and r.title for r in records)


def test_efetch_fixture_details():
    by_pmid = {r.pmid: r for p in sorted(need(EFETCH).glob("*.xml")) for r in iter_file(p)}
    assert len(by_pmid) == 8
    assert (by_pmid["12091962"].year, by_pmid["12091962"].month) == (1990, None)  # Season
    assert (by_pmid["9997"].year, by_pmid["9997"].month, by_pmid["9997"].day) == (1976, 9, 28)
    gut = by_pmid["27797938"]
    assert gut.abstract.startswith("OBJECTIVE: Telomere shortening")
    assert "\nDESIGN: " in gut.abstract and "(TERT)" in gut.abstract
    assert gut.doi == "10.1136/gutjnl-2016-312510" and gut.journal == "Gut"
    assert len(gut.mesh_terms) == 21
    assert by_pmid["11748933"].doi == "10.1006/cryo.2001.2328"  # from ArticleIdList
    lungs = by_pmid["29963580"]
    assert "Canadian Respiratory Research Network" in lungs.authors
    assert "He 3 / Xe 129 MRI" in lungs.abstract  # MathML flattened to its text


def _pubmedqa_head(n_bytes: int) -> bytes:
    with gzip.open(need(PUBMEDQA)) as fh:
        return fh.read(n_bytes)


def test_truncated_gzip_keeps_complete_records_and_reports_the_break(tmp_path):
    whole = gzip.compress(_pubmedqa_head(400_000))
    path = tmp_path / "cut.xml.gz"
    path.write_bytes(whole[: len(whole) // 2])
    records = list(iter_file(path))
    articles = [r for r in records if isinstance(r, Article)]
    bad = [r for r in records if isinstance(r, BadRecord)]
    assert len(articles) > 20
    assert len(bad) == 1 and str(path) == bad[0].file
    assert "ends inside this record" in bad[0].reason or "ends early" in bad[0].reason
    assert bad[0].position.startswith("line ")


def test_truncated_xml_reports_the_cut_record(tmp_path):
    head = _pubmedqa_head(200_000)
    path = tmp_path / "cut.xml"
    path.write_bytes(head)
    records = list(iter_file(path))
    assert isinstance(records[-1], BadRecord)
    assert "ends inside this record" in records[-1].reason
    assert sum(isinstance(r, Article) for r in records) == len(records) - 1


def test_malformed_real_record_in_a_real_file(tmp_path):
    head = _pubmedqa_head(300_000)
    end = head.rindex(b"</PubmedArticle>") + len(b"</PubmedArticle>")
    data = head[:end] + b"\n</PubmedArticleSet>\n"
    start = data.index(b"<AbstractText", data.index(b"<PubmedArticle>", 5000))
    broken = data[:start] + b"<AbstractText <oops>" + data[start + len(b"<AbstractText") :]
    path = tmp_path / "broken.xml.gz"
    path.write_bytes(gzip.compress(broken))
    good = [r for r in iter_file(tmp_path.joinpath("broken.xml.gz"))]
    original = [r for r in iter_pubmed_xml(io.BytesIO(data))]
    bad = [r for r in good if isinstance(r, BadRecord)]
    assert len(bad) == 1 and bad[0].pmid
    assert len([r for r in good if isinstance(r, Article)]) == len(original) - 1


@pytest.mark.parametrize("chunk_bytes", [7, 64, 4096])
def test_tiny_reads_split_records_exactly_like_big_ones(monkeypatch, chunk_bytes):
    expected = parse(_pubmedqa_head(60_000))
    monkeypatch.setattr("ingest.pubmed_xml.CHUNK_BYTES", chunk_bytes)
    got = parse(_pubmedqa_head(60_000))
    assert got == expected and isinstance(got[-1], BadRecord)  # the head ends mid-record
    assert len(got) > 5


def test_unknown_and_non_utf8_files_are_bad_records_not_crashes(tmp_path):
    odd = tmp_path / "notes.txt"
    odd.write_text("Shopping list: milk\n")
    latin = tmp_path / "latin.txt"
    latin.write_bytes("PMID- 1\nTI  - Caf\xe9\n".encode("latin-1"))
    (odd_record,) = list(iter_file(odd))
    assert isinstance(odd_record, BadRecord)
    assert "neither PubMed XML nor MEDLINE" in odd_record.reason
    assert any(isinstance(r, BadRecord) and "UTF-8" in r.reason for r in iter_file(latin))
