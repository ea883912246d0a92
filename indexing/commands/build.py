"""``python -m app index build``: (re)build the whole index; an interrupted build resumes."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from indexing.commands.common import add_arguments as _common_arguments
from indexing.commands.common import run_indexing

if TYPE_CHECKING:
    from settings.config import Config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _common_arguments(parser)
    parser.add_argument(
        "--if-needed",
        action="store_true",
        help="reuse an up-to-date index; update a stale one; build only when missing",
    )
    parser.add_argument(
        "--fetch-if-empty",
        action="store_true",
        help="when no corpus file is found, download corpus.fetch.query from PubMed first "
        "(what `make run` does; without it a missing corpus is an error)",
    )
    parser.add_argument(
        "--dense-later",
        action="store_true",
        help="when there is no index, publish the BM25 index only (well under a minute) and "
        "leave the dense index to the chat, which embeds it in the background (what `make run` "
        "does); an existing index is reused or updated as with --if-needed",
    )


def run(cfg: Config, args: argparse.Namespace) -> int:
    return run_indexing(cfg, args, reuse=False)
