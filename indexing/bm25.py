"""BM25 (rank-bm25's Okapi scoring) as a precomputed sparse term-weight matrix.

rank-bm25 scores a query by looping over every document in Python for every query term: about
5 ms per term at 35k chunks, and linear in corpus size. Here its statistics (idf with its epsilon
floor, document lengths, k1, b) are computed once at build time, with NumPy from the term counts
(``indexing.bm25_counts``, stored with the build so an addition only counts its new chunks), and
folded into a CSC matrix ``W[doc, term]``; a query's scores are then ``W[:, terms] @ counts``,
identical to ``BM25Okapi.get_scores`` (tested) at a fraction of the cost.

With a :class:`~indexing.phrases.PhraseIndex` attached, ``phrase_weight`` x its word-pair score is
added, so exact phrases from the question count (see :mod:`indexing.phrases`).
"""

from __future__ import annotations

import bisect
import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from indexing.bm25_counts import (
    COUNTS_FILE,
    count_terms,
    load_counts,
    merge_counts,
    okapi_weights,
    save_counts,
)
from indexing.phrases import PhraseIndex
from indexing.tokenize import tokenizer_for


class BM25Index:
    def __init__(
        self,
        weights: sp.csc_matrix,
        vocab: dict[str, int],
        stopwords: bool,
        phrases: PhraseIndex | None = None,
        phrase_weight: float = 0.0,
    ) -> None:
        self.weights = weights
        self.vocab = vocab
        self.stopwords = stopwords
        self.tokenize: Callable[[str], list[str]] = tokenizer_for(stopwords)
        self.phrases = phrases
        self.phrase_weight = phrase_weight
        self._idf: np.ndarray | None = None
        self._sorted_vocab: list[str] | None = None
        self.counts: sp.csr_matrix | None = None  # term counts per document (kept for additions)

    @property
    def size(self) -> int:
        return int(self.weights.shape[0])

    @classmethod
    def build(
        cls,
        texts: Sequence[str],
        *,
        k1: float = 1.2,
        b: float = 0.75,
        stopwords: bool = True,
        phrases: bool = False,
    ) -> BM25Index:
        """Index ``texts``; with ``phrases``, word pairs too (weighted at query time)."""
        pairs = PhraseIndex.build(texts, k1=k1, b=b) if phrases else None
        counts, terms = count_terms(texts, tokenizer_for(stopwords))
        return cls.from_counts(counts, terms, k1=k1, b=b, stopwords=stopwords, phrases=pairs)

    @classmethod
    def from_counts(cls, counts: sp.csr_matrix, terms: np.ndarray, *, k1: float, b: float,
                    stopwords: bool, phrases: PhraseIndex | None = None) -> BM25Index:
        """The index of ``counts[doc, term]`` over the sorted vocabulary ``terms``."""
        index = cls(okapi_weights(counts, k1, b), {str(t): i for i, t in enumerate(terms)},
                    stopwords, phrases)
        index.counts = counts
        return index

    @classmethod
    def extend(
        cls,
        folder: Path,
        keep: Sequence[int],
        texts: Sequence[str],
        *,
        k1: float = 1.2,
        b: float = 0.75,
        stopwords: bool = True,
        phrases: bool = False,
    ) -> BM25Index | None:
        """The index stored at ``folder`` with only its rows ``keep``, then ``texts`` appended:
        only ``texts`` are tokenised, every weight is recomputed from the counts (idf and mean
        length change with every document). Equal to :meth:`build` over the same texts. None
        when that build kept no counts (made before they were) or used other stopwords."""
        old = load_counts(folder / COUNTS_FILE)
        if old is None:
            return None
        meta = json.loads((folder / "bm25_vocab.json").read_text(encoding="utf-8"))
        if meta["stopwords"] != stopwords:
            return None
        vocab: dict[str, int] = meta["vocab"]
        old_terms = np.empty(len(vocab), dtype=object)
        for term, col in vocab.items():
            old_terms[col] = term
        pairs = None
        if phrases:
            pairs = PhraseIndex.extend(folder, keep, texts, k1=k1, b=b)
            if pairs is None:
                return None
        new, new_terms = count_terms(texts, tokenizer_for(stopwords))
        counts, terms = merge_counts(old, old_terms, keep, new, new_terms)
        return cls.from_counts(counts, terms, k1=k1, b=b, stopwords=stopwords, phrases=pairs)

    def scores(self, query: str) -> np.ndarray:
        scores = self.term_scores(query)
        if self.phrases is not None and self.phrase_weight:
            scores = scores + self.phrase_weight * self.phrases.scores(query)
        return scores

    def term_scores(self, query: str) -> np.ndarray:
        """Plain (unigram) BM25, exactly rank-bm25's ``get_scores``."""
        counts = Counter(t for t in self.tokenize(query) if t in self.vocab)
        if not counts:
            return np.zeros(self.size, dtype=np.float32)
        cols = np.fromiter((self.vocab[t] for t in counts), dtype=np.int64)
        mult = np.fromiter(counts.values(), dtype=np.float32)
        return np.asarray(self.weights[:, cols] @ mult).ravel()

    def idf(self) -> np.ndarray:
        """Each term's idf as rank-bm25 computes it (log((N - df + 0.5) / (df + 0.5)), negative
        values floored at 0.25 x the mean idf), from the document frequencies the weight matrix
        holds (a term's non-zero rows)."""
        if self._idf is None:
            n = self.size
            df = np.diff(self.weights.indptr).astype(np.float64)
            idf = np.log(n - df + 0.5) - np.log(df + 0.5)
            floor = 0.25 * (float(idf.mean()) if idf.size else 0.0)
            self._idf = np.where(idf < 0, floor, idf)
        return self._idf

    def relevance(self, query: str, k1: float, mask: np.ndarray | None = None) -> float:
        """How well the best document matches ``query``, in [0, 1]: its plain BM25 score divided
        by the highest score any document could reach for this query, sum over the query's terms
        of idf x (k1 + 1) (the term-frequency part saturates at k1 + 1). A word no document
        contains counts with the largest idf there is, log((N + 0.5) / 0.5): a question whose
        rare words are absent from the corpus is about something else. What decides refusal
        while there is no dense index (retrievers.hybrid.refuses_lexical)."""
        counts = Counter(self.tokenize(query))
        if not counts:
            return 0.0
        idf = self.idf()
        unseen = float(np.log(self.size + 0.5) - np.log(0.5))
        ceiling = (k1 + 1) * sum(
            n * (float(idf[self.vocab[t]]) if t in self.vocab else unseen)
            for t, n in counts.items()
        )
        scores = self.term_scores(query)
        if mask is not None:
            scores = np.where(mask, scores, 0.0)
        best = float(scores.max()) if scores.size else 0.0
        return max(0.0, min(1.0, best / ceiling)) if ceiling > 0 else 0.0

    def search(self, query: str, k: int, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Top ``k`` (row, score) with a positive score, among rows where ``mask`` is True."""
        scores = self.scores(query)
        if mask is not None:
            scores = np.where(mask, scores, 0.0)
        positive = np.flatnonzero(scores > 0)
        if positive.size == 0:
            return []
        if positive.size > k:
            top = positive[np.argpartition(-scores[positive], k - 1)[:k]]
        else:
            top = positive
        top = top[np.lexsort((top, -scores[top]))]
        return [(int(i), float(scores[i])) for i in top]

    def rows_with_stem(self, stem: str, stem_of: Callable[[str], str]) -> np.ndarray:
        """Rows (chunks) holding a term whose stem (by ``stem_of``) is ``stem``: the vocabulary
        is searched by prefix (a Porter stem is a prefix of its words but for a final "i")."""
        if self._sorted_vocab is None:
            self._sorted_vocab = sorted(self.vocab)
        prefix = stem[: max(3, len(stem) - 1)]
        at = bisect.bisect_left(self._sorted_vocab, prefix)
        cols: list[int] = []
        while at < len(self._sorted_vocab) and self._sorted_vocab[at].startswith(prefix):
            term = self._sorted_vocab[at]
            if stem_of(term) == stem:
                cols.append(self.vocab[term])
            at += 1
        if not cols:
            return np.zeros(0, dtype=np.int64)
        ptr, idx = self.weights.indptr, self.weights.indices
        return np.unique(np.concatenate([idx[ptr[c] : ptr[c + 1]] for c in cols]))

    def save(self, folder: Path) -> None:
        sp.save_npz(folder / "bm25.npz", self.weights, compressed=False)
        if self.counts is not None:
            save_counts(folder / COUNTS_FILE, self.counts)
        if self.phrases is not None:
            self.phrases.save(folder)
        (folder / "bm25_vocab.json").write_text(
            json.dumps({"stopwords": self.stopwords, "vocab": self.vocab}, separators=(",", ":")),
            encoding="utf-8"
        )

    @classmethod
    def load(cls, folder: Path, *, phrase_weight: float = 0.0) -> BM25Index:
        weights = sp.load_npz(folder / "bm25.npz").tocsc()  # np.load(allow_pickle=False) inside
        meta = json.loads((folder / "bm25_vocab.json").read_text(encoding="utf-8"))
        phrases = PhraseIndex.load(folder) if phrase_weight else None
        return cls(weights, meta["vocab"], meta["stopwords"], phrases, phrase_weight)
