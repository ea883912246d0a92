"""``python -m app library list`` (see :mod:`indexing.commands.library`)."""

from indexing.commands.library import add_arguments_list as add_arguments
from indexing.commands.library import run_list as run

__all__ = ["add_arguments", "run"]
