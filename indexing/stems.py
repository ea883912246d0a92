"""Porter stems of words, shared by the index's vocabulary look-ups and grounding's concepts."""

from __future__ import annotations

from functools import lru_cache

from nltk.stem.porter import PorterStemmer

_stemmer = PorterStemmer()


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Porter stem of a word, case-folded ("Saunas" -> "sauna", "hypogonadal" -> "hypogonad");
    a possessive "'s" is dropped first."""
    word = word.lower().replace("\u2019", "'")
    if word.endswith("'s"):
        word = word[:-2]
    stemmed: str = _stemmer.stem(word)
    return stemmed
