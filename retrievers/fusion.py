"""Weighted Reciprocal Rank Fusion, per PMID.

Several chunks of one abstract count once: within each ranked list an article takes the rank of
its best chunk, and the passage returned is the chunk that contributed the most to its score.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document

from ingest.design import DESIGNS, strength
from ingest.metadata import ChunkMeta

_STRONGEST = max(s for _, s in DESIGNS.values())


def best_chunk_per_article(docs: Sequence[Document], key: str = "pmid") -> list[Document]:
    """Keep the first (best-ranked) chunk of each article, in order."""
    seen: set[object] = set()
    out = []
    for doc in docs:
        ident = doc.metadata[key]
        if ident not in seen:
            seen.add(ident)
            out.append(doc)
    return out


def reciprocal_rank_fusion(
    ranked_lists: Sequence[Sequence[Document]],
    *,
    c: float = 60,
    weights: Sequence[float] | None = None,
    names: Sequence[str] | None = None,
    key: str = "pmid",
) -> list[Document]:
    """Fuse ranked lists: score(a) = sum_i w_i / (c + rank_i(a)), rank counted per article.

    Returns copies of the documents, best first, with ``rrf_score`` and ``ranks`` (name -> rank
    or None) in their metadata.
    """
    weights = list(weights) if weights is not None else [1.0] * len(ranked_lists)
    names = list(names) if names is not None else [str(i) for i in range(len(ranked_lists))]
    if not (len(weights) == len(names) == len(ranked_lists)):
        raise ValueError("ranked_lists, weights and names must have the same length")
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int | None]] = {}
    passage: dict[str, tuple[float, Document]] = {}
    for docs, weight, name in zip(ranked_lists, weights, names, strict=True):
        for rank, doc in enumerate(best_chunk_per_article(docs, key), start=1):
            ident = doc.metadata[key]
            contribution = weight / (c + rank)
            scores[ident] = scores.get(ident, 0.0) + contribution
            ranks.setdefault(ident, dict.fromkeys(names))[name] = rank
            if ident not in passage or contribution > passage[ident][0]:
                passage[ident] = (contribution, doc)
    order = sorted(scores, key=lambda i: (-scores[i], i))
    fused = []
    for ident in order:
        doc = passage[ident][1]
        meta = {**doc.metadata, "rrf_score": scores[ident], "ranks": ranks[ident]}
        fused.append(Document(page_content=doc.page_content, metadata=meta, id=doc.id))
    return fused


def convex_combination(
    scored_lists: Sequence[Sequence[Document]],
    *,
    weights: Sequence[float],
    floors: Sequence[float],
    names: Sequence[str],
    key: str = "pmid",
) -> list[Document]:
    """Fuse by a weighted sum of normalised scores (Bruch et al., ACM TOIS 2023: "convex
    combination"), per article.

    Each list's scores (metadata ``score``) are mapped to [0, 1] by theoretical min-max:
    ``(s - floor) / (best - floor)``, where ``floor`` is the lowest score that retriever can
    return (0 for BM25, the cosine threshold for thresholded FAISS) and ``best`` the list's top
    score; an article a list did not return gets 0 from it. Unlike RRF, the fused order knows how
    far apart a retriever's hits are: a retriever whose first hit stands far above the rest keeps
    it first, and near-ties are left for the other retriever to break. That is a per-query
    confidence with no parameter of its own; the weights are the only knob.

    Returns copies of the documents, best first, with ``fused_score`` and ``ranks`` (name ->
    rank or None) in their metadata; the passage is the chunk of the heaviest contribution.
    """
    if not (len(weights) == len(floors) == len(names) == len(scored_lists)):
        raise ValueError("scored_lists, weights, floors and names must have the same length")
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int | None]] = {}
    passage: dict[str, tuple[float, Document]] = {}
    for docs, weight, floor, name in zip(scored_lists, weights, floors, names, strict=True):
        docs = best_chunk_per_article(docs, key)
        if not docs:
            continue
        best = max(float(d.metadata["score"]) for d in docs)
        span = best - floor
        for rank, doc in enumerate(docs, start=1):
            ident = doc.metadata[key]
            norm = (float(doc.metadata["score"]) - floor) / span if span > 0 else 1.0
            contribution = weight * min(1.0, max(0.0, norm))
            scores[ident] = scores.get(ident, 0.0) + contribution
            ranks.setdefault(ident, dict.fromkeys(names))[name] = rank
            if ident not in passage or contribution > passage[ident][0]:
                passage[ident] = (contribution, doc)
    order = sorted(scores, key=lambda i: (-scores[i], i))
    fused = []
    for ident in order:
        doc = passage[ident][1]
        meta = {**doc.metadata, "fused_score": scores[ident], "ranks": ranks[ident]}
        fused.append(Document(page_content=doc.page_content, metadata=meta, id=doc.id))
    return fused



def prefer_designs(fused: Sequence[Document], prefer_design: float = 0.0) -> list[Document]:
    """``prefer_design`` (``retrieval.prefer_design``; 0 = off) multiplies each article's fused
    score (``rrf_score`` or ``fused_score``) by ``1 + prefer_design * strength / strongest``,
    the design's strength in :data:`ingest.design.DESIGNS` (meta-analysis strongest, case report
    and animal/in-vitro weakest), and re-sorts (stable: ties keep the fused order)."""
    docs = list(fused)
    if prefer_design:
        def boosted(doc: Document) -> float:
            meta = doc.metadata
            score = float(meta.get("rrf_score", meta.get("fused_score", 0.0)))
            design = ChunkMeta.from_metadata(meta).design
            return score * (1 + prefer_design * strength(design) / _STRONGEST)

        docs.sort(key=boosted, reverse=True)
    return docs


def retracted_last(docs: Sequence[Document]) -> list[Document]:
    """Retracted articles after the others, each side in its order: one is still shown (with its
    warning) among the sources it was retrieved with, but never leads an answer as [1]."""
    retracted = [ChunkMeta.from_metadata(d.metadata).retracted for d in docs]
    return [d for d, r in zip(docs, retracted, strict=True) if not r] + [
        d for d, r in zip(docs, retracted, strict=True) if r
    ]
