"""A shared server (``ui.auth: password``): every API, OpenAI-compatible and MCP call needs a key,
and a key acts as its user only. ``python -m app serve`` on the small test index with the default
model, keys made with ``python -m app keys add`` as a user would. Each test names the mutation it
was checked against."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser.harness import REPO_ROOT, Server, serving_chat

pytestmark = [pytest.mark.slow]

QUESTION = "Does methylphenidate help children with ADHD?"


@pytest.fixture(scope="module")
def shared(small_index_cfg: Any, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[Server, dict[str, str]]]:
    folder = tmp_path_factory.mktemp("api_shared")
    with serving_chat(small_index_cfg, folder, {"ui": {"auth": "password"}}) as srv:
        cfg_file = folder / "cfg.yaml"
        keys = {name: add_key(cfg_file, name, user)
                for name, user in (("alice-nb", "alice"), ("bob-nb", "bob"), ("old", "alice"))}
        subprocess.run([sys.executable, "-m", "app", "--config", str(cfg_file), "keys",
                        "revoke", "old"], cwd=REPO_ROOT, check=True, capture_output=True)
        srv.wait_for_log("language model loaded", timeout_s=600)  # a stall guard
        yield srv, keys


def add_key(cfg_file: Path, name: str, user: str) -> str:
    done = subprocess.run([sys.executable, "-m", "app", "--config", str(cfg_file), "keys", "add",
                           name, "--user", user], cwd=REPO_ROOT, check=True,
                          capture_output=True, text=True)
    return done.stdout.strip()


def client(server: Server, key: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=server.url, headers=headers, timeout=600)


def test_a_shared_server_refuses_every_door_without_a_key(
        shared: tuple[Server, dict[str, str]]) -> None:
    """Mutations: ``needs_keys`` ignoring ``ui.auth`` -> the calls are answered; a revoked key
    accepted (``match.revoked`` not checked) -> 200 instead of 403."""
    server, keys = shared
    with client(server, None) as anon:
        for method, path, body in (("POST", "/api/v1/ask", {"question": QUESTION}),
                                   ("POST", "/api/v1/search", {"query": "ADHD"}),
                                   ("GET", "/api/v1/articles/23782128", None),
                                   ("GET", "/api/v1/conversations", None),
                                   ("GET", "/v1/models", None)):
            resp = anon.request(method, path, json=body)
            assert resp.status_code == 401, (path, resp.text)
            assert "API key is required" in resp.text and resp.headers["www-authenticate"]
        mcp = anon.post("/api/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                        headers={"Accept": "application/json, text/event-stream"})
        assert mcp.status_code == 401
    with client(server, "pma_never-issued") as wrong:
        resp = wrong.get("/api/v1/conversations")
        assert resp.status_code == 401 and resp.json()["detail"] == "unknown API key"
    with client(server, keys["old"]) as revoked:
        resp = revoked.get("/api/v1/conversations")
        assert resp.status_code == 403 and "'old' has been revoked" in resp.json()["detail"]
    with client(server, keys["alice-nb"]) as alice:
        assert alice.get("/api/v1/conversations").status_code == 200


def test_a_key_acts_as_its_user_and_never_reaches_another_users_conversations(
        shared: tuple[Server, dict[str, str]]) -> None:
    """Alice asks in a stored conversation of hers; Bob's key can neither list, read, nor ask
    into it. Mutations: the list query without its user filter -> Bob lists Alice's
    conversation; ``check_owner`` not comparing the author -> Bob reads it (200) and asks
    into it."""
    server, keys = shared
    with client(server, keys["alice-nb"]) as alice, client(server, keys["bob-nb"]) as bob:
        mine = alice.post("/api/v1/conversations", json={"name": "ADHD reading"}).json()["id"]
        first = alice.post("/api/v1/ask", json={"question": QUESTION,
                                                "conversation_id": mine,
                                                "mode": "conversational"})
        assert first.status_code == 200, first.text
        follow = alice.post("/api/v1/ask", json={"question": "What are its side effects?",
                                                 "conversation_id": mine,
                                                 "mode": "conversational"}).json()
        # the stored turn is the follow-up's history
        assert "methylphenidate" in follow["searched_question"].lower()
        turns = alice.get(f"/api/v1/conversations/{mine}").json()["turns"]
        assert [t["question"] for t in turns] == [QUESTION, "What are its side effects?"]
        assert [c["id"] for c in alice.get("/api/v1/conversations").json()] == [mine]

        assert mine not in {c["id"] for c in bob.get("/api/v1/conversations").json()}
        read = bob.get(f"/api/v1/conversations/{mine}")
        assert read.status_code == 404 and read.json()["detail"] == "conversation not found"
        into = bob.post("/api/v1/ask", json={"question": "And in adults?",
                                             "conversation_id": mine})
        assert into.status_code == 404
        theirs = bob.post("/api/v1/conversations", json={}).json()["id"]
        assert alice.get(f"/api/v1/conversations/{theirs}").status_code == 404
        # Bob's attempt added nothing to Alice's conversation
        assert len(alice.get(f"/api/v1/conversations/{mine}").json()["turns"]) == 2
