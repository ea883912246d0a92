"""``python -m app index update``: embed only new or changed PMIDs, keep the rest."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from indexing.commands.common import add_arguments as _common_arguments
from indexing.commands.common import run_indexing

if TYPE_CHECKING:
    from settings.config import Config

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _common_arguments(parser)
    parser.add_argument(
        "--append",
        action="store_true",
        help="retrieval.backend milvus only: add or refresh the corpus' articles and delete no "
        "other (load a corpus too big for memory, such as the PubMed baseline, in shards)",
    )


def run(cfg: Config, args: argparse.Namespace) -> int:
    return run_indexing(cfg, args, reuse=True)
