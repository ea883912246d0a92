"""Question filters (:class:`~retrievers.filters.Filters`) as Milvus boolean filter expressions.

The expressions mirror :meth:`Filters.matches` on the FAISS backend exactly, given the scalar
fields written at build time (:mod:`indexing.milvus_fields`):

- year: an INT64 field where an unknown year is stored as -1; any year bound also requires
  ``year >= 0``, so an undated article never passes a year filter (as ``None`` fails in Python);
- title: ``title_lc like "%word%"`` on the case-folded title, one clause per word (all must hold);
- author: the surname as a whole word of one author name. Each case-folded, whitespace-normalised
  name is stored between separators as ``| name |`` inside one VARCHAR, so the LIKE pattern
  ``% surname %`` only matches a word boundary inside a single name, as the regex
  ``(^|\\s)surname(\\s|$)`` does.

User text only ever enters an expression as an escaped string literal: backslashes and double
quotes are escaped for the literal, then ``%`` and ``_`` for LIKE, so a question cannot inject
expression syntax or wildcards.

In corner cases the expression may admit a little more than ``Filters.matches`` (an author name
with runs of whitespace); the backend re-checks every hit with ``Filters.matches``, so results are
exactly the FAISS backend's.
"""

from __future__ import annotations

from indexing.milvus_fields import (  # noqa: F401 - re-exported: the build side's encodings
    AUTHOR_SEP,
    UNKNOWN_YEAR,
    authors_key,
    normalise_name,
    string_literal,
    title_key,
    year_value,
)
from retrievers.filters import Filters


def like_contains(value: str) -> str:
    """A LIKE pattern literal matching any text that contains ``value`` verbatim."""
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return string_literal(f"%{escaped}%")


def filter_expression(filters: Filters) -> str:
    """The Milvus ``filter`` string for ``filters`` ("" when there is no restriction)."""
    clauses: list[str] = []
    if filters.year_min is not None or filters.year_max is not None:
        low = max(0, filters.year_min) if filters.year_min is not None else 0
        clauses.append(f"year >= {int(low)}")
        if filters.year_max is not None:
            clauses.append(f"year <= {int(filters.year_max)}")
    for word in filters.title_contains:
        clauses.append(f"title_lc like {like_contains(word.casefold())}")
    if filters.author:
        want = normalise_name(filters.author)
        if want:
            clauses.append(f"authors_lc like {like_contains(' ' + want + ' ')}")
    return " and ".join(clauses)
