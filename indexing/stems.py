"""Porter stems of words, shared by the index's vocabulary look-ups and grounding's concepts."""

from __future__ import annotations

import sys
from functools import lru_cache
from typing import Any

# What nltk's package init imports when installed, each inside ``try/except ImportError``
# (nltk.classify.scikitlearn, nltk.metrics.association), and nothing here uses.
NLTK_OPTIONAL = ("sklearn", "scipy.stats")


def porter_stemmer() -> Any:
    """NLTK's Porter stemmer, imported without the optional scikit-learn and scipy pieces nltk's
    package init loads when they are installed: about 1.7 s on 2 cores at every start of the
    chat or a CLI command, for a stemmer that needs neither. They are blocked only for the
    length of that import, only when neither nltk nor they are loaded yet, and only they."""
    blocked = [] if "nltk" in sys.modules else [m for m in NLTK_OPTIONAL if m not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # "import name" raises ImportError
    try:
        from nltk.stem.porter import PorterStemmer
    finally:
        for name in blocked:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
    return PorterStemmer()


_stemmer = porter_stemmer()


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Porter stem of a word, case-folded ("Saunas" -> "sauna", "hypogonadal" -> "hypogonad");
    a possessive "'s" is dropped first."""
    word = word.lower().replace("\u2019", "'")
    if word.endswith("'s"):
        word = word[:-2]
    stemmed: str = _stemmer.stem(word)
    return stemmed
