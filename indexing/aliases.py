"""Other names of a word, found in the corpus itself: the abbreviations its abstracts define.

An abstract that writes "obstructive sleep apnea (OSA)" or "electrocardiogram (ECG)" tells the
reader that the two are one concept; over the whole index that gives each abbreviation its long
forms and each long form its abbreviations. The question's "OSA" is then covered by an abstract
that writes only "obstructive sleep apnea", and "intelligence quotient" by one that writes "IQ".
A pair counts when the abbreviation's letters start the long form's words in order (the
Schwartz-Hearst rule, simplified): "attention-deficit/hyperactivity disorder (ADHD)" yes,
"children (n = 40)" no.

A drug's brand name is another name of its generic name ("Zoloft" -> "sertraline"), from the
lexicon :mod:`indexing.drug_names` reads: the corpus never defines those. A lay word the index
rarely uses has the names it does use instead ("preemies" -> "premature infant"), from WordNet
(:mod:`indexing.lay_terms`); which count depends on the index's counts, so the backend that
holds them adds those (:func:`indexing.lay_terms.index_names`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from indexing.drug_names import DrugNames
from indexing.stems import stem

_ABBR = re.compile(r"\(\s*([A-Za-z][A-Za-z0-9-]{1,9})\s*[),;]")
_SPLIT = re.compile(r"[\s/-]+")


def name_stems(name: str) -> frozenset[str]:
    """A name as the set of its words' stems ("premature infants" -> {"prematur", "infant"})."""
    return frozenset(stem(w) for w in _SPLIT.split(name.lower()) if w)


def _letters_match(abbr: str, words: list[str]) -> bool:
    """Whether the abbreviation's letters are the initials (or inner letters, in order) of the
    long form's words, its first letter the first word's."""
    letters = [ch.lower() for ch in abbr if ch.isalpha()]
    if not letters or not words or words[0][:1].lower() != letters[0]:
        return False
    text = " ".join(w.lower() for w in words)
    pos = 0
    for ch in letters:
        pos = text.find(ch, pos)
        if pos < 0:
            return False
        pos += 1
    # every word of the long form but small ones gives a letter
    initials = [w[0].lower() for w in words if len(w) > 3]
    return all(i in letters for i in initials)


def definitions(text: str) -> Iterable[tuple[str, str]]:
    """(abbreviation, long form) pairs defined in ``text``."""
    for m in _ABBR.finditer(text):
        abbr = m.group(1)
        capitals = sum(ch.isupper() for ch in abbr)
        if capitals < 2:
            continue
        before = text[max(0, m.start() - 120) : m.start()]
        before = re.split(r"[.;:()\[\],]", before)[-1]
        words = [w for w in _SPLIT.split(before.strip()) if w][-(len(abbr) + 2) :]
        for k in range(1, len(words) + 1):
            candidate = words[-k:]
            if _letters_match(abbr, candidate):
                yield abbr, " ".join(candidate).lower()
                break


@dataclass
class AliasTable:
    """Abbreviation <-> long form, from the corpus's own definitions (each pair seen at least
    ``min_seen`` times, so one author's idiosyncrasy does not count)."""

    names: dict[str, set[str]] = field(default_factory=dict)  # lower-cased name -> other names
    drugs: DrugNames = field(default_factory=DrugNames)  # brand name -> generic name

    @classmethod
    def build(cls, texts: Iterable[str], min_seen: int = 2,
              drugs: DrugNames | None = None) -> AliasTable:
        counts: dict[tuple[str, str], int] = {}
        for text in texts:
            for abbr, long_form in set(definitions(text)):
                key = (abbr.lower(), long_form)
                counts[key] = counts.get(key, 0) + 1
        table = cls(drugs=drugs or DrugNames())
        for (abbr, long_form), seen in counts.items():
            if seen >= min_seen:
                table.names.setdefault(abbr, set()).add(long_form)
                table.names.setdefault(long_form, set()).add(abbr)
        return table

    def of(self, name: str) -> list[str]:
        """The other names of ``name`` (lower-cased): as the corpus's abstracts define them, and
        a drug's generic name for its brand name."""
        return sorted(self.names.get(name.lower(), set()) | set(self.drugs.generic_of(name)))

    def stems_of(self, name: str) -> list[frozenset[str]]:
        """Each other name of ``name`` as the set of its words' stems."""
        return [name_stems(n) for n in self.of(name)]
