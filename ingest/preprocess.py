"""Normalise parsed articles and reduce them to one clean record per PMID.

* Unicode NFC (``e`` + combining accent == ``é``, so the same name or word from two sources is
  the same string for BM25 and for dedupe), whitespace collapsed, case kept.
* One article per PMID: a later record replaces an earlier one unless its ``<PMID Version>`` is
  lower (a higher version wins; for equal versions the later one in file order wins).
* A ``DeleteCitation`` removes the PMIDs read before it.
* Articles whose abstract is shorter than ``corpus.min_abstract_chars`` are dropped, after
  de-duplication, so a revision that adds an abstract is not lost.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from ingest.models import Article
from ingest.pubmed_xml import Deletion
from ingest.text import PARAGRAPH_SEP, clean


def normalize_text(text: str) -> str:
    """NFC, whitespace collapsed to single spaces, nothing lower-cased."""
    return clean(unicodedata.normalize("NFC", text)) if text else ""


def normalize_abstract(text: str) -> str:
    """:func:`normalize_text` per paragraph; paragraphs stay one per line."""
    paragraphs = (normalize_text(p) for p in text.split(PARAGRAPH_SEP))
    return PARAGRAPH_SEP.join(p for p in paragraphs if p)


def normalize_article(article: Article) -> Article:
    return article.model_copy(
        update={
            "pmid": article.pmid.strip(),
            "title": normalize_text(article.title),
            "abstract": normalize_abstract(article.abstract),
            "authors": [a for a in (normalize_text(x) for x in article.authors) if a],
            "journal": normalize_text(article.journal),
            "mesh_terms": [m for m in (normalize_text(x) for x in article.mesh_terms) if m],
        }
    )


@dataclass
class MergeStats:
    records: int = 0  # articles read
    duplicates_replaced: int = 0  # records superseded by another record of the same PMID
    deleted: list[str] = field(default_factory=list)  # PMIDs removed by DeleteCitation


def merge_records(
    records: Iterable[Article | Deletion], stats: MergeStats | None = None
) -> dict[str, Article]:
    """Apply the one-article-per-PMID and deletion rules to records in reading order."""
    stats = stats if stats is not None else MergeStats()
    articles: dict[str, Article] = {}
    for record in records:
        if isinstance(record, Deletion):
            for pmid in record.pmids:
                if articles.pop(pmid, None) is not None:
                    stats.deleted.append(pmid)
            continue
        stats.records += 1
        previous = articles.get(record.pmid)
        if previous is not None:
            stats.duplicates_replaced += 1
            if record.version < previous.version:
                continue  # a stale copy read later does not undo a revision
        articles[record.pmid] = record  # a replaced article keeps its first position
    return articles


def drop_short(articles: Iterable[Article], min_chars: int) -> tuple[list[Article], list[str]]:
    """(kept articles, PMIDs dropped because their abstract is under ``min_chars``)."""
    kept: list[Article] = []
    dropped: list[str] = []
    for article in articles:
        if len(article.abstract) >= min_chars:
            kept.append(article)
        else:
            dropped.append(article.pmid)
    return kept, dropped
