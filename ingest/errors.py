"""Errors raised while reading or downloading the corpus; each message says what to do next."""

from __future__ import annotations

from settings.errors import UserFacingError


class CorpusError(UserFacingError):
    """Base class for every ingest problem the user can fix."""


class CorpusNotFoundError(CorpusError):
    """No corpus file matches ``corpus.paths`` (and nothing was fetched)."""


class FetchError(CorpusError):
    """The E-utilities download failed or its settings are invalid."""
