"""What a sentence claims, reduced to comparable pieces: content terms, numbers and [n] citations.

Content terms use the project's BM25 tokenizer (compounds like "covid-19" kept whole, English stop
words dropped), so "overlap" here means what it means to the retriever. Numbers are normalised
("1.80" = "1.8", ".05" = "0.05", "1,000" = "1000") so the same value written two ways matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Set as AbstractSet

from indexing.tokenize import STOPWORDS, tokenize

# "[1]", "[1, 2]", "[1-3]", "[1][3]", "[Source 2]"
CITATION = re.compile(
    r"\s?\[\s*(?:sources?\s*)?(\d+(?:\s*(?:[,;–-]|and)\s*\d+)*)\s*\]", re.IGNORECASE
)
_NUMBER = re.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?![\w])")
# Words so common in abstracts and answers that sharing them says nothing about support.
GENERIC = frozenset(
    "study studies patients patient results result showed shows show found find suggest "
    "suggests suggested associated association significant significantly data analysis "
    "used using use based including included compared group groups effect effects also".split()
)
_NOT_GENERIC = STOPWORDS | GENERIC  # what content_terms drops unless asked for generic words


def strip_citations(text: str) -> str:
    """The sentence without its citation groups (and the space before each)."""
    return CITATION.sub("", text).strip()


def citation_numbers(text: str) -> list[int]:
    """Every source number cited in ``text``, in order of first appearance; ranges expanded."""
    found: list[int] = []
    for m in CITATION.finditer(text):
        for part in re.split(r"\s*(?:[,;]|and)\s*", m.group(1)):
            nums = [int(x) for x in re.findall(r"\d+", part)]
            if len(nums) == 2 and re.search(r"[–-]", part) and 0 < nums[1] - nums[0] < 50:
                nums = list(range(nums[0], nums[1] + 1))
            found.extend(n for n in nums if n not in found)
    return found


def content_words(
    words: Iterable[str],
    *,
    stopwords: AbstractSet[str] = STOPWORDS,
    min_len: int = 2,
    numbers: bool = True,
) -> list[str]:
    """The content words among ``words`` (a text's words, split as the caller needs), once each,
    in order of first appearance: lower-cased, apostrophes and hyphens trimmed off their ends;
    without ``stopwords``, without words shorter than ``min_len`` unless written in capitals (an
    acronym: "AF", "US"), and, unless ``numbers``, without words that have no letter ("0.05").

    The one content-word rule: a sentence's terms here, a question's (chains/queries.py) and the
    verdict's overlap (eval/verdict/evidence.py) differ only in how the text is split and in
    the stopwords, each named where it is used."""
    out: list[str] = []
    seen: set[str] = set()
    for word in words:
        w = word.lower().strip("'-")
        if len(w) < min_len and not word.isupper():
            continue
        if w in stopwords or w in seen or not (numbers or any(ch.isalpha() for ch in w)):
            continue
        seen.add(w)
        out.append(w)
    return out


def content_terms(text: str, *, generic: bool = False) -> set[str]:
    """Content words of a sentence (citations and numbers excluded: numbers are checked apart).

    A compound counts as its words, once: the tokenizer gives "attention-deficit/hyperactivity"
    AND "attention", "deficit", "hyperactivity" (for recall), which would let one shared
    compound outvote a sentence's other words. ``generic`` keeps words such as "study" or
    "found", which say nothing about WHICH source supports a claim but are words of it all
    the same (the "mostly made of words found in the source" gate counts them)."""
    words = (t for t in tokenize(strip_citations(text), stopwords=True) if not _COMPOUND.search(t))
    return set(
        content_words(words, stopwords=STOPWORDS if generic else _NOT_GENERIC, numbers=False)
    )


_COMPOUND = re.compile(r"[-/.]")  # indexing.tokenize's compound separators


def normalise_number(raw: str) -> str:
    value = raw.replace(",", "")
    if value.startswith("."):
        value = "0" + value
    if "." in value:
        value = value.rstrip("0").rstrip(".")
    value = value.lstrip("0") or "0"
    return "0" + value if value.startswith(".") else value


def numbers(text: str) -> set[str]:
    """The numeric values written in ``text`` (citation markers excluded), normalised."""
    out: set[str] = set()
    for m in _NUMBER.finditer(strip_citations(text)):
        raw = m.group()
        if raw and any(ch.isdigit() for ch in raw):
            out.add(normalise_number(raw))
    return out
