"""The flat metadata every chunk of an article carries (JSON-safe; index metadata schema 2):
the citation, then what the UI, the filters and the citation export read, its study design
(:mod:`ingest.design`) included; :class:`ChunkMeta` reads them back, typed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ingest.design import classify, humans_flag
from ingest.links import pubmed_url
from ingest.models import Article, journal_key


def chunk_metadata(article: Article) -> dict[str, Any]:
    """Flat metadata carried by every chunk of ``article``."""
    return {
        "pmid": article.pmid,
        "title": article.title,
        "authors": list(article.authors),
        "journal": article.journal,
        "year": article.year,
        "month": article.month,
        "day": article.day,
        "doi": article.doi,
        "mesh_terms": list(article.mesh_terms),
        "url": article.url,
        **evidence_metadata(article),
    }


def evidence_metadata(article: Article) -> dict[str, Any]:
    """The schema-2 chunk fields: what the UI, the filters and citation export read."""
    design = classify(article)
    return {
        "mesh_major": list(article.mesh_major),
        "publication_types": [p.name for p in article.publication_types],
        "pmc": article.pmc,
        "keywords": list(article.keywords),
        "language": article.language,
        "volume": article.volume,
        "issue": article.issue,
        "pages": article.pages,
        "author_last_names": list(article.author_last_names),
        "retracted": article.retracted,
        "retraction_notices": list(article.retraction_notices),
        "design": design.label,
        "design_source": design.source,
        "design_rule": design.rule,
        "humans": humans_flag(article, design.label),
        "journal_key": journal_key(article.journal),
    }


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def _strings(value: Any) -> list[str]:
    return [str(x) for x in value or []]


@dataclass(frozen=True)
class ChunkMeta:
    """The article fields of a chunk's metadata (:func:`chunk_metadata` writes them), read typed
    in one place: absent or empty fields read as their defaults (an index of an older schema)."""

    pmid: str
    title: str
    url: str
    year: int | None
    journal: str
    authors: list[str]
    author_last_names: list[str]
    volume: str
    issue: str
    pages: str
    mesh_terms: list[str]
    doi: str | None
    pmc: str | None
    mesh_major: list[str]
    publication_types: list[str]
    design: str | None
    design_rule: str
    design_source: str
    retracted: bool
    retraction_notices: list[str]

    @staticmethod
    def pmid_of(md: Mapping[str, Any]) -> str:
        """The :attr:`pmid` alone, without building the record (a pass over the whole index)."""
        return str(md.get("pmid", ""))

    @classmethod
    def from_metadata(cls, md: Mapping[str, Any]) -> ChunkMeta:
        pmid = cls.pmid_of(md)
        year = md.get("year")
        return cls(
            pmid=pmid,
            title=str(md.get("title") or ""),
            url=str(md.get("url") or pubmed_url(pmid)),
            year=int(year) if isinstance(year, int | str) and str(year).isdigit() else None,
            journal=str(md.get("journal") or ""),
            authors=_strings(md.get("authors")),
            author_last_names=_strings(md.get("author_last_names")),
            volume=str(md.get("volume") or ""),
            issue=str(md.get("issue") or ""),
            pages=str(md.get("pages") or ""),
            mesh_terms=_strings(md.get("mesh_terms")),
            doi=_text(md.get("doi")),
            pmc=_text(md.get("pmc")),
            mesh_major=_strings(md.get("mesh_major")),
            publication_types=_strings(md.get("publication_types")),
            design=_text(md.get("design")),
            design_rule=str(md.get("design_rule") or ""),
            design_source=str(md.get("design_source") or ""),
            retracted=bool(md.get("retracted")),
            retraction_notices=_strings(md.get("retraction_notices")),
        )

    def fields(self) -> dict[str, Any]:
        """The fields by name (a :class:`chains.result.Source` takes them as they are)."""
        return asdict(self)
