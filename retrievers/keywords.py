"""Query keywords by rarity, an option for the BM25 query.

Words rarer than 5e-6 in general English (wordfreq) are kept: the 3 rarest, plus up to 3 more
under 3e-6, returned in question order.
"""

from __future__ import annotations

import re

from wordfreq import word_frequency

RARE = 5e-6
VERY_RARE = 3e-6
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")


def rare_keywords(question: str, *, lang: str = "en") -> list[str]:
    words = list(dict.fromkeys(_WORD.findall(question)))
    freq = {w: word_frequency(w.lower(), lang) for w in words}
    rare = sorted((w for w in words if freq[w] < RARE), key=lambda w: freq[w])
    chosen = set(rare[:3]) | {w for w in rare[3:] if freq[w] < VERY_RARE}
    chosen = set(sorted(chosen, key=lambda w: freq[w])[:6])
    return [w for w in words if w in chosen]


def keyword_query(question: str) -> str:
    """The rare words of ``question``, or the question itself when it has none."""
    words = rare_keywords(question)
    return " ".join(words) if words else question
