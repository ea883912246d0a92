"""The assistant as a service, for real: ``python -m app serve`` on the small test index with the
default model (SmolLM2-135M), called with real HTTP clients: the official ``openai`` client, the
official ``mcp`` SDK client (streamable HTTP here, stdio in tests/test_api_mcp_stdio.py), httpx.

One server for the module (local: ``ui.auth: none`` on 127.0.0.1, so no key), its queue limited to
``MAX_QUEUE`` so a burst fills it. Each test names the mutation it was checked against (the code
broken, the test seen failing, the code restored).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser.harness import Server, serving_chat

pytestmark = [pytest.mark.slow]

MAX_QUEUE = 4
QUESTION = "Does methylphenidate help children with ADHD?"
PUBMED = "https://pubmed.ncbi.nlm.nih.gov/"


@pytest.fixture(scope="module")
def server(small_index_cfg: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("api_real")
    with serving_chat(small_index_cfg, folder, {"api": {"max_queue": MAX_QUEUE}}) as srv:
        srv.wait_for_log("language model loaded", timeout_s=600)  # a stall guard
        yield srv


@pytest.fixture(scope="module")
def http(server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=600) as client:
        yield client


def indexed(small_retriever: Any, url: str) -> bool:
    assert url.startswith(PUBMED), url
    return bool(small_retriever.article_chunks(url[len(PUBMED):].strip("/")))


# ---- the OpenAI-compatible door --------------------------------------------------------------
def test_openai_client_gets_a_cited_answer_whose_sources_are_indexed_pubmed_articles(
        server: Server, small_retriever: Any) -> None:
    """Mutation: /v1/models built from the first row of MODE_TABLE only -> fails on the list."""
    import openai

    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused-on-a-laptop")
    models = [m.id for m in client.models.list().data]
    assert models == ["pubmed-plain", "pubmed-conversational", "pubmed-multi-query"]
    reply = client.chat.completions.create(
        model="pubmed-plain", messages=[{"role": "user", "content": QUESTION}])
    content = reply.choices[0].message.content or ""
    citations = (reply.model_extra or {})["citations"]
    assert "[1]" in content, content
    assert citations and all(indexed(small_retriever, url) for url in citations), citations
    assert all(url in content for url in citations)  # the sources listed under the answer


def test_openai_client_streams_a_cited_answer(server: Server, small_retriever: Any) -> None:
    """Mutation: the answer's tokens not forwarded (all text in the final chunk) -> fails on
    the chunk count."""
    import openai

    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", timeout=600)
    stream = client.chat.completions.create(
        model="pubmed-plain", stream=True, messages=[{"role": "user", "content": QUESTION}])
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) >= 2
    assert chunks[-1].choices[0].finish_reason == "stop"
    citations = (chunks[-1].model_extra or {})["citations"]
    assert "[1]" in text and citations, text
    assert all(indexed(small_retriever, url) for url in citations)


def test_a_follow_up_through_chat_completions_keeps_its_topic(server: Server) -> None:
    """The earlier messages are the history: the follow-up is searched with the first question.
    Mutation: ``to_turns`` returns no history -> the searched question lacks "methylphenidate"."""
    import openai

    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", timeout=600)
    first = client.chat.completions.create(
        model="pubmed-conversational", messages=[{"role": "user", "content": QUESTION}])
    answer = first.choices[0].message.content or ""
    follow = client.chat.completions.create(model="pubmed-conversational", messages=[
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": answer},
        {"role": "user", "content": "What are its side effects?"}])
    searched = (follow.model_extra or {})["searched_question"]
    assert "methylphenidate" in searched.lower(), searched
    assert (follow.model_extra or {})["citations"]


# ---- the JSON API ---------------------------------------------------------------------------
def test_api_ask_returns_the_same_sources_and_verdict_as_ask_json(
        server: Server, http: httpx.Client, tmp_path: Path) -> None:
    """One record for CLI and API. Mutations: ``ask --json`` printing ``result.model_dump()``
    instead of the record -> fails (no references, links); the request's filters not set for
    the answer (``_Filtered.astream`` without ``set_for_task``) -> sources outside the years."""
    cfg_file = server.log_path.parent / "cfg.yaml"
    cli = subprocess.run([sys.executable, "-m", "app", "--config", str(cfg_file), "ask", "--json",
                          QUESTION], capture_output=True, text=True, timeout=600, check=True)
    from_cli = json.loads(cli.stdout)
    from_api = http.post("/api/v1/ask", json={"question": QUESTION}).json()
    assert [s["pmid"] for s in from_api["sources"]] == [s["pmid"] for s in from_cli["sources"]]
    assert from_api["verdict"] == from_cli["verdict"]
    assert from_api["answer"] == from_cli["answer"]
    for record in (from_api, from_cli):
        assert record["references"] and record["sources"]
        for source in record["sources"]:
            for key in ("design", "design_rule", "doi", "pmc", "retracted", "stance", "links"):
                assert key in source, key
            assert source["links"]["pubmed"] == f"{PUBMED}{source['pmid']}/"
    # the request's own filters narrow every search of the answer
    filtered = http.post("/api/v1/ask", json={"question": QUESTION,
                                              "filters": {"year_min": 2016}}).json()
    assert filtered["filters"].get("year_min") == 2016
    assert all(s["year"] >= 2016 for s in filtered["sources"]), filtered["sources"]


def test_api_ask_streams_search_findings_sources_tokens_and_the_result(
        http: httpx.Client) -> None:
    """Mutation: findings not sent (the loop over evidence removed) -> fails; the result event
    dropped -> fails."""
    kinds: list[str] = []
    result: dict[str, Any] = {}
    with http.stream("POST", "/api/v1/ask", json={"question": QUESTION, "stream": True}) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        event = ""
        for line in resp.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
                kinds.append(event)
            elif line.startswith("data: ") and event == "result":
                result = json.loads(line[6:])
    assert kinds[0] == "search" and kinds[-1] == "result", kinds
    assert "finding" in kinds and "sources" in kinds and "token" in kinds, kinds
    assert kinds.index("sources") > kinds.index("finding") and kinds.index("token") > \
        kinds.index("sources")
    assert result["sources"] and result["answer"]


def test_search_articles_and_export_need_no_model_and_carry_pubmed_records(
        http: httpx.Client, small_retriever: Any) -> None:
    """Mutation: export ignoring ``format`` (always RIS) -> fails on the BibTeX file."""
    found = http.post("/api/v1/search", json={"query": "methylphenidate ADHD children",
                                              "k": 5}).json()
    assert found["hybrid"] is True and len(found["hits"]) == 5
    top = found["hits"][0]
    assert set(top["ranks"]) == {"bm25", "dense"} and top["fused_score"] is not None
    assert [h["rank"] for h in found["hits"]] == [1, 2, 3, 4, 5]
    pmid = top["pmid"]
    article = http.get(f"/api/v1/articles/{pmid}").json()
    chunks = small_retriever.article_chunks(pmid)
    assert all(" ".join(c.page_content.split())[:80] in " ".join(article["abstract"].split())
               for c in chunks)
    assert article["links"]["pubmed"] == f"{PUBMED}{pmid}/" and "design_rule" in article
    ris = http.get("/api/v1/export", params={"pmids": pmid, "format": "ris"})
    bib = http.get("/api/v1/export", params={"pmids": pmid, "format": "bibtex"})
    van = http.get("/api/v1/export", params={"pmids": pmid, "format": "vancouver"})
    assert ris.text.startswith("TY  - ") and pmid in ris.text
    assert bib.text.lstrip().startswith("@") and pmid in bib.text
    assert van.text.startswith("1. ") and f"PMID: {pmid}" in van.text


def test_ready_says_hybrid_model_loaded_and_the_queue(http: httpx.Client) -> None:
    """Mutation: ``index_state`` always "loading" -> fails."""
    ready = http.get("/api/v1/ready").json()
    assert ready == {**ready, "ready": True, "index": "hybrid", "model_loaded": True,
                     "max_queue": MAX_QUEUE}
    assert http.get("/api/v1/health").json() == {"status": "ok"}
    docs = http.get("/api/docs").text
    assert "/api/docs/assets/swagger-ui-bundle.js" in docs and "cdn" not in docs
    paths = http.get("/api/openapi.json").json()["paths"]
    assert {"/api/v1/ask", "/api/v1/search", "/v1/chat/completions"} <= set(paths)


# ---- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("body", "field", "words"), [
    ({"question": QUESTION, "mode": "fast"}, "mode", "unknown mode 'fast'"),
    ({"question": "   "}, "question", "empty"),
    ({"question": "why " * 600}, "question", "the limit is 2,000"),
    ({"question": QUESTION, "history": [["q", "a"]]}, "history", ""),
    ({"question": QUESTION, "history": [{"q": "x"}]}, "history", ""),
    ({"question": QUESTION, "filters": {"year_from": 2020}}, "filters", "year_from"),
    ({"question": QUESTION, "filters": {"designs": ["anecdote"]}}, "filters",
     "unknown study design"),
])
def test_a_bad_request_is_a_422_naming_the_field(http: httpx.Client, body: dict[str, Any],
                                                 field: str, words: str) -> None:
    """Mutation: ``check_mode`` accepting any mode -> the mode case fails (a 500 from the
    chain's own check instead of a 422 naming the field)."""
    resp = http.post("/api/v1/ask", json=body)
    assert resp.status_code == 422, resp.text
    errors = resp.json()["detail"]
    assert any(e["loc"][1] == field and words in json.dumps(e) for e in errors), errors


def test_unknown_pmid_is_404_and_a_malformed_one_422(http: httpx.Client) -> None:
    """Mutation: ``Engine.article`` returning an empty record for no chunks -> fails."""
    resp = http.get("/api/v1/articles/1")
    assert resp.status_code == 404 and "PMID 1 is not in the index" in resp.json()["detail"]
    resp = http.get("/api/v1/articles/abc")
    assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["path", "pmid"]
    resp = http.get("/api/v1/export", params={"pmids": "1,2", "format": "ris"})
    assert resp.status_code == 404 and "PMID 1, 2" in resp.json()["detail"]
    resp = http.get("/api/v1/export", params={"pmids": "1", "format": "endnote"})
    assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["query", "format"]


def test_openai_errors_have_openai_shape(server: Server) -> None:
    """Mutation: ``mode_of`` defaulting an unknown model to plain -> answered 200."""
    import openai

    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.UnprocessableEntityError, match="unknown model 'gpt-4'"):
        client.chat.completions.create(model="gpt-4",
                                       messages=[{"role": "user", "content": QUESTION}])
    with pytest.raises(openai.UnprocessableEntityError, match="last message must be the user"):
        client.chat.completions.create(model="pubmed-plain",
                                       messages=[{"role": "assistant", "content": "hi"}])


def test_a_full_queue_is_429_with_retry_after(server: Server) -> None:
    """More questions at once than ``api.max_queue``: the extra ones are refused at once, the
    others answered. Mutation: ``Engine.admit`` never refusing -> no 429 (all wait)."""
    statuses: list[tuple[int, dict[str, str], str]] = []

    def one() -> None:
        with httpx.Client(base_url=server.url, timeout=600) as client:
            resp = client.post("/api/v1/ask", json={"question": QUESTION})
            statuses.append((resp.status_code, dict(resp.headers), resp.text))

    threads = [threading.Thread(target=one) for _ in range(MAX_QUEUE + 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=900)
    refused = [s for s in statuses if s[0] == 429]
    assert refused, [s[0] for s in statuses]
    assert all(int(h["retry-after"]) >= 1 and "queue is full" in text for _, h, text in refused)
    assert {s[0] for s in statuses} == {200, 429}
    assert len([s for s in statuses if s[0] == 200]) >= MAX_QUEUE - 1


async def _until_queued(client: httpx.AsyncClient, n: int, timeout: float = 60.0) -> None:
    """Wait until the answer queue holds ``n`` questions (the one being answered included)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while (await client.get("/api/v1/ready")).json()["queue"] < n:
        assert asyncio.get_running_loop().time() < deadline, f"the queue never reached {n}"
        await asyncio.sleep(0.05)


async def _until_admitted(client: httpx.AsyncClient, holders: list[Any],
                          timeout: float = 60.0) -> int:
    """Wait until one request beyond the ``holders`` not yet answered is in the queue (a
    holder's place is given back before its client has the answer, so the count never runs
    ahead); the number of holders then still ahead of it."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        queued = (await client.get("/api/v1/ready")).json()["queue"]
        pending = sum(not h.done() for h in holders)
        if queued > pending:
            return pending
        assert asyncio.get_running_loop().time() < deadline, "the request was never queued"
        await asyncio.sleep(0.02)


def test_a_client_leaving_the_queue_frees_its_place(server: Server) -> None:
    """A streamed question waiting behind others is told how many come first; when its client
    closes the connection its place is freed at once (logged, and the queue shrinks before
    the others are answered). Also for a plain (non-streamed) request. Mutations: the stream's
    answer task not cancelled when the client goes (the ``finally`` in ``_ask_events``) ->
    the log line never comes; the non-streamed request not watching for a disconnect -> its
    log line never comes."""

    async def scenario() -> None:
        async with httpx.AsyncClient(base_url=server.url, timeout=600) as client:
            before = len(server.log())
            holders = [asyncio.ensure_future(client.post("/api/v1/ask",
                                                         json={"question": QUESTION}))
                       for _ in range(MAX_QUEUE - 1)]
            await asyncio.sleep(0.5)
            async with client.stream("POST", "/api/v1/ask",
                                     json={"question": QUESTION, "stream": True}) as resp:
                lines = resp.aiter_lines()
                assert await anext(lines) == "event: queued"
                ahead = json.loads((await anext(lines))[6:])["ahead"]
                assert ahead >= 1
            # the connection is closed here, while the holders are still being answered
            await asyncio.to_thread(server.wait_for_log, "while waiting: its place in the "
                                    "queue is freed", before, 120)
            queued = (await client.get("/api/v1/ready")).json()["queue"]
            assert queued <= MAX_QUEUE - 1
            assert all(r.status_code == 200 for r in await asyncio.gather(*holders))

            # a plain request given up while it waits: fresh holders keep the model busy, the
            # request is seen admitted with every holder still ahead of it (one being answered,
            # two waiting: more than the server's half-second look for a gone client), then
            # its client goes at once. A fixed wait instead raced the holders' answers, which
            # take well under a second each on the small index.
            for _attempt in range(3):
                holders = [asyncio.ensure_future(client.post("/api/v1/ask",
                                                             json={"question": QUESTION}))
                           for _ in range(MAX_QUEUE - 1)]
                await _until_queued(client, 2)  # one answered, at least one waiting
                after = len(server.log())
                plain = asyncio.ensure_future(client.post("/api/v1/ask",
                                                          json={"question": QUESTION}))
                ahead = await _until_admitted(client, holders)
                if ahead >= MAX_QUEUE - 1:
                    plain.cancel()
                    break
                await plain  # the holders ran out first: try again
                await asyncio.gather(*holders)
            else:
                pytest.fail("the plain request never waited behind every holder")
            await asyncio.to_thread(server.wait_for_log, "while waiting: its place in the "
                                    "queue is freed", after, 120)
            assert all(r.status_code == 200 for r in await asyncio.gather(*holders))

    asyncio.run(scenario())


# ---- MCP over streamable HTTP -------------------------------------------------------------------
def test_mcp_client_over_http_lists_the_tools_and_calls_ask_and_get_article(
        server: Server, small_retriever: Any) -> None:
    """Mutation: ``export_citations`` registered under another name -> the tool list differs."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async def session() -> None:
        async with streamablehttp_client(f"{server.url}/api/mcp") as (read, write, _):
            async with ClientSession(read, write) as mcp:
                await mcp.initialize()
                tools = {t.name: t for t in (await mcp.list_tools()).tools}
                assert set(tools) == {"search_literature", "ask", "get_article",
                                      "export_citations"}
                assert "question" in tools["ask"].inputSchema["properties"]
                answer = await mcp.call_tool("ask", {"question": QUESTION})
                assert not answer.isError, answer.content
                data = answer.structuredContent or {}
                assert "[1]" in data["answer"] and data["sources"]
                for source in data["sources"]:
                    assert indexed(small_retriever, source["links"]["pubmed"])
                pmid = data["sources"][0]["pmid"]
                article = await mcp.call_tool("get_article", {"pmid": pmid})
                assert not article.isError
                assert (article.structuredContent or {})["pmid"] == pmid
                missing = await mcp.call_tool("get_article", {"pmid": "1"})
                assert missing.isError and "not in the index" in str(missing.content)

    asyncio.run(session())
