"""Download a corpus from PubMed with E-utilities into ``corpus.fetch.out_dir``.

* ESearch with ``usehistory=y`` leaves the result on NCBI's history server; EFetch then reads it in
  batches of ``batch_size`` into ``batch_<start>.xml.gz`` files (``start`` = the batch's position
  in the whole result, zero-padded so name order is download order).
* PubMed serves at most 9,999 records of one search, so a date range with more results is halved
  until every part fits; each part has its own history entry and its positions follow the last.
* ``fetch_state.json`` records the query, dates, batch size and the parts (WebEnv, query_key,
  count). A re-run skips batches already on disk, so an interrupted fetch resumes without
  duplicates; an expired history entry is searched again. A folder holding another query's fetch
  is refused rather than mixed.
* Every batch is checked (well-formed PubMed XML) before it is written to a temporary name and
  renamed, so readers never see half a file.
"""

from __future__ import annotations

import calendar
import gzip
import io
import json
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from tqdm import tqdm

from ingest.errors import FetchError
from ingest.eutils import EUtilsClient
from ingest.models import Article
from ingest.pubmed_xml import BadRecord, iter_pubmed_xml
from settings.config import Config, FetchConfig

ESEARCH_MAX = 9999
STATE_FILE = "fetch_state.json"
BATCH_RE = re.compile(r"^batch_(\d+)\.xml\.gz$")
_DATE_RE = re.compile(r"^(\d{4})(?:[/-](\d{1,2})(?:[/-](\d{1,2}))?)?$")

Log = Callable[[str], None]


@dataclass
class Window:
    """One part of the search (a date range under ESearch's cap) on the history server."""

    mindate: str
    maxdate: str
    count: int
    offset: int  # position of this part's first record in the whole result
    webenv: str
    query_key: str


@dataclass
class FetchState:
    query: str
    mindate: str
    maxdate: str
    batch_size: int
    windows: list[Window] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(w.count for w in self.windows)

    def same_request(self, other: FetchState) -> bool:
        keys = ("query", "mindate", "maxdate", "batch_size")
        return all(getattr(self, k) == getattr(other, k) for k in keys)

    def save(self, path: Path) -> None:
        tmp = path.with_name(path.name + ".part")
        tmp.write_text(json.dumps(asdict(self), indent=2), encoding="utf-8")
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> FetchState:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            windows = [Window(**w) for w in data.pop("windows")]
            return cls(**data, windows=windows)
        except (OSError, ValueError, TypeError, KeyError) as err:
            raise FetchError(
                f"{path} is damaged ({err}): delete it and the batch_*.xml.gz files beside it, "
                "then fetch again"
            ) from None


@dataclass
class FetchReport:
    query: str
    mindate: str
    maxdate: str
    out_dir: Path
    total: int = 0  # records to fetch (after max_records)
    batches: int = 0
    skipped: int = 0  # batches already on disk
    downloaded: int = 0  # batches written this run
    articles: int = 0  # articles in the batches written this run
    history_refreshed: int = 0
    files: list[Path] = field(default_factory=list)


def parse_date_bound(value: str, *, end: bool) -> date:
    """``2013``, ``2013/05`` or ``2013/05/07`` -> the first (``end``: last) day it covers."""
    match = _DATE_RE.match(value.strip())
    if not match:
        raise FetchError(f"fetch date {value!r} is not YYYY, YYYY/MM or YYYY/MM/DD: fix cfg.yaml")
    year = int(match.group(1))
    month = int(match.group(2)) if match.group(2) else (12 if end else 1)
    try:
        last = calendar.monthrange(year, month)[1]
        return date(year, month, int(match.group(3)) if match.group(3) else (last if end else 1))
    except (ValueError, calendar.IllegalMonthError):
        raise FetchError(f"fetch date {value!r} is not a real date: fix cfg.yaml") from None


def _fmt(day: date) -> str:
    return day.strftime("%Y/%m/%d")


def plan_windows(
    client: EUtilsClient, query: str, mindate: str, maxdate: str, *, cap: int = ESEARCH_MAX
) -> list[Window]:
    """Search ``query``, splitting the date range until no part has more than ``cap`` results."""
    if not (mindate and maxdate):
        found = client.esearch(query)
        if found.count > cap:
            raise FetchError(
                f"{query!r} matches {found.count:,} articles, more than the {cap:,} PubMed "
                "serves per search: set corpus.fetch.mindate and maxdate so it can be split"
            )
        return [Window("", "", found.count, 0, found.webenv, found.query_key)]
    lo, hi = parse_date_bound(mindate, end=False), parse_date_bound(maxdate, end=True)
    if lo > hi:
        raise FetchError(f"corpus.fetch.mindate {mindate} is after maxdate {maxdate}: swap them")
    windows: list[Window] = []
    pending = [(lo, hi)]
    offset = 0
    while pending:
        start, stop = pending.pop(0)
        found = client.esearch(query, mindate=_fmt(start), maxdate=_fmt(stop))
        if found.count > cap and start < stop:
            mid = start + timedelta(days=(stop - start).days // 2)
            pending[:0] = [(start, mid), (mid + timedelta(days=1), stop)]
            continue
        count = min(found.count, cap)  # one day over the cap: only its first `cap` are served
        if count:
            windows.append(
                Window(_fmt(start), _fmt(stop), count, offset, found.webenv, found.query_key)
            )
            offset += count
    return windows


def _settings(cfg: Config, overrides: dict[str, Any] | None) -> FetchConfig:
    try:
        return FetchConfig.model_validate({**cfg.corpus.fetch.model_dump(), **(overrides or {})})
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise FetchError(f"invalid fetch settings ({problems})") from None


def _load_or_plan(
    client: EUtilsClient, wanted: FetchState, out_dir: Path, cap: int, log: Log
) -> FetchState:
    path = out_dir / STATE_FILE
    if path.exists():
        state = FetchState.load(path)
        if not state.same_request(wanted):
            raise FetchError(
                f"{out_dir} holds a fetch of {state.query!r} {state.mindate}-{state.maxdate} "
                f"(batch size {state.batch_size}); this request differs. Set another "
                f"corpus.fetch.out_dir, or delete {STATE_FILE} and batch_*.xml.gz there"
            )
        log(f"resuming the fetch recorded in {path}")
        return state
    if any(BATCH_RE.match(p.name) for p in out_dir.iterdir()):
        raise FetchError(
            f"{out_dir} has batch_*.xml.gz files but no {STATE_FILE}, so their query is "
            "unknown: delete them or set another corpus.fetch.out_dir"
        )
    span = f"{wanted.mindate or '...'}-{wanted.maxdate or '...'}"
    log(f"searching PubMed for {wanted.query!r} ({span})")
    wanted.windows = plan_windows(client, wanted.query, wanted.mindate, wanted.maxdate, cap=cap)
    wanted.save(path)
    return wanted


def _batches(state: FetchState, limit: int) -> list[tuple[Window, int, int]]:
    """(window, retstart within it, record count) per batch, up to ``limit`` records."""
    plan: list[tuple[Window, int, int]] = []
    for window in state.windows:
        for retstart in range(0, window.count, state.batch_size):
            start = window.offset + retstart
            if start >= limit:
                return plan
            plan.append(
                (window, retstart, min(state.batch_size, window.count - retstart, limit - start))
            )
    return plan


def _check(body: bytes) -> tuple[int, str | None]:
    """(articles, problem) for an EFetch answer; a problem means it must not be saved."""
    articles = 0
    for record in iter_pubmed_xml(io.BytesIO(body), name="EFetch answer"):
        if isinstance(record, BadRecord):
            return articles, f"{record.position}: {record.reason}"
        if isinstance(record, Article):
            articles += 1
    return articles, None if articles else "no articles in the answer"


def _fetch_batch(
    client: EUtilsClient, state: FetchState, window: Window, retstart: int, size: int, attempts: int
) -> tuple[bytes, int, bool]:
    """(XML, articles, history refreshed) for one batch; an unusable answer is fetched again,
    after searching again in case the history entry expired (NCBI keeps it ~8 hours)."""
    refreshed = False
    problem: str | None = ""
    for _ in range(max(2, attempts)):
        body = client.efetch(window.webenv, window.query_key, retstart, size)
        articles, problem = _check(body)
        if problem is None:
            return body, articles, refreshed
        if not refreshed:
            found = client.esearch(state.query, mindate=window.mindate, maxdate=window.maxdate)
            if min(found.count, ESEARCH_MAX) < window.count:
                raise FetchError(
                    f"PubMed now has fewer results for {window.mindate}-{window.maxdate} than "
                    "when this fetch started: delete fetch_state.json and batch_*.xml.gz in "
                    "corpus.fetch.out_dir and fetch again"
                )
            window.webenv, window.query_key, refreshed = found.webenv, found.query_key, True
    raise FetchError(f"EFetch kept returning unusable data ({problem}); try again later")


def write_atomic(path: Path, data: bytes) -> None:
    """gzip ``data`` into ``path`` via a temporary file, so readers never see a partial file."""
    tmp = path.with_name(path.name + ".part")
    with tmp.open("wb") as fh:
        with gzip.GzipFile(fileobj=fh, mode="wb", mtime=0) as gz:
            gz.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def fetch_corpus(
    cfg: Config,
    *,
    client: EUtilsClient | None = None,
    overrides: dict[str, Any] | None = None,
    cap: int = ESEARCH_MAX,
    progress: bool = True,
    log: Log | None = None,
) -> FetchReport:
    """Download ``corpus.fetch.query`` (``overrides`` may replace any ``corpus.fetch`` key) into
    ``corpus.fetch.out_dir``, resuming a previous run of the same request."""
    log = log or (lambda _msg: None)
    settings = _settings(cfg, overrides)
    if not settings.query.strip():
        raise FetchError("corpus.fetch.query is empty: set a PubMed search in cfg.yaml")
    client = client or EUtilsClient.from_env(settings.base_url, settings.max_retries)
    if not client.email:
        log("note: NCBI asks for a contact address: set NCBI_EMAIL in the environment")
    out_dir = cfg.resolve(settings.out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise FetchError(
            f"cannot create {out_dir} ({err.strerror}): set corpus.fetch.out_dir"
        ) from None
    wanted = FetchState(settings.query, settings.mindate, settings.maxdate, settings.batch_size)
    state = _load_or_plan(client, wanted, out_dir, cap, log)
    limit = min(state.total, settings.max_records or state.total)
    plan = _batches(state, limit)
    report = FetchReport(
        state.query, state.mindate, state.maxdate, out_dir, total=limit, batches=len(plan)
    )
    width = max(7, len(str(state.total)))
    bar = tqdm(plan, desc="efetch", unit="batch", disable=not progress)
    for window, retstart, size in bar:
        path = out_dir / f"batch_{window.offset + retstart:0{width}d}.xml.gz"
        report.files.append(path)
        if path.exists():
            report.skipped += 1
            continue
        body, articles, refreshed = _fetch_batch(
            client, state, window, retstart, size, settings.max_retries + 1
        )
        if refreshed:
            report.history_refreshed += 1
            state.save(out_dir / STATE_FILE)
        write_atomic(path, body)
        report.downloaded += 1
        report.articles += articles
    log(
        f"{report.total:,} records in {report.batches} batches: {report.downloaded} downloaded, "
        f"{report.skipped} already in {out_dir}"
    )
    return report
