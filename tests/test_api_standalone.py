"""``python -m app api`` alone (no chat), on an index that is not there: every question is
answered 503 with the reason and Retry-After (the same happens for a moment while a server
loads its index and model), /ready says why; and the per-key rate limit gives 429 with
Retry-After (the laptop's own calls, without a key, are not limited). No model is loaded (the
index is missing first). Each test names the mutation it
was checked against."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from tests.browser.harness import REPO_ROOT, Server, running_server, write_test_config

KEY: dict[str, str] = {}

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    from app.config import load_config

    folder = tmp_path_factory.mktemp("api_alone")
    cfg = load_config(overrides={"index": {"dir": str(folder / "no-index"), "name": "none"}})
    path = write_test_config(cfg, folder / "cfg.yaml",
                             {"api": {"rate_burst": 8, "rate_limit_per_minute": 1}})
    done = subprocess.run([sys.executable, "-m", "app", "--config", str(path), "keys", "add",
                           "script", "--user", "carol"], cwd=REPO_ROOT, check=True,
                          capture_output=True, text=True)
    KEY["script"] = done.stdout.strip()
    args = ["-m", "app", "--config", str(path), "api", "--port", "{port}"]
    with running_server(args, folder / "server.log") as srv:
        srv.wait_for_log("assistant not loaded at startup", timeout_s=300)
        yield srv


def test_without_an_index_questions_get_503_with_the_reason(server: Server) -> None:
    """Mutation: the 503 without its reason (a bare "unavailable") -> fails on the message."""
    with httpx.Client(base_url=server.url, timeout=60) as http:
        ready = http.get("/api/v1/ready")
        assert ready.status_code == 503
        body = ready.json()
        assert body["ready"] is False and body["index"] == "missing"
        assert "cannot start" in body["reason"] and "index" in body["reason"].lower()
        ask = http.post("/api/v1/ask", json={"question": "Is intelligence heritable?"})
        assert ask.status_code == 503, ask.text
        assert "cannot start" in ask.json()["detail"] and int(ask.headers["retry-after"]) >= 1
        search = http.post("/api/v1/search", json={"query": "intelligence"})
        assert search.status_code == 503
        assert http.get("/api/v1/health").json() == {"status": "ok"}


def test_past_the_rate_limit_a_key_gets_429_with_retry_after(server: Server) -> None:
    """A key's calls are limited (a laptop's own calls without one are not). Mutation: the
    limiter's bucket never emptied (``take`` returning 0) -> no 429."""
    with httpx.Client(base_url=server.url, timeout=60) as anon:
        assert {anon.get("/v1/models").status_code for _ in range(12)} == {200}
    with httpx.Client(base_url=server.url, timeout=60,
                      headers={"Authorization": f"Bearer {KEY['script']}"}) as http:
        statuses = [http.get("/v1/models").status_code for _ in range(12)]
        assert 429 in statuses, statuses
        limited = http.get("/v1/models")
        assert limited.status_code == 429
        assert int(limited.headers["retry-after"]) >= 1
        assert "rate limit" in limited.json()["error"]["message"]
