"""Filters by study design, species and journal, in plain words (part of :mod:`retrievers.filters`).

Recognised, and removed from the searched text:

- design: "RCTs (only)", "only randomized (controlled) trials", "randomised trials", "systematic
  reviews" (systematic reviews and meta-analyses), "meta-analyses", "cohort studies",
  "case-control studies", "cross-sectional studies";
- exclusions: "excluding case reports", "no case reports", "without case series", "excluding
  animal studies";
- species: "in humans", "human studies" (articles known to study animals or cells only are
  dropped: MeSH "Animals" without "Humans", or the animal/in-vitro design);
- journal: "published in Nature", "articles in the Lancet", "in the journal Intelligence", and a
  bare "in JAMA" / "in BMJ" / "in NEJM" / "in the Lancet" / "in Nature" / "in Science" at the end
  of a clause, for a few journals ("changes in Science education" is no filter). The journal is
  compared whole, case- and full-stop-insensitively, with the ISO abbreviation PubMed gives
  ("N Engl J Med" for NEJM).

Singular or topic uses stay in the question: "Is a randomized trial feasible?", "the design of
cohort studies" without "only" are still filters only when plural (as a request for that kind of
study); designs are the labels of :mod:`ingest.design`, stored on every chunk (metadata schema 2).
"""

from __future__ import annotations

import re
from typing import Any

from ingest.design import badge
from ingest.metadata import ChunkMeta
from ingest.models import journal_key

_ONLY = r"(?:(?:only|just)\s+)?"
_ONLY_AFTER = r"(?:\s+only)?"
_DESIGN_PATTERNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"\b(?:RCTs|randomi[sz]ed(?:\s+controlled|\s+clinical)?\s+trials)", ("rct",)),
    (r"\bsystematic\s+reviews", ("systematic_review", "meta_analysis")),
    (r"\bmeta-?analy[sz]es", ("meta_analysis",)),
    (r"\bcohort\s+studies", ("cohort",)),
    (r"\bcase-?control\s+studies", ("case_control",)),
    (r"\bcross-?sectional\s+studies", ("cross_sectional",)),
)
_EXCLUDE_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"case\s+(?:reports?|series)", "case_report"),
    (r"(?:animal|in[- ]vitro)\s+(?:studies|experiments|research)", "animal_in_vitro"),
)
_NO = r"\b(?:excluding|exclude|except(?:\s+for)?|without|not|no)\s+"
_HUMANS = r"\b(?:in\s+humans|in\s+human\s+(?:subjects|participants)|human\s+studies)\b"
# journals named bare ("in JAMA"): their names are not words a question uses otherwise
_KNOWN_JOURNALS = {
    "JAMA": "JAMA", "BMJ": "BMJ", "NEJM": "N Engl J Med", "Lancet": "Lancet",
    "Nature": "Nature", "Science": "Science", "PLoS One": "PLoS One", "PLOS ONE": "PLoS One",
    "New England Journal of Medicine": "N Engl J Med",
}
_NAME = r"([A-Z][\w&'-]*(?:\s+(?:of|and|&|in|[A-Z][\w&'.-]*)){0,6})"
_PUBLISHED_IN = (
    r"\b(?:(?:published|appearing|appeared)\s+in|(?:papers?|articles?|studies|trials|reviews)\s+"
    r"(?:published\s+)?in)\s+(?:the\s+)?(?:journal\s+)?"
)
_JOURNAL_WORD = r"\bin\s+the\s+journal\s+"
_KNOWN = "|".join(sorted((re.escape(k) for k in _KNOWN_JOURNALS), key=len, reverse=True))


def evidence_matches(filters: Any, meta: ChunkMeta, humans: object) -> bool:
    """The design, species and journal part of :meth:`retrievers.filters.Filters.matches`
    (``humans``: the chunk's ``humans`` flag, which :class:`ChunkMeta` does not carry)."""
    if filters.designs and meta.design not in filters.designs:
        return False
    if filters.exclude_designs and meta.design in filters.exclude_designs:
        return False
    if filters.humans and humans is False:
        return False
    if filters.journal and journal_key(meta.journal) != journal_key(filters.journal):
        return False
    return True


def describe_evidence(filters: Any) -> list[str]:
    parts = []
    if filters.designs:
        parts.append("design: " + " or ".join(badge(d) for d in filters.designs))
    if filters.exclude_designs:
        parts.append("excluding " + ", ".join(badge(d) for d in filters.exclude_designs))
    if filters.humans:
        parts.append("in humans")
    if filters.journal:
        parts.append(f"journal {filters.journal}")
    return parts


def take_evidence(p: Any) -> None:
    """Take the phrases above out of ``p.text`` (a ``retrievers.filters._Parse``)."""
    f = p.filters

    def add(key: str, values: tuple[str, ...]) -> None:
        have = f.setdefault(key, [])
        have.extend(v for v in values if v not in have)

    for pattern, labels in _EXCLUDE_PATTERNS:
        p.take(_NO + pattern + r"\b", lambda m, lab=labels: add("exclude_designs", (lab,)),
               year=False)
    for pattern, designs in _DESIGN_PATTERNS:
        p.take(rf"\b{_ONLY}{pattern}\b{_ONLY_AFTER}",
               lambda m, d=designs: add("designs", d), year=False)
    p.take(_HUMANS, lambda m: f.__setitem__("humans", True), year=False)
    _take_journal(p)


def _take_journal(p: Any) -> None:
    def named(m: re.Match[str]) -> str:
        name = m[1].strip(" .")
        p.filters["journal"] = _KNOWN_JOURNALS.get(name, name)
        return " "

    # case-sensitive: a journal's name is capitalised
    for pattern in (_PUBLISHED_IN + _NAME, _JOURNAL_WORD + _NAME,
                    rf"\bin\s+(?:the\s+)?({_KNOWN})(?=\s*(?:$|[?.!,;]))"):
        if "journal" in p.filters:
            return
        p.text = re.sub(pattern, named, p.text, count=1)
