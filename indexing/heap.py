"""Give memory that Python and torch have freed back to the operating system.

Embedding tens of thousands of chunks allocates and frees large, differently sized tensors;
glibc keeps the freed pages in its heap, so a build's resident size climbs by gigabytes although
little is live. ``malloc_trim`` returns those pages; measured on the full corpus it keeps a
build's peak RSS well under the 3 GB goal (docs/measurements-indexing.md, "Ingest and indexing").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from collections.abc import Callable
from functools import cache


@cache
def _malloc_trim() -> Callable[[int], int] | None:  # glibc's malloc_trim
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
        return trim
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim
        return None


def release_freed_memory() -> bool:
    """Collect garbage and trim the C heap; False where the C library cannot trim."""
    gc.collect()
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
