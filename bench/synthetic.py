"""Synthetic embedding vectors for scale benchmarks (``bench retrieval``'s dense and filtered
search at sizes beyond the corpus)."""

from __future__ import annotations

import numpy as np


def synthetic_vectors(base: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """``n`` unit vectors, each a real one of ``base`` plus a little noise (the corpus' spread)."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, base.shape[1]), dtype=np.float32)
    for start in range(0, n, 100_000):
        stop = min(n, start + 100_000)
        rows = base[rng.integers(0, len(base), stop - start)]
        noisy = rows + rng.normal(0, 0.04, rows.shape).astype(np.float32)
        out[start:stop] = noisy / np.linalg.norm(noisy, axis=1, keepdims=True)
    return out
