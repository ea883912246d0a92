"""``python -m app mcp``: the MCP tools over stdio, for a client that starts the server itself
(Claude Desktop, an agent). The index and model load in this process on the first tool call
(a call waits for them rather than failing). Standard output is the protocol's alone: anything
else that writes to it (a native library's log) goes to standard error instead."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from io import TextIOWrapper

from settings.config import Config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def run(cfg: Config, args: argparse.Namespace) -> int:
    import anyio

    from app.api.context import set_context
    from app.api.mcp_server import build_mcp
    from app.api.service import default_factory, make_context
    from app.relay import Backend

    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(message)s")
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # fd 1 is stderr from here on: only the protocol writes to protocol_out
    sys.stdout = sys.stderr
    set_context(make_context(cfg, Backend(default_factory(cfg)), "127.0.0.1", lambda: None,
                             wait_for_load=True))
    mcp = build_mcp()

    async def serve() -> None:
        from mcp.server.stdio import stdio_server

        out = anyio.wrap_file(TextIOWrapper(protocol_out, encoding="utf-8", write_through=True))
        async with stdio_server(stdout=out) as (read, write):
            server = mcp._mcp_server  # noqa: SLF001 - FastMCP.run_stdio_async, with our stdout
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)
    return 0
