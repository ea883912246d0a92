"""A process-wide thread count (torch's, FAISS's OpenMP) set for one piece of work, then put
back: a build, a question's embedding, a search and an LLM in one process each keep their own
(docs/measurements-retrieval.md "Query threads")."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def threads_set(n: int, get: Callable[[], int], set_: Callable[[int], None]) -> Iterator[None]:
    """Run the block with ``set_(n)``, then restore what ``get()`` read before."""
    before = get()
    if before != n:
        set_(n)
    try:
        yield
    finally:
        if before != n:
            set_(before)
