"""Streaming parser for PubMed XML: efetch output and the annual baseline / daily update files.

The byte stream is cut at record boundaries (``<PubmedArticle>...</PubmedArticle>``,
``<PubmedBookArticle>``, ``<DeleteCitation>``) and each record is parsed on its own. Memory stays
flat on a 150 MB baseline file, and one malformed record costs only that record: it comes out as a
:class:`BadRecord` (file, line, record number) and parsing goes on. A truncated file gives every
complete record before the break, then one :class:`BadRecord`.

Fields are read at fixed paths under the record (``MedlineCitation/PMID``): ``ReferenceList`` and
``CommentsCorrections`` hold PMIDs and DOIs of *other* articles that a ``.iter()`` search would
pick up. The standard library's expat parser never loads the DTD or external entities.
"""

from __future__ import annotations

import gzip
import re
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from ingest.citation_fields import xml_last_names
from ingest.dates import parse_date_text, parse_day, parse_month, parse_year
from ingest.models import Article
from ingest.pubmed_fields import evidence_fields
from ingest.text import clean, format_section, join_abstract

CHUNK_BYTES = 1 << 20
_OPEN_RE = re.compile(rb"<(PubmedArticle|PubmedBookArticle|DeleteCitation)[\s>]")
_ROOT_RE = re.compile(rb"<(?![?!])([A-Za-z_][\w.-]*)")
_ENCODING_RE = re.compile(rb"""<\?xml[^>]*encoding=["']([\w.-]+)["']""")
_PMID_RE = re.compile(rb"<PMID[^>]*>\s*(\d+)\s*</PMID>")
_ROOTS = (b"PubmedArticleSet", b"PubmedBookArticleSet")


@dataclass(frozen=True)
class Deletion:
    """A ``<DeleteCitation>`` block of an update file: these PMIDs leave the corpus."""

    pmids: tuple[str, ...]


@dataclass(frozen=True)
class BadRecord:
    """A record (or a whole file) that could not be read; reported, never fatal."""

    file: str
    position: str  # "line 1234, record 56" or "line 1" for a file-level problem
    reason: str
    pmid: str | None = None

    def __str__(self) -> str:
        pmid = f" (PMID {self.pmid})" if self.pmid else ""
        return f"{self.file}:{self.position}{pmid}: {self.reason}"


Record = Article | Deletion | BadRecord


@dataclass(frozen=True)
class _Chunk:
    tag: bytes
    data: bytes
    line: int  # line of the record's start tag (1-based)


@dataclass(frozen=True)
class _Unterminated(_Chunk):
    """A record cut off by the start of the next one: its end tag is missing."""


class _Splitter:
    """Cuts a PubMed XML byte stream into record chunks, remembering line numbers and damage."""

    def __init__(self, stream: BinaryIO):
        self.stream = stream
        self.buf = b""
        self.pos = 0  # start of unconsumed data in buf
        self.line = 1  # line number at buf[pos]
        self.eof = False
        self.damage: str | None = None  # why the stream ended early (gzip/zlib errors)

    def _read_more(self) -> None:
        # read1 pieces, gathered up to CHUNK_BYTES: on a truncated gzip the call that hits the
        # break raises, and one big read() would lose everything it had decompressed
        read = getattr(self.stream, "read1", self.stream.read)
        pieces: list[bytes] = []
        size = 0
        try:
            while size < CHUNK_BYTES:
                piece = read(CHUNK_BYTES - size)
                if not piece:
                    break
                pieces.append(piece)
                size += len(piece)
        except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as err:
            self.damage = f"compressed data ends early or is damaged ({err})"
            self.eof = True
        if not pieces:
            self.eof = True
            return
        self.buf = self.buf[self.pos :] + b"".join(pieces)
        self.pos = 0

    def _advance(self, to: int) -> None:
        self.line += self.buf.count(b"\n", self.pos, to)
        self.pos = to

    def prolog(self) -> bytes:
        """Everything before the first record (XML declaration, DOCTYPE, root start tag)."""
        while not self.eof and not _OPEN_RE.search(self.buf, self.pos) and len(self.buf) < 1 << 16:
            self._read_more()
        match = _OPEN_RE.search(self.buf, self.pos)
        return self.buf[: match.start()] if match else self.buf

    def chunks(self) -> Iterator[_Chunk | tuple[int, bytes]]:
        """Complete records; an :class:`_Unterminated` chunk for a record cut off by the next
        record's start tag; a ``(line, data)`` tuple for a record cut off by the end of file."""
        while True:
            match = _OPEN_RE.search(self.buf, self.pos)
            if match is None:
                if self.eof:
                    return
                self._advance(max(self.pos, len(self.buf) - 32))  # a tag may straddle reads
                self._read_more()
                continue
            self._advance(match.start())  # the record now starts at self.pos
            tag = match.group(1)
            close = b"</" + tag + b">"
            end = self.buf.find(close, self.pos)
            while end == -1 and not self.eof:
                searched = len(self.buf) - self.pos
                self._read_more()
                end = self.buf.find(close, self.pos + max(0, searched - len(close)))
            # A record whose end tag is missing would run into the next record(s) up to their
            # end tag and take them down with it: it ends where the next record starts instead.
            limit = end if end != -1 else len(self.buf)
            following = _OPEN_RE.search(self.buf, self.pos + 1, limit)
            if following is not None:
                yield _Unterminated(tag, self.buf[self.pos : following.start()], self.line)
                self._advance(following.start())
                continue
            if end == -1:
                yield (self.line, self.buf[self.pos :])
                return
            stop = end + len(close)
            yield _Chunk(tag, self.buf[self.pos : stop], self.line)
            self._advance(stop)


def iter_pubmed_xml(stream: BinaryIO, name: str = "<stream>") -> Iterator[Record]:
    """Yield an :class:`Article` per ``PubmedArticle``/``PubmedBookArticle``, a
    :class:`Deletion` per ``DeleteCitation`` and a :class:`BadRecord` per unreadable record,
    in file order."""
    splitter = _Splitter(stream)
    prolog = splitter.prolog()
    problem = _check_prolog(prolog)
    if problem and splitter.damage:  # cut before its first record: the damage is the news
        problem = f"the file ends before its first record: {splitter.damage}; download it again"
    if problem:
        yield BadRecord(name, "line 1", problem)
        return
    declared = _ENCODING_RE.search(prolog)
    encoding = declared.group(1).decode("ascii") if declared else None
    record_no = 0
    for chunk in splitter.chunks():
        if isinstance(chunk, tuple):
            line, data = chunk
            reason = "the file ends inside this record (truncated download?)"
            if splitter.damage:
                reason += f"; {splitter.damage}"
            pmid = _PMID_RE.search(data)
            yield BadRecord(name, f"line {line}, record {record_no + 1}", reason,
                            pmid.group(1).decode() if pmid else None)
            return
        if chunk.tag != b"DeleteCitation":
            record_no += 1
        if isinstance(chunk, _Unterminated):
            yield _unterminated(chunk, name, record_no)
            continue
        yield _parse_chunk(chunk, name, record_no, encoding)
    if splitter.damage:
        yield BadRecord(name, f"line {splitter.line}", splitter.damage)


def _check_prolog(prolog: bytes) -> str | None:
    """None when ``prolog`` opens a PubMed article set, else what is wrong with the file."""
    if not prolog.strip():
        return "empty file (download it again or remove it)"
    body = re.sub(rb"<!--.*?-->|<!DOCTYPE[^>]*>", b"", prolog, flags=re.DOTALL)
    root = _ROOT_RE.search(body)
    tag = root.group(1) if root else b""
    if tag in _ROOTS:
        return None
    if tag in (b"eFetchResult", b"ERROR", b"eSearchResult"):
        return "an E-utilities error response, not articles: delete it and fetch again"
    shown = tag.decode("utf-8", "replace") or prolog[:30].decode("utf-8", "replace")
    return (
        f"not PubMed XML (root element <{shown}>, expected <PubmedArticleSet>): remove it "
        "from corpus.paths or export it from PubMed as XML"
    )


def _unterminated(chunk: _Unterminated, name: str, record_no: int) -> BadRecord:
    tag = chunk.tag.decode()
    pmid = _PMID_RE.search(chunk.data)
    return BadRecord(
        name,
        f"line {chunk.line}, record {record_no}",
        f"malformed XML (<{tag}> has no closing </{tag}> before the next record starts)",
        pmid.group(1).decode() if pmid else None,
    )


def _parse_chunk(chunk: _Chunk, name: str, record_no: int, encoding: str | None) -> Record:
    try:
        parser = ET.XMLParser(encoding=encoding) if encoding else ET.XMLParser()
        parser.feed(chunk.data)
        elem = parser.close()
    except ET.ParseError as err:
        line = chunk.line + err.position[0] - 1
        pmid = _PMID_RE.search(chunk.data)
        return BadRecord(
            name,
            f"line {line}, record {record_no}",
            f"malformed XML ({str(err).split(':')[0]})",
            pmid.group(1).decode() if pmid else None,
        )
    if chunk.tag == b"DeleteCitation":
        return Deletion(tuple(p for p in (clean(e.text) for e in elem.iter("PMID")) if p))
    article = _article(elem) if chunk.tag == b"PubmedArticle" else _book_article(elem)
    if article is None:
        return BadRecord(name, f"line {chunk.line}, record {record_no}", "record without a PMID")
    return article


def _text(elem: ET.Element | None) -> str:
    """All text inside ``elem``, inline markup (<i>, <sub>, MathML) flattened."""
    return clean("".join(elem.itertext())) if elem is not None else ""


def _article(elem: ET.Element) -> Article | None:
    citation = elem.find("MedlineCitation")
    if citation is None:
        return None
    pmid_el = citation.find("PMID")
    pmid = clean(pmid_el.text if pmid_el is not None else "")
    if not pmid:
        return None
    art = citation.find("Article")
    if art is None:
        art = ET.Element("Article")
    title = _text(art.find("ArticleTitle")) or _text(art.find("VernacularTitle"))
    abstract = _abstract(art.find("Abstract"))
    if not abstract:
        abstract = _other_abstract(citation)
    journal_el = art.find("Journal")
    journal = ""
    if journal_el is not None:
        journal = _text(journal_el.find("ISOAbbreviation")) or _text(journal_el.find("Title"))
    journal = journal or _text(citation.find("MedlineJournalInfo/MedlineTA"))
    year, month, day = _pub_date(art.find("Journal/JournalIssue/PubDate"))
    if year is None:
        year, month, day = _pub_date(art.find("ArticleDate"))
    doi = _doi_from_elocation(art) or _doi_from_ids(elem.find("PubmedData/ArticleIdList"))
    return Article(
        pmid=pmid,
        title=title,
        abstract=abstract,
        authors=_authors(art.find("AuthorList")),
        journal=journal,
        year=year,
        month=month,
        day=day,
        doi=doi,
        mesh_terms=_mesh(citation.find("MeshHeadingList")),
        version=_version(pmid_el),
        **evidence_fields(elem, citation, art),
        author_last_names=xml_last_names(art.find("AuthorList")),
    )


def _book_article(elem: ET.Element) -> Article | None:
    doc = elem.find("BookDocument")
    if doc is None:
        return None
    pmid_el = doc.find("PMID")
    pmid = clean(pmid_el.text if pmid_el is not None else "")
    if not pmid:
        return None
    book_title = _text(doc.find("Book/BookTitle"))
    title = _text(doc.find("ArticleTitle")) or book_title
    author_lists = doc.findall("AuthorList")
    authors_el = next((a for a in author_lists if a.get("Type", "authors") == "authors"), None)
    year, month, day = _pub_date(doc.find("Book/PubDate"))
    return Article(
        pmid=pmid,
        title=title,
        abstract=_abstract(doc.find("Abstract")),
        authors=_authors(authors_el),
        journal=book_title if title != book_title else "",
        year=year,
        month=month,
        day=day,
        doi=_doi_from_ids(doc.find("ArticleIdList"))
        or _doi_from_ids(elem.find("PubmedBookData/ArticleIdList")),
        version=_version(pmid_el),
    )


def _version(pmid_el: ET.Element | None) -> int:
    raw = pmid_el.get("Version", "1") if pmid_el is not None else "1"
    return int(raw) if raw.strip().isdigit() and int(raw) > 0 else 1


def _abstract(abstract_el: ET.Element | None) -> str:
    if abstract_el is None:
        return ""
    return join_abstract(
        format_section(part.get("Label"), _text(part))
        for part in abstract_el.findall("AbstractText")
    )


def _other_abstract(citation: ET.Element) -> str:
    """An English ``OtherAbstract`` when the record has no ``Abstract`` of its own."""
    for other in citation.findall("OtherAbstract"):
        if other.get("Language", "eng") == "eng":
            text = _abstract(other)
            if text:
                return text
    return ""


def _authors(author_list: ET.Element | None) -> list[str]:
    """``Forename Lastname`` (initials when there is no forename) or the collective name."""
    if author_list is None:
        return []
    names: list[str] = []
    for author in author_list.findall("Author"):
        if author.get("ValidYN", "Y") == "N":
            continue  # an erroneous name NLM kept only for the record
        last = _text(author.find("LastName"))
        if last:
            fore = _text(author.find("ForeName")) or _text(author.find("Initials"))
            suffix = _text(author.find("Suffix"))
            names.append(" ".join(p for p in (fore, last, suffix) if p))
        elif collective := _text(author.find("CollectiveName")):
            names.append(collective)
    return names


def _pub_date(date_el: ET.Element | None) -> tuple[int | None, int | None, int | None]:
    if date_el is None:
        return None, None, None
    year = parse_year(date_el.findtext("Year"))
    if year is None:
        return parse_date_text(date_el.findtext("MedlineDate"))
    month = parse_month(date_el.findtext("Month"))
    day = parse_day(date_el.findtext("Day")) if month is not None else None
    return year, month, day


def normalize_doi(value: str | None) -> str | None:
    """Strip ``doi:`` / resolver prefixes; None when nothing DOI-like is left."""
    doi = clean(value)
    for prefix in ("https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "doi:"):
        if doi.lower().startswith(prefix):
            doi = doi[len(prefix) :].strip()
    return doi if doi.startswith("10.") else None


def _doi_from_elocation(art: ET.Element) -> str | None:
    for loc in art.findall("ELocationID"):
        if loc.get("EIdType") == "doi" and loc.get("ValidYN", "Y") != "N":
            doi = normalize_doi(loc.text)
            if doi:
                return doi
    return None


def _doi_from_ids(id_list: ET.Element | None) -> str | None:
    if id_list is None:
        return None
    for article_id in id_list.findall("ArticleId"):
        if article_id.get("IdType") == "doi":
            doi = normalize_doi(article_id.text)
            if doi:
                return doi
    return None


def _mesh(mesh_list: ET.Element | None) -> list[str]:
    """Descriptor names only (qualifiers dropped), the same form the MEDLINE parser gives."""
    if mesh_list is None:
        return []
    terms = (_text(h.find("DescriptorName")) for h in mesh_list.findall("MeshHeading"))
    return [t for t in terms if t]
