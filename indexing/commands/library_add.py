"""``python -m app library add`` (see :mod:`indexing.commands.library`)."""

from indexing.commands.library import add_arguments_add as add_arguments
from indexing.commands.library import run_add as run

__all__ = ["add_arguments", "run"]
