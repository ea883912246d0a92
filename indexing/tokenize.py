"""BM25 tokenizer for biomedical text.

Case-folded, punctuation dropped, but gene, receptor and disease names written with hyphens or
digits survive as single terms (``COVID-19`` → ``covid-19``, also ``covid`` and ``19``;
``5-HT2A`` → ``5-ht2a``; ``IL-6``; ``BRCA1``), so an exact name outranks its parts.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path


def english_stop_words() -> frozenset[str]:
    """scikit-learn's ``ENGLISH_STOP_WORDS`` (the Glasgow IR group's list every BM25 index here
    was built with), read from the one module of scikit-learn that holds it. Importing
    ``sklearn`` itself loads scipy and pandas (about 2 s on 2 cores), which every process that
    tokenizes (the chat, each CLI command) would pay for a list of words; the whole package is
    imported only when that module is not where this scikit-learn version kept it."""
    spec = importlib.util.find_spec("sklearn")
    origin = Path(spec.origin).parent if spec and spec.origin else None
    path = origin / "feature_extraction" / "_stop_words.py" if origin else None
    if path is not None and path.is_file():
        loaded = importlib.util.spec_from_file_location("_sklearn_stop_words", path)
        if loaded is not None and loaded.loader is not None:
            module = importlib.util.module_from_spec(loaded)
            loaded.loader.exec_module(module)
            words = getattr(module, "ENGLISH_STOP_WORDS", None)
            if isinstance(words, frozenset) and words:
                return frozenset(words)
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)

# Alphanumeric runs joined by inner hyphens, slashes or dots ("covid-19", "5-ht2a", "0.05").
_TOKEN = re.compile(r"[0-9a-z\u00c0-\u024f]+(?:[-/.][0-9a-z\u00c0-\u024f]+)*")
_SPLIT = re.compile(r"[-/.]")
STOPWORDS = english_stop_words()


def tokenize(text: str, *, stopwords: bool = True) -> list[str]:
    """Terms of ``text``; compounds are kept whole and also contribute their parts."""
    out: list[str] = []
    for match in _TOKEN.finditer(text.casefold()):
        term = match.group()
        if _SPLIT.search(term):
            out.append(term)
            parts = [p for p in _SPLIT.split(term) if p]
            out.extend(p for p in parts if not (stopwords and p in STOPWORDS))
        elif not (stopwords and term in STOPWORDS):
            out.append(term)
    return out


@lru_cache(maxsize=2)
def tokenizer_for(stopwords: bool) -> Callable[[str], list[str]]:  # a plain callable for BM25
    return lambda text: tokenize(text, stopwords=stopwords)


def word_sequence(text: str) -> list[str]:
    """The case-folded words of ``text`` in order, compounds whole and stopwords kept: the units
    of word-pair (phrase) matching."""
    return _TOKEN.findall(text.casefold())
