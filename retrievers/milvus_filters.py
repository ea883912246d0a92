"""Question filters (:class:`~retrievers.filters.Filters`) as Milvus boolean filter expressions.

The expressions mirror :meth:`Filters.matches` on the FAISS backend exactly, given the scalar
fields written at build time (:mod:`indexing.milvus_fields`):

- year: an INT64 field where an unknown year is stored as -1; any year bound also requires
  ``year >= 0``, so an undated article never passes a year filter (as ``None`` fails in Python);
- title: ``title_lc like "%word%"`` on the case-folded title, one clause per word (all must hold);
- design / species: the chunk's JSON ``metadata`` (:func:`evidence_clauses`);
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
from ingest.models import journal_key
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
    return " and ".join(clauses + evidence_clauses(filters))


def evidence_clauses(filters: Filters) -> list[str]:
    """Design, species and journal over the chunk's JSON ``metadata`` (schema 2): the design
    label and the journal as filters compare it (``journal_key``). "in humans" admits every
    design but animal/in-vitro; the backend's re-check with ``Filters.matches`` drops the few
    others known to be animal studies (MeSH), so results equal the FAISS backend's."""
    clauses = []
    design = 'metadata["design"]'  # milvus-lite takes no ``in`` on a JSON path: == / != each
    if filters.designs:
        clauses.append("(" + " or ".join(f"{design} == {string_literal(d)}"
                                         for d in filters.designs) + ")")
    clauses += [f"{design} != {string_literal(d)}" for d in filters.exclude_designs]
    if filters.humans:  # a superset (MeSH "Animals" also sets humans false): re-checked
        clauses.append('metadata["design"] != "animal_in_vitro"')
    if filters.journal:
        clauses.append(f'metadata["journal_key"] == {string_literal(journal_key(filters.journal))}')
    return clauses
