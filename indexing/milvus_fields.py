"""How the Milvus index stores the fields that question filters are matched against: the
case-folded title (``title_lc``), the author names between separators (``authors_lc``), the year
(-1 when unknown), and how a value is written as a Milvus string literal.

The index builder writes these fields; :mod:`retrievers.milvus_filters` builds its filter
expressions over them (it imports this module, never the other way round).
"""

from __future__ import annotations

import re

UNKNOWN_YEAR = -1
AUTHOR_SEP = "|"
_WS = re.compile(r"\s+")


def title_key(title: str | None) -> str:
    """What the ``title_lc`` field stores: the case-folded title."""
    return (title or "").casefold()


def normalise_name(name: str) -> str:
    # The separator never occurs inside a stored name, so a pattern cannot span two names.
    return _WS.sub(" ", name.casefold().replace(AUTHOR_SEP, " ")).strip()


def authors_key(authors: list[str] | None) -> str:
    """What the ``authors_lc`` field stores: ``"| smith j | van der berg p |"`` (or ``""``)."""
    names = [n for n in (normalise_name(a) for a in authors or []) if n]
    if not names:
        return ""
    return AUTHOR_SEP + AUTHOR_SEP.join(f" {n} " for n in names) + AUTHOR_SEP


def year_value(year: int | None) -> int:
    return UNKNOWN_YEAR if year is None else int(year)


def string_literal(value: str) -> str:
    """A double-quoted Milvus string literal holding ``value`` verbatim."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
