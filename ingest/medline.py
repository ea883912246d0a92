"""Parser for PubMed's MEDLINE text format (``Send to > File > PubMed`` / ``rettype=medline``).

Each field is a tag padded to four characters, ``- `` and a value; long values wrap onto lines
indented by six spaces. A record starts at its ``PMID-`` line and ends at a blank line or the next
``PMID-``. The result matches :mod:`ingest.pubmed_xml` for the same record: same author form,
MeSH descriptors without qualifiers, labelled sections as ``LABEL: text`` lines. A record with a
line that is not MEDLINE comes out as a :class:`BadRecord`; the others are kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ingest.citation_fields import medline_last_names
from ingest.dates import parse_date_text
from ingest.models import Article, PublicationType
from ingest.pubmed_xml import BadRecord, normalize_doi
from ingest.text import clean, join_abstract, split_inline_labels

_TAG_RE = re.compile(r"^([A-Z][A-Z0-9]{0,3}) *- ?(.*)$")
_DOI_RE = re.compile(r"^(\S+)\s*\[doi\]\s*$")


@dataclass
class _Raw:
    line: int  # first line of the record
    fields: list[tuple[str, str]] = field(default_factory=list)
    problem: str | None = None


def iter_medline(lines: Iterable[str], name: str = "<stream>") -> Iterator[Article | BadRecord]:
    """Yield one :class:`Article` (or :class:`BadRecord`) per record in MEDLINE ``lines``."""
    count = 0
    for number, raw in enumerate(_records(lines), start=1):
        count += 1
        position = f"line {raw.line}, record {number}"
        pmid = next((v.strip() for t, v in raw.fields if t == "PMID" and v.strip()), None)
        if raw.problem:
            yield BadRecord(name, position, raw.problem, pmid)
        elif not pmid:
            yield BadRecord(name, position, "record without a PMID")
        else:
            yield _article(raw.fields)
    if count == 0:
        yield BadRecord(name, "line 1", "no MEDLINE records (no 'PMID- ' line)")


def _records(lines: Iterable[str]) -> Iterator[_Raw]:
    """Group lines into records; continuation lines are appended to the field above them."""
    current: _Raw | None = None
    for lineno, text in enumerate(lines, start=1):
        line = text.rstrip("\r\n")
        if not line.strip():
            if current is not None:
                yield current
                current = None
            continue
        if line[0].isspace() and current is not None and current.fields:
            tag, value = current.fields[-1]
            current.fields[-1] = (tag, f"{value} {line.strip()}")
            continue
        match = _TAG_RE.match(line)
        if match and match.group(1) == "PMID" and current is not None:
            yield current
            current = None
        if current is None:
            current = _Raw(line=lineno)
        if match:
            current.fields.append((match.group(1), match.group(2)))
        elif current.problem is None:
            current.problem = (
                f"line {lineno} is not a 'TAG - value' MEDLINE line ({line.strip()[:40]!r})"
            )
    if current is not None:
        yield current


def _article(fields: list[tuple[str, str]]) -> Article:
    values: dict[str, list[str]] = {}
    for tag, value in fields:
        values.setdefault(tag, []).append(clean(value))

    def first(*tags: str) -> str:
        return next((v for tag in tags for v in values.get(tag, []) if v), "")

    year, month, day = parse_date_text(first("DP"))
    return Article(
        pmid=first("PMID"),
        title=first("TI", "TT"),
        abstract=join_abstract(split_inline_labels(first("AB"))),
        authors=_authors(fields),
        journal=first("TA", "JT"),
        year=year,
        month=month,
        day=day,
        doi=_doi(values.get("LID", []) + values.get("AID", [])),
        mesh_terms=[d for d in (_descriptor(t) for t in values.get("MH", [])) if d],
        mesh_major=[_descriptor(t) for t in values.get("MH", []) if "*" in t and _descriptor(t)],
        # MEDLINE text gives publication type names only (no UI)
        publication_types=[PublicationType(name=v) for v in values.get("PT", []) if v],
        pmc=first("PMC") or None,
        keywords=[v.lstrip("*").strip() for v in values.get("OT", []) if v.lstrip("*").strip()],
        language=first("LA") or None,
        volume=first("VI") or None,
        issue=first("IP") or None,
        pages=first("PG") or None,
        retraction_notices=[_notice(v) for v in values.get("RIN", []) if v],
        author_last_names=medline_last_names(fields),
    )


def _notice(value: str) -> str:
    """``RIN - Nature. 2020;580(7801):E1. PMID: 32238940`` -> ``32238940`` (else the text)."""
    match = re.search(r"PMID:\s*(\d+)", value)
    return match.group(1) if match else value


def _authors(fields: list[tuple[str, str]]) -> list[str]:
    """``Forename Lastname`` from ``FAU`` (its ``AU`` twin skipped), else from ``AU``; ``CN``
    collective names as they are; record order kept."""
    names: list[str] = []
    previous = ""
    for tag, value in fields:
        value = clean(value)
        if tag == "FAU" and value:
            last, _, fore = value.partition(",")
            names.append(" ".join(p for p in (fore.strip(), last.strip()) if p))
        elif tag == "AU" and value and previous != "FAU":
            last, _, initials = value.rpartition(" ")
            names.append(f"{initials} {last}" if last else initials)
        elif tag == "CN" and value:
            names.append(value)
        previous = tag
    return names


def _doi(ids: list[str]) -> str | None:
    for value in ids:
        match = _DOI_RE.match(value)
        if match and (doi := normalize_doi(match.group(1))):
            return doi
    return None


def _descriptor(term: str) -> str:
    """``Information Storage and Retrieval/*methods`` -> ``Information Storage and Retrieval``."""
    return term.split("/", 1)[0].replace("*", "").strip()
