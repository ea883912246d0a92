"""E-utilities download through Bio.Entrez against a local HTTP server that replays the efetch
fixtures: history batches, date splitting, retries (500, 429 with Retry-After, dropped
connection, stalled answer), resume, expired history, API key kept out of URLs."""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from Bio import Entrez

from app.cli import main
from app.config import config_from_dict
from ingest import eutils
from ingest.corpus import load_corpus
from ingest.errors import FetchError
from ingest.eutils import NCBI_EUTILS, EUtilsClient, HTTPStatusError
from ingest.fetch import STATE_FILE, fetch_corpus, parse_date_bound
from ingest.models import Article
from ingest.pubmed_xml import iter_pubmed_xml

EFETCH = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "fixtures" / "efetch"


@dataclass
class FakeEutils:
    """Answers esearch.fcgi (JSON, usehistory) and efetch.fcgi (XML) from fixture records."""

    records: list[tuple[str, date, bytes]]  # pmid, publication date, <PubmedArticle> bytes
    requests: list[tuple[str, dict]] = field(default_factory=list)
    wire: list[tuple[str, str]] = field(default_factory=list)  # (method, raw path with query)
    fail_statuses: list[int] = field(default_factory=list)  # next efetch answers, e.g. [500]
    retry_after: str | None = None  # Retry-After header sent with those failures
    stall_next: int = 0  # efetch answers delayed by stall_s before anything is sent
    stall_s: float = 0.0
    drop_next: int = 0  # efetch answers cut off mid-body
    ok_limit: int | None = None  # after this many good efetch answers, always 500
    expire_next: int = 0  # efetch answers saying the history entry is gone
    histories: dict[str, list[int]] = field(default_factory=dict)
    served: int = 0

    def handle(self, path: str, params: dict) -> tuple[int, bytes, bool]:
        self.requests.append((path, params))
        if path.endswith("esearch.fcgi"):
            return 200, self._esearch(params), False
        if path.endswith("efetch.fcgi"):
            return self._efetch(params)
        return 404, b"no such tool", False

    def _esearch(self, params: dict) -> bytes:
        lo = params.get("mindate")
        hi = params.get("maxdate")
        hits = [
            i
            for i, (_, day, _) in enumerate(self.records)
            if not lo or parse_date_bound(lo, end=False) <= day <= parse_date_bound(hi, end=True)
        ]
        webenv = f"ENV{len(self.histories) + 1}"
        self.histories[webenv] = hits
        result = {"count": str(len(hits)), "webenv": webenv, "querykey": "1", "idlist": []}
        return json.dumps({"esearchresult": result}).encode()

    def _efetch(self, params: dict) -> tuple[int, bytes, bool]:
        if self.fail_statuses:
            return self.fail_statuses.pop(0), b"<html>Server Error</html>", False
        if self.ok_limit is not None and self.served >= self.ok_limit:
            return 500, b"down", False
        if self.expire_next:
            self.expire_next -= 1
            return (
                200,
                b"<eFetchResult><ERROR>Unable to obtain query #1</ERROR></eFetchResult>",
                False,
            )
        hits = self.histories[params["WebEnv"]]
        start, size = int(params["retstart"]), int(params["retmax"])
        body = b"".join(self.records[i][2] for i in hits[start : start + size])
        xml = b'<?xml version="1.0"?>\n<PubmedArticleSet>\n' + body + b"\n</PubmedArticleSet>\n"
        if self.drop_next:
            self.drop_next -= 1
            return 200, xml, True
        self.served += 1
        return 200, xml, False

    def efetch_starts(self) -> list[tuple[str, str]]:
        return [(p["WebEnv"], p["retstart"]) for path, p in self.requests if "efetch" in path]


def _fixture_records() -> list[tuple[str, date, bytes]]:
    if not EFETCH.exists():
        pytest.skip(f"shared data not found at {EFETCH} (it lives beside the repo, never in it)")
    records = []
    for path in sorted(EFETCH.glob("*.xml")):
        for chunk in re.findall(
            rb"<PubmedArticle>.*?</PubmedArticle>", path.read_bytes(), re.DOTALL
        ):
            (article,) = iter_pubmed_xml_bytes(
                b"<PubmedArticleSet>" + chunk + b"</PubmedArticleSet>"
            )
            day = date(article.year, article.month or 1, article.day or 1)
            records.append((article.pmid, day, chunk))
    return records


def iter_pubmed_xml_bytes(data: bytes) -> list[Article]:
    import io

    return [r for r in iter_pubmed_xml(io.BytesIO(data)) if isinstance(r, Article)]


@pytest.fixture
def server():
    fake = FakeEutils(_fixture_records())

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, params: dict) -> None:
            fake.wire.append((self.command, self.path))
            path = urllib.parse.urlparse(self.path).path
            if fake.stall_next and path.endswith("efetch.fcgi"):
                fake.stall_next -= 1
                time.sleep(fake.stall_s)
            status, body, drop = fake.handle(path, params)
            self.send_response(status)
            if status != 200 and fake.retry_after:
                self.send_header("Retry-After", fake.retry_after)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 3] if drop else body)

        def do_GET(self):
            query = urllib.parse.urlparse(self.path).query
            self._answer(dict(urllib.parse.parse_qsl(query)))

        def do_POST(self):
            length = int(self.headers.get("Content-Length", 0))
            self._answer(dict(urllib.parse.parse_qsl(self.rfile.read(length).decode())))

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    fake.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/entrez/eutils/"  # type: ignore[attr-defined]
    yield fake
    httpd.shutdown()
    httpd.server_close()


def make_cfg(tmp_path: Path, server, **fetch):
    settings = {
        "query": "test[Title]",
        "mindate": "1970",
        "maxdate": "2020",
        "batch_size": 2,
        "out_dir": "data",
        "base_url": server.base_url,
        "max_retries": 2,
        **fetch,
    }
    return config_from_dict(
        {"corpus": {"paths": ["data/"], "min_abstract_chars": 0, "fetch": settings}}, root=tmp_path
    )


def client_for(cfg, sleeps: list[float] | None = None, timeout_s: float = 10) -> EUtilsClient:
    fetch = cfg.corpus.fetch
    sink = sleeps if sleeps is not None else []
    return EUtilsClient.from_env(
        fetch.base_url, fetch.max_retries, sleep=sink.append, timeout_s=timeout_s
    )


def loaded_pmids(cfg) -> list[str]:
    return [a.pmid for a in load_corpus(cfg).articles]


def test_fetch_splits_dates_retries_and_writes_every_batch(tmp_path, server):
    server.fail_statuses = [500]
    server.drop_next = 1
    cfg = make_cfg(tmp_path, server)
    report = fetch_corpus(cfg, client=client_for(cfg), cap=3, progress=False)
    all_pmids = sorted(p for p, _, _ in server.records)
    assert report.total == 8 and report.downloaded == report.batches and report.articles == 8
    assert len(server.efetch_starts()) == report.batches + 2  # the 500 and the dropped answer
    assert len({webenv for webenv, _ in server.efetch_starts()}) > 1  # the range was split
    assert sorted(loaded_pmids(cfg)) == all_pmids  # no duplicates, nothing missing
    names = sorted(p.name for p in (tmp_path / "data").glob("batch_*.xml.gz"))
    assert names == sorted(p.name for p in report.files) and not list(tmp_path.rglob("*.part"))
    state = json.loads((tmp_path / "data" / STATE_FILE).read_text())
    assert state["query"] == "test[Title]" and sum(w["count"] for w in state["windows"]) == 8


def test_interrupted_fetch_resumes_without_refetching_or_duplicates(tmp_path, server):
    cfg = make_cfg(tmp_path, server)
    server.ok_limit = 2
    with pytest.raises(FetchError, match="failed 3 times"):
        fetch_corpus(cfg, client=client_for(cfg), progress=False)
    assert len(list((tmp_path / "data").glob("batch_*.xml.gz"))) == 2
    first_run = set(server.efetch_starts())
    server.ok_limit = None
    server.requests.clear()
    report = fetch_corpus(cfg, client=client_for(cfg), progress=False)
    assert report.skipped == 2 and report.downloaded == 2
    assert not [r for r in server.requests if "esearch" in r[0]]  # the saved history was reused
    assert not (set(server.efetch_starts()) & {s for s in first_run if s[1] in ("0", "2")})
    assert sorted(loaded_pmids(cfg)) == sorted(p for p, _, _ in server.records)
    again = fetch_corpus(cfg, client=client_for(cfg), progress=False)
    assert again.downloaded == 0 and again.skipped == 4


def test_expired_history_is_searched_again(tmp_path, server):
    server.expire_next = 1
    cfg = make_cfg(tmp_path, server)
    report = fetch_corpus(cfg, client=client_for(cfg), progress=False)
    assert report.history_refreshed == 1 and report.articles == 8
    state = json.loads((tmp_path / "data" / STATE_FILE).read_text())
    assert state["windows"][0]["webenv"] == "ENV2"


def test_a_different_query_is_not_mixed_into_an_existing_fetch(tmp_path, server):
    cfg = make_cfg(tmp_path, server, max_records=2)
    fetch_corpus(cfg, client=client_for(cfg), progress=False)
    other = make_cfg(tmp_path, server, query="something else", max_records=2)
    with pytest.raises(FetchError, match="holds a fetch of 'test\\[Title\\]'"):
        fetch_corpus(other, client=client_for(other), progress=False)


def test_max_records_caps_the_download(tmp_path, server):
    cfg = make_cfg(tmp_path, server, max_records=3)
    report = fetch_corpus(cfg, client=client_for(cfg), progress=False)
    assert report.total == 3 and report.articles == 3 and len(loaded_pmids(cfg)) == 3


def test_api_key_and_email_come_from_the_environment(tmp_path, server, monkeypatch):
    monkeypatch.setenv("NCBI_API_KEY", "key-from-env")
    monkeypatch.setenv("NCBI_EMAIL", "me@example.org")
    cfg = make_cfg(tmp_path, server, max_records=2)
    sleeps: list[float] = []
    fetch_corpus(cfg, client=client_for(cfg, sleeps), progress=False)
    assert all(p.get("api_key") == "key-from-env" for _, p in server.requests)
    assert all(p.get("email") == "me@example.org" for _, p in server.requests)
    assert all(s <= 0.11 for s in sleeps)  # the 10-requests-a-second limit applies with a key
    # Bio.Entrez sends GETs with the key in the URL; every request here went out as a POST.
    assert server.wire and all(m == "POST" and "?" not in path for m, path in server.wire)


def test_requests_are_made_by_bio_entrez_with_its_settings_restored(tmp_path, server, monkeypatch):
    made: list[str] = []
    for endpoint in ("esearch.fcgi", "efetch.fcgi"):
        real = eutils._ENTREZ_CALLS[endpoint]
        monkeypatch.setitem(
            eutils._ENTREZ_CALLS,
            endpoint,
            lambda real=real, **kw: made.append(real.__name__) or real(**kw),
        )
    urlopen, tries = Entrez.urlopen, Entrez.max_tries
    cfg = make_cfg(tmp_path, server, max_records=4)
    report = fetch_corpus(cfg, client=client_for(cfg), progress=False)
    assert report.articles == 4 and made[0] == "esearch" and made.count("efetch") == 2
    assert all(p["tool"] == "pubmed-assistant" for _, p in server.requests)
    assert (Entrez.urlopen, Entrez.max_tries) == (urlopen, tries)  # Biopython left as found


def test_a_429_waits_as_long_as_retry_after_says(tmp_path, server):
    server.fail_statuses = [429]
    server.retry_after = "3"
    cfg = make_cfg(tmp_path, server, max_records=2)
    sleeps: list[float] = []
    report = fetch_corpus(cfg, client=client_for(cfg, sleeps), progress=False)
    assert report.articles == 2 and 3.0 in sleeps
    assert len(server.efetch_starts()) == 2  # the 429, then the same batch again


def test_a_stalled_answer_times_out_and_is_retried(tmp_path, server):
    server.stall_next, server.stall_s = 1, 3.0
    cfg = make_cfg(tmp_path, server, max_records=2)
    report = fetch_corpus(cfg, client=client_for(cfg, timeout_s=0.5), progress=False)
    # the stalled answer was given up (waited out, it would have been the only efetch) and the
    # same batch asked again
    assert report.articles == 2 and sum("efetch" in path for _, path in server.wire) == 2


def test_ingest_command_fetches_then_reports(tmp_path, server, capsys):
    cfg_path = tmp_path / "cfg.yaml"
    settings = {"query": "q", "mindate": "2017", "maxdate": "2018", "base_url": server.base_url}
    cfg_path.write_text(
        json.dumps(
            {
                "corpus": {
                    "paths": ["data/"],
                    "min_abstract_chars": 0,
                    "fetch": {**settings, "out_dir": "data"},
                }
            }
        )
    )
    assert main(["--config", str(cfg_path), "ingest", "--fetch", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["fetch"]["total"] == 4 and payload["corpus"]["articles"] == 4


# --- the client on its own (no server) -------------------------------------------------------


class Clock:
    def __init__(self):
        self.now = 100.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def scripted(*answers):
    calls = []

    def transport(url, data, timeout):
        calls.append((url, dict(data)))
        answer = answers[len(calls) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer

    return transport, calls


def test_rate_limit_spaces_requests_without_a_key():
    clock = Clock()
    transport, calls = scripted(b"a", b"b", b"c")
    client = EUtilsClient(transport=transport, sleep=clock.sleep, clock=lambda: clock.now)
    for _ in range(3):
        client.request("einfo.fcgi", {})
    assert clock.sleeps == [pytest.approx(0.34), pytest.approx(0.34)]
    assert all(c[1]["tool"] == "pubmed-assistant" for c in calls)


def test_retries_back_off_then_give_a_clear_error():
    clock = Clock()
    errors = [
        HTTPStatusError(503),
        OSError("connection reset"),
        HTTPStatusError(429, retry_after=7),
    ]
    transport, calls = scripted(*errors)
    client = EUtilsClient(
        transport=transport, sleep=clock.sleep, clock=lambda: clock.now, max_retries=2
    )
    with pytest.raises(FetchError, match=r"failed 3 times.*HTTP 429"):
        client.request("efetch.fcgi", {})
    assert len(calls) == 3 and 1.0 in clock.sleeps and 2.0 in clock.sleeps


def test_client_error_is_not_retried_and_the_key_is_redacted():
    transport, calls = scripted(
        HTTPStatusError(400, b'{"error":"API key invalid","api-key":"s3cret"}')
    )
    client = EUtilsClient(api_key="s3cret", transport=transport, sleep=lambda s: None)
    with pytest.raises(FetchError) as err:
        client.request("esearch.fcgi", {})
    assert len(calls) == 1 and "s3cret" not in str(err.value) and "HTTP 400" in str(err.value)


def test_an_unknown_biopython_url_layout_is_a_clear_error():
    ok = eutils._as_post(
        urllib.request.Request(NCBI_EUTILS + "efetch.fcgi?db=pubmed&api_key=k"), "http://m/e/"
    )
    assert (ok.full_url, ok.get_method(), ok.data) == (
        "http://m/e/efetch.fcgi",
        "POST",
        b"db=pubmed&api_key=k",
    )
    with pytest.raises(FetchError, match="pinned in requirements.txt"):
        eutils._as_post(urllib.request.Request("https://example.org/efetch.fcgi?db=x"), "http://m/")


def test_search_errors_and_bad_dates_are_user_errors():
    transport, _ = scripted(b'{"esearchresult": {"ERROR": "Invalid query"}}')
    with pytest.raises(FetchError, match="rejected the search"):
        EUtilsClient(transport=transport, sleep=lambda s: None).esearch("((")
    with pytest.raises(FetchError, match="YYYY"):
        parse_date_bound("last year", end=False)
    with pytest.raises(FetchError, match="not a real date"):
        parse_date_bound("2021/02/30", end=True)
    assert parse_date_bound("2020/02", end=True) == date(2020, 2, 29)
