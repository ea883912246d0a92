"""Text clean-up, dates and the preprocessing rules, on small inputs."""

from __future__ import annotations

import unicodedata

import pytest

from ingest import text
from ingest.dates import parse_date_text, parse_month
from ingest.models import Article
from ingest.preprocess import (
    MergeStats,
    drop_short,
    merge_records,
    normalize_abstract,
    normalize_article,
    normalize_text,
)
from ingest.pubmed_xml import Deletion, normalize_doi


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2013 Nov-Dec", (2013, 11, None)),
        ("1998 Dec-1999 Jan", (1998, 12, None)),
        ("2006 Mar 1", (2006, 3, 1)),
        ("1990 Spring", (1990, None, None)),
        ("Summer 2001", (2001, None, None)),
        ("2017", (2017, None, None)),
        ("", (None, None, None)),
        ("n.d.", (None, None, None)),
    ],
)
def test_free_text_dates(raw, expected):
    assert parse_date_text(raw) == expected


def test_month_names_and_numbers():
    assert [parse_month(m) for m in ("Jan", "sept", "December", "06", "13", "Spring")] == [
        1,
        9,
        12,
        6,
        None,
        None,
    ]


def test_sections_and_inline_labels():
    assert text.format_section("METHODS", " We  did\nthings. ") == "METHODS: We did things."
    assert text.format_section("UNLABELLED", "Text.") == "Text."
    assert text.split_inline_labels("BACKGROUND: A. MATERIALS AND METHODS: B. p < 0.05 CI: C.") == [
        "BACKGROUND: A.",
        "MATERIALS AND METHODS: B. p < 0.05 CI: C.",
    ]
    assert text.join_abstract(["One.MethodsWe did.", "", "Two."]) == "One.\nMETHODS: We did.\nTwo."
    assert text.section_label("MATERIALS AND METHODS: We did.") == "MATERIALS AND METHODS"
    assert text.section_label("We did. Nothing: else.") is None


def test_doi_normalisation():
    assert normalize_doi(" https://doi.org/10.1000/xyz ") == "10.1000/xyz"
    assert normalize_doi("doi:10.1/a") == "10.1/a"
    assert normalize_doi("S0140-6736(20)30183-5") is None


def test_nfc_whitespace_and_case():
    decomposed = unicodedata.normalize("NFD", "Ångström  études\tIQ")
    assert normalize_text(decomposed) == "Ångström études IQ"
    assert normalize_abstract("A:  x\n\n  \nB:\ty") == "A: x\nB: y"
    a = normalize_article(Article(pmid=" 1 ", title=decomposed, authors=[" ", decomposed]))
    assert (a.pmid, a.title, a.authors) == ("1", "Ångström études IQ", ["Ångström études IQ"])


def _a(pmid: str, version: int = 1, title: str = "", abstract: str = "x" * 50) -> Article:
    return Article(pmid=pmid, version=version, title=title, abstract=abstract)


def test_merge_rules_in_order():
    stats = MergeStats()
    merged = merge_records(
        [
            _a("1", title="old"),
            _a("2", version=3, title="v3"),
            _a("1", title="new"),  # same version, later: wins
            _a("2", version=2, title="v2"),  # lower version: ignored
            Deletion(("3", "2")),
            _a("3", title="back"),  # re-added after its deletion
        ],
        stats,
    )
    assert [(a.pmid, a.title) for a in merged.values()] == [("1", "new"), ("3", "back")]
    assert (stats.records, stats.duplicates_replaced, stats.deleted) == (5, 2, ["2"])


def test_drop_short_counts_what_it_drops():
    kept, dropped = drop_short([_a("1"), _a("2", abstract="tiny"), _a("3", abstract="")], 10)
    assert [a.pmid for a in kept] == ["1"] and dropped == ["2", "3"]
