"""BM25 over ordered word pairs: the phrase half of a sequential-dependence ranking.

A question about a detail inside an abstract usually repeats a phrase from it ("no cranial
radiation therapy", "polyp detection rate"). Unigram BM25 scores the words but not their order, so
an abstract that uses them apart can outrank the one that says exactly that. Adding
``phrase_weight`` x (BM25 over adjacent word pairs) to the unigram score is the ordered-window
part of Metzler and Croft's sequential dependence model (whose usual weight, ~0.1 of the unigram
part, is the default here; measured in docs/measurements-retrieval.md).

Pairs are keyed by CRC32 of "first second": no vocabulary to store or load, a sorted array of the
keys in use maps a key to its column, and the ~n^2/2^33 collisions (about 150 among a million
pairs) only ever merge two rare phrases.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from indexing.bm25_counts import PAIR_COUNTS_FILE, load_counts, merge_counts, save_counts
from indexing.tokenize import word_sequence

EPSILON = 0.25  # rank-bm25's floor for negative idf, as a fraction of the mean idf


def pair_keys(text: str) -> np.ndarray:
    """CRC32 keys of the adjacent word pairs of ``text``, in order."""
    words = word_sequence(text)
    return np.fromiter(
        (zlib.crc32(f"{a} {b}".encode()) for a, b in zip(words, words[1:], strict=False)),
        dtype=np.uint32,
        count=max(len(words) - 1, 0),
    )


def count_pairs(texts: Iterable[str]) -> tuple[sp.csr_matrix, np.ndarray]:
    """``counts[doc, pair]`` of ``texts`` and the sorted pair keys in use."""
    doc_parts, key_parts, n_docs = [], [], 0
    for doc, text in enumerate(texts):
        keys = pair_keys(text)
        key_parts.append(keys)
        doc_parts.append(np.full(keys.size, doc, dtype=np.uint64))
        n_docs = doc + 1
    combined = (np.concatenate(doc_parts or [np.zeros(0, np.uint64)]) << np.uint64(32)) | (
        np.concatenate(key_parts or [np.zeros(0, np.uint32)]).astype(np.uint64)
    )
    del doc_parts, key_parts
    pairs, tf = np.unique(combined, return_counts=True)
    del combined
    rows = (pairs >> np.uint64(32)).astype(np.int64)
    keys, cols = np.unique((pairs & np.uint64(0xFFFFFFFF)).astype(np.uint32),
                           return_inverse=True)
    counts = sp.csr_matrix((tf.astype(np.int32), (rows, cols.astype(np.int32))),
                           shape=(n_docs, keys.size))
    counts.sort_indices()
    return counts, keys


class PhraseIndex:
    """``W[doc, pair]`` BM25 weights for word pairs, with the same k1/b as the unigram index."""

    def __init__(self, weights: sp.csc_matrix, keys: np.ndarray) -> None:
        self.weights = weights
        self.keys = keys  # sorted uint32 pair keys, one per column

    counts: sp.csr_matrix | None = None  # pair counts per document (kept for additions)

    @classmethod
    def build(cls, texts: Iterable[str], *, k1: float = 1.2, b: float = 0.75) -> PhraseIndex:
        counts, keys = count_pairs(texts)
        return cls.from_counts(counts, keys, k1=k1, b=b)

    @classmethod
    def from_counts(cls, counts: sp.csr_matrix, keys: np.ndarray, *, k1: float = 1.2,
                    b: float = 0.75) -> PhraseIndex:
        """The index of ``counts[doc, pair]`` over the sorted pair ``keys``."""
        n_docs = counts.shape[0]
        coo = counts.tocoo()
        rows, cols, tf = coo.row, coo.col, coo.data.astype(np.int64)
        doc_len = np.bincount(rows, weights=tf, minlength=n_docs).astype(np.float64)
        df = np.bincount(cols, minlength=keys.size).astype(np.float64)
        idf = np.log((n_docs - df + 0.5) / (df + 0.5)) if keys.size else df
        if keys.size:
            idf[idf < 0] = EPSILON * float(idf.mean())
        avgdl = float(doc_len.mean()) if n_docs and doc_len.sum() else 1.0
        norm = k1 * (1 - b + b * doc_len[rows] / avgdl)
        vals = (idf[cols] * tf * (k1 + 1) / (tf + norm)).astype(np.float32)
        weights = sp.csc_matrix(
            (vals, (rows, cols.astype(np.int32))), shape=(n_docs, keys.size), dtype=np.float32
        )
        index = cls(weights, keys)
        index.counts = counts
        return index

    @classmethod
    def extend(cls, folder: Path, keep: Sequence[int], texts: Iterable[str], *,
               k1: float = 1.2, b: float = 0.75) -> PhraseIndex | None:
        """The stored index at ``folder`` with only its rows ``keep``, then ``texts`` appended
        (counted alone); None when that build kept no counts."""
        old = load_counts(folder / PAIR_COUNTS_FILE)
        if old is None or not (folder / "bm25_pair_keys.npy").is_file():
            return None
        old_keys = np.load(folder / "bm25_pair_keys.npy", allow_pickle=False)
        new, new_keys = count_pairs(texts)
        counts, keys = merge_counts(old, old_keys, keep, new, new_keys)
        return cls.from_counts(counts, keys, k1=k1, b=b)

    @property
    def size(self) -> int:
        return int(self.weights.shape[0])

    def scores(self, query: str) -> np.ndarray:
        wanted = pair_keys(query)
        if wanted.size == 0 or self.keys.size == 0:
            return np.zeros(self.size, dtype=np.float32)
        pos = np.minimum(np.searchsorted(self.keys, wanted), self.keys.size - 1)
        found = self.keys[pos] == wanted
        if not found.any():
            return np.zeros(self.size, dtype=np.float32)
        cols, counts = np.unique(pos[found], return_counts=True)
        return np.asarray(self.weights[:, cols] @ counts.astype(np.float32)).ravel()

    def save(self, folder: Path) -> None:
        sp.save_npz(folder / "bm25_pairs.npz", self.weights, compressed=False)
        np.save(folder / "bm25_pair_keys.npy", self.keys, allow_pickle=False)
        if self.counts is not None:
            save_counts(folder / PAIR_COUNTS_FILE, self.counts)

    @classmethod
    def load(cls, folder: Path) -> PhraseIndex | None:
        """The saved index, or None for an index built before phrases were added."""
        if not (folder / "bm25_pairs.npz").exists():
            return None
        weights = sp.load_npz(folder / "bm25_pairs.npz").tocsc()
        keys = np.load(folder / "bm25_pair_keys.npy", allow_pickle=False)
        return cls(weights, keys)

