"""``python -m app library remove`` (see :mod:`indexing.commands.library`)."""

from indexing.commands.library import add_arguments_remove as add_arguments
from indexing.commands.library import run_remove as run

__all__ = ["add_arguments", "run"]
