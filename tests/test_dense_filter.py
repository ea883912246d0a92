"""Filters inside the vector search (retrievers/dense_filter.py) give today's filtered results.

"Today's" is the search this replaced, run here as it was: LangChain's FAISS store searching
every chunk (k = fetch_k = all of them) with ``Filters.matches`` as its metadata filter. On the
small real index, for year ranges, authors, title words and their combinations, the masks equal
``Filters.matches`` on every chunk, the dense hits are a prefix of the old ones (same chunks,
same cosines, same order) that covers the same first k articles the retriever keeps, and BM25
gives the same hits. Speed is measured by ``python -m app bench retrieval``, not here.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from langchain_core.documents import Document

from ingest.metadata import ChunkMeta
from retrievers.backend import FaissBM25Backend
from retrievers.filters import Filters
from retrievers.fusion import best_chunk_per_article

QUESTIONS = [
    "Is childhood intelligence associated with health in later life?",
    "Does methylphenidate improve attention in children with ADHD?",
    "working memory training and fluid intelligence",
]


class DesignFilters(Filters):
    """A filter field FilterIndex does not know (as a later one, e.g. study design, would be)."""

    no_word: str | None = None

    def matches(self, metadata: dict, meta: ChunkMeta | None = None) -> bool:
        if self.no_word and self.no_word in (metadata.get("title") or "").casefold():
            return False
        return super().matches(metadata, meta)


@pytest.fixture(scope="module")
def backend(small_index_cfg) -> FaissBM25Backend:
    return FaissBM25Backend(small_index_cfg)


def _common_author(backend: FaissBM25Backend) -> str:
    """The surname that most small-index articles share (a real 'by X' filter)."""
    counts: dict[str, int] = {}
    for meta in backend.filter_index.articles:
        for name in meta.get("authors") or []:
            last = name.split()[-1]
            counts[last] = counts.get(last, 0) + 1
    return max(counts, key=lambda n: counts[n])


def _filters(backend: FaissBM25Backend) -> list[Filters]:
    author = _common_author(backend)
    return [
        Filters(year_min=2016, year_max=2019),
        Filters(year_min=2020),
        Filters(year_max=2010),
        Filters(author=author),
        Filters(author="Deary"),
        Filters(author=author.lower(), year_min=2014),
        Filters(title_contains=["intelligence"]),
        Filters(title_contains=["Children", "ADHD"]),
        Filters(title_contains=["intelligence"], year_min=2015, year_max=2018),
        Filters(author="Nobodyhasthisname"),
        DesignFilters(no_word="intelligence", year_min=2014),
    ]


def _old_dense(backend: FaissBM25Backend, query: str, threshold: float,
               filters: Filters) -> list[tuple[str, float]]:
    assert backend.vectorstore is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        pairs = backend.vectorstore.similarity_search_with_relevance_scores(
            query, k=backend.size, fetch_k=backend.size, score_threshold=threshold,
            filter=lambda meta: filters.matches(meta),
        )  # fmt: skip
    return [(str(doc.id), float(score)) for doc, score in pairs]


def _pmids(docs: list[Document], k: int) -> list[str]:
    return [d.metadata["pmid"] for d in best_chunk_per_article(docs)[:k]]


def test_masks_equal_filters_matches_on_every_chunk(backend: FaissBM25Backend) -> None:
    for f in _filters(backend):
        want = np.array([f.matches(d.metadata) for d in backend.docs])
        got = backend.filter_index.mask(f)
        assert got is not None
        assert np.array_equal(got, want), f
        assert 0 < want.sum() < backend.size or f.author == "Nobodyhasthisname", f
    assert backend.filter_index.mask(Filters()) is None


@pytest.mark.parametrize("threshold", [0.25, -1.0])
def test_filtered_dense_search_gives_the_old_results(backend: FaissBM25Backend,
                                                     threshold: float) -> None:
    """The reference (LangChain's filtered FAISS scan) does not depend on k: it is computed once
    per query and filter, and both k are checked against it."""
    by_id = {str(d.id): d for d in backend.docs}
    for query in QUESTIONS:
        for f in _filters(backend):
            old = _old_dense(backend, query, threshold, f)
            old_docs = [by_id[i] for i, _ in old]
            for k in (5, 50):
                new_docs = backend.dense_search(query, k, threshold, f)
                new = [(str(d.id), d.metadata["score"]) for d in new_docs]
                assert [i for i, _ in new] == [i for i, _ in old[: len(new)]], (query, f, k)
                assert np.allclose([s for _, s in new], [s for _, s in old[: len(new)]],
                                   atol=1e-6)
                assert _pmids(new_docs, k) == _pmids(old_docs, k), (query, f, k)
                assert len(best_chunk_per_article(new_docs)) >= min(
                    k, len(best_chunk_per_article(old_docs))
                )


def test_filtered_bm25_search_gives_the_old_results(backend: FaissBM25Backend) -> None:
    for query in QUESTIONS:
        for f in _filters(backend):
            mask = np.array([f.matches(d.metadata) for d in backend.docs])
            old = backend.bm25.search(query, 60, mask)
            new = backend.bm25_search(query, 60, f)
            assert [d.id for d in new] == [backend.docs[r].id for r, _ in old], (query, f)


def test_search_fetches_again_until_k_articles_are_covered() -> None:
    """Articles of ten chunks each: the first 4k chunks cover too few articles, so the search
    asks FAISS again; the hits equal a brute-force scan of the allowed rows."""
    import faiss

    from retrievers.dense_filter import filtered_search

    rng = np.random.default_rng(3)
    centres = rng.normal(size=(60, 16)).astype(np.float32)
    vectors = np.repeat(centres, 10, axis=0) + 0.01 * rng.normal(size=(600, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = faiss.IndexFlatIP(16)
    index.add(vectors)
    chunk_article = np.arange(600) // 10
    mask = chunk_article % 3 != 0
    query = vectors[15] + 0.1 * vectors[300]
    hits = filtered_search(index, query, mask, 8, -1.0, chunk_article)
    scores = vectors @ query
    order = [r for r in np.argsort(-scores, kind="stable") if mask[r]]
    assert [r for r, _ in hits] == [int(r) for r in order[: len(hits)]]
    assert len(set(chunk_article[[r for r, _ in hits]])) == 8 and len(hits) > 4 * 8
