"""BM25 kept as term counts (``indexing.bm25_counts``): an addition that drops some chunks and
appends new ones, counting only the new ones, gives the very index a build from scratch gives.
Each test names the mutation it was seen to catch."""

from __future__ import annotations

import numpy as np

from indexing.bm25 import BM25Index

OLD = [
    "children without cranial radiation therapy showed no impairment",
    "working memory training in children improves working memory",
    "a unique word: zygomycosis in adults",  # removed below: its rare words leave the vocabulary
    "",  # no words at all
    "the the the of and",  # stopwords only
]
NEW = ["cranial radiation therapy in adults with tumours", "memory in older adults", ""]
QUERIES = ["cranial radiation therapy", "working memory in children", "zygomycosis", "adults"]


def test_extending_the_stored_counts_equals_a_build_from_scratch(tmp_path) -> None:
    """Mutations caught: the terms no kept chunk holds left in the vocabulary (idf's mean, so
    the floor of common words, shifts); the removed rows kept (``keep`` ignored)."""
    BM25Index.build(OLD, phrases=True).save(tmp_path)
    keep = [0, 1, 3, 4]
    extended = BM25Index.extend(tmp_path, keep, NEW, phrases=True)
    assert extended is not None
    scratch = BM25Index.build([OLD[i] for i in keep] + NEW, phrases=True)
    assert extended.vocab == scratch.vocab and "zygomycosis" not in extended.vocab
    assert (extended.weights != scratch.weights).nnz == 0  # the same float32 weights
    assert extended.phrases is not None and scratch.phrases is not None
    assert np.array_equal(extended.phrases.keys, scratch.phrases.keys)
    assert (extended.phrases.weights != scratch.phrases.weights).nnz == 0
    extended.phrase_weight = scratch.phrase_weight = 0.1
    for query in QUERIES:
        assert np.array_equal(extended.scores(query), scratch.scores(query))


def test_a_build_without_counts_is_rebuilt(tmp_path) -> None:
    """Mutation caught: ``extend`` going on without the stored counts (a build made before they
    were kept) instead of saying so (None: the caller rebuilds from the texts)."""
    index = BM25Index.build(OLD)
    index.counts = None  # as an older build saved it
    index.save(tmp_path)
    assert BM25Index.extend(tmp_path, [0], NEW) is None
