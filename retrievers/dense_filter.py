"""Question filters applied inside the vector search, at the cost of an unfiltered search.

:class:`FilterIndex` is built once per loaded index from the chunks' metadata: the year of every
chunk (a NumPy array), the article each chunk belongs to, and each article's case-folded title and
author names joined into one string. A filter becomes a chunk mask by array comparisons (years)
and by one regular-expression scan of the joined string (title words, author surname) whose
match positions are mapped to articles with ``searchsorted``: no Python loop over chunks.

:func:`filtered_search` hands the mask to FAISS as an ``IDSelectorBitmap``, so the exact inner
product is computed for the allowed chunks only, and returns the allowed chunks at or above the
threshold, best first, until ``k`` distinct articles are covered: the retriever keeps each
article's best chunk and the first ``k`` articles, which this prefix determines exactly.

The masks equal :meth:`retrievers.filters.Filters.matches` applied to every chunk (tested). A
filter field this module does not know (one added to ``Filters`` later) is checked with
``Filters.matches`` once per still-allowed article, so a new field is never silently ignored.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from typing import Any

import faiss
import numpy as np

from ingest.metadata import ChunkMeta
from retrievers.filters import Filters

# the fields FilterIndex.mask evaluates itself; any other non-empty field goes to Filters.matches
VECTORISED = frozenset({"year_min", "year_max", "title_contains", "author"})
_ARTICLE_SEP = "\n"  # between articles in the joined strings
_NAME_SEP = "\x1f"  # between one article's author names (whitespace to ``\s``, as a name edge is)
MASK_CACHE = 8  # masks kept (FilterIndex.mask)


class FilterIndex:
    """Per-chunk arrays for the question filters of one loaded index."""

    def __init__(self, metadata: Sequence[dict[str, Any]]) -> None:
        article_of: dict[str, int] = {}
        chunk_article = np.empty(len(metadata), dtype=np.int64)
        firsts: list[dict[str, Any]] = []
        for row, meta in enumerate(metadata):
            pmid = ChunkMeta.pmid_of(meta)
            a = article_of.get(pmid)
            if a is None:
                a = article_of[pmid] = len(firsts)
                firsts.append(meta)
            chunk_article[row] = a
        self.size = len(metadata)
        self.chunk_article = chunk_article
        self.articles = firsts  # one metadata dict per article, for fields not vectorised
        # each article's record, read once (Filters.matches of every candidate article would
        # otherwise read it again for each new filter); every chunk carries its article's fields
        self.records = [ChunkMeta.from_metadata(m) for m in firsts]
        years = np.array([r.year or -1 for r in self.records], dtype=np.int32)
        self.years = years[chunk_article] if len(years) else np.empty(0, dtype=np.int32)
        self._cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self._titles, self._title_starts = _joined(r.title.casefold() for r in self.records)
        self._authors, self._author_starts = _joined(
            _NAME_SEP.join(n.casefold() for n in r.authors) for r in self.records
        )

    def mask(self, filters: Filters) -> np.ndarray | None:
        """Which chunks pass ``filters`` (None: no filter, every chunk), read-only. The last few
        masks are kept: one question's BM25 and dense searches (and a multi-query's sub-queries)
        share its filters."""
        if filters.is_empty():
            return None
        key = f"{type(filters).__qualname__}:{filters.model_dump_json()}"
        with self._lock:
            mask = self._cache.pop(key, None)
        if mask is None:
            mask = self._compute(filters)
            mask.flags.writeable = False
        with self._lock:
            self._cache[key] = mask  # most recent last
            while len(self._cache) > MASK_CACHE:
                self._cache.pop(next(iter(self._cache)))
        return mask

    def forget(self) -> None:
        """Drop the kept masks (``bench retrieval`` times a filter's first search)."""
        with self._lock:
            self._cache.clear()

    def _compute(self, filters: Filters) -> np.ndarray:
        mask = np.ones(self.size, dtype=bool)
        if filters.year_min is not None:
            mask &= self.years >= filters.year_min
        if filters.year_max is not None:
            mask &= (self.years <= filters.year_max) & (self.years >= 0)
        allowed = np.ones(len(self.articles), dtype=bool)
        for term in filters.title_contains:
            allowed &= self._articles_matching(
                self._titles, self._title_starts, re.escape(term.casefold()), term
            )
        if filters.author:  # a whole word of a name: starts after a space, separator or start
            want = re.escape(filters.author.casefold())
            allowed &= self._articles_matching(
                self._authors, self._author_starts, rf"{want}(?!\S)", filters.author,
                word_start=True,
            )
        if set(filters.as_dict()) - VECTORISED:
            candidates = np.flatnonzero(allowed & self._articles_with(mask))
            allowed[:] = False
            allowed[[a for a in candidates
                     if filters.matches(self.articles[a], self.records[a])]] = True
        return mask & allowed[self.chunk_article]

    def _articles_with(self, chunk_mask: np.ndarray) -> np.ndarray:
        out = np.zeros(len(self.articles), dtype=bool)
        out[self.chunk_article[chunk_mask]] = True
        return out

    def _articles_matching(self, joined: str, starts: np.ndarray, pattern: str, raw: str,
                           word_start: bool = False) -> np.ndarray:
        """Articles whose joined text matches ``pattern`` (with ``word_start``, only where the
        match starts a word). The pattern begins with its literal text so the scan runs at the
        regex engine's literal-search speed; the word-start test is made on the hits alone. A
        separator inside ``raw`` could let a match span two articles or names: then each article
        is tested on its own."""
        out = np.zeros(len(self.articles), dtype=bool)
        if _ARTICLE_SEP in raw or _NAME_SEP in raw or (word_start and any(
                c.isspace() for c in raw)):
            ends = np.append(starts[1:] - 1, len(joined))
            full = rf"(?<!\S){pattern}" if word_start else pattern
            for a, (s, e) in enumerate(zip(starts, ends, strict=True)):
                text = joined[s:e].replace(_NAME_SEP, " ")
                out[a] = re.search(full, text) is not None
            return out
        hits = [m.start() for m in re.finditer(pattern, joined)
                if not word_start or m.start() == 0 or joined[m.start() - 1].isspace()]
        if hits:
            out[np.searchsorted(starts, np.array(hits), side="right") - 1] = True
        return out


def _joined(texts: Iterable[str]) -> tuple[str, np.ndarray]:
    """One string of ``texts`` separated by ``_ARTICLE_SEP`` (newlines inside a text become
    spaces, so no match crosses an article) and where each text starts."""
    parts = [t.replace(_ARTICLE_SEP, " ") for t in texts]
    lengths = np.fromiter((len(p) + 1 for p in parts), dtype=np.int64, count=len(parts))
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])) if len(parts) else lengths
    return _ARTICLE_SEP.join(parts), starts


def selector(mask: np.ndarray) -> tuple[faiss.SearchParameters, tuple[Any, ...]]:
    """FAISS search parameters restricting a search to ``mask``'s rows, and what they point
    into (the bitmap and the selector: keep them alive while searching, FAISS holds pointers)."""
    bits = np.packbits(mask, bitorder="little")
    sel = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bits))
    params = faiss.SearchParameters()
    params.sel = sel
    return params, (bits, sel)


def filtered_search(index: faiss.Index, query: np.ndarray, mask: np.ndarray, k: int,
                    threshold: float, chunk_article: np.ndarray) -> list[tuple[int, float]]:
    """(row, cosine) of the allowed rows with cosine >= ``threshold``, best first, until ``k``
    distinct articles are covered (every allowed row when fewer articles pass)."""
    allowed = int(mask.sum())
    if not allowed:
        return []
    params, keep_alive = selector(mask)
    q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
    fetch = min(allowed, 4 * k)
    while True:
        scores, rows = index.search(q, fetch, params=params)
        keep = (rows[0] >= 0) & (scores[0] >= threshold)
        rows_kept, scores_kept = rows[0][keep], scores[0][keep]
        articles = chunk_article[rows_kept]
        _, first = np.unique(articles, return_index=True)
        done = len(first) >= k or len(rows_kept) < fetch or fetch >= allowed
        if done:
            break
        fetch = min(allowed, fetch * 4)
    del keep_alive  # the bitmap and selector outlived every search that read them
    if len(first) > k:  # cut after the k-th distinct article's best chunk
        end = int(np.sort(first)[k - 1]) + 1
        rows_kept, scores_kept = rows_kept[:end], scores_kept[:end]
    return [(int(r), float(s)) for r, s in zip(rows_kept, scores_kept, strict=True)]
