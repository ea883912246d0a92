"""The one document model every source (XML, MEDLINE, E-utilities) produces."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ingest.links import pubmed_url

# Bibliographic fields nothing is embedded or filtered from: an index reuses an article's vectors
# when only these changed (indexing.build.article_hash) and refreshes its chunks' metadata
CITATION_FIELDS = ("volume", "issue", "pages", "pmc", "author_last_names")


class PublicationType(BaseModel):
    """One ``<PublicationType UI="D016449">Randomized Controlled Trial</PublicationType>``."""

    name: str
    ui: str | None = None


RETRACTED_TYPE = "Retracted Publication"


class Article(BaseModel):
    """One PubMed article. ``abstract`` keeps section labels as ``LABEL: text`` paragraphs."""

    pmid: str
    title: str = ""
    abstract: str = ""
    authors: list[str] = Field(default_factory=list)
    journal: str = ""
    year: int | None = None
    month: int | None = None
    day: int | None = None
    doi: str | None = None
    mesh_terms: list[str] = Field(default_factory=list)
    # -- what PubMed says beyond the citation (metadata schema 2; ingest/metadata.py) --------
    mesh_major: list[str] = Field(default_factory=list)  # descriptors marked as major topics
    publication_types: list[PublicationType] = Field(default_factory=list)
    pmc: str | None = None  # PMC id ("PMC5985927"): free full text exists
    keywords: list[str] = Field(default_factory=list)  # author keywords
    language: str | None = None  # first <Language> / LA ("eng")
    volume: str | None = None
    issue: str | None = None
    pages: str | None = None
    retraction_notices: list[str] = Field(default_factory=list)  # PMIDs of "RetractionIn" notices
    # each author's surname, parallel to ``authors`` ("" for a collective name), for reference
    # lists (ingest.citation_fields)
    author_last_names: list[str] = Field(default_factory=list)
    # Revision order among records with the same PMID (a baseline file's later record, or a
    # higher <PMID Version>, replaces the earlier one during dedupe).
    version: int = 1

    @property
    def url(self) -> str:
        return pubmed_url(self.pmid)

    @property
    def retracted(self) -> bool:
        """A retraction notice points at it, or PubMed typed it "Retracted Publication"."""
        return bool(self.retraction_notices) or any(
            p.name == RETRACTED_TYPE for p in self.publication_types
        )


def journal_key(name: str | None) -> str:
    """How a journal name is compared by filters: case-folded, full stops dropped, spaces
    collapsed ("N. Engl. J. Med." and "N Engl J Med" are one journal)."""
    return " ".join((name or "").replace(".", " ").casefold().split())
