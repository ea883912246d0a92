"""Reciprocal rank fusion per PMID: a fallback used only while ``retrievers.fusion`` is absent."""

from __future__ import annotations

from langchain_core.documents import Document


def reciprocal_rank_fusion(
    ranked_lists: list[list[Document]], *, c: float = 60, weights: list[float] | None = None
) -> list[Document]:
    weights = weights or [1.0] * len(ranked_lists)
    scores: dict[str, float] = {}
    best: dict[str, Document] = {}
    for w, docs in zip(weights, ranked_lists, strict=True):
        for rank, doc in enumerate(docs, start=1):
            pmid = str(doc.metadata.get("pmid"))
            scores[pmid] = scores.get(pmid, 0.0) + w / (c + rank)
            best.setdefault(pmid, doc)
    order = sorted(scores, key=lambda p: -scores[p])
    return [
        Document(
            page_content=best[p].page_content, metadata={**best[p].metadata, "rrf_score": scores[p]}
        )
        for p in order
    ]
