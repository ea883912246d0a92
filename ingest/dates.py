"""Publication dates as PubMed writes them: ``2013 Nov 5``, ``2017 06``, ``1998 Dec-1999 Jan``,
``1990 Spring``. Only what the record states is kept: a missing month stays None."""

from __future__ import annotations

import re

_MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ],
        start=1,
    )
    for name in names
}
_YEAR_RE = re.compile(r"\b(1[7-9]\d\d|2[01]\d\d)\b")


def parse_year(value: str | None) -> int | None:
    """The first plausible four-digit year in ``value`` (1700-2199), or None."""
    if not value:
        return None
    match = _YEAR_RE.search(value)
    return int(match.group(1)) if match else None


def parse_month(value: str | None) -> int | None:
    """``Nov``, ``November``, ``11`` or ``06`` -> month number; seasons and junk -> None."""
    if not value:
        return None
    value = value.strip().lower().rstrip(".")
    if value.isdigit():
        month = int(value)
        return month if 1 <= month <= 12 else None
    return _MONTHS.get(value)


def parse_day(value: str | None) -> int | None:
    if not value or not value.strip().isdigit():
        return None
    day = int(value)
    return day if 1 <= day <= 31 else None


def parse_date_text(text: str | None) -> tuple[int | None, int | None, int | None]:
    """(year, month, day) from a free-text date such as MEDLINE ``DP`` or XML ``MedlineDate``.

    Month and day are read only right after the first year (``2006 Mar 1``); a range such as
    ``1998 Dec-1999 Jan`` gives its start.
    """
    if not text:
        return None, None, None
    match = _YEAR_RE.search(text)
    if not match:
        return None, None, None
    year = int(match.group(1))
    rest = re.split(r"[-/,;]", text[match.end() :], maxsplit=1)[0].split()
    month = parse_month(rest[0]) if rest else None
    day = parse_day(rest[1]) if month is not None and len(rest) > 1 else None
    return year, month, day
