"""Fast checks of the API's parts without a server or model: keys (hashed, revoked), who must send
one, the local-only checks, the rate limit, OpenAI messages to history, request filters, the
answer record, the ``api:`` config section. The real server is in tests/test_api_real.py.
Each test names the mutation it was checked against."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from starlette.datastructures import Headers

from app.api.access import Access, RateLimiter, needs_keys
from app.api.keys import KeyRing, add_key, keys_path, revoke_key
from app.api.openai_compat import ChatMessage, mode_of, to_turns
from app.cli import main
from chains.record import answer_record
from chains.result import AnswerResult, Source
from retrievers.filters import Filters
from retrievers.request_filters import merge, scoped, with_request_filters
from settings.config import ConfigError, load_config


def test_a_key_is_printed_once_and_only_its_hash_is_kept(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    """Mutation: the key itself stored instead of its hash -> the key is found in the file."""
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(Path("cfg.yaml").read_text().replace(
        "folder: data/history", f"folder: {tmp_path}/history"))
    assert main(["--config", str(cfg_file), "keys", "add", "laptop", "--user", "alice"]) == 0
    key = capsys.readouterr().out.strip()
    assert key.startswith("pma_") and len(key) > 40
    stored = (tmp_path / "history" / "api_keys.json").read_text()
    assert key not in stored and "alice" in stored
    assert oct((tmp_path / "history" / "api_keys.json").stat().st_mode)[-3:] == "600"
    assert main(["--config", str(cfg_file), "keys", "list"]) == 0
    listed = capsys.readouterr().out
    assert "laptop" in listed and "active" in listed and key not in listed
    assert main(["--config", str(cfg_file), "keys", "revoke", "laptop"]) == 0
    assert main(["--config", str(cfg_file), "keys", "list"]) == 0
    assert "revoked" in capsys.readouterr().out


def test_the_key_ring_knows_revoked_keys_and_rereads_the_file(tmp_path: Path) -> None:
    """Mutations: ``match`` ignoring ``revoked`` -> fails; the file read once only (no stamp
    check) -> the key added afterwards is unknown."""
    path = tmp_path / "keys.json"
    ring = KeyRing(path)
    assert ring.match("pma_nothing") is None
    key = add_key(path, "a", "alice")
    found = ring.match(key)
    assert found is not None and found.user == "alice" and not found.revoked
    time.sleep(0.01)
    revoke_key(path, "a")
    assert ring.match(key).revoked  # type: ignore[union-attr]
    assert ring.match(key + "x") is None


def test_keys_are_needed_on_a_shared_server_only(tmp_path: Path) -> None:
    """Mutation: ``needs_keys`` ignoring the host -> 0.0.0.0 with auth none needs none."""
    cfg = load_config()
    assert not needs_keys(cfg, "127.0.0.1")
    assert needs_keys(cfg, "0.0.0.0")
    shared = load_config(overrides={"ui": {"auth": "password"}})
    assert needs_keys(shared, "127.0.0.1")
    always = load_config(overrides={"api": {"require_keys": "always"}})
    assert needs_keys(always, "localhost")
    assert keys_path(cfg).name == "api_keys.json"


def test_without_keys_only_local_requests_from_no_other_page_pass(tmp_path: Path) -> None:
    """DNS rebinding and other pages. Mutations: the Host check removed -> the rebound name
    passes; the Origin check removed -> the other page passes."""
    from fastapi import HTTPException

    access = Access(load_config(overrides={"api": {"cors_origins": ["https://nb.example.org"]},
                                           "history": {"folder": str(tmp_path)}}), "127.0.0.1")
    ok = access.identify(Headers({"host": "127.0.0.1:8000"}), "127.0.0.1")
    assert ok.user == "local" and ok.key is None
    access.identify(Headers({"host": "localhost:8000", "origin": "http://localhost:8000"}), "a")
    access.identify(Headers({"host": "localhost:8000", "origin": "https://nb.example.org"}), "a")
    with pytest.raises(HTTPException) as rebound:
        access.identify(Headers({"host": "evil.example:8000"}), "127.0.0.1")
    assert rebound.value.status_code == 403 and "loopback" in str(rebound.value.detail)
    with pytest.raises(HTTPException) as page:
        access.identify(Headers({"host": "127.0.0.1:8000", "origin": "https://evil.example"}),
                        "127.0.0.1")
    assert page.value.status_code == 403 and "evil.example" in str(page.value.detail)


def test_the_rate_limit_allows_a_burst_then_says_when(tmp_path: Path) -> None:
    """Mutation: ``take`` always 0 -> never limited."""
    limiter = RateLimiter(per_minute=6, burst=2)
    assert limiter.take("k") == 0 and limiter.take("k") == 0
    wait = limiter.take("k")
    assert 0 < wait <= 10
    assert limiter.take("other") == 0  # per key


def test_openai_messages_become_the_question_and_paired_history() -> None:
    """Mutation: the assistant's appended source list kept in the history -> fails."""
    question, history = to_turns([
        ChatMessage(role="system", content="be brief"),
        ChatMessage(role="user", content="Is IQ heritable?"),
        ChatMessage(role="assistant", content="Yes [1].\n\nSources:\n[1] Twins https://x"),
        ChatMessage(role="user", content=[{"type": "text", "text": "In adults?"}]),  # type: ignore[list-item]
    ])
    assert question == "In adults?"
    assert history == [("Is IQ heritable?", "Yes [1].")]
    assert mode_of("pubmed-multi-query") == "multi-query" and mode_of("gpt-4o") is None


def test_request_filters_narrow_what_the_question_says_and_only_in_their_scope() -> None:
    """Mutations: ``merge`` taking the wider year range -> fails; the context variable not reset
    after the block -> the last assertion fails."""
    parsed = Filters(year_min=2015, designs=["rct"])
    given = Filters(year_min=2018, year_max=2020, exclude_designs=["case_report"])
    both = merge(parsed, given)
    assert (both.year_min, both.year_max) == (2018, 2020)
    assert both.designs == ["rct"] and both.exclude_designs == ["case_report"]
    with scoped(given):
        assert with_request_filters(Filters()).year_max == 2020
    assert with_request_filters(Filters()).is_empty()


def test_the_answer_record_carries_design_links_retraction_and_references() -> None:
    """One record for chat, CLI and API. Mutation: ``source_record`` without links -> fails."""
    source = Source(n=1, pmid="123", title="T", url="https://pubmed.ncbi.nlm.nih.gov/123/",
                    authors=["Ann Smith"], author_last_names=["Smith"], year=2020,
                    journal="J", design="rct", design_rule="publication type: RCT",
                    doi="10.1/x", pmc="PMC42", retracted=True)
    data = json.loads(answer_record(AnswerResult(answer="A [1].", mode="plain", question="q",
                                                 searched_question="q", sources=[source]))
                      .model_dump_json())
    got = data["sources"][0]
    assert got["links"] == {"pubmed": "https://pubmed.ncbi.nlm.nih.gov/123/",
                            "doi": "https://doi.org/10.1/x",
                            "pmc": "https://pmc.ncbi.nlm.nih.gov/articles/PMC42/"}
    assert got["design"] == "rct" and got["retracted"] is True and got["pmc"] == "PMC42"
    assert data["references"][0].startswith("1. Smith A. T.")


def test_an_api_typo_in_cfg_yaml_names_the_key() -> None:
    """Mutation: ApiConfig without ``extra="forbid"`` (a plain BaseModel) -> no error."""
    with pytest.raises(ConfigError, match=r"api\.max_queu"):
        load_config(overrides={"api": {"max_queu": 3}})
    with pytest.raises(ConfigError, match=r"api\.cors_origins"):
        load_config(overrides={"api": {"cors_origins": ["example.org"]}})


def test_cors_headers_only_for_listed_origins_on_the_api_paths() -> None:
    """CORS is off unless configured. Mutation: ``ApiCors._allowed`` answering True -> the
    unlisted page gets an Access-Control-Allow-Origin header."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from app.api.service import ApiCors

    async def hello(_: object) -> PlainTextResponse:
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/api/v1/health", hello), Route("/other", hello)])
    client = TestClient(ApiCors(app, origins=["https://nb.example.org"]))
    listed = {"origin": "https://nb.example.org"}
    pre = client.options("/api/v1/health", headers={**listed,
                                                    "access-control-request-method": "POST"})
    assert pre.status_code == 204
    assert pre.headers["access-control-allow-origin"] == "https://nb.example.org"
    assert "Authorization" in pre.headers["access-control-allow-headers"]
    got = client.get("/api/v1/health", headers=listed)
    assert got.headers["access-control-allow-origin"] == "https://nb.example.org"
    other = client.get("/api/v1/health", headers={"origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers
    assert "access-control-allow-origin" not in client.get("/other", headers=listed).headers


def test_a_question_whose_assistant_cannot_load_gives_its_queue_place_back() -> None:
    """A 503 while the model loads must not leave the question's place taken: after a burst of
    them the queue would stay full (429) for good. Mutation: ``Engine.admitted`` not releasing
    the ticket when the assistant cannot be had -> the queue keeps one place per refusal."""
    import asyncio

    from fastapi import HTTPException

    from app.api.engine import Engine
    from app.relay import Backend

    def never_loads() -> object:
        raise RuntimeError("no model file")

    cfg = load_config()
    engine = Engine(cfg, Backend(never_loads), model_label="test")  # type: ignore[arg-type]

    async def ask_twice() -> None:
        for _ in range(2):
            with pytest.raises(HTTPException) as err:
                await engine.admitted()
            assert err.value.status_code == 503
        assert engine.queue_length() == 0

    asyncio.run(ask_twice())


def test_ready_reports_hybrid_once_a_dense_build_is_published(monkeypatch, tmp_path: Path) -> None:
    """Seen on a fresh `make run`: the dense index was published, the next search was hybrid,
    but /api/v1/ready still said "keyword-only" until some question had loaded the new build.
    Mutation: ``index_state`` reading only the loaded build -> "keyword-only" here."""
    from types import SimpleNamespace

    import indexing.store as store
    from app.api.engine import Engine

    published = {"dense": False}
    build = tmp_path / "build"
    monkeypatch.setattr(store, "location", lambda cfg: SimpleNamespace(current=lambda: build))
    monkeypatch.setattr(store, "read_manifest",
                        lambda folder: SimpleNamespace(dense_ready=published["dense"]))
    keyword_only = SimpleNamespace(retriever=SimpleNamespace(hybrid=False))
    backend = SimpleNamespace(loaded=True, load_error=None, _assistant=keyword_only)
    engine = Engine(load_config(), backend, model_label="test")  # type: ignore[arg-type]
    assert engine.index_state() == "keyword-only"
    published["dense"] = True
    assert engine.index_state() == "hybrid"
