"""Errors raised while reading or downloading the corpus; each message says what to do next."""

from __future__ import annotations

from settings.errors import UserFacingError


class CorpusError(UserFacingError):
    """Base class for every ingest problem the user can fix."""


class CorpusNotFoundError(CorpusError):
    """No corpus file matches ``corpus.paths`` (and nothing was fetched)."""


class FetchError(CorpusError):
    """The E-utilities download failed or its settings are invalid. ``kind`` says which way, for
    a one-line message: ``offline`` (no route, refused, DNS), ``timeout``, ``busy`` (429/5xx
    after every retry), ``ncbi`` (NCBI answered with an error), ``bad-answer`` (truncated or
    unreadable), ``settings`` (anything the user must fix)."""

    def __init__(self, message: str, kind: str = "settings") -> None:
        super().__init__(message)
        self.kind = kind
