"""A local E-utilities replay server: NCBI's wire format, served from real PubMed records.

For tests, ``bench library`` and demos without a network: ``esearch.fcgi`` and ``efetch.fcgi``
answer GET and POST exactly as NCBI shapes them (ESearch JSON with ``header``/``esearchresult``
or the ``eSearchResult`` XML, ``usehistory`` WebEnv/query_key, EFetch ``PubmedArticleSet`` XML
with the 2025 DOCTYPE, NCBI's error bodies: the ``eFetchResult``/``ERROR`` XML of a lost
history, the ``{"error": "API rate limit exceeded", ...}`` JSON of a 429, the ``ERROR`` field of
a rejected search). The records are real ``<PubmedArticle>`` elements, byte for byte, from
PubMed XML files (the shared corpus, the efetch fixtures); a search matches every term of the
query (field tags such as ``[Title/Abstract]`` ignored, ``AND`` implied, ``"quoted phrases"``,
``word*``) against title and abstract, in file order.

Like NCBI it counts requests: more than 3 in any second without ``api_key`` (10 with one) is
answered 429, so a test can check that a client stays under the limit. :class:`Faults` injects
what the network and NCBI do on a bad day. It binds 127.0.0.1 only.
"""

from __future__ import annotations

import gzip
import json
import re
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_ARTICLE = re.compile(rb"<PubmedArticle>.*?</PubmedArticle>", re.DOTALL)
_PMID = re.compile(rb"<PMID[^>]*>(\d+)</PMID>")
_TITLE = re.compile(rb"<ArticleTitle[^>]*>(.*?)</ArticleTitle>", re.DOTALL)
_ABSTRACT = re.compile(rb"<AbstractText[^>]*>(.*?)</AbstractText>", re.DOTALL)
_TAGS = re.compile(rb"<[^>]+>")
EFETCH_HEAD = (
    b'<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, '
    b'1st January 2025//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n'
    b"<PubmedArticleSet>\n"
)
EFETCH_ERROR = (
    '<?xml version="1.0" encoding="UTF-8" ?>\n<!DOCTYPE eFetchResult PUBLIC "-//NLM//DTD efetch '
    '20131226//EN" "https://eutils.ncbi.nlm.nih.gov/eutils/dtd/20131226/efetch.dtd">\n'
    "<eFetchResult>\n\t<ERROR>{message}</ERROR>\n</eFetchResult>\n"
)
BAD_GATEWAY = (
    b"<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1>"
    b"</center></body></html>"
)


@dataclass(frozen=True)
class ReplayRecord:
    pmid: str
    xml: bytes  # the <PubmedArticle> element as the file has it
    text: str  # title and abstract, lower-cased, for matching


def read_records(paths: Iterable[Path]) -> list[ReplayRecord]:
    """Every ``<PubmedArticle>`` of the PubMed XML files (gzip or not), first copy of a PMID."""
    seen: dict[str, ReplayRecord] = {}
    for path in paths:
        data = Path(path).read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        for match in _ARTICLE.finditer(data):
            xml = match.group()
            pmid = _PMID.search(xml)
            if pmid is None:
                continue
            title = b" ".join(_TITLE.findall(xml))
            abstract = b" ".join(_ABSTRACT.findall(xml))
            text = _TAGS.sub(b" ", title + b" " + abstract).decode("utf-8", "replace").lower()
            seen.setdefault(pmid.group(1).decode(), ReplayRecord(pmid.group(1).decode(), xml,
                                                                 text))
    return list(seen.values())


def query_terms(query: str) -> list[str]:
    """The terms a replayed search requires: quoted phrases whole, field tags and the boolean
    operators dropped, lower-cased."""
    query = re.sub(r"\[[^\]]*\]", " ", query)
    phrases = re.findall(r'"([^"]+)"', query)
    rest = re.sub(r'"[^"]*"', " ", query)
    words = [w for w in re.findall(r"[\w*-]+", rest) if w not in ("AND", "OR", "NOT")]
    return [t.lower().strip() for t in [*phrases, *words] if t.strip()]


def _matches(term: str, text: str) -> bool:
    if term.endswith("*"):
        return re.search(r"\b" + re.escape(term[:-1]), text) is not None
    return re.search(r"\b" + re.escape(term) + r"\b", text) is not None


@dataclass
class Faults:
    """What the next answers do wrong. Counters count down; ``-1`` means every answer."""

    status: int = 0  # HTTP status of the storm (429, 502...)
    status_next: int = 0  # how many requests get it
    retry_after: str | None = None  # sent with the storm's answers
    truncate_efetch: int = 0  # EFetch answers cut to a third (Content-Length of the whole)
    truncate_clean: int = 0  # EFetch answers cut to a third and sent as if complete (a proxy)
    efetch_error: int = 0  # EFetch answers NCBI's eFetchResult ERROR (a lost history entry)
    esearch_error: str = ""  # ESearch answers with this ERROR (a rejected search)
    stall_s: float = 0.0  # seconds every answer waits before it is sent

    def take(self, name: str) -> bool:
        left = getattr(self, name)
        if left == 0:
            return False
        if left > 0:
            setattr(self, name, left - 1)
        return True


@dataclass
class Request:
    endpoint: str
    method: str
    params: dict[str, str]
    at: float
    status: int = 200


@dataclass
class ReplayState:
    records: list[ReplayRecord]
    faults: Faults = field(default_factory=Faults)
    enforce_rate: bool = True
    requests: list[Request] = field(default_factory=list)
    histories: dict[str, list[int]] = field(default_factory=dict)
    _recent: dict[str, deque[float]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def over_rate(self, key: str, limit: int, now: float) -> bool:
        recent = self._recent.setdefault(key, deque())
        while recent and now - recent[0] >= 1.0:
            recent.popleft()
        recent.append(now)
        return len(recent) > limit

    def search(self, term: str) -> list[int]:
        terms = query_terms(term)
        if not terms:
            return []
        return [i for i, r in enumerate(self.records) if all(_matches(t, r.text) for t in terms)]


class ReplayServer:
    """``with ReplayServer(records) as server: server.base_url`` (``.../entrez/eutils/``)."""

    def __init__(self, records: list[ReplayRecord], *, enforce_rate: bool = True) -> None:
        self.state = ReplayState(records, enforce_rate=enforce_rate)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.state))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def faults(self) -> Faults:
        return self.state.faults

    @property
    def requests(self) -> list[Request]:
        return self.state.requests

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/entrez/eutils/"

    def start(self) -> ReplayServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _handler(state: ReplayState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            query = urllib.parse.urlparse(self.path).query
            self._answer(dict(urllib.parse.parse_qsl(query)))

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length", 0))
            body = self.rfile.read(length).decode("utf-8", "replace")
            self._answer(dict(urllib.parse.parse_qsl(body)))

        def log_message(self, *args: object) -> None:
            pass

        def _answer(self, params: dict[str, str]) -> None:
            endpoint = urllib.parse.urlparse(self.path).path.rsplit("/", 1)[-1]
            now = time.monotonic()
            request = Request(endpoint, self.command, params, now)
            with state.lock:
                state.requests.append(request)
                status, body, ctype, cut = _route(state, endpoint, params, now)
                stall = state.faults.stall_s
            request.status = status
            if stall:
                time.sleep(stall)
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            if status != 200 and state.faults.retry_after:
                self.send_header("Retry-After", state.faults.retry_after)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            try:
                self.wfile.write(body[: len(body) // 3] if cut else body)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout)
                pass

    return Handler


def _route(state: ReplayState, endpoint: str, params: dict[str, str],
           now: float) -> tuple[int, bytes, str, bool]:
    """(status, body, content type, cut short) for one request, under the state's lock."""
    faults = state.faults
    key = params.get("api_key") or "127.0.0.1"
    limit = 10 if params.get("api_key") else 3
    if state.enforce_rate and state.over_rate(key, limit, now):
        return 429, _rate_error(key, limit), "application/json", False
    if faults.status and faults.take("status_next"):
        if faults.status == 429:
            return 429, _rate_error(key, limit), "application/json", False
        return faults.status, BAD_GATEWAY, "text/html", False
    if endpoint == "esearch.fcgi":
        return _esearch(state, params)
    if endpoint == "efetch.fcgi":
        return _efetch(state, params)
    return 404, b"<html><body>404 Not Found</body></html>", "text/html", False


def _rate_error(key: str, limit: int) -> bytes:
    return json.dumps({"error": "API rate limit exceeded", "api-key": key,
                       "count": str(limit + 1), "limit": str(limit)}).encode()


def _esearch(state: ReplayState, params: dict[str, str]) -> tuple[int, bytes, str, bool]:
    term = params.get("term", "")
    as_json = params.get("retmode") == "json"
    if state.faults.esearch_error:
        result: dict[str, Any] = {"ERROR": state.faults.esearch_error}
        return 200, json.dumps({"header": {"type": "esearch", "version": "0.3"},
                                "esearchresult": result}).encode(), "application/json", False
    hits = state.search(term)
    retstart, retmax = int(params.get("retstart", 0)), int(params.get("retmax", 20))
    webenv = f"MCID_{len(state.histories) + 1:08d}"
    state.histories[webenv] = hits
    ids = [state.records[i].pmid for i in hits[retstart: retstart + retmax]]
    if as_json:
        result = {"count": str(len(hits)), "retmax": str(len(ids)), "retstart": str(retstart),
                  "querykey": "1", "webenv": webenv, "idlist": ids, "translationset": [],
                  "querytranslation": term}
        if not hits:
            result["errorlist"] = {"phrasesnotfound": [term], "fieldsnotfound": []}
            result["warninglist"] = {"phrasesignored": [], "quotedphrasesnotfound": [],
                                     "outputmessages": ["No items found."]}
        body = json.dumps({"header": {"type": "esearch", "version": "0.3"},
                           "esearchresult": result}).encode()
        return 200, body, "application/json; charset=UTF-8", False
    id_xml = "".join(f"<Id>{p}</Id>" for p in ids)
    xml = ('<?xml version="1.0" encoding="UTF-8" ?>\n<!DOCTYPE eSearchResult PUBLIC "-//NLM//DTD '
           'esearch 20060628//EN" "https://eutils.ncbi.nlm.nih.gov/eutils/dtd/20060628/esearch.dtd">'
           f"\n<eSearchResult><Count>{len(hits)}</Count><RetMax>{len(ids)}</RetMax><RetStart>"
           f"{retstart}</RetStart><QueryKey>1</QueryKey><WebEnv>{webenv}</WebEnv><IdList>"
           f"{id_xml}</IdList><TranslationSet/><QueryTranslation>{_escape(term)}"
           "</QueryTranslation></eSearchResult>\n")
    return 200, xml.encode(), "text/xml; charset=UTF-8", False


def _efetch(state: ReplayState, params: dict[str, str]) -> tuple[int, bytes, str, bool]:
    webenv, key = params.get("WebEnv", ""), params.get("query_key", "")
    hits = state.histories.get(webenv)
    if state.faults.take("efetch_error") or (webenv and (hits is None or key != "1")):
        message = f"Cannot retrieve history data. query_key: {key}, WebEnv: {webenv}"
        return 200, EFETCH_ERROR.format(message=_escape(message)).encode(), "text/xml", False
    if hits is None:  # by id
        wanted = set(params.get("id", "").split(","))
        hits = [i for i, r in enumerate(state.records) if r.pmid in wanted]
    retstart, retmax = int(params.get("retstart", 0)), int(params.get("retmax", 20))
    body = EFETCH_HEAD + b"".join(
        state.records[i].xml + b"\n" for i in hits[retstart: retstart + retmax]
    ) + b"</PubmedArticleSet>\n"
    if state.faults.take("truncate_clean"):
        return 200, body[: len(body) // 3], "text/xml; charset=UTF-8", False
    return 200, body, "text/xml; charset=UTF-8", state.faults.take("truncate_efetch")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def closed_port_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens (the port was bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/entrez/eutils/"
