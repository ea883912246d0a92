"""Questions in a user's words, on the small real index: the paper worded otherwise is found.

"Do kids who score high on IQ tests end up living longer?" shares almost no word with the abstract
that answers it ("Intelligence and all-cause mortality in the 6-Day Sample of the Scottish Mental
Survey 1947 ..."), so BM25's best match is weak and literal (kids, IQ tests); MiniLM finds the
paper. With BM25 leading the fusion regardless, the paper fell far down the list; with the dense
retriever leading such questions (``retrieval.weights_when_bm25_weak``), it is first.
"""

from __future__ import annotations

import pytest

from retrievers.hybrid import HybridRetriever, refuses_lexical

QUESTION = "Do kids who score high on IQ tests end up living longer?"
GOLD = "29025063"  # verdict_dev vd022's article, part of the small index's selection


@pytest.fixture(scope="module")
def with_rule(small_index_cfg, backend) -> HybridRetriever:
    """The small index's retriever with the rule on (off by default: docs/retrieval_user_words.md,
    it let an unanswerable question reach an abstract that shares one word with it)."""
    cfg = small_index_cfg.model_copy(deep=True)
    cfg.retrieval.weights_when_bm25_weak = [0.25, 0.75]
    return HybridRetriever.from_backend(backend, cfg)


@pytest.fixture(scope="module")
def backend(small_retriever):
    backend = small_retriever.snapshot()
    if not backend.article_chunks(GOLD):
        pytest.skip(f"PMID {GOLD} is not in the small index (shared data changed?)")
    return backend


def test_the_question_is_one_bm25_alone_would_refuse(small_retriever, backend) -> None:
    query, filters = small_retriever._prepare(QUESTION, None)
    assert refuses_lexical(backend.bm25_relevance(query, filters),
                           small_retriever.lexical_threshold)


def test_a_users_wording_finds_the_paper_worded_otherwise(small_retriever, with_rule) -> None:
    top = [d.metadata["pmid"] for d in with_rule.retrieve(QUESTION).documents]
    assert GOLD in top, top  # what the chains receive (retrieval.topk_rrf: 3)
    # BM25 alone does not find it among its first three
    bm25 = small_retriever.retrievers[0].invoke(QUESTION)
    assert GOLD not in [d.metadata["pmid"] for d in bm25[:3]]


def test_the_rule_is_what_lifts_it(small_index_cfg, with_rule, backend) -> None:
    def rank(retriever: HybridRetriever) -> int:
        pmids = [d.metadata["pmid"] for d in retriever.retrieve(QUESTION, k=20).documents]
        return pmids.index(GOLD) + 1 if GOLD in pmids else 21

    # the configured weights alone (the rule off) leave it below the chains' top 3
    cfg = small_index_cfg.model_copy(deep=True)
    cfg.retrieval.weights_when_bm25_weak = None
    plain = rank(HybridRetriever.from_backend(backend, cfg))
    assert rank(with_rule) <= small_index_cfg.retrieval.topk_rrf < plain
