"""PubMed E-utilities through Biopython's ``Bio.Entrez``: ESearch for PMIDs, EFetch for XML.

``Bio.Entrez`` builds every request (parameters, ``tool``/``email``/``api_key``, POST for long
ID lists) and spaces them by NCBI's rule. :class:`EUtilsClient` adds what a long unattended
download needs on top: its own rate limit (3 requests a second, 10 with ``NCBI_API_KEY``),
retries with exponential back-off that honour ``Retry-After``, a per-request timeout, and errors
that say what to do with the API key blanked.

Three things ``Bio.Entrez`` does not offer are added by :func:`entrez_transport` at the one seam
Biopython itself mocks in its tests, the module's ``urlopen``:

* a timeout: ``Bio.Entrez`` opens connections without one, so a stalled download would hang;
* another host: its functions hard-code ``https://eutils.ncbi.nlm.nih.gov``, so a mirror or
  proxy (``corpus.fetch.base_url``) and the tests' local replay server could not be reached;
* POST for every request, so the API key never appears in a URL (proxy and server logs).

Retrying is left to the client (``Bio.Entrez.max_tries`` is 1 during a call): Biopython sleeps a
fixed 15 s and ignores ``Retry-After``.
"""

from __future__ import annotations

import errno
import http.client
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from Bio import Entrez

from ingest.errors import FetchError

TOOL = "pubmed-assistant"  # the default ``tool`` parameter; NCBI_TOOL in the environment wins
NCBI_EUTILS = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/"
RETRY_STATUSES = {429, 500, 502, 503, 504}
MAX_BACKOFF_S = 60.0


# Failures no retry within seconds will cure: no name resolution, nothing listening, no route.
_UNREACHABLE_ERRNOS = {errno.ECONNREFUSED, errno.ENETUNREACH, errno.EHOSTUNREACH,
                       errno.EADDRNOTAVAIL}


def unreachable(err: BaseException) -> bool:
    """Whether ``err`` (as urllib raises it) says the host cannot be reached at all."""
    reason = getattr(err, "reason", err)
    if isinstance(reason, socket.gaierror):
        return True
    return isinstance(reason, OSError) and reason.errno in _UNREACHABLE_ERRNOS


def timed_out(err: BaseException) -> bool:
    reason = getattr(err, "reason", err)
    return isinstance(reason, TimeoutError | socket.timeout)


class RateLimiter:
    """Spaces requests across every thread that shares it: one slot per ``interval``. A caller
    reserves the next free slot under the lock and sleeps until it outside the lock, so users
    queue fairly and the process never exceeds NCBI's rate (3/s without a key, 10/s with)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next: float | None = None

    def wait(self, interval: float, clock: Callable[[], float],
             sleep: Callable[[float], None]) -> None:
        with self._lock:
            now = clock()
            slot = now if self._next is None else max(now, self._next)
            self._next = slot + interval
        if slot > now:
            sleep(slot - now)


# One limiter per (clock, sleep): every real client (time.monotonic, time.sleep) shares the
# process-wide one, so all users of a server together stay under NCBI's limit; a test's fake
# clock or recorded sleeps get their own.
_LIMITERS: dict[tuple[Callable[[], float], Callable[[float], None]], RateLimiter] = {}
_LIMITERS_LOCK = threading.Lock()


def limiter_for(clock: Callable[[], float], sleep: Callable[[float], None]) -> RateLimiter:
    with _LIMITERS_LOCK:
        return _LIMITERS.setdefault((clock, sleep), RateLimiter())


class HTTPStatusError(Exception):
    """A non-2xx answer; ``retry_after`` is the server's ``Retry-After`` in seconds, if any."""

    def __init__(self, status: int, body: bytes = b"", retry_after: float | None = None):
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body
        self.retry_after = retry_after


class Transport(Protocol):
    """Call E-utility ``url`` (base URL + e.g. ``efetch.fcgi``) with ``data`` and return the body;
    raise :class:`HTTPStatusError` for a non-2xx status and ``OSError`` for network failures."""

    def __call__(self, url: str, data: Mapping[str, str], timeout: float) -> bytes: ...


_ENTREZ_CALLS: dict[str, Callable[..., object]] = {
    "esearch.fcgi": Entrez.esearch,
    "efetch.fcgi": Entrez.efetch,
}
# Bio.Entrez's settings are module globals: one call at a time may change them.
_ENTREZ_LOCK = threading.Lock()


def entrez_transport(url: str, data: Mapping[str, str], timeout: float) -> bytes:
    """One E-utilities call made by ``Bio.Entrez`` (see the module docstring for what is added)."""
    base_url, _, endpoint = url.rpartition("/")
    call = _ENTREZ_CALLS.get(endpoint)
    if call is None:
        raise ValueError(f"no Bio.Entrez function for the E-utility {endpoint!r}")
    with _ENTREZ_LOCK, _entrez_urlopen(base_url + "/", timeout), warnings.catch_warnings():
        # Without NCBI_EMAIL Biopython warns on every request; the fetch says it once instead.
        warnings.filterwarnings("ignore", "\\s*Email address is not specified", UserWarning)
        try:
            handle = call(**data)
            try:
                body = handle.read()  # type: ignore[attr-defined]
            finally:
                handle.close()  # type: ignore[attr-defined]
        except urllib.error.HTTPError as err:
            retry_after = err.headers.get("Retry-After") if err.headers else None
            raise HTTPStatusError(
                err.code,
                err.read() if err.fp else b"",
                float(retry_after) if retry_after and retry_after.isdigit() else None,
            ) from None
        except http.client.HTTPException as err:  # IncompleteRead, RemoteDisconnected...
            raise OSError(f"{type(err).__name__}: {err}") from None
    # Bio.Entrez decodes text/plain answers to str; everything else stays bytes.
    return body.encode("utf-8") if isinstance(body, str) else body


@contextmanager
def _entrez_urlopen(base_url: str, timeout: float) -> Iterator[None]:
    """Route ``Bio.Entrez``'s requests to ``base_url`` as POSTs with ``timeout``; one try each."""
    original_urlopen, original_tries = Entrez.urlopen, Entrez.max_tries

    def urlopen(request: urllib.request.Request) -> object:
        return original_urlopen(_as_post(request, base_url), timeout=timeout)

    # Bio.Entrez.urlopen is urllib's, typed as its overloads; ours serves the one call Entrez makes
    Entrez.urlopen, Entrez.max_tries = urlopen, 1  # type: ignore[assignment]
    try:
        yield
    finally:
        Entrez.urlopen, Entrez.max_tries = original_urlopen, original_tries


def _as_post(request: urllib.request.Request, base_url: str) -> urllib.request.Request:
    url = request.full_url
    if not url.startswith(NCBI_EUTILS):
        raise FetchError(
            f"this Biopython builds E-utilities URLs under {url.split('?')[0]!r}, not "
            f"{NCBI_EUTILS!r}: install the version pinned in requirements.txt"
        )
    path, _, query = url[len(NCBI_EUTILS) :].partition("?")
    body = request.data if isinstance(request.data, bytes) else query.encode("ascii")
    return urllib.request.Request(
        base_url + path,
        data=body,
        method="POST",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )


@dataclass(frozen=True)
class SearchResult:
    count: int  # how many records match
    webenv: str  # the history server session holding them...
    query_key: str  # ...and their key in it
    ids: list[str] = field(default_factory=list)


@dataclass
class EUtilsClient:
    base_url: str = NCBI_EUTILS
    api_key: str | None = None
    email: str | None = None
    max_retries: int = 5
    timeout_s: float = 60.0
    transport: Transport = entrez_transport
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    tool: str = TOOL
    # True: a host that cannot be reached (DNS, refused, no route) fails at once instead of being
    # retried with back-off (a user waiting in the chat, not an unattended download)
    fail_fast_offline: bool = False
    limiter: RateLimiter | None = None  # None: the process-wide one (limiter_for)

    @classmethod
    def from_env(
        cls, base_url: str, max_retries: int, environ: Mapping[str, str] | None = None,
        **kw: Any,
    ) -> EUtilsClient:
        """A client with ``NCBI_API_KEY`` / ``NCBI_EMAIL`` taken from the environment only."""
        env = os.environ if environ is None else environ
        return cls(
            base_url=base_url,
            api_key=env.get("NCBI_API_KEY") or None,
            email=env.get("NCBI_EMAIL") or None,
            max_retries=max_retries,
            tool=env.get("NCBI_TOOL") or TOOL,
            **kw,
        )

    @property
    def min_interval_s(self) -> float:
        return 0.11 if self.api_key else 0.34

    def esearch(
        self, term: str, *, mindate: str = "", maxdate: str = "", retmax: int = 0,
        sort: str = "",
    ) -> SearchResult:
        """Search PubMed, leaving the result on NCBI's history server (``usehistory=y``);
        ``sort``: PubMed's order (``relevance`` is its Best Match), default its own."""
        params = {
            "db": "pubmed",
            "term": term,
            "usehistory": "y",
            "retmax": str(retmax),
            "retmode": "json",
        }
        if sort:
            params["sort"] = sort
        if mindate or maxdate:
            params.update(datetype="pdat", mindate=mindate, maxdate=maxdate)
        body = self.request("esearch.fcgi", params)
        try:
            data = json.loads(body)
            if isinstance(data, dict) and "error" in data and "esearchresult" not in data:
                raise FetchError(f"PubMed answered with an error: {data['error']}", kind="ncbi")
            result = data["esearchresult"]
        except (ValueError, KeyError, TypeError):
            raise FetchError(
                f"ESearch returned an unexpected answer ({_excerpt(body, self.api_key)}); "
                "try again later", kind="bad-answer",
            ) from None
        if "ERROR" in result:
            raise FetchError(
                f"PubMed rejected the search {term!r}: {result['ERROR']}; "
                "check corpus.fetch.query (PubMed search syntax)", kind="ncbi",
            )
        return SearchResult(
            count=int(result.get("count", 0)),
            webenv=str(result.get("webenv", "")),
            query_key=str(result.get("querykey", "")),
            ids=list(result.get("idlist", [])),
        )

    def efetch(self, webenv: str, query_key: str, retstart: int, retmax: int) -> bytes:
        """PubMed XML for records ``retstart``..``retstart+retmax-1`` of a history result."""
        return self.request(
            "efetch.fcgi",
            {
                "db": "pubmed",
                "WebEnv": webenv,
                "query_key": query_key,
                "retstart": str(retstart),
                "retmax": str(retmax),
                "retmode": "xml",
            },
        )

    def request(self, endpoint: str, params: Mapping[str, str]) -> bytes:
        """One rate-limited E-utilities call, retried on transient failures."""
        data = {**params, "tool": self.tool}
        if self.email:
            data["email"] = self.email
        if self.api_key:
            data["api_key"] = self.api_key
        url = self.base_url.rstrip("/") + "/" + endpoint
        last_error = ""
        kind = "busy"
        for attempt in range(self.max_retries + 1):
            (self.limiter or limiter_for(self.clock, self.sleep)).wait(
                self.min_interval_s, self.clock, self.sleep
            )
            try:
                return self.transport(url, data, self.timeout_s)
            except HTTPStatusError as err:
                if err.status not in RETRY_STATUSES:
                    raise FetchError(
                        f"{url} answered HTTP {err.status} ({_excerpt(err.body, self.api_key)}); "
                        "check corpus.fetch.base_url and the query, and NCBI_API_KEY if set",
                        kind="ncbi",
                    ) from None
                last_error = f"HTTP {err.status}"
                kind = "busy"
                delay = err.retry_after
            except OSError as err:  # URLError, timeouts, connection resets
                last_error = f"{type(err).__name__}: {getattr(err, 'reason', err)}"
                kind = ("offline" if unreachable(err) else "timeout" if timed_out(err)
                        else "bad-answer")
                if kind == "offline" and self.fail_fast_offline:
                    raise FetchError(
                        f"PubMed E-utilities ({url}) cannot be reached ({last_error})",
                        kind="offline",
                    ) from None
                delay = None
            if attempt < self.max_retries:
                self.sleep(min(delay if delay is not None else 2.0**attempt, MAX_BACKOFF_S))
        raise FetchError(
            f"PubMed E-utilities ({url}) failed {self.max_retries + 1} times "
            f"(last error: {last_error}). Check the network or proxy and try again later; "
            "setting NCBI_API_KEY raises NCBI's rate limit. Or put PubMed XML files in a "
            "corpus.paths folder instead of fetching.", kind=kind,
        )


def _excerpt(body: bytes, secret: str | None = None) -> str:
    """The start of an error body, with the API key blanked (NCBI echoes an invalid key)."""
    text = body.decode("utf-8", "replace").strip().replace("\n", " ")
    if secret:
        text = text.replace(secret, "***")
    return (text[:150] + "...") if len(text) > 150 else (text or "no details")
