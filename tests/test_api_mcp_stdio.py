"""``python -m app mcp`` over stdio, started by the official ``mcp`` SDK's client as Claude Desktop
or an agent would start it: the four tools listed, ``ask`` and ``get_article`` called, on the
small test index with the default model. Each test names the mutation it was checked against."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.browser.harness import REPO_ROOT, write_test_config

pytestmark = [pytest.mark.slow]

QUESTION = "Does methylphenidate help children with ADHD?"


def test_mcp_over_stdio_lists_four_tools_and_answers_with_pubmed_sources(
        small_index_cfg: Any, small_retriever: Any, tmp_path: Path) -> None:
    """Mutation: ``export_citations`` registered under another name -> the tool list differs."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from settings.offline import OFFLINE_ENV

    cfg_file = write_test_config(small_index_cfg, tmp_path / "cfg.yaml")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "app", "--config", str(cfg_file), "mcp"],
        cwd=str(REPO_ROOT), env={**os.environ, **OFFLINE_ENV})

    async def session() -> None:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as mcp:
                await mcp.initialize()
                names = sorted(t.name for t in (await mcp.list_tools()).tools)
                assert names == ["ask", "export_citations", "get_article", "search_literature"]
                answer = await mcp.call_tool("ask", {"question": QUESTION})
                assert not answer.isError, answer.content
                data = answer.structuredContent or {}
                assert "[1]" in data["answer"] and data["sources"]
                for source in data["sources"]:
                    url = source["links"]["pubmed"]
                    assert url == f"https://pubmed.ncbi.nlm.nih.gov/{source['pmid']}/"
                    assert small_retriever.article_chunks(source["pmid"])
                pmid = data["sources"][0]["pmid"]
                article = await mcp.call_tool("get_article", {"pmid": pmid})
                record = article.structuredContent or {}
                assert record["pmid"] == pmid and record["abstract"]
                refs = await mcp.call_tool("export_citations", {"pmids": [pmid],
                                                                "format": "vancouver"})
                assert f"PMID: {pmid}" in (refs.structuredContent or {})["text"]

    asyncio.run(asyncio.wait_for(session(), 900))
