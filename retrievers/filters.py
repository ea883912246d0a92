"""Metadata filters parsed from the question by rules, and removed from the searched text.

Recognised: "after 2020" (2021 on), "since 2019" / "from 2019 onwards", "before 2016" (up to
2015), "between 2015 and 2018" / "from 2015 to 2018" / "2015-2018" (inclusive), "in 2021" /
"published in 2021", "in the last 5 years", "title contains covid" / "with covid in the title",
"by Deary" (author surname; after words like papers/studies/published, before "et al.", or at the
end of the question). "in 2021" filters only after a publication word or at the question's start
or end; elsewhere it dates the data ("ad buys in 2012 were ...") and stays in the text.

Not filters, left in the question: "IL-2", "COVID-19", numbers of people ("in 2000 children"),
and a year used as a name, such as "the 2020 sepsis guidelines": that names a document and
articles discussing it may be from any later year, so restricting the publication year would hide
exactly what the user asks about. Only a preposition+year phrase restricts the year.

A year phrase that follows a place ("coverage in Kenya in 2015", "Shigellosis in Barcelona
between 1988 and 2012") or a verb of change ("changed from 2002 to 2007", "rose since 2010")
dates what was observed, not when it was published: the study of 2015 data appears in 2016 or
later, so such phrases stay in the question and filter nothing.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from ingest.metadata import ChunkMeta
from retrievers.evidence_filters import describe_evidence, evidence_matches, take_evidence

_YEAR = r"((?:19|20)\d{2})"
# A year phrase ends the clause: followed by punctuation, end, or a function word — not a noun
# ("in 2000 children" counts people).
_END = r"(?=\s*(?:$|[?.!,;:)]|\s(?:on|about|for|and|or|of|that|which|with|to|in|regarding|"
_END += r"concerning|what|how|is|are|was|were|do|does|did|has|have|find|found|show|showed|shown|"
_END += r"report|reported|say|said|suggest|suggested|conclude|concluded|tell|look|looked)\b"
_END += r"|\s[a-z]+ed\b))"  # a verb in the past ("studies by Deary after 2015 examined ...")
_PUB = r"(?:(?:published|publications?|papers?|articles?|studies|research)\s+)?"
# After a publication word the phrase dates the publications wherever it stands ("What did
# studies after 2020 find about ..."): it ends at the year, whatever follows.
_PUB_WORD = r"(?:published|publications?|papers?|articles?|studies|research)\s+"
_PUB_END = r"(?![\w-])"
# What comes right before a year phrase that dates the data rather than the publication: a place
# ("in Kenya", "in the United States", "in the UK"; not an acronym such as "in ADHD") or a verb
# of change ("changed from").
_DATA_CONTEXT = re.compile(
    r"(?:\b(?i:in|across|throughout)\s+(?:the\s+)?(?:U\.?S\.?A?|U\.?K\.?|EU|[A-Z][a-z][\w.'-]*)"
    r"(?:,?\s+[A-Z][a-z][\w.'-]*){0,2},?\s+"
    r"|\b(?i:chang|increas|decreas|declin|rose|risen|rise|rising|fell|fall|grow|grew|evolv|"
    r"vari|trend|shift|improv|worsen|drop)\w*\s+)$"
)

_AUTHOR_STOP = {
    "Alzheimer",
    "Parkinson",
    "Huntington",
    "Down",
    "Crohn",
    "Hodgkin",
    "Cushing",
    "Graves",
    "Asperger",
    "Tourette",
    "Turner",
    "Williams",
    "Klinefelter",
    "Fragile",
    "COVID",
    "SARS",
    "The",
    "A",
    "An",
    "This",
    "These",
    "Those",
    "Our",
    "Their",
    "Its",
    "His",
    "Her",
    "Using",
    "Means",
    "Way",
    "Virtue",
    "Far",
    "Default",
    "Design",
    "Chance",
    "Age",
    "Sex",
    "Gender",
}


class Filters(BaseModel):
    """Active metadata filters; empty means no restriction."""

    year_min: int | None = None
    year_max: int | None = None
    title_contains: list[str] = Field(default_factory=list)
    author: str | None = None
    # study design (ingest.design labels): kept if one of ``designs``, dropped if in ``exclude``
    designs: list[str] = Field(default_factory=list)
    exclude_designs: list[str] = Field(default_factory=list)
    humans: bool | None = None  # True: studies known to be of animals or cells only are dropped
    journal: str | None = None  # the journal's name or ISO abbreviation, whole (case-folded)

    def is_empty(self) -> bool:
        return not self.as_dict()

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True, exclude_defaults=True)

    def needs_row_check(self) -> bool:
        """A filter beyond the year range: each chunk's metadata is checked (:meth:`matches`)."""
        return bool(self.title_contains or self.author or self.designs or self.exclude_designs
                    or self.humans is not None or self.journal)

    def matches(self, metadata: dict[str, Any], meta: ChunkMeta | None = None) -> bool:
        """Whether a chunk passes; ``meta``: its record, when the caller holds it already."""
        meta = meta if meta is not None else ChunkMeta.from_metadata(metadata)
        if not evidence_matches(self, meta, metadata.get("humans")):
            return False
        year = meta.year
        if self.year_min is not None and (year is None or year < self.year_min):
            return False
        if self.year_max is not None and (year is None or year > self.year_max):
            return False
        if self.title_contains:
            title = meta.title.casefold()
            if not all(t.casefold() in title for t in self.title_contains):
                return False
        if self.author:
            want = self.author.casefold()
            names = [a.casefold() for a in meta.authors]
            if not any(re.search(rf"(^|\s){re.escape(want)}(\s|$)", n) for n in names):
                return False
        return True

    def describe(self) -> str:
        parts = []
        if self.year_min is not None and self.year_max is not None:
            parts.append(
                f"year {self.year_min}"
                if self.year_min == self.year_max
                else f"years {self.year_min}-{self.year_max}"
            )
        elif self.year_min is not None:
            parts.append(f"year >= {self.year_min}")
        elif self.year_max is not None:
            parts.append(f"year <= {self.year_max}")
        parts += [f"title contains '{t}'" for t in self.title_contains]
        if self.author:
            parts.append(f"author {self.author}")
        return ", ".join(parts + describe_evidence(self))


@dataclass
class _Parse:
    text: str
    filters: dict[str, Any] = field(default_factory=dict)

    def take(
        self, pattern: str, handler: Callable[[re.Match[str]], None], *, year: bool = True
    ) -> None:
        """Replace what ``pattern`` matches by a space, recording it with ``handler``; a year
        phrase in a data context (see the module docstring) is left in place."""

        def repl(m: re.Match[str]) -> str:
            if year and _DATA_CONTEXT.search(m.string[: m.start()]):
                return m[0]
            handler(m)
            return " "

        self.text = re.sub(pattern, repl, self.text, flags=re.IGNORECASE)


def parse_filters(question: str, *, today: _dt.date | None = None) -> tuple[str, Filters]:
    """Return (question without the filter phrases, Filters)."""
    year_now = (today or _dt.date.today()).year
    p = _Parse(question)
    f = p.filters

    def set_range(lo: int | None, hi: int | None) -> None:
        if lo is not None:
            f["year_min"] = max(lo, f.get("year_min", lo))
        if hi is not None:
            f["year_max"] = min(hi, f.get("year_max", hi))

    # design and journal first: "RCTs published in Lancet after 2019" is then "after 2019"
    # alone, not a year after a place ("in Lancet")
    take_evidence(p)
    for pub, end in ((_PUB_WORD, _PUB_END), (_PUB, _END)):
        p.take(
            rf"\b{pub}(?:published\s+)?(?:between|from)\s+{_YEAR}\s*(?:and|to|until|-|–)\s*"
            rf"{_YEAR}{end}",
            lambda m: set_range(min(int(m[1]), int(m[2])), max(int(m[1]), int(m[2]))),
        )
        if pub == _PUB:
            p.take(
                rf"\b(?:in|during)\s+{_YEAR}\s*[-–]\s*{_YEAR}{_END}",
                lambda m: set_range(min(int(m[1]), int(m[2])), max(int(m[1]), int(m[2]))),
            )
        p.take(
            rf"\b{pub}(?:published\s+)?after\s+{_YEAR}{end}",
            lambda m: set_range(int(m[1]) + 1, None),
        )
        p.take(
            rf"\b{pub}(?:published\s+)?(?:since|from)\s+{_YEAR}(?:\s+onwards?)?{end}",
            lambda m: set_range(int(m[1]), None),
        )
        p.take(
            rf"\b{pub}(?:published\s+)?before\s+{_YEAR}{end}",
            lambda m: set_range(None, int(m[1]) - 1),
        )
    # "in 2021" restricts the publication year only after a publication word, or at the very
    # start or end of the question; elsewhere it dates the data ("ad buys in 2012 were ...").
    _in_year = rf"(?:in|during)\s+{_YEAR}"

    def one_year(m: re.Match[str]) -> None:
        set_range(int(m[1]), int(m[1]))

    for pattern in (
        rf"\b(?:published|publications?|papers?|articles?|studies|research)\s+{_in_year}{_END}",
        rf"^\s*{_in_year}\s*,?",
        rf"\b{_in_year}(?=\s*[?.!]?\s*$)",
    ):
        p.take(pattern, one_year)
    p.take(
        r"\b(?:published\s+)?(?:in|over|during|within)\s+the\s+(?:last|past)\s+(\d{1,2})\s+years?\b",
        lambda m: set_range(year_now - int(m[1]) + 1, None),
    )
    p.take(
        r"\b(?:whose\s+|where\s+the\s+|with\s+(?:a\s+|the\s+)?)?title\s+(?:contains|containing|"
        r"includes|including|mentions|with)\s+[\"']?([^\"'?,;]+?)[\"']?(?=\s*(?:$|[?.!,;]|\s(?:and|or)\s))",
        lambda m: f.setdefault("title_contains", []).append(m[1].strip()),
        year=False,
    )
    p.take(
        r"\bwith\s+[\"']?([\w-]+(?:\s[\w-]+)?)[\"']?\s+in\s+(?:the|their|its)\s+titles?\b",
        lambda m: f.setdefault("title_contains", []).append(m[1].strip()),
        year=False,
    )
    _take_author(p)
    text = re.sub(r"\s{2,}", " ", p.text).strip()
    text = re.sub(r"\s+([?.!,;])", r"\1", text)
    text = re.sub(r"[,;:]+([?.!])", r"\1", text)
    text = re.sub(r"^[\s,;:]+", "", text)
    return text, Filters(**f)


def _take_author(p: _Parse) -> None:
    name = r"([A-Z][a-zA-Z'\u00c0-\u024f-]+(?:\s+[A-Z]{1,3}\b)?)"

    def handler(m: re.Match[str]) -> None:
        p.filters["author"] = m[1].split()[0]

    def guarded(pattern: str) -> None:
        def repl(m: re.Match[str]) -> str:
            if m[1].split()[0] in _AUTHOR_STOP or "author" in p.filters:
                return m[0]
            handler(m)
            return " "

        p.text = re.sub(pattern, repl, p.text)

    guarded(
        r"\b(?:[Aa]uthored|[Ww]ritten|[Pp]ublished|[Pp]apers?|[Aa]rticles?|[Ss]tudies|[Ww]ork|"
        rf"[Rr]esearch|[Pp]ublications?)\s+by\s+{name}(?:\s+et\s+al\.?)?"
    )
    guarded(rf"\bby\s+{name}\s+et\s+al\.?")
    guarded(rf"\b(?:[Aa]uthor|[Bb]y)\s+{name}(?=\s*[?.!]?\s*$)")
