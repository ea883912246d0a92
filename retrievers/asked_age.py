"""A search that names one age group ranks the articles that studied only the other one last.

"arsenic in well water lower elderly people IQ?" finds the children's arsenic studies first:
they share every word but the group. An article whose title, or whose title and abstract,
name people of the other group only (:func:`ingest.ages.studies_other_age_group`) answers
another population; it keeps its place among its kind, after every article that may be about
the people asked about. A question naming no group, or both, is left as it is. (Measured on the
conversation files: ranking such an article by half its fused score instead kept fewer gold
articles in the top 3 of the held-out conversations, 0.741 against 0.852; docs/conversations.md.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain_core.documents import Document

from ingest.ages import asks_one_age_group, studies_other_age_group
from ingest.metadata import ChunkMeta
from retrievers.articles import whole_abstract

AbstractOf = Callable[[Document], str]


def passage(doc: Document) -> str:
    """A result's own passage (where its article's other chunks are not at hand)."""
    return doc.page_content


def abstracts_from(chunks_of: Callable[[str], Sequence[Document]]) -> AbstractOf:
    """A result's whole abstract from its article's chunks (its passage when none is found)."""

    def abstract_of(doc: Document) -> str:
        pmid = ChunkMeta.pmid_of(doc.metadata)
        return (whole_abstract(chunks_of(pmid)) if pmid else "") or doc.page_content

    return abstract_of


def asked_age_first(
    documents: Sequence[Document], question: str, abstract_of: AbstractOf = passage
) -> list[Document]:
    """``documents`` (best first) with those that studied only the age group ``question`` does
    not ask about moved after the rest, each part in its own order; ``abstract_of`` gives a
    result's whole abstract (read only when the question names one group)."""
    if not asks_one_age_group(question):
        return list(documents)
    away = [
        studies_other_age_group(ChunkMeta.from_metadata(d.metadata).title, abstract_of(d), question)
        for d in documents
    ]
    return [d for d, a in zip(documents, away, strict=True) if not a] + [
        d for d, a in zip(documents, away, strict=True) if a
    ]
