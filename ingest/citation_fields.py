"""What a reference list needs beyond the article's display fields: volume, issue, pages, the PMC
id and each author's surname, read from PubMed XML and MEDLINE records alike.

``author_last_names`` runs parallel to :attr:`ingest.models.Article.authors` ("Forename Lastname"
display names): the surname of each, or ``""`` for a collective name, so a citation can be
written "Lastname FI" without guessing where a compound surname ("van der Berg", "García
Márquez") starts.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ingest.text import clean


def _text(elem: ET.Element | None) -> str:
    return clean("".join(elem.itertext())) if elem is not None else ""


def xml_citation_fields(record: ET.Element, article: ET.Element) -> dict:
    """Fields of a ``<PubmedArticle>`` (``record``) whose ``<Article>`` is ``article``."""
    issue = article.find("Journal/JournalIssue")
    pages = _text(article.find("Pagination/MedlinePgn"))
    if not pages:
        start = _text(article.find("Pagination/StartPage"))
        end = _text(article.find("Pagination/EndPage"))
        pages = f"{start}-{end}" if start and end else start
    pmcid = ""
    for article_id in record.findall("PubmedData/ArticleIdList/ArticleId"):
        if article_id.get("IdType") == "pmc":
            pmcid = clean(article_id.text)
            break
    return {
        "volume": _text(issue.find("Volume")) if issue is not None else "",
        "issue": _text(issue.find("Issue")) if issue is not None else "",
        "pages": pages,
        "pmcid": pmcid,
        "author_last_names": _xml_last_names(article.find("AuthorList")),
    }


def _xml_last_names(author_list: ET.Element | None) -> list[str]:
    """The same authors, in the same order, as ``ingest.pubmed_xml._authors`` keeps."""
    if author_list is None:
        return []
    names: list[str] = []
    for author in author_list.findall("Author"):
        if author.get("ValidYN", "Y") == "N":
            continue
        last = _text(author.find("LastName"))
        if last or _text(author.find("CollectiveName")):
            names.append(last)
    return names


def medline_citation_fields(fields: list[tuple[str, str]]) -> dict:
    """Fields of a MEDLINE record (``VI``, ``IP``, ``PG``, ``PMC``; surnames from ``FAU``/``AU``
    in the order ``ingest.medline._authors`` keeps)."""

    def first(tag: str) -> str:
        return next((clean(v) for t, v in fields if t == tag and clean(v)), "")

    last_names: list[str] = []
    previous = ""
    for tag, raw in fields:
        value = clean(raw)
        if tag == "FAU" and value:
            last_names.append(value.partition(",")[0].strip())
        elif tag == "AU" and value and previous != "FAU":
            last = value.rpartition(" ")[0]
            last_names.append(last or value)
        elif tag == "CN" and value:
            last_names.append("")
        previous = tag
    return {
        "volume": first("VI"),
        "issue": first("IP"),
        "pages": first("PG"),
        "pmcid": first("PMC"),
        "author_last_names": last_names,
    }
