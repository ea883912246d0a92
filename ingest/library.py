"""The user's library: PubMed searches added to the corpus, kept beside it (``library.dir``).

Each addition is one search: ``search-000007.json`` (its note: query, date, user, PubMed's match
count, how many were fetched and how many were new) and ``search-000007.xml.gz`` (the new
articles' ``<PubmedArticle>`` elements exactly as EFetch served them, a PubMed XML corpus file
like any other). Only articles new to the index and to the library are stored, so no PMID is in
two files and a full rebuild (``index build``, which reads this folder after ``corpus.paths``)
sees the same articles in the same order as the incremental additions made them. The shipped
corpus is never written to.

Crash safety: the note is written first, then the XML (each to a temporary name, fsynced, then
renamed). A note without its XML is an addition interrupted before anything reached the corpus:
it is ignored and cleaned up. An XML file on disk is part of the corpus; the index catches up with
it on the next addition, ``library sync`` or ``index build --if-needed`` (``make run``).

Fetching uses :class:`ingest.eutils.EUtilsClient` (rate-limited process-wide, retries with
back-off, NCBI_API_KEY / NCBI_EMAIL / NCBI_TOOL from the environment): one ESearch (Best Match
order, history server) then EFetch in batches of ``library.efetch_batch``. Every answer is checked
(well-formed PubMed XML, the records asked for); the articles go through the corpus' own ingest
(normalisation, short abstracts dropped, designs and retractions recorded as metadata).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import gzip
import io
import json
import os
import re
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ingest.errors import CorpusError, FetchError
from ingest.eutils import EUtilsClient
from ingest.models import Article
from ingest.preprocess import drop_short, merge_records, normalize_article
from ingest.pubmed_xml import BadRecord, iter_pubmed_xml
from settings.config import Config

NOTE_RE = re.compile(r"^search-(\d{6})\.json$")
_ELEMENT = re.compile(rb"<PubmedArticle>.*?</PubmedArticle>", re.DOTALL)
_PMID = re.compile(rb"<PMID[^>]*>\s*(\d+)\s*</PMID>")
XML_HEAD = (
    b'<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD '
    b'PubMedArticle, 1st January 2025//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/'
    b'pubmed_250101.dtd">\n<PubmedArticleSet>\n'
)
XML_TAIL = b"</PubmedArticleSet>\n"
DAY_S = 24 * 3600

# What a user reads when PubMed cannot be used, by FetchError.kind (one line, then the cause).
PLAIN = {
    "offline": "PubMed could not be reached (no network, or the name does not resolve)",
    "timeout": "PubMed did not answer in time",
    "busy": "PubMed is refusing requests for now (rate limit or server errors)",
    "ncbi": "PubMed answered with an error",
    "bad-answer": "PubMed's answer was cut off or unreadable",
    "settings": "the PubMed request could not be made",
}


class LibraryError(CorpusError):
    """A library operation the user can fix (unknown search, over the limit, index busy)."""


class AdditionStopped(LibraryError):
    """The user stopped an addition (the chat's Stop) before it was published; nothing of it
    was kept."""


def stop_if_asked(stop: threading.Event | None) -> None:
    """Raise :class:`AdditionStopped` once ``stop`` is set (checked between steps)."""
    if stop is not None and stop.is_set():
        raise AdditionStopped("the addition was stopped: nothing was added to the library")


def plain_message(err: FetchError) -> str:
    """One line for the user: what happened with PubMed, that nothing was added, and why."""
    cause = str(err).split(". ")[0].split("; ")[0]
    return (f"{PLAIN.get(err.kind, PLAIN['settings'])}: nothing was added to the library "
            f"({cause}).")


@dataclass
class SearchNote:
    """One addition, as ``library list`` shows it."""

    id: int
    query: str
    added_at: str  # ISO 8601, UTC
    user: str
    count: int  # PubMed's match count for the query
    fetched: int  # records EFetch returned
    new: int  # articles stored (not already in the index or the library)
    pmids: list[str] = field(default_factory=list)
    already_indexed: int = 0
    dropped_short: int = 0
    retracted: int = 0
    not_english: int = 0
    fetch_seconds: float = 0.0

    @property
    def stem(self) -> str:
        return f"search-{self.id:06d}"

    def added_epoch(self) -> float:
        return _dt.datetime.fromisoformat(self.added_at).timestamp()


@dataclass
class Fetched:
    """What one search brought back, before anything is written."""

    query: str
    count: int
    fetched: int
    articles: list[Article]  # normalised, short abstracts dropped, in PubMed's order
    elements: dict[str, bytes]  # pmid -> the <PubmedArticle> element as served
    dropped_short: int
    seconds: float  # search, fetch and ingest
    ingest_seconds: float = 0.0  # of which parsing, normalising and filtering
    search_seconds: float = 0.0  # of which the ESearch request


class Library:
    """The library folder: notes and XML files, read and written with the rules above."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def of(cls, cfg: Config) -> Library:
        return cls(cfg.resolve(cfg.library.dir))

    def xml_path(self, note: SearchNote) -> Path:
        return self.folder / f"{note.stem}.xml.gz"

    def note_path(self, note: SearchNote) -> Path:
        return self.folder / f"{note.stem}.json"

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """One writer of the folder at a time (across processes)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / ".lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def notes(self) -> list[SearchNote]:
        """The searches in the corpus (a note whose XML never landed is left out)."""
        if not self.folder.is_dir():
            return []
        out = []
        for path in sorted(self.folder.iterdir()):
            if not NOTE_RE.match(path.name):
                continue
            try:
                note = SearchNote(**json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, TypeError) as err:
                raise LibraryError(f"{path} is damaged ({err}): delete it and its "
                                   ".xml.gz to remove that search") from None
            if self.xml_path(note).is_file():
                out.append(note)
        return out

    def files(self) -> list[Path]:
        """The library's corpus files, in addition order."""
        return [self.xml_path(n) for n in self.notes()]

    def clean_interrupted(self) -> list[int]:
        """Delete the notes of additions interrupted before their XML landed; their ids."""
        gone: list[int] = []
        if not self.folder.is_dir():
            return gone
        for path in sorted(self.folder.iterdir()):
            match = NOTE_RE.match(path.name)
            if match and not path.with_name(path.name[:-5] + ".xml.gz").exists():
                path.unlink(missing_ok=True)
                gone.append(int(match.group(1)))
        for tmp in self.folder.glob("*.part"):
            tmp.unlink(missing_ok=True)
        return gone

    def next_id(self) -> int:
        ids = [int(m.group(1)) for p in self.folder.glob("search-*.json")
               if (m := NOTE_RE.match(p.name))] if self.folder.is_dir() else []
        return max(ids, default=0) + 1

    def pmids(self) -> set[str]:
        return {p for n in self.notes() for p in n.pmids}

    def added_by(self, user: str, now: float) -> int:
        """New articles ``user`` added in the 24 hours before ``now``."""
        return sum(n.new for n in self.notes()
                   if n.user == user and now - n.added_epoch() < DAY_S)

    def write(self, note: SearchNote, elements: Sequence[bytes]) -> None:
        """The note, then the XML: each atomic, so the corpus never holds half a search."""
        self.folder.mkdir(parents=True, exist_ok=True)
        _atomic(self.note_path(note), json.dumps(asdict(note), indent=1).encode())
        _atomic(self.xml_path(note), _xml(elements), compress=True)

    def remove(self, notes: Sequence[SearchNote], pmids: Collection[str] = ()) -> int:
        """Remove whole searches (``pmids`` empty) or only ``pmids`` from them; how many PMIDs
        left the library. The XML goes (or is rewritten) first: once it is gone from the corpus
        the note no longer matters."""
        removed = 0
        for note in notes:
            drop = set(note.pmids) if not pmids else set(note.pmids) & set(pmids)
            if not drop:
                continue
            keep = [p for p in note.pmids if p not in drop]
            if not keep:
                self.xml_path(note).unlink(missing_ok=True)
                self.note_path(note).unlink(missing_ok=True)
            else:
                elements = _elements(_read_xml(self.xml_path(note)))
                _atomic(self.xml_path(note), _xml([elements[p] for p in keep]), compress=True)
                note.pmids, note.new = keep, len(keep)
                _atomic(self.note_path(note), json.dumps(asdict(note), indent=1).encode())
            removed += len(drop)
        return removed


def _read_xml(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes())


def _elements(body: bytes) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for match in _ELEMENT.finditer(body):
        pmid = _PMID.search(match.group())
        if pmid is not None:
            out.setdefault(pmid.group(1).decode(), match.group())
    return out


def _xml(elements: Sequence[bytes]) -> bytes:
    return XML_HEAD + b"".join(e + b"\n" for e in elements) + XML_TAIL


def _atomic(path: Path, data: bytes, *, compress: bool = False) -> None:
    tmp = path.with_name(path.name + ".part")
    with tmp.open("wb") as fh:
        if compress:
            with gzip.GzipFile(fileobj=fh, mode="wb", mtime=0) as gz:
                gz.write(data)
        else:
            fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


# -- fetching ----------------------------------------------------------------------------------
def client_for(cfg: Config, **kw: Any) -> EUtilsClient:
    """The library's E-utilities client: NCBI_API_KEY / NCBI_EMAIL / NCBI_TOOL from the
    environment, ``library.timeout_s`` and ``max_retries``, an unreachable host failing at once
    (someone is waiting), the process-wide rate limit shared with every other user."""
    return EUtilsClient.from_env(
        cfg.corpus.fetch.base_url, cfg.library.max_retries, timeout_s=cfg.library.timeout_s,
        fail_fast_offline=True, **kw,
    )


def _parse_batch(body: bytes, expected: int) -> tuple[list[Article], dict[str, bytes]]:
    """The articles of one EFetch answer; anything short of well-formed PubMed XML holding the
    records asked for is a :class:`FetchError` (``bad-answer``, or ``ncbi`` for NCBI's ERROR)."""
    if b"<eFetchResult" in body[:400] or b"<ERROR>" in body[:2000]:
        message = re.search(rb"<ERROR>(.*?)</ERROR>", body, re.DOTALL)
        text = message.group(1).decode("utf-8", "replace").strip() if message else "no details"
        raise FetchError(f"EFetch answered with an error: {text}", kind="ncbi")
    articles: list[Article] = []
    for record in iter_pubmed_xml(io.BytesIO(body), name="EFetch answer"):
        if isinstance(record, BadRecord):
            raise FetchError(f"EFetch answer unreadable at {record.position}: {record.reason}",
                             kind="bad-answer")
        if isinstance(record, Article):
            articles.append(record)
    if not body.rstrip().endswith(b"</PubmedArticleSet>"):
        raise FetchError(f"EFetch answer cut off after {len(articles)} of {expected} records",
                         kind="bad-answer")
    return articles, _elements(body)


def search_pubmed(
    cfg: Config,
    query: str,
    max_records: int,
    *,
    client: EUtilsClient | None = None,
    progress: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
) -> Fetched:
    """ESearch ``query`` (Best Match) and EFetch its first ``max_records`` in batches; nothing is
    written. A batch whose answer is unusable is asked again (``library.max_retries``); ``stop``
    set ends it between requests (:class:`AdditionStopped`)."""
    query = query.strip()
    if not query:
        raise LibraryError("the PubMed query is empty: give the words to search for")
    started = time.perf_counter()
    client = client or client_for(cfg)
    found = client.esearch(query, retmax=0, sort="relevance")
    searched = time.perf_counter() - started
    wanted = min(found.count, max_records)
    if progress:
        progress(f"PubMed has {found.count:,} matches for {query!r}; fetching {wanted}")
    parsed: list[Article] = []
    elements: dict[str, bytes] = {}
    batch = cfg.library.efetch_batch
    ingest = 0.0
    for start in range(0, wanted, batch):
        stop_if_asked(stop)
        size = min(batch, wanted - start)
        for attempt in range(cfg.library.max_retries + 1):
            body = client.efetch(found.webenv, found.query_key, start, size)
            parse_started = time.perf_counter()
            try:
                articles, els = _parse_batch(body, size)
                break
            except FetchError as err:
                if err.kind == "ncbi" or attempt == cfg.library.max_retries:
                    raise
            finally:
                ingest += time.perf_counter() - parse_started
        parsed.extend(articles)
        elements.update(els)
        if progress:
            progress(f"fetched {min(start + size, wanted)} of {wanted}")
    parse_started = time.perf_counter()
    merged = merge_records(normalize_article(a) for a in parsed)
    kept, dropped = drop_short(merged.values(), cfg.corpus.min_abstract_chars)
    ingest += time.perf_counter() - parse_started
    return Fetched(query, found.count, len(parsed), kept, elements, len(dropped),
                   round(time.perf_counter() - started, 3), round(ingest, 3), round(searched, 3))


def new_note(
    library: Library, fetched: Fetched, known: Collection[str], user: str
) -> tuple[SearchNote, list[bytes]]:
    """The note and elements of the articles of ``fetched`` not in ``known`` (the index's and the
    library's PMIDs)."""
    new = [a for a in fetched.articles if a.pmid not in known and a.pmid in fetched.elements]
    note = SearchNote(
        id=library.next_id(),
        query=fetched.query,
        added_at=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        user=user,
        count=fetched.count,
        fetched=fetched.fetched,
        new=len(new),
        pmids=[a.pmid for a in new],
        already_indexed=len(fetched.articles) - len(new),
        dropped_short=fetched.dropped_short,
        retracted=sum(a.retracted for a in new),
        not_english=sum(bool(a.language and a.language != "eng") for a in new),
        fetch_seconds=fetched.seconds,
    )
    return note, [fetched.elements[a.pmid] for a in new]


def check_quota(cfg: Config, library: Library, user: str, wanted: int,
                now: float | None = None) -> None:
    """Refuse an addition that would take ``user`` over ``library.per_user_daily``."""
    limit = cfg.library.per_user_daily
    if not limit:
        return
    used = library.added_by(user, time.time() if now is None else now)
    if used + wanted > limit:
        raise LibraryError(
            f"{user} has added {used} articles in the last 24 hours; {wanted} more would pass "
            f"the limit of {limit} (library.per_user_daily in cfg.yaml)"
        )


def find_notes(library: Library, query: str) -> list[SearchNote]:
    """The searches whose query is ``query`` (case and spaces ignored), or whose id it is."""
    key = " ".join(query.split()).casefold()
    notes = library.notes()
    chosen = [n for n in notes if " ".join(n.query.split()).casefold() == key
              or query.strip() in (str(n.id), n.stem)]
    if not chosen:
        known = "; ".join(f"{n.id}: {n.query}" for n in notes) or "the library is empty"
        raise LibraryError(f"no search {query!r} in the library ({known})")
    return chosen
