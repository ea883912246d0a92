"""An answer's sources as a reference list: Vancouver text, RIS and BibTeX.

Vancouver (NLM/ICMJE): ``Lerro CC, Beane Freeman LE, ... et al. Title. Occup Environ Med.
2018;75(2):79-89. doi:10.1136/... PMID: 28775130; PMCID: PMC5771820.`` -- the first six authors,
then "et al.". RIS is written by rispy and BibTeX by bibtexparser; both carry the PMID, DOI,
PMC id, PubMed link, abstract and MeSH terms, so a reference manager gets the whole record.

Surnames come from ``Source.author_last_names`` (kept by ingest from the record's own
``LastName``); an index built before those were kept falls back to the display name's last word
together with any lower-case particles before it ("van der Berg").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import bibtexparser
import rispy
from bibtexparser import model as bib

from chains.result import Source

VANCOUVER_AUTHORS = 6
RIS_MIME = "application/x-research-info-systems"
BIBTEX_MIME = "application/x-bibtex"
_PARTICLES = {"van", "von", "der", "den", "de", "del", "della", "di", "da", "dos", "du", "la",
              "le", "ten", "ter", "van't", "bin", "al", "el"}  # fmt: skip
# characters LaTeX (and so BibTeX's consumers) reads as markup, and what each becomes (a brace
# as a command: BibTeX counts even an escaped brace, so "\{" unbalanced would end the entry)
_LATEX = {
    "\\": r"\textbackslash{}", "{": r"\textbraceleft{}", "}": r"\textbraceright{}",
    "&": r"\&", "%": r"\%", "$": r"\$",
    "#": r"\#", "_": r"\_", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}  # fmt: skip
_LATEX_RE = re.compile("|".join(re.escape(c) for c in _LATEX))


@dataclass(frozen=True)
class Person:
    """An author: surname and given names ("" for both parts of a collective name but ``last``)."""

    last: str
    given: str = ""
    collective: bool = False

    @property
    def initials(self) -> str:
        """ "Julio C" -> "JC", "Jean-Pierre" -> "JP", "IJ" (initials already) -> "IJ"."""
        words = [w for w in re.split(r"[\s.\-]+", self.given) if w and w[0].isalpha()]
        return "".join(w if w.isupper() and len(w) <= 3 else w[0] for w in words)

    def vancouver(self) -> str:
        if self.collective or not self.initials:
            return self.last
        return f"{self.last} {self.initials}"

    def inverted(self) -> str:
        """``Lastname, Given`` (RIS's and BibTeX's form)."""
        return self.last if self.collective or not self.given else f"{self.last}, {self.given}"


def people(source: Source) -> list[Person]:
    """The source's authors with their surnames split off."""
    lasts = source.author_last_names
    known = len(lasts) == len(source.authors)
    out = []
    for i, name in enumerate(source.authors):
        last = lasts[i] if known else _guess_last(name)
        if not last:
            out.append(Person(name, collective=True))
        else:
            at = name.rfind(last)
            given = name[:at] if at > 0 else name[len(last):] if at == 0 else name
            out.append(Person(last, given.strip()))
    return out


def _guess_last(name: str) -> str:
    words = name.split()
    if len(words) < 2:
        return name
    if words[-1].isupper() and len(words[-1]) <= 3:  # "Deary IJ": MEDLINE's AU form
        return " ".join(words[:-1])
    start = len(words) - 1
    while start > 1 and words[start - 1].casefold() in _PARTICLES:
        start -= 1
    return " ".join(words[start:])


def _sentence(text: str) -> str:
    text = " ".join(text.split()).strip()
    return text if not text or text[-1] in ".?!" else text + "."


def vancouver(source: Source) -> str:
    """One reference in Vancouver style (no leading number)."""
    authors = [p.vancouver() for p in people(source)]
    names = ", ".join(authors[:VANCOUVER_AUTHORS])
    if len(authors) > VANCOUVER_AUTHORS:
        names += ", et al"
    parts = [_sentence(names) if names else ""]
    parts.append(_sentence(source.title) if source.title else "")
    parts.append(_sentence(source.journal) if source.journal else "")
    where = str(source.year or "")
    if source.volume:
        where += f";{source.volume}"
        if source.issue:
            where += f"({source.issue})"
    elif source.issue:
        where += f";({source.issue})"
    if source.pages:
        where += f":{source.pages}"
    parts.append(_sentence(where) if where else "")
    if source.doi:
        parts.append(f"doi:{source.doi}.")
    ids = f"PMID: {source.pmid}" + (f"; PMCID: {source.pmc}" if source.pmc else "")
    parts.append(ids + ".")
    return " ".join(p for p in parts if p)


def vancouver_list(sources: Sequence[Source]) -> list[str]:
    """``"1. Lerro CC, ..."`` per source, numbered as the answer cites them."""
    return [f"{s.n}. {vancouver(s)}" for s in sorted(sources, key=lambda s: s.n)]


def page_range(pages: str) -> tuple[str, str]:
    """(first, last) page; MEDLINE's elided last page is written out: "616-7" -> ("616", "617")."""
    first, _, last = (p.strip() for p in pages.partition("-"))
    if last and first.isdigit() and last.isdigit() and len(last) < len(first):
        last = first[: len(first) - len(last)] + last
    return first, last


def _ris_entry(s: Source) -> dict[str, Any]:
    first, last = page_range(s.pages)
    entry: dict[str, Any] = {
        "type_of_reference": "JOUR",
        "authors": [p.inverted() for p in people(s)],
        "title": " ".join(s.title.split()),
        "secondary_title": s.journal,
        "alternate_title1": s.journal,
        "year": str(s.year or ""),
        "volume": s.volume,
        "number": s.issue,
        "start_page": first,
        "end_page": last,
        "doi": s.doi or "",
        "accession_number": s.pmid,
        "urls": [s.url],
        "abstract": " ".join(s.abstract.split()),
        "keywords": list(s.mesh_terms),
        "notes": [f"PMCID: {s.pmc}"] if s.pmc else [],
        "name_of_database": "PubMed",
    }
    return {k: v for k, v in entry.items() if v}


class _PlainRisWriter(rispy.RisWriter):  # type: ignore[misc]  # rispy is untyped: RisWriter is Any
    """rispy's writer without its ``1.`` line before each record (not an RIS tag line)."""

    def set_header(self, count: int) -> str:
        return ""


def to_ris(sources: Sequence[Source]) -> str:
    """The sources as an RIS file (one ``TY - JOUR`` record each), written by rispy."""
    entries = [_ris_entry(s) for s in sorted(sources, key=lambda s: s.n)]
    text: str = rispy.dumps(entries, implementation=_PlainRisWriter)  # rispy is untyped
    return text


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped (Unicode letters kept as they are); "--"
    stays two hyphens (LaTeX would print an en dash)."""
    escaped = _LATEX_RE.sub(lambda m: _LATEX[m.group()], " ".join(text.split()))
    return re.sub(r"-(?=-)", "-{}", escaped)


def bibtex_key(source: Source) -> str:
    first = people(source)[:1]
    surname = re.sub(r"[^A-Za-z]", "", first[0].last) if first else ""
    return f"{surname or 'pmid'}{source.year or ''}_{source.pmid}"


def _bib_entry(s: Source) -> bib.Entry:
    first, last = page_range(s.pages)
    authors = " and ".join(
        "{" + latex_escape(p.last) + "}" if p.collective else latex_escape(p.inverted())
        for p in people(s)
    )
    values = {
        "author": authors,
        "title": "{" + latex_escape(s.title) + "}",  # inner braces keep the title's capitals
        "journal": latex_escape(s.journal),
        "year": str(s.year or ""),
        "volume": latex_escape(s.volume),
        "number": latex_escape(s.issue),
        "pages": f"{first}--{last}" if last else first,
        "doi": s.doi or "",
        "pmid": s.pmid,
        "pmcid": s.pmc or "",
        "url": s.url,
        "abstract": latex_escape(s.abstract),
        "keywords": latex_escape(", ".join(s.mesh_terms)),
    }
    fields = [bib.Field(k, v) for k, v in values.items() if v]
    return bib.Entry("article", bibtex_key(s), fields)


def to_bibtex(sources: Sequence[Source]) -> str:
    """The sources as BibTeX ``@article`` entries, written by bibtexparser."""
    library = bibtexparser.Library([_bib_entry(s) for s in sorted(sources, key=lambda s: s.n)])
    return bibtexparser.write_string(library)


EXPORTS = {"ris": (to_ris, "sources.ris", RIS_MIME), "bibtex": (to_bibtex, "sources.bib",
                                                               BIBTEX_MIME)}
