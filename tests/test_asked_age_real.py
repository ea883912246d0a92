"""A search naming one age group, for real: the small real index, the shipped fusion. The
articles that name only the other group's people come after those that may be about the
people asked about (retrievers.asked_age), in a plain search and in a follow-up."""

from __future__ import annotations

import re
from typing import Any

from retrievers.articles import article_text

ADULTS_Q = "Are stimulant medications effective for ADHD in adults?"
ADULTS = re.compile(r"\badults?\b", re.I)
CHILDREN = re.compile(r"\b(children|pediatric|paediatric|adolescents|kids)\b", re.I)


def _children_only(doc: Any) -> bool:
    """Names children and never an adult: judged with this module's own words, not the rule's."""
    text = f"{doc.metadata.get('title', '')} {article_text(doc)}"
    return bool(CHILDREN.search(text)) and not ADULTS.search(text)


def test_asked_about_adults_childrens_studies_come_after_the_rest(small_retriever: Any) -> None:
    # mutation caught: HybridRetriever.fuse without asked_age_first -> children's studies in
    # the top 3 (the search ranks them first: see the children's question below)
    kids = small_retriever.retrieve(ADULTS_Q.replace("adults", "children"), k=3).documents
    assert all(_children_only(d) for d in kids), [d.metadata.get("title") for d in kids]
    docs = small_retriever.retrieve(ADULTS_Q, k=3).documents
    assert len(docs) == 3 and not any(_children_only(d) for d in docs), [
        d.metadata.get("title") for d in docs
    ]
