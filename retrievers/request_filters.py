"""Filters a caller gives beside the question (the HTTP API's ``filters``), applied on top of
those parsed from the question's words, for every search one request makes (the question, a
follow-up's searches, multi-query's sub-queries) without passing them through every chain step.

:func:`scoped` sets them for the current task (a ``ContextVar``: other requests, on other tasks,
never see them); :func:`with_request_filters` is what the retriever applies.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from retrievers.filters import Filters

_REQUEST: ContextVar[Filters | None] = ContextVar("request_filters", default=None)


@contextmanager
def scoped(filters: Filters | None) -> Iterator[None]:
    """Searches made inside this block (and in tasks it starts) also apply ``filters``."""
    token = _REQUEST.set(filters if filters is not None and not filters.is_empty() else None)
    try:
        yield
    finally:
        _REQUEST.reset(token)


def set_for_task(filters: Filters | None) -> None:
    """Set the request's filters for the rest of the current task (an async generator cannot
    hold a context manager across its yields safely)."""
    _REQUEST.set(filters if filters is not None and not filters.is_empty() else None)


def merge(parsed: Filters, given: Filters) -> Filters:
    """Both restrictions at once: the narrower year range, every title word and design of
    either, the given author, journal and species choice over the parsed ones."""
    lo = [y for y in (parsed.year_min, given.year_min) if y is not None]
    hi = [y for y in (parsed.year_max, given.year_max) if y is not None]
    return Filters(
        year_min=max(lo) if lo else None,
        year_max=min(hi) if hi else None,
        title_contains=list(dict.fromkeys([*parsed.title_contains, *given.title_contains])),
        author=given.author or parsed.author,
        designs=list(dict.fromkeys([*parsed.designs, *given.designs])),
        exclude_designs=list(dict.fromkeys([*parsed.exclude_designs, *given.exclude_designs])),
        humans=given.humans if given.humans is not None else parsed.humans,
        journal=given.journal or parsed.journal,
    )


def with_request_filters(filters: Filters) -> Filters:
    given = _REQUEST.get()
    return filters if given is None else merge(filters, given)
