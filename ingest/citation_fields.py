"""Each author's surname, read from PubMed XML and MEDLINE records alike, for reference lists.

The surnames run parallel to :attr:`ingest.models.Article.authors` ("Forename Lastname" display
names): the surname of each, or ``""`` for a collective name, so a citation can be written
"Lastname FI" without guessing where a compound surname ("van der Berg", "García Márquez")
starts. Volume, issue, pages and the PMC id are read with the other PubMed fields
(:mod:`ingest.pubmed_fields`, :mod:`ingest.medline`).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ingest.text import clean


def _text(elem: ET.Element | None) -> str:
    return clean("".join(elem.itertext())) if elem is not None else ""


def xml_last_names(author_list: ET.Element | None) -> list[str]:
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


def medline_last_names(fields: list[tuple[str, str]]) -> list[str]:
    """Surnames of a MEDLINE record from ``FAU``/``AU``/``CN``, in the order
    ``ingest.medline._authors`` keeps."""
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
    return last_names
