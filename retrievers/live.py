"""The local index as it is now: a newly published build is picked up on the next search.

``make run`` opens the chat on a lexical-only build (BM25; the manifest says ``dense: pending``)
while the dense index is embedded in the background; when that build is published (the index's
symlink swapped to it), the next question loads it and hybrid retrieval is on, without a restart.
Any other publish (``index update`` in another terminal) is picked up the same way.

Each search takes one :meth:`LiveIndex.snapshot` (one loaded build) and uses it for all of its
parts, so a swap never mixes two builds within one retrieval. Loading happens under a lock (one
load, however many threads ask); a new build that fails to load is logged and skipped, and the
build already loaded keeps serving.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from indexing.store import location
from retrievers.backend import FaissBM25Backend
from settings.errors import IndexMissingError

log = logging.getLogger(__name__)

Loader = Callable[[Any], FaissBM25Backend]  # Config -> a loaded build


class LiveIndex:
    """A :class:`~retrievers.backend.SearchBackend` that follows the published build.

    Attributes it does not define itself (``docs``, ``bm25``, ``vectorstore``...) are those of
    the build loaded now."""

    def __init__(self, cfg: Any, load: Loader = FaissBM25Backend) -> None:
        self._cfg = cfg
        self._load = load
        self._loc = location(cfg)
        self._lock = threading.Lock()
        self._backend = load(cfg)  # IndexMissingError (with its how-to) when there is none
        self._folder: Path | None = self._backend.folder
        self._skipped: Path | None = None
        self.reloads = 0

    def snapshot(self) -> FaissBM25Backend:
        """The build to search now: the one loaded, or the newly published one, loaded first."""
        folder = self._loc.current()
        if folder is None or folder == self._folder or folder == self._skipped:
            return self._backend
        with self._lock:
            if folder != self._folder and folder != self._skipped:
                try:
                    fresh = self._load(self._cfg)
                except IndexMissingError as err:  # damaged or mismatched: keep the old one
                    log.warning("a new index build at %s was not loaded (%s); still searching "
                                "%s", folder, err, self._folder)
                    self._skipped = folder
                    return self._backend
                self._backend, self._folder = fresh, fresh.folder
                self.reloads += 1
                log.info("search index switched to %s (%s)", folder,
                         "hybrid: BM25 + dense" if fresh.dense_ready else "BM25 only")
            return self._backend

    @property
    def loaded(self) -> FaissBM25Backend:
        """The build loaded now (without looking for a newer one)."""
        return self._backend

    # -- SearchBackend, on the build of the moment ------------------------------------------
    @property
    def manifest(self) -> Any:
        return self.snapshot().manifest

    @property
    def dense_ready(self) -> bool:
        return self.snapshot().dense_ready

    @property
    def size(self) -> int:
        return self.snapshot().size

    def bm25_search(self, *args: Any, **kwargs: Any) -> Any:
        return self.snapshot().bm25_search(*args, **kwargs)

    def dense_search(self, *args: Any, **kwargs: Any) -> Any:
        return self.snapshot().dense_search(*args, **kwargs)

    def bm25_relevance(self, *args: Any, **kwargs: Any) -> float:
        return self.snapshot().bm25_relevance(*args, **kwargs)

    def article_chunks(self, pmid: str) -> Any:
        return self.snapshot().article_chunks(pmid)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.snapshot(), name)
