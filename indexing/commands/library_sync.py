"""``python -m app library sync`` (see :mod:`indexing.commands.library`)."""

from indexing.commands.library import add_arguments_sync as add_arguments
from indexing.commands.library import run_sync as run

__all__ = ["add_arguments", "run"]
