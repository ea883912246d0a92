"""Filtered vs unfiltered dense search (``bench retrieval``; retrievers/dense_filter.py).

At the real index: ``dense_search`` (query embedding included) with no filter and with each
question filter, p50/p95 and the ratio to unfiltered, plus the search it replaced (LangChain's
store over every chunk with ``Filters.matches``) on a few questions; and ``search_only``, the
same without the query embedding (FAISS top 4k unfiltered; mask + ID-selector search filtered),
which is what the filter changes. At N synthetic vectors
(``--filter-sizes``, e.g. 1000000): the real chunk vectors plus noise, each row given the
metadata of a real chunk (article ids kept distinct per copy), searched unfiltered (FAISS exact
inner product, top 4k) and filtered (mask from :class:`FilterIndex` + ID selector), the mask's
own cost included.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import numpy as np

FILTERS: dict[str, dict] = {
    "years 2016-2019": {"year_min": 2016, "year_max": 2019},
    "since 2021": {"year_min": 2021},
    "by Deary": {"author": "Deary"},
    "title contains 'children'": {"title_contains": ["children"]},
    "title + years": {"title_contains": ["intelligence"], "year_min": 2015, "year_max": 2018},
}


def _ms(times: list[float]) -> dict:
    return {"p50_ms": round(1000 * float(np.percentile(times, 50)), 2),
            "p95_ms": round(1000 * float(np.percentile(times, 95)), 2)}  # fmt: skip


def _timed(fn: Callable[..., object], *args: object, repeat: int = 1) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args)
        out.append(time.perf_counter() - t0)
    return out


def bench_filtered_real(backend, questions: list[str], k: int, threshold: float,
                        old_questions: int = 5) -> dict:
    from retrievers.filters import Filters

    for q in questions[:3]:
        backend.dense_search(q, k, threshold, Filters())  # warm-up
    base = [t for q in questions
            for t in _timed(backend.dense_search, q, k, threshold, Filters())]
    report: dict = {"unfiltered": _ms(base)}
    for name, spec in FILTERS.items():
        f = Filters(**spec)
        times = [t for q in questions
                 for t in _timed(_first_search, backend, q, k, threshold, f)]
        mask = backend.filter_index.mask(f)
        row = {**_ms(times), "allowed_chunks": int(mask.sum()),
               "ratio_p50": round(float(np.median(times) / np.median(base)), 2)}  # fmt: skip
        old = [t for q in questions[:old_questions]
               for t in _timed(_old_search, backend, q, threshold, f)]
        row["before_p50_ms"] = _ms(old)["p50_ms"]
        report[name] = row
    vectors = np.stack([backend.embedder.embed_query_array(q) for q in questions])
    report["search_only"] = _scale_row(backend.vectorstore.index, backend.filter_index, vectors, k)
    return report


def _first_search(backend, query: str, k: int, threshold: float, f) -> object:
    """A filter's first search: its mask is computed, not taken from FilterIndex's cache."""
    backend.filter_index.forget()
    return backend.dense_search(query, k, threshold, f)


def _fresh_mask(fidx, f) -> object:
    fidx.forget()
    return fidx.mask(f)


def _old_search(backend, query: str, threshold: float, f) -> object:
    """The filtered search as it was: every chunk searched and passed through Filters.matches."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return backend.vectorstore.similarity_search_with_relevance_scores(
            query, k=backend.size, fetch_k=backend.size, score_threshold=threshold,
            filter=lambda meta: f.matches(meta))  # fmt: skip


def synthetic_metadata(real: list[dict], n: int) -> list[dict]:
    """``n`` rows, each carrying a real chunk's year, title and authors; copies of an article
    get their own article id."""
    out = []
    for row in range(n):
        meta = real[row % len(real)]
        out.append({"pmid": f"{meta.get('pmid')}-{row // len(real)}", "year": meta.get("year"),
                    "title": meta.get("title"), "authors": meta.get("authors")})  # fmt: skip
    return out


def bench_filtered_scale(base_vectors: np.ndarray, real_meta: list[dict], queries: np.ndarray,
                         sizes: list[int], k: int = 20) -> list[dict]:
    import faiss

    from bench.synthetic import synthetic_vectors
    from retrievers.dense_filter import FilterIndex

    rows = []
    for n in sizes:
        data = synthetic_vectors(base_vectors, n)
        index = faiss.IndexFlatIP(data.shape[1])
        index.add(data)
        del data
        t0 = time.perf_counter()
        fidx = FilterIndex(synthetic_metadata(real_meta, n))
        built = round(time.perf_counter() - t0, 1)
        rows.append({"vectors": n, "filter_index_build_s": built,
                     **_scale_row(index, fidx, queries, k)})  # fmt: skip
        del index, fidx
    return rows


def _scale_row(index, fidx, queries: np.ndarray, k: int) -> dict:
    from retrievers.dense_filter import filtered_search
    from retrievers.filters import Filters

    base = [t for q in queries for t in _timed(index.search, q[None, :], 4 * k)]
    row: dict = {"unfiltered": _ms(base)}
    for name, spec in FILTERS.items():
        f = Filters(**spec)

        def one(q: np.ndarray, f: Filters = f) -> object:
            fidx.forget()  # a filter's first search: the mask is computed
            mask = fidx.mask(f)
            assert mask is not None
            return filtered_search(index, q, mask, k, -1.0, fidx.chunk_article)

        times = [t for q in queries for t in _timed(one, q)]
        mask = fidx.mask(f)
        assert mask is not None
        mask_times = [t for _ in range(5) for t in _timed(_fresh_mask, fidx, f)]
        row[name] = {**_ms(times), "mask_p50_ms": _ms(mask_times)["p50_ms"],
                     "allowed": int(mask.sum()),
                     "ratio_p50": round(float(np.median(times) / np.median(base)), 2)}
    return row
