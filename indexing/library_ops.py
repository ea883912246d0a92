"""What ``library add|list|remove|sync`` (and the chat's ``/pubmed``) do, in one place.

``add_search``: search PubMed and fetch (nothing written yet: offline, a 429 storm or a cut-off
answer ends here with a one-line message and the library and index untouched), store the new
articles as one library search (atomic), then :func:`indexing.incremental.sync_library` (embed
only them, rebuild BM25, publish with the atomic swap). ``remove``: take searches or PMIDs out of
the library, then sync. Each step's seconds are kept for ``bench library``.
"""

from __future__ import annotations

import getpass
import os
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from indexing.build import read_article_hashes
from indexing.embeddings import Embedder
from indexing.incremental import SyncResult, sync_library
from indexing.store import open_current
from ingest.eutils import EUtilsClient
from ingest.library import (
    AdditionStopped,
    Fetched,
    Library,
    LibraryError,
    SearchNote,
    check_quota,
    find_notes,
    new_note,
    search_pubmed,
    stop_if_asked,
)
from settings.config import Config
from settings.errors import IndexMissingError

Progress = Callable[[str], None]


def local_user() -> str:
    """Who runs the command line (the per-user limit's key outside the chat)."""
    try:
        return os.environ.get("USER") or getpass.getuser()
    except (KeyError, OSError):
        return "local"


@dataclass
class AddOutcome:
    note: SearchNote
    fetched: Fetched
    sync: SyncResult
    seconds: dict[str, float] = field(default_factory=dict)  # search+fetch, store, then sync's


def indexed_pmids(cfg: Config) -> set[str]:
    try:
        folder, _ = open_current(cfg, verify=False)
    except IndexMissingError as err:
        raise LibraryError(f"there is no index to add to yet ({err})") from None
    return set(read_article_hashes(folder))


def add_search(
    cfg: Config,
    query: str,
    max_records: int | None = None,
    *,
    user: str | None = None,
    client: EUtilsClient | None = None,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> AddOutcome:
    """Search PubMed for ``query``, keep what is new, index it incrementally.

    ``stop`` (the chat's Stop) set at any time before the publish ends it with
    :class:`AdditionStopped`, the library and the published index as they were: the search's
    files, once written, are taken out again. Set after the publish, it changes nothing (the
    addition is complete)."""
    wanted = max_records or cfg.library.default_max
    if not 1 <= wanted <= cfg.library.max_per_add:
        raise LibraryError(f"--max {wanted} is outside 1..{cfg.library.max_per_add} "
                           "(library.max_per_add in cfg.yaml)")
    user = user or local_user()
    library = Library.of(cfg)
    check_quota(cfg, library, user, 1)  # a user already at the limit is not sent to PubMed
    indexed_pmids(cfg)  # no index: say so before asking PubMed anything
    started = time.perf_counter()
    fetched = search_pubmed(cfg, query, wanted, client=client, progress=progress, stop=stop)
    seconds = {"search+fetch": round(time.perf_counter() - started, 3)}
    started = time.perf_counter()
    stop_if_asked(stop)
    with library.lock():
        library.clean_interrupted()
        note, elements = new_note(library, fetched, indexed_pmids(cfg) | library.pmids(), user)
        check_quota(cfg, library, user, note.new)
        library.write(note, elements)
    seconds["store"] = round(time.perf_counter() - started, 3)
    if progress:
        progress(f"{note.new} of {note.fetched} fetched are new to the index; indexing them")
    try:
        sync = sync_library(cfg, embedder=embedder, progress=progress, stop=stop)
    except AdditionStopped:
        with library.lock():  # the published build never held it: the library goes back too
            library.remove([note])
        raise
    return AddOutcome(note, fetched, sync, {**seconds, **sync.seconds})


def remove(
    cfg: Config,
    query: str | None = None,
    pmids: Collection[str] = (),
    *,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
) -> tuple[int, SyncResult]:
    """Take a search (by query or id) or PMIDs out of the library, then out of the index."""
    library = Library.of(cfg)
    with library.lock():
        notes = find_notes(library, query) if query else library.notes()
        if pmids:
            unknown = set(pmids) - {p for n in notes for p in n.pmids}
            if unknown:
                raise LibraryError(
                    f"not in the library: {', '.join(sorted(unknown))} (only articles added "
                    "with `library add` can be removed; the shipped corpus is never modified)")
        removed = library.remove(notes, pmids)
    return removed, sync_library(cfg, embedder=embedder, progress=progress)


@dataclass
class Listed:
    note: SearchNote
    indexed: int  # of its PMIDs, how many the published index holds


def listing(cfg: Config) -> list[Listed]:
    library = Library.of(cfg)
    try:
        folder, _ = open_current(cfg, verify=False)
        held = set(read_article_hashes(folder))
    except IndexMissingError:
        held = set()
    return [Listed(n, sum(p in held for p in n.pmids)) for n in library.notes()]
