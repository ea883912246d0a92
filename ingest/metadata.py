"""The flat metadata every chunk of an article carries (JSON-safe; index metadata schema 2):
the citation, then what the UI, the filters and the citation export read, its study design
(:mod:`ingest.design`) included."""

from __future__ import annotations

from typing import Any

from ingest.design import classify, humans_flag
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
