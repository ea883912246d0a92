"""Moved to :mod:`chains.verdict` (one package for the verdict); this name is kept so code
written against the old module keeps importing."""

from chains.verdict import *  # noqa: F403
from chains.verdict import __all__  # noqa: F401
