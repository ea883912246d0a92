"""The term counts behind BM25, kept in the build so an addition appends to them.

BM25's weight of a term in a document depends only on the document's count of that term, its
length, the number of documents and each term's document frequency: all of it is in a sparse
``counts[doc, term]`` matrix. A build stores that matrix beside the weights (``bm25_counts.npz``,
``bm25_pair_counts.npz`` for the word pairs); an addition (``indexing.incremental``) takes the
rows it keeps, counts only the new chunks, merges the two vocabularies, drops the terms no
document holds any more, and recomputes every weight with NumPy. The weights are computed the same
way for a build from scratch, so both give the same matrix for the same chunks.

Terms are kept in sorted order (strings for words, CRC32 keys for pairs): a column's position is
its rank in the vocabulary, whatever order the documents came in.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

EMPTY = "\u2205"  # the one token of a document with no words (rank-bm25 divides by zero on none)
COUNTS_FILE = "bm25_counts.npz"
PAIR_COUNTS_FILE = "bm25_pair_counts.npz"


def count_terms(texts: Iterable[str],
                tokenize: Callable[[str], list[str]]) -> tuple[sp.csr_matrix, np.ndarray]:
    """``counts[doc, term]`` of ``texts`` and the sorted vocabulary (an object array of str)."""
    ids: dict[str, int] = {}
    indptr, indices, data = array("q", [0]), array("i"), array("i")
    for text in texts:
        for term, n in Counter(tokenize(text) or [EMPTY]).items():
            indices.append(ids.setdefault(term, len(ids)))
            data.append(n)
        indptr.append(len(indices))
    terms = np.array(sorted(ids), dtype=object)
    rank = np.empty(len(ids), dtype=np.int32)
    rank[np.fromiter((ids[t] for t in terms), dtype=np.int64, count=len(ids))] = np.arange(
        len(ids), dtype=np.int32)
    counts = sp.csr_matrix(
        (np.frombuffer(data, dtype=np.int32), rank[np.frombuffer(indices, dtype=np.int32)],
         np.frombuffer(indptr, dtype=np.int64)),
        shape=(len(indptr) - 1, len(ids)),
    )
    counts.sort_indices()
    return counts, terms


def merge_counts(old: sp.csr_matrix, old_terms: np.ndarray, keep: Sequence[int],
                 new: sp.csr_matrix, new_terms: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
    """The rows ``keep`` of ``old`` then every row of ``new``, over the union of the two sorted
    vocabularies less the terms no remaining row holds: exactly what counting the same documents
    from scratch gives."""
    terms, old_at, new_at = _union(old_terms, new_terms)
    kept = old[np.asarray(keep, dtype=np.int64)] if len(keep) else sp.csr_matrix(
        (0, len(old_terms)), dtype=np.int32)
    parts = []
    for part, where in ((kept, old_at), (new, new_at)):
        part = sp.csr_matrix(part, copy=True)
        part.indices = where[part.indices].astype(np.int32)
        parts.append(sp.csr_matrix((part.data, part.indices, part.indptr),
                                   shape=(part.shape[0], len(terms))))
    stacked = sp.vstack(parts, format="csr")
    used = np.bincount(stacked.indices, minlength=len(terms)) > 0
    if not used.all():
        stacked.indices = (np.cumsum(used) - 1)[stacked.indices].astype(np.int32)
        stacked = sp.csr_matrix((stacked.data, stacked.indices, stacked.indptr),
                                shape=(stacked.shape[0], int(used.sum())))
        terms = terms[used]
    stacked.sort_indices()
    return stacked, terms


def _union(old: np.ndarray, new: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sorted union of two sorted vocabularies and where each one's terms land in it: the
    few terms of ``new`` not in ``old`` are inserted (binary search per new term, no sort of the
    large vocabulary)."""
    n = len(old)
    at = np.searchsorted(old, new)
    found = (old[np.minimum(at, n - 1)] == new) & (at < n) if n else np.zeros(len(new), bool)
    extra, extra_at = new[~found], at[~found]
    terms = np.insert(old, extra_at, extra)
    old_to = np.arange(n) + np.cumsum(np.bincount(extra_at, minlength=n + 1))[:n]
    new_to = np.empty(len(new), dtype=np.int64)
    new_to[found] = old_to[at[found]]
    new_to[~found] = extra_at + np.arange(len(extra))
    return terms, old_to, new_to


def okapi_weights(counts: sp.csr_matrix, k1: float, b: float) -> sp.csc_matrix:
    """``W[doc, term]`` = idf x tf (k1 + 1) / (tf + k1 (1 - b + b len / avglen)), rank-bm25's
    BM25Okapi (idf log((N - df + 0.5) / (df + 0.5)) as log - log, a negative idf floored at 0.25
    x the mean idf), in float32 as the index stores it."""
    n_docs, n_terms = counts.shape
    coo = counts.tocoo()
    tf = coo.data.astype(np.float64)
    doc_len = np.bincount(coo.row, weights=tf, minlength=n_docs)
    avgdl = float(doc_len.sum()) / n_docs if n_docs else 1.0
    df = np.bincount(coo.col, minlength=n_terms).astype(np.float64)
    idf = np.log(n_docs - df + 0.5) - np.log(df + 0.5)
    if n_terms:
        idf[idf < 0] = 0.25 * (float(idf.sum()) / n_terms)
    norm = k1 * (1 - b + b * doc_len[coo.row] / avgdl)
    vals = (idf[coo.col] * tf * (k1 + 1) / (tf + norm)).astype(np.float32)
    return sp.csc_matrix((vals, (coo.row, coo.col)), shape=(n_docs, n_terms), dtype=np.float32)


def save_counts(path: Path, counts: sp.csr_matrix) -> None:
    sp.save_npz(path, counts, compressed=False)


def load_counts(path: Path) -> sp.csr_matrix | None:
    """The stored counts, or None for a build made before they were kept."""
    if not path.is_file():
        return None
    return sp.load_npz(path).tocsr()  # np.load(allow_pickle=False) inside
