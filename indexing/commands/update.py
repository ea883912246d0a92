"""``python -m app index update``: embed only new or changed PMIDs, keep the rest."""

from __future__ import annotations

import argparse

from indexing.commands.common import add_arguments, run_indexing

__all__ = ["add_arguments", "run"]


def run(cfg, args: argparse.Namespace) -> int:  # noqa: ANN001
    return run_indexing(cfg, args, reuse=True)
