"""The one document model every source (XML, MEDLINE, E-utilities) produces."""

from __future__ import annotations

from pydantic import BaseModel, Field

PUBMED_URL = "https://pubmed.ncbi.nlm.nih.gov/{pmid}/"
# Bibliographic fields nothing is embedded from: an index reuses an article's vectors when only
# these changed (indexing.build.article_hash) and refreshes its chunks' metadata
CITATION_FIELDS = ("volume", "issue", "pages", "pmcid", "author_last_names")


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
    # for reference lists (ingest.citation_fields); author_last_names runs parallel to authors
    volume: str = ""
    issue: str = ""
    pages: str = ""
    pmcid: str = ""
    author_last_names: list[str] = Field(default_factory=list)
    # Revision order among records with the same PMID (a baseline file's later record, or a
    # higher <PMID Version>, replaces the earlier one during dedupe).
    version: int = 1

    @property
    def url(self) -> str:
        return PUBMED_URL.format(pmid=self.pmid)

    def metadata(self) -> dict:
        """Flat metadata carried by every chunk of this article (JSON-safe)."""
        return {
            "pmid": self.pmid,
            "title": self.title,
            "authors": list(self.authors),
            "journal": self.journal,
            "year": self.year,
            "month": self.month,
            "day": self.day,
            "doi": self.doi,
            "mesh_terms": list(self.mesh_terms),
            **{f: getattr(self, f) for f in CITATION_FIELDS if getattr(self, f)},
            "url": self.url,
        }
