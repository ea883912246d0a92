"""The question's essential concepts, and whether the retrieved abstracts address them.

A concept is a run of adjacent content words of the question ("familial hypercholesterolemia",
"pacifier use", "IQ"); it is *essential* when one of its words is rare in general English
(wordfreq) or absent from the whole index: drugs, exposures, conditions, outcomes. Two everyday
words that English names one thing by and the index rarely holds ("baby walker") are both
essential. Words that shape a question without naming what was studied ("does", "improve",
"risk", "later") never count, nor does an example the user gives ("such as ice water").
A source addresses a concept when the concept's essential words occur (as Porter stems)
in one of its sentences or its title, or, failing that, when one of its words is as close to the
concept as the measured bar (MiniLM cosine of the word and the concept).

The question is addressed when at least one source covers every essential concept; otherwise the
missing concepts are named, and those no indexed abstract mentions at all are told apart, which
tells the user to extend the corpus rather than rephrase.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
from wordfreq import zipf_frequency

from grounding.harms import asked_spans, names_harms
from grounding.sources import SentenceEncoder, SourcePool
from indexing.drug_names import drug_names
from indexing.lay_terms import LAY_MAX_CHUNKS, LAY_MAX_ZIPF, lay_terms
from indexing.stems import stem
from indexing.tokenize import STOPWORDS
from indexing.word_classes import word_classes

# A word rarer than this in general English (wordfreq's Zipf scale: 3 = once per million words)
# names something specific enough that an answer must be about it, unless the corpus uses it in
# more than CORPUS_SHARE of its chunks ("assessed", "IQ" in an intelligence corpus); a word a
# little more common in English (< COMMON_ZIPF) counts when the corpus rarely uses it ("pupils").
ESSENTIAL_ZIPF = 4.0
COMMON_ZIPF = 4.5
CORPUS_SHARE = 0.02
CORPUS_RARE_SHARE = 0.005
# A source may miss ONE essential word of the question when it has every other concept (at least
# TOLERATED_WITH of them) and the word is one the corpus uses (in SCARCE_CHUNKS chunks or more):
# users' wording ("in their forties", "bullied") differs from the abstracts' ("paternal age
# 40-44", "peer victimization"); a drug or device the corpus barely knows is never let go.
TOLERATED_WITH = 2
SCARCE_CHUNKS = 20
# MiniLM cosine of a concept and a word of a source at which the source counts as naming it in
# other words ("IQ" / "intelligence"); measured on the verdict and abstention files (docs).
SYNONYM_BAR = 0.62

# Words that frame a question (what is asked about the concepts, not the concepts themselves).
QUESTION_FRAME = frozenset(
    """
    does do did is are was were can could should would will may might has have had be been being
    improve improves improved improving improvement raise raises raised increase increases
    increased reduce reduces reduced reduction lower lowers lowered higher high low decrease
    decreases affect affects affected effect effects effective effectiveness impact influence
    associated association associations link linked links related relation relationship
    predict predicts predicted predictive risk risks likely less more better worse greater
    smaller larger bigger compared comparison versus vs than still even after before later
    earlier early long longer short shorter use used using take taking took taken get gets
    getting make makes made lead leads led cause causes caused help helps people person
    persons individuals adults adult patients patient subjects participants someone those
    who whose whom which what when where why how whether there their they them it its
    years year months month weeks week days day time times age aged old older young younger
    new good bad best worst really actually also often usually generally typically commonly
    change changes changed difference differences different differ similar same show shows
    showed shown find finds found study studies evidence research result results work works
    level levels number amount rate rates way ways kind type types one two three four five
    six seven eight nine ten first second third several many much few some any each every
    other another own end ends become becomes became keep keeps kept remain remains stay
    twenties thirties forties fifties sixties seventies eighties nineties teens teenage
    tied tie ties connected connection hurt hurts drag drags lift lifts sharpen sharpens sharper
    smarter brighter boost boosts cut cuts beat beats lessen lessens actually anyway daily
    regularly stuff thing things okay guys folks end ended ending safe safer safest safely unsafe
    """.split()
)
# "in their 50s", "the 1990s": an age or a period, not a concept
_DECADE = re.compile(r"^(?:1[89]|20)?\d0s$")
# A verb form ("zapped", "popping", "restarting") of a common English verb (Zipf >= this) is how
# a user words the question, unless the corpus itself uses the word as a term (in at least
# SCARCE_CHUNKS chunks: "smoking", "bullying", "breastfeeding")
VERB_FORM_ZIPF = 3.5
# Verbs that end a concept without being one ("does vonoprazan heal erosive esophagitis"): they
# split a run of content words; what they do is the question's frame, not what was studied.
RUN_BREAKERS = frozenset(
    """
    impair impairs impaired lose loses allow allows heal heals preserve preserves perform
    performs bring brings restore restores start starts develop develops developing prevent
    prevents clear clears slow slows fall falls drop drops spare spared remove removed need
    needs needing reach reaching carry carries respond responds give gives giving protect
    protects cure cures treat treats worsen worsens harm harms shorten shortens extend extends
    prolong prolongs alter alters shape shapes benefit benefits mean means see sees score
    scores suffer suffers experience experiences show exhibit exhibits exist exists existed
    work works worked emphasize emphasizes emphasise emphasises suggest suggests indicate
    indicates reveal reveals describe describes mention mentions report reports reported
    modulate modulates amplify amplifies explain explains mediate mediates moderate moderates
    attenuate attenuates determine determines upregulate upregulates downregulate downregulates
    promote promotes facilitate facilitates hinder hinders
    """.split()
)

_WORD = re.compile(r"[0-9a-z\u00c0-\u024f]+(?:['\u2019-][0-9a-z\u00c0-\u024f]+)*", re.IGNORECASE)


def words_of(text: str) -> list[str]:
    """Lower-cased words; a hyphenated compound ("full-scale") gives its parts."""
    out: list[str] = []
    for m in _WORD.finditer(text):
        for part in re.split(r"[-'\u2019]", m.group().lower()):
            if part and part != "s":
                out.append(part)
    return out


def stems_of(text: str) -> set[str]:
    return {stem(w) for w in words_of(text)}


@runtime_checkable
class CorpusTerms(Protocol):
    """What the index can say about words across the whole corpus (the BM25 vocabulary)."""

    @property
    def size(self) -> int:
        """Indexed chunks."""
        ...

    def chunks_with_stems(self, stems: Sequence[str]) -> int:
        """How many indexed chunks contain a word of every one of ``stems``."""
        ...


@runtime_checkable
class CorpusAliases(Protocol):
    """What the index can say about a word's other names (:class:`grounding.aliases.AliasTable`,
    the abbreviations its abstracts define)."""

    def alias_stems(self, name: str) -> list[frozenset[str]]:
        """Each other name of ``name`` as the stems of its words."""
        ...


@dataclass(frozen=True)
class Concept:
    """A run of adjacent content words of the question."""

    text: str  # as written in the question
    words: tuple[str, ...]  # its content words, lower-cased
    essential: tuple[str, ...]  # the words an addressing source must have; () if none
    absent: tuple[str, ...] = ()  # its essential words that no indexed chunk holds
    scarce: tuple[str, ...] = ()  # its essential words in fewer than SCARCE_CHUNKS chunks
    # other names from the corpus: of an essential word ("osa"), or of the whole concept
    # ("obstructive sleep apnea", key "") -> the stems of each other name
    aliases: tuple[tuple[str, tuple[frozenset[str], ...]], ...] = ()
    # the concept before it when the two are drugs asked as alternatives ("Zoloft or Prozac"):
    # a source that names either answers for both (:func:`_by_alternative`)
    alternative_of: str = ""
    # two of its words that English names one thing by ("baby walker") and the index rarely
    # holds (:func:`rare_compound`): both are essential; those essential only for being in it
    # ("baby", "walker") are found by their letters or the compound's other names, never by
    # nearness
    compound: str = ""
    in_compound: tuple[str, ...] = ()
    # harms asked as one phrase ("side effects": grounding.harms): its one essential word is the
    # phrase, which a source names by any name of harms, never by a word's nearness
    harms: bool = False

    @property
    def names_a_topic(self) -> bool:
        """Whether the concept is a topic of its own: an essential one, but not harms, which are
        always a treatment's ("any long-term side effects?" leans on the conversation's)."""
        return bool(self.essential) and not self.harms

    def name_for(self, missing: Sequence[str]) -> str:
        """How a message names the concept when ``missing`` (some of its essential words) are
        not found: the concept as asked when it is short and all of it is missing ("chewing
        gum"), else just the missing words ("daratumumab")."""
        if set(self.essential) <= set(missing) and len(self.words) <= 3:
            return without_frame_edges(self.text, missing)
        if self.compound and set(self.compound.split()) & set(missing):
            return self.compound
        return without_frame_edges(" ".join(w for w in self.essential if w in missing), missing)


def without_frame_edges(name: str, missing: Sequence[str]) -> str:
    """``name`` without the words at its ends that English uses only as a verb or an adverb
    (:meth:`indexing.word_classes.WordClasses.names_no_thing`): "ozanimod induce" -> "ozanimod",
    "romosozumab followed" -> "romosozumab", "adding daratumumab" -> "daratumumab". A missing
    word goes only while another stays in the name; a name is never emptied."""
    classes = word_classes()
    tokens = name.split()
    lost = {w.lower() for w in missing}

    def missing_in(token: str) -> bool:
        return bool(set(words_of(token)) & lost)

    def drops(i: int) -> bool:
        token = tokens[i]
        rest = tokens[:i] + tokens[i + 1 :]
        return classes.names_no_thing(token.lower()) and (
            not missing_in(token) or any(map(missing_in, rest)))

    while len(tokens) > 1 and (drops(0) or drops(len(tokens) - 1)):
        tokens = tokens[1:] if drops(0) else tokens[:-1]
    return " ".join(tokens)


def search_term(text: str) -> str:
    """A concept as a search term: without the words English uses only as a verb or an adverb,
    wherever they are ("ozanimod induce remission" -> "ozanimod remission"): a search engine
    that requires every word (PubMed's) would otherwise require "induce". Never emptied."""
    classes = word_classes()
    kept = [t for t in text.split() if not classes.names_no_thing(t.lower())]
    return " ".join(kept) or text


@dataclass(frozen=True)
class Gap:
    """An essential concept (or the missing part of one) that the closest sources lack."""

    name: str
    absent_from_index: bool  # no indexed abstract holds it at all
    in_some_source: bool  # a retrieved source has it, but not together with the rest


def _name_like(word: str) -> bool:
    return any(ch.isdigit() for ch in word) and any(ch.isalpha() for ch in word)


def essential_word(word: str, corpus: CorpusTerms | None = None, alone: bool = True) -> bool:
    """Whether an answer must be about ``word``: a name ("nf1", "covid-19"), or a word rare in
    general English (wordfreq Zipf < 4) that is not the corpus's own everyday vocabulary (in
    at most :data:`CORPUS_SHARE` of the chunks), or one the corpus itself rarely uses
    (:data:`CORPUS_RARE_SHARE`) though English does a little more ("pupils")."""
    if _name_like(word):
        return True
    if len(word) < 2 or _inflected_common(word):
        return False
    if alone and _verb_form(word) and (
        corpus is None or not corpus.size
        or corpus.chunks_with_stems([stem(word)]) < SCARCE_CHUNKS
    ):  # fmt: skip
        return False
    zipf = zipf_frequency(word, "en")
    if corpus is None or not corpus.size:
        return zipf < ESSENTIAL_ZIPF
    share = corpus.chunks_with_stems([stem(word)]) / corpus.size
    return (zipf < ESSENTIAL_ZIPF and share <= CORPUS_SHARE) or (
        zipf < COMMON_ZIPF and share <= CORPUS_RARE_SHARE
    )


def _inflected_common(word: str) -> bool:
    """An adverb or comparative of a common word ("briefly", "poorer", "healthiest"): how the
    question qualifies a concept, not the concept."""
    for suffix, add, common in (("ly", "", ESSENTIAL_ZIPF), ("ier", "y", COMMON_ZIPF),
                                ("iest", "y", COMMON_ZIPF), ("er", "", COMMON_ZIPF),
                                ("est", "", COMMON_ZIPF)):  # fmt: skip
        base = word[: -len(suffix)] + add if word.endswith(suffix) else ""
        if len(base) > 3 and zipf_frequency(base, "en") >= common:
            return True
    return False


def _verb_form(word: str) -> bool:
    """A past or -ing form of a common English verb ("zapped" zap, "popping" pop, "restarting"
    restart, "wrecked" wreck)."""
    for suffix in ("ing", "ed"):
        if not word.endswith(suffix) or len(word) <= len(suffix) + 2:
            continue
        base = word[: -len(suffix)]
        bases = [base, base + "e"]
        if len(base) > 2 and base[-1] == base[-2]:
            bases.append(base[:-1])
        if any(zipf_frequency(b, "en") >= VERB_FORM_ZIPF for b in bases):
            return True
    return False


def _content(word: str) -> bool:
    return (
        len(word) > 1
        and word not in STOPWORDS
        and word not in QUESTION_FRAME
        and not word.isdigit()
        and not _DECADE.match(word)
    )


@dataclass
class _Run:
    """Adjacent content words of the question, as :func:`question_concepts` splits it."""

    words: list[tuple[str, str]] = field(default_factory=list)  # (surface, lower)
    after_or: bool = False  # follows the run before with "or" alone between
    example: bool = False  # in an example the user gives of a concept ("such as ...")
    harms: tuple[int, int] | None = None  # the span of a phrase naming harms (grounding.harms)


# what opens an example ("pain, such as from holding a hand in ice water, ..."): up to the next
# punctuation, it illustrates the concept before it, and an answer about that concept answers
_EXAMPLE_OPENERS = frozenset({("such", "as"), ("for", "example"), ("for", "instance"),
                              ("e", "g")})


def _runs(question: str) -> list[_Run]:
    """Maximal runs of adjacent content words: a stop word, a frame word, a verb of
    :data:`RUN_BREAKERS` or punctuation ends a run; punctuation ends an example too, unless the
    example has just opened ("e.g. ...")."""
    runs = [_Run()]
    example = opened = False
    prev = ""
    pos = 0
    spans = asked_spans(question)
    for m in _WORD.finditer(question):
        gap = question[pos : m.start()]
        pos = m.end()
        surface = m.group()
        span = next((s for s in spans if s[0] <= m.start() < s[1]), None)
        if span is not None:  # a harms phrase is a run of its own
            if runs[-1].harms != span:
                runs.append(_Run(harms=span))
            runs[-1].words.append((surface, surface.lower()))
            prev = surface.lower()
            continue
        if runs[-1].harms is not None:  # the phrase has ended
            runs.append(_Run(example=example))
        if gap.strip():
            example = example and opened
            runs.append(_Run(example=example))
        opened = (prev, surface.lower()) in _EXAMPLE_OPENERS
        example = example or opened
        prev = surface.lower()
        parts = [p for p in re.split(r"[-'\u2019]", surface.lower()) if p and p != "s"]
        content = all(_content(p) or p.isdigit() for p in parts) and any(map(_content, parts))
        if parts and content and not (len(parts) == 1 and parts[0] in RUN_BREAKERS):
            runs[-1].words.append((surface, "-".join(parts)))
        else:
            runs.append(_Run(after_or=parts == ["or"] and bool(runs[-1].words), example=example))
    return _split_at_main_verb(question, runs)


# The auxiliaries that open a question whose main verb is bare ("DOES being bilingual delay
# dementia?", "CAN bedside assessment exclude aspiration?"), and the verb forms that are no main
# verb of such a question ("does BEING bilingual ...")
_BARE_VERB_AUXILIARIES = frozenset("do does did can could will would may might should must".split())
_NO_MAIN_VERB = frozenset("being been is are was were has had having do does did".split())
_SUBJECT_PRONOUNS = frozenset("i we you he she it they".split())


def _split_at_main_verb(question: str, runs: list[_Run]) -> list[_Run]:
    """``runs`` with the first one split at the question's main verb when no word of the
    question is a verb the rules know (a frame word, "be", "have" or :data:`RUN_BREAKERS`).

    A question opened by "does", "can", ... has a bare main verb between its subject and its
    object; when the rules know none, it is a base form of an English verb (WordNet) inside the
    first run, after its first word, with the object after it in the run or in the next one
    ("bilingual | DELAY | dementia", "convolutional neural network | IDENTIFY | the stromal
    ones"). A word English uses only as a verb is taken ("stress echocardiography INDUCE
    troponin elevation"); a word that is a noun too only when it is the run's one such word and
    does not end a compound with the word before it ("gastric bypass", "primary care"): "Chile's
    traffic law reform push police enforcement" is left whole. The subject is what is studied,
    the object what it changes: two concepts, not one run of words."""
    words = words_of(question)
    if not words or words[0] not in _BARE_VERB_AUXILIARIES:
        return runs
    classes = word_classes()
    if any(w in RUN_BREAKERS or (w in QUESTION_FRAME and w not in _NO_MAIN_VERB
                                 and classes.verb_bases(w))
           for w in words[1:]):
        return runs
    at = next((i for i, run in enumerate(runs) if run.words), None)
    if at is None or runs[at].harms is not None or runs[at].example:
        return runs
    run = runs[at].words
    object_follows = any(r.words for r in runs[at + 1 :])
    # "Can WE measure ...", "Do older patients RECEIVE ...": the subject is no concept, and the
    # run opens on the verb
    if (run[0][1] in classes.verbs and (words[1] in _SUBJECT_PRONOUNS
                                         or classes.verb_only(run[0][1]))):
        rest = _Run(run[1:])
        return [*runs[:at], *([rest] if rest.words else []), *runs[at + 1 :]]
    candidates = [k for k in range(1, len(run))
                  if "-" not in run[k][1] and run[k][1] in classes.verbs
                  and not lay_terms().compound(f"{run[k - 1][1]} {run[k][1]}")]  # fmt: skip
    only_verbs = [k for k in candidates
                  if classes.verb_only(run[k][1]) and (k < len(run) - 1 or object_follows)]
    # a word that is a noun too ends no run as its verb ("self-inflating BAG and ...")
    either = [k for k in candidates if k < len(run) - 1]
    verb = (only_verbs[-1] if only_verbs
            else either[0] if len(candidates) == 1 == len(either) else None)
    if verb is None:
        return runs
    parts = [_Run(run[:verb], runs[at].after_or), _Run(run[verb + 1 :])]
    return [*runs[:at], *(p for p in parts if p.words), *runs[at + 1 :]]


def question_concepts(question: str, corpus: CorpusTerms | None = None) -> list[Concept]:
    """The question's concepts in order, one per run of content words (:func:`_runs`);
    ``essential`` holds each run's words that an answer must be about (:func:`essential_word`),
    none for a run inside an example the user gives ("such as ice water")."""
    runs = _runs(question)
    concepts: list[Concept] = []
    seen: set[tuple[str, ...]] = set()
    for i, run in enumerate(runs):
        if not run.words:
            continue
        if run.harms is not None:  # one harms concept however many times it is asked
            if not any(c.harms for c in concepts):
                concepts.append(_harms_concept(run))
            continue
        words = tuple(p for _, low in run.words for p in low.split("-") if _content(p))
        key = tuple(sorted(stem(w) for w in words))
        if not words or key in seen:
            continue
        seen.add(key)
        essential, compound, in_compound = (
            ((), "", ()) if run.example else _essential_words(words, corpus))
        absent: tuple[str, ...] = ()
        scarce: tuple[str, ...] = essential
        if corpus is not None:
            counts = {w: corpus.chunks_with_stems([stem(w)]) for w in essential}
            absent = tuple(w for w in essential if not counts[w])
            # a rare compound's words are as scarce as the compound: a source lacking one of
            # them is not let off ("saving" in "daylight saving")
            scarce = tuple(w for w in essential
                           if counts[w] < SCARCE_CHUNKS or w in compound.split())
        text = " ".join(surface for surface, _ in run.words).strip("'\u2019")
        aliases: list[tuple[str, tuple[frozenset[str], ...]]] = []
        if isinstance(corpus, CorpusAliases) and essential:
            for key, name in [("", " ".join(words)), *((w, w) for w in essential)]:
                found = tuple(corpus.alias_stems(name))
                if found:
                    aliases.append((key, found))
            absent = tuple(w for w in absent if not _other_name_indexed(corpus, w, aliases))
        either = ""
        if (run.after_or and concepts and _drug_alternatives(runs[i - 1].words, run.words)
                and not _CHOICE.search(question)):
            either = concepts[-1].text
        concepts.append(Concept(text, words, essential, absent, scarce, tuple(aliases), either,
                                compound, in_compound))
    return concepts


def _harms_concept(run: _Run) -> Concept:
    """The concept of a phrase naming harms: its essential word is the phrase itself, never
    absent from the index and never let go (:data:`SCARCE_CHUNKS`)."""
    text = " ".join(surface for surface, _ in run.words)
    words = tuple(p for _, low in run.words for p in re.split(r"[-'\u2019]", low) if p)
    phrase = " ".join(words)
    return Concept(text, words, (phrase,), scarce=(phrase,), harms=True)


def _essential_words(words: tuple[str, ...], corpus: CorpusTerms | None,
                     ) -> tuple[tuple[str, ...], str, tuple[str, ...]]:
    """A run's essential words, its rare compound ("" if none) and the words essential only
    for being in that compound."""
    # a verb form is user wording when it stands alone ("zapped"), not inside a compound
    # ("CHEWING gum", "cord CLAMPING")
    alone = len(words) == 1
    own = {w for w in words if essential_word(w, corpus, alone)}
    compound = rare_compound(words, corpus)
    in_compound = tuple(w for w in compound.split() if w not in own)
    essential = tuple(dict.fromkeys(w for w in words if w in own or w in in_compound))
    return essential, compound, in_compound


def rare_compound(words: Sequence[str], corpus: CorpusTerms | None) -> str:
    """Two adjacent ``words`` that English lexicalises as one noun (WordNet: "baby walker",
    "heart attack", "daylight saving") and that at most :data:`LAY_MAX_CHUNKS` indexed chunks
    hold together, else "". Each word alone is everyday English and would not be essential,
    but the pair names one specific thing: abstracts on babies and walking do not address a
    baby walker. A compound the index often holds ("working memory") is its own vocabulary."""
    if corpus is None or not corpus.size:
        return ""
    for a, b in zip(words, words[1:], strict=False):
        pair = f"{a} {b}"
        if lay_terms().compound(pair) and (
            corpus.chunks_with_stems(sorted({stem(a), stem(b)})) <= LAY_MAX_CHUNKS
        ):  # fmt: skip
            return pair
    return ""


# a question that asks which of two is better ("Is sertraline or fluoxetine better ...?"): its
# "or" is the choice itself, and a source on one drug does not answer it
_CHOICE = re.compile(
    r"\b(?:which|better|best|worse|superior|inferior|safer|than|versus|vs|compared?|"
    r"comparison|more\s+(?:effective|helpful)|less\s+(?:effective|helpful))\b",
    re.IGNORECASE,
)


def _other_name_indexed(corpus: CorpusTerms, word: str,
                        aliases: Sequence[tuple[str, tuple[frozenset[str], ...]]]) -> bool:
    """Whether the index holds another name of ``word`` or of its whole concept: "No indexed
    abstract mentions preemies" would be untrue of an index that writes "preterm infants"."""
    return any(corpus.chunks_with_stems(sorted(name)) for key, names in aliases
               if key in ("", word) for name in names)


def _drug_alternatives(before: Sequence[tuple[str, str]], run: Sequence[tuple[str, str]]) -> bool:
    """Whether two runs joined by "or" name a drug each ("Zoloft or Prozac"): unless it asks
    which is better (:data:`_CHOICE`), the question asks about either, as a user names the
    drugs a doctor may choose between. Other alternatives ("full-scale IQ or attention
    problems", "relapsed or refractory myeloma") each need their source."""
    names = drug_names().generic

    def is_drug(r: Sequence[tuple[str, str]]) -> bool:
        return " ".join(low for _, low in r) in names

    return is_drug(before) and is_drug(run)


def question_stems(question: str) -> set[str]:
    """The stems of every content word of the question's concepts (what stance cues are
    scoped to)."""
    return {stem(w) for c in question_concepts(question) for w in c.words}


@dataclass
class Coverage:
    """Which essential words each source has, the sources that have them all, and the gaps."""

    concepts: list[Concept]
    per_source: list[dict[str, bool]]  # [source] essential word -> found (literally or alike)
    addressing: list[int] = field(default_factory=list)  # sources ([n]) with every word
    # [source] names the question's one-word everyday outcome (stance.asked_outcome); empty
    # when the question has none
    outcome_named: list[bool] = field(default_factory=list)

    @property
    def words(self) -> list[str]:
        return list(dict.fromkeys(w for c in self.concepts for w in c.essential))

    @property
    def complete(self) -> list[int]:
        """The addressing sources ([n]) that have every essential word: the only ones whose
        stance may decide a verdict. One tolerated gap lets a source address the question (it is
        quoted and listed), but a source missing a concept may be about another relation: the
        corpus's own titles with one concept swapped for another article's got a verdict from
        such sources on 69 of 389 (docs/verdicts.md "Stop 42")."""
        return [
            n for n in self.addressing
            if all(self.per_source[n - 1].values())
            and (not self.outcome_named or self.outcome_named[n - 1])
        ]  # fmt: skip

    @property
    def addressed(self) -> bool:
        return bool(self.addressing) or not self.words

    @property
    def gaps(self) -> list[Gap]:
        """What the best-covering source lacks, by concept (empty when addressed)."""
        if self.addressed:
            return []
        best = (
            max(self.per_source, key=lambda row: sum(row.values()))
            if self.per_source
            else {}
        )
        out: list[Gap] = []
        for concept in self.concepts:
            missing = [w for w in concept.essential if not best.get(w, False)]
            if not missing:
                continue
            out.append(
                Gap(
                    concept.name_for(missing),
                    any(w in concept.absent for w in missing),
                    any(all(row.get(w, False) for w in missing) for row in self.per_source),
                )
            )
        return out


def _source_stems(pool: SourcePool, si: int) -> set[str]:
    source = pool.sources[si]
    return stems_of(f"{source.title} {source.abstract}")


def check_coverage(
    concepts: Sequence[Concept],
    pool: SourcePool,
    encoder: SentenceEncoder | None = None,
    synonym_bar: float = SYNONYM_BAR,
    outcome: str = "",
) -> Coverage:
    """Per source, which essential words it has: literally (the word's stem in its title or
    abstract), else, with an ``encoder``, when one of its words or word pairs reaches
    ``synonym_bar`` cosine with the word ("IQ" / "intelligence quotient"). ``outcome``: the
    question's one-word everyday outcome (:func:`grounding.stance.asked_outcome`), which a
    source must name the same ways to take a stance (:attr:`Coverage.complete`)."""
    words = list(dict.fromkeys(w for c in concepts for w in c.essential))
    source_stems = [_source_stems(pool, si) for si in range(len(pool.sources))]  # once each
    per_source = [{w: stem(w) in stems for w in words} for stems in source_stems]
    for row, stems in zip(per_source, source_stems, strict=True):
        _by_alias(concepts, row, stems)
        _by_what_it_lacks(row, stems)
    _by_harms_named(concepts, pool, per_source)
    # no nearness for a word a lexicon names, nor for a word essential only inside a compound:
    # MiniLM puts "infant" nearer "baby walker" (0.63) than "baby" (0.55)
    literal = _named_by_lexicon(concepts) | {w for c in concepts for w in c.in_compound}
    literal |= {w for c in concepts if c.harms for w in c.essential}
    todo = sorted({w for row in per_source for w, ok in row.items()
                   if not ok and w not in literal})
    if todo and encoder is not None:
        absent = {w for c in concepts for w in c.absent}
        similar = _similar_words(todo, pool, encoder, synonym_bar, absent)
        for si, row in enumerate(per_source):
            for w in todo:
                row[w] = row[w] or similar.get((w, si), False)
    for row in per_source:
        _by_alternative(concepts, row)
    addressing = [
        pool.sources[si].n for si, row in enumerate(per_source) if _addresses(concepts, row)
    ]
    named = _outcome_named(outcome, pool, source_stems, encoder, synonym_bar) if outcome else []
    return Coverage(list(concepts), per_source, addressing, named)


def _outcome_named(outcome: str, pool: SourcePool, source_stems: Sequence[set[str]],
                   encoder: SentenceEncoder | None, bar: float) -> list[bool]:
    """Per source, whether it names ``outcome`` literally or by a word or pair as near as
    ``bar``, never by a part of the word itself: "health" is 0.75 from "healthcare" by the
    letters they share, and an abstract on healthy lifestyles and health that never names
    healthcare use says nothing on whether healthier lifestyles mean less of it."""
    named = [stem(outcome) in stems for stems in source_stems]
    if encoder is None or all(named):
        return named
    similar = _similar_words([outcome], pool, encoder, bar, parts_of=outcome)
    return [ok or similar.get((outcome, si), False) for si, ok in enumerate(named)]


def _named_by_lexicon(concepts: Sequence[Concept]) -> set[str]:
    """The essential words whose other names a lexicon gives (a lay word's WordNet names, a
    brand's generic name, an abbreviation's long forms): a source means them only when it
    writes one of those names. MiniLM's nearness to some other word of the source is no
    evidence then: "preemies" is close to "pre-pregnancy", and an abstract on mothers' weight
    before pregnancy was taken to address a question about babies born early."""
    out: set[str] = set()
    for concept in concepts:
        for key, names in concept.aliases:
            if names:
                out.update(concept.essential if not key else (key,))
    # an everyday word is not the abbreviation it shares letters with ("ate", "ATE")
    return {w for w in out if zipf_frequency(w, "en") < LAY_MAX_ZIPF}


# a group named by what it lacks ("UNexposed children", "NON-smokers", "UNvaccinated")
_LACKING = re.compile(r"^(?:un|non-?)(?P<base>[a-z]{4,})$")


def _by_what_it_lacks(row: dict[str, bool], stems: set[str]) -> None:
    """Mark the essential words naming a group by what it lacks ("unexposed", "nonsmokers",
    "unvaccinated") that a source names by the thing lacked ("exposure to lithium", "smoking",
    "vaccination"): a study of an exposure compares the exposed with the unexposed, and
    abstracts name that arm "controls" or "non-lithium-exposed" as often as "unexposed"."""
    for w, found in row.items():
        lacking = _LACKING.match(w)
        if found or lacking is None:
            continue
        base = stem(lacking.group("base"))[:5]  # "expos": "exposed", "exposure"
        row[w] = any(s.startswith(base) for s in stems)


def _by_alias(concepts: Sequence[Concept], row: dict[str, bool], stems: set[str]) -> None:
    """Mark the essential words a source names by another name the corpus gives them: "OSA" for
    "obstructive sleep apnea" (the whole concept), "tuberculosis" for "TB". A drug found by its
    generic name stands for its whole concept: the rest is what the user says the drug is
    ("the anti-nausea pill Zofran"), which an abstract naming the drug need not repeat."""
    for concept in concepts:
        for key, names in concept.aliases:
            if any(name and name <= stems for name in names):
                whole = not key or bool(drug_names().generic_of(key))
                for w in concept.essential if whole else (key,):
                    row[w] = True


def _by_harms_named(concepts: Sequence[Concept], pool: SourcePool,
                    per_source: Sequence[dict[str, bool]]) -> None:
    """Mark a harms concept ("side effects") found in the sources that name harms in any of
    their names ("adverse events", "toxicity", "well tolerated": :func:`grounding.harms.
    names_harms`)."""
    asked = [w for c in concepts if c.harms for w in c.essential]
    if not asked:
        return
    for source, row in zip(pool.sources, per_source, strict=True):
        if names_harms(f"{source.title} {source.abstract}"):
            row.update(dict.fromkeys(asked, True))


def _by_alternative(concepts: Sequence[Concept], row: dict[str, bool]) -> None:
    """Mark the drugs asked as alternatives ("Zoloft or Prozac") found when the source names
    one of them whole: it answers the question for the drug it names."""
    by_text = {c.text: c for c in concepts}
    for concept in concepts:
        other = by_text.get(concept.alternative_of)
        if other is None:
            continue
        pair = (concept, other)
        if any(c.essential and all(row.get(w, False) for w in c.essential) for c in pair):
            for c in pair:
                for w in c.essential:
                    row[w] = True


def _addresses(concepts: Sequence[Concept], found: dict[str, bool]) -> bool:
    """Every essential word found, or all but one that the corpus uses (not a scarce one) while
    at least :data:`TOLERATED_WITH` whole concepts are found."""
    missing = [w for w, ok in found.items() if not ok]
    if not missing:
        return True
    scarce = {w for c in concepts for w in c.scarce}
    whole = sum(1 for c in concepts if c.essential and all(found[w] for w in c.essential))
    return len(missing) == 1 and missing[0] not in scarce and whole >= TOLERATED_WITH


def _spelled_alike(word: str, gram: str, pieces: Callable[[str], list[str]]) -> bool:
    """Whether MiniLM's nearness of ``word`` to ``gram`` can be spelling: ``word`` is no word
    of its vocabulary (it is read as pieces) and ``gram`` opens with the same piece and goes on
    otherwise ("pregabalin" = pre·ga·bal·in and "preterm" = pre·ter·m: cosine 0.64; "heatwave"
    and "heat wave" go on alike)."""
    a, b = pieces(word), pieces(gram)
    rest = [p.removeprefix("##") for p in a[1:]], [p.removeprefix("##") for p in b[1:]]
    return len(a) > 1 and bool(b) and a[0] == b[0] and rest[0] != rest[1]


def _similar_words(
    words: Sequence[str], pool: SourcePool, encoder: SentenceEncoder, bar: float,
    absent: Collection[str] = (), parts_of: str = "",
) -> dict[tuple[str, int], bool]:
    """(word, source index) -> a word or word pair of the source reaches ``bar`` cosine. A word
    ``absent`` from every indexed abstract is never near a word spelled like it
    (:func:`_spelled_alike`, with the encoder's tokenizer where it has one): the index never
    writes it, and a name MiniLM does not know has only its spelling's meaning. Nor is a word
    near a word or pair the question itself uses for another of its concepts: "puberty" is
    0.67 from "adolescent", but a question on "puberty and young adolescent alcohol use" names
    both, so an abstract's "adolescent" is that other concept, not puberty. No word inside
    ``parts_of`` counts ("health" of "healthcare")."""
    asked = stems_of(pool.question)
    per_source: list[list[str]] = []
    for source in pool.sources:
        found = [w for w in words_of(f"{source.title} {source.abstract}") if _content(w)]
        pairs = [f"{a} {b}" for a, b in zip(found, found[1:], strict=False)]
        per_source.append(list(dict.fromkeys(found + pairs)))
    vocab = list(dict.fromkeys(g for grams in per_source for g in grams))
    if not vocab:
        return {}
    vectors = np.asarray(encoder.encode(list(words) + vocab), dtype=np.float32)
    qv, wv = vectors[: len(words)], vectors[len(words) :]
    sims = qv @ wv.T  # rows L2-normalised by the encoder
    index = {g: i for i, g in enumerate(vocab)}
    tokenizer = getattr(encoder, "tokenizer", None)
    out: dict[tuple[str, int], bool] = {}
    for wi, word in enumerate(words):
        spelled = (
            (lambda g, w=word: _spelled_alike(w, g, tokenizer.tokenize))
            if word in absent and tokenizer is not None
            else None
        )
        others = asked - {stem(word)}
        for si, grams in enumerate(per_source):
            cols = [index[g] for g in grams
                    if (spelled is None or not spelled(g)) and not stems_of(g) <= others
                    and not (parts_of and g.lower() != parts_of and g.lower() in parts_of)]
            out[(word, si)] = bool(cols) and float(sims[wi, cols].max()) >= bar
    return out
