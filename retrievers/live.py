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
from collections.abc import Callable, Sequence
from pathlib import Path

from langchain_core.documents import Document

from indexing.embeddings import Embedder
from indexing.store import Manifest, location, read_manifest
from retrievers.backend import FaissBM25Backend
from retrievers.filters import Filters
from retrievers.service import CorpusWords
from settings.config import Config
from settings.errors import IndexMissingError

log = logging.getLogger(__name__)

Loader = Callable[[Config], FaissBM25Backend]  # a loaded build


class LiveIndex:
    """A :class:`~retrievers.service.SearchBackend` that follows the published build: each method
    asks the build of the moment (:meth:`snapshot`)."""

    def __init__(self, cfg: Config, load: Loader = FaissBM25Backend) -> None:
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
                    fresh = self._load_build(folder)
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

    def _load_build(self, folder: Path) -> FaissBM25Backend:
        """Load the published build; a build embedded like the loaded one (a library addition)
        keeps the loaded query embedder instead of loading the model again."""
        embedder = self._backend.embedder
        if self._load is FaissBM25Backend and embedder is not None:
            try:
                manifest = read_manifest(folder)
            except IndexMissingError:
                manifest = None
            old = self._backend.manifest
            if manifest is not None and manifest.dense_ready and (
                    manifest.embedding_model, manifest.embedding_backend) == (
                    old.embedding_model, old.embedding_backend):
                return FaissBM25Backend(self._cfg, embedder=embedder)
        return self._load(self._cfg)

    @property
    def loaded(self) -> FaissBM25Backend:
        """The build loaded now (without looking for a newer one)."""
        return self._backend

    # -- SearchBackend, on the build of the moment ------------------------------------------
    @property
    def manifest(self) -> Manifest:
        return self.snapshot().manifest

    @property
    def dense_ready(self) -> bool:
        return self.snapshot().dense_ready

    @property
    def embedder(self) -> Embedder | None:
        return self.snapshot().embedder

    @property
    def size(self) -> int:
        return self.snapshot().size

    @property
    def corpus(self) -> CorpusWords:
        return self  # the word counts of the build of the moment (chunks_with_stems, size)

    def chunks_with_stems(self, stems: Sequence[str]) -> int:
        return self.snapshot().chunks_with_stems(stems)

    def alias_stems(self, name: str) -> list[frozenset[str]]:
        return self.snapshot().alias_stems(name)

    def bm25_search(self, query: str, k: int, filters: Filters) -> list[Document]:
        return self.snapshot().bm25_search(query, k, filters)

    def dense_search(
        self, query: str, k: int, threshold: float, filters: Filters
    ) -> list[Document]:
        return self.snapshot().dense_search(query, k, threshold, filters)

    def bm25_relevance(self, query: str, filters: Filters) -> float:
        return self.snapshot().bm25_relevance(query, filters)

    def article_chunks(self, pmid: str) -> list[Document]:
        return self.snapshot().article_chunks(pmid)
