"""A follow-up resolved against the whole conversation, by rules (no LLM needed).

The conversation's topic is kept as text, turn by turn (:func:`resolve_conversation`):

- the first question is the topic;
- a question that announces a new topic ("New topic: ...", "Unrelated: ...") or is complete
  and names its own slots, exposure and outcome or group and outcome
  (:func:`names_its_own_slots`, whatever words it shares with the old topic), starts a new
  topic searched alone; one that names a topic of its own with nothing pointing back
  (:func:`chains.queries.names_own_topic`) becomes the topic and may lead the search;
- a follow-up that names another group of people or animals in a switch frame ("what about
  adults?", "and in dental students?", "in teens going through puberty") replaces the topic's
  group (the MeSH check tags of :mod:`chains.populations`) in place: "Are stimulant medications
  effective for ADHD in children?" + "what about adults?" -> "stimulant medications effective
  for ADHD in adults";
- a bare switch ("what about depression?", "and ALS - ...") replaces its counterpart in the
  topic: the topic's words as close to it as ``COUNTERPART_BAR`` (MiniLM cosine, when an
  embedder is given), else it is added to the topic;
- any other follow-up ("any long-term side effects?", "how many patients were in that one?")
  keeps the topic and adds its own words; pronouns ("it", "they", "that one") are dropped, the
  topic standing for them. The words a follow-up added are carried to the next turn only when
  that turn names nothing of its own ("was that a big study?" after "does an insulin pump vs
  shots make any difference?" is about the pump study), or when its "it" stands for the thing
  that turn brought ("did their brain scans change with it?" after "can an iPad therapy app
  help these kids' visual-motor skills?").

The standalone question is searched beside the follow-up as written
(:mod:`retrievers.followup`, path ``resolved``) and shown in the chat's search step. A follow-up
with words of its own is searched a third time in focus (:func:`focus_query`): those words with
the topic's anchor only, its group and subject ("kids needed ECMO working memory training
help"), a lighter vote against the old outcome or exposure the resolution still holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from chains.populations import (
    ANIMALS,
    FEMALE_STATES,
    FEMALES,
    GENERIC,
    LIFE_STAGES,
    SEXES,
    heading_of,
    in_abstracts_words,
    is_food_animal,
    is_life_stage_modifier,
    is_population,
    is_possessive_population,
    names_sex_only,
)
from chains.queries import (
    QUESTION_STOPWORDS,
    _has,
    complete_question,
    content_terms,
    names_own_topic,
)
from grounding.concepts import QUESTION_FRAME

if TYPE_CHECKING:
    from grounding.concepts import CorpusTerms

# (phrase, candidate words) -> cosine of the phrase with each word
Similarity = Callable[[str, Sequence[str]], Sequence[float]]

# MiniLM cosine at which a topic word is the counterpart a bare switch replaces ("bipolar" for
# "depression"); measured on the conversation files (docs/conversations.md).
COUNTERPART_BAR = 0.5

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’-]*")
_NEW_TOPIC = re.compile(
    r"^\s*(?:(?:a\s+)?new\s+(?:topic|question|subject)|unrelated(?:\s+(?:question|topic))?|"
    r"(?:a\s+)?different\s+(?:topic|question|subject)|another\s+(?:topic|question|subject)|"
    r"(?:changing|switching)\s+(?:the\s+)?(?:topics?|subjects?)|on\s+another\s+note|"
    r"(?:a\s+)?separate\s+question|something\s+else|off[- ]topic)\s*[:,.;!-]+\s*",
    re.IGNORECASE,
)
_OPENER = re.compile(
    r"^\s*(?:(?:and|but|or|also|so|ok(?:ay)?|then)\b\s*,?\s*)?"
    r"(?:(?:what|how)\s+about\b\s*|what\s+if\b\s*)?",
    re.IGNORECASE,
)
_SWITCH_OPENER = re.compile(r"^\s*(?:and|or|but|also)\b|\b(?:what|how)\s+about\b", re.IGNORECASE)
# question words that open the topic's sentence; stripped when it becomes a topic phrase
_LEAD = re.compile(
    r"^\s*(?:(?:is|are|was|were|do|does|did|can|could|has|have|had|will|would|should|may|"
    r"might|what|which|how|why|when|where|who|whom|whose)\b\s*)+",
    re.IGNORECASE,
)
# words after an animal word that leave it the group ("rats with", "mice in", "fish?")
_STOP_AFTER = frozenset(
    "with who that in on of at from and or but exposed given fed treated".split()
)
# a switch frame: the group named after one of these ("in adults", "among teens", "for boys")
_FRAME = frozenset("about in among for".split())
# before a time-of-life word, these make it the time of the topic, not a modifier ("in childhood")
_PREPOSITIONS = frozenset("in during at from since through throughout after before across by of"
                          .split())
# a clause of a follow-up ends at punctuation or where a question verb starts a new clause
_CLAUSE_END = re.compile(r"\s*(?:[,;:?!–—]|\s-\s|\.(?:\s|$))\s*")
_CLAUSE_VERB = frozenset(
    "is are was were do does did can could has have had will would should may might".split()
)
# the words that open a relative clause on a group ("kids *who* are infected")
_RELATIVE = frozenset("who that which whose".split())
# words of a follow-up that only point back or ask how: the topic stands for them
_POINTERS = frozenset(
    """
    it its they them their theirs this that these those one ones same such he she his her him
    any some thing things way ways stuff anything something kind sort
    """.split()
)
# the pronouns that stand for a thing, not for people ("it", not "they")
_THING_POINTERS = frozenset("it this that".split())
# how a question is asked, not what about ("does it track with ...", "what did they find")
_HOW = frozenset("does did do know tell find found".split())
FOCUS_GROUPS = 1  # group words of the topic an anchor keeps
# A follow-up with this many content words of its own (no pointers) is also searched in focus:
# its words with the topic's anchor only (:func:`focus_query`; docs/conversations.md, fourth pass)
FOCUS_MIN_TERMS = 2
CARRY_MAX = 12  # content words a follow-up adds at most (the topic stays the larger part)
# verbs that carry a topic's predicate after its subject ("kids who ... *end* up", "people who
# ... *do* as adults"): where a relative clause on the subject ends
_PREDICATE_VERBS = frozenset(
    """
    end ends do does have has tend tends show shows score scores develop develops still perform
    performs remain remains differ differs become becomes benefit benefits recover recovers
    achieve achieves fare fares grow grows suffer suffers experience experiences
    """.split()
)
# content words a question needs to carry a subject of its own when no concept of it is rare
# (the length below which chains.queries.needs_context reads a pronoun as pointing back)
NEW_SUBJECT_MIN_TERMS = 5
# content words from which a question's own pronouns and "even" point inside it, not back
LONG_QUESTION_TERMS = 10
# A reference to a study the conversation brought up: a demonstrative, at most three words and
# a word for a study ("that Swedish registry study", "this trial"), or "the ... one" ("the dental
# filling one"). It points back at what the earlier turns found, whatever it names.
_STUDY_REFERENCE = re.compile(
    r"\b(?:that|this|these|those)\s+(?:[\w'’-]+\s+){0,3}?"
    r"(?:one|ones|study|studies|trial|trials|paper|papers|article|articles|cohort)\b"
    r"|\bthe\s+(?:[\w'’-]+\s+){1,3}?ones?\b",
    re.IGNORECASE,
)
# words for a study and its people: a run of them names no exposure or outcome ("the trial
# randomized"), and "the" before one points at a study the conversation found ("was the trial
# blinded and how many patients were included?")
_STUDY_WORDS = frozenset(
    """
    study studies trial trials paper papers article articles cohort cohorts sample samples
    participants subjects researchers authors investigators randomized randomised blinded
    included enrolled recruited followed tested measured done conducted published
    """.split()
)
_THE_STUDY = re.compile(
    r"\bthe\s+(?:[\w'’-]+\s+){0,2}?(?:study|studies|trial|trials|paper|papers|article|"
    r"articles|cohort|sample|participants|subjects|researchers|authors|investigators)\b",
    re.IGNORECASE,
)
# a group named with a determiner ("on the girls", "the Swedish men", "does a child's genotype
# change ..."): one the conversation spoke of, when it did
_NAMED_GROUP = re.compile(r"\b(?:the|a|an)\s+(?:[A-Z][\w-]*\s+)?([a-z][\w-]*)", re.IGNORECASE)
# a question asking whether something causes what the conversation spoke of: its effect is a
# pointer ("could the sedatives be *the cause*?", "is lead *to blame*?", "*responsible for it*"),
# so it names an exposure and leans on the topic for the outcome
_CAUSE_OF_TOPIC = re.compile(
    r"\b(?:the|a|one)\s+(?:main\s+|real\s+|underlying\s+)?(?:cause|reason|culprit|explanation)"
    r"\b(?!\s+(?:of|for)\b)|\bto\s+blame\b|\bresponsible\b(?!\s+for\s+(?!it\b|that\b|this\b|"
    r"them\b)\w)|\bbehind\s+(?:it|that|this|them)\b",
    re.IGNORECASE,
)
# pronouns a clause after a switch may use for it ("and ALS - are smarter people more likely to
# get *it*?", "what about too much iodine - can *that* lower kids' IQ?")
_SWITCH_POINTERS = frozenset("it that they them this these those".split())


@dataclass(frozen=True)
class Resolution:
    """One turn resolved: ``standalone`` (the question searched in the conversation's context),
    ``kind`` (``first`` | ``new_topic`` | ``own_topic`` | ``resolved``), and the topic carried to
    the next turn (``core``: the topic phrase; ``added``: this turn's own words)."""

    standalone: str
    kind: str
    core: str
    added: tuple[str, ...] = field(default_factory=tuple)
    group: str = ""  # the group a switch put into ``core`` ("adults on ECMO"), replaced whole
    focus: str = ""  # the follow-up's own words with the topic's anchor only (:func:`focus_query`)
    # the words added ask a side question of the topic ("can a statin fix that?"): a question
    # of its own clause with no switch opener; a later group switch asks the topic, not them
    aside: bool = False
    # the aside brought a thing of its own and no pronoun for the topic's ("can an iPad therapy
    # app help these kids' visual-motor skills?"): the next turn's "it" is that thing
    new_thing: bool = False
    # what the topic's first group had, named in its clause ("for", "hydrocephalus"; "to",
    # "HIV"), kept by each group a switch puts in (:func:`_with_what_it_had`)
    condition: tuple[str, str] = ("", "")
    # the question words that led the topic's question ("Are", "How do"): shown before a
    # resolved follow-up's topic so that it reads as a question ("Are stimulant medications
    # effective for ADHD in adults?"); not searched: MiniLM found fewer of the gold articles
    # with them (docs/conversations.md "Stop 64")
    lead: str = ""

    @property
    def shown_lead(self) -> str:
        """The question words to show before ``standalone`` ("" where it is the user's own)."""
        return self.lead if self.kind in ("resolved", "detail") else ""


def strip_new_topic(question: str) -> tuple[str, bool]:
    """(question without a "New topic:" / "Unrelated:" announcement, whether there was one)."""
    body = _NEW_TOPIC.sub("", question, count=1)
    return body, body != question


def topic_phrase(question: str) -> str:
    """The question as a topic: without an announcement, opener ("and", "what about"), the
    question words that lead it ("Are", "How do"), or the final question mark."""
    body, _ = strip_new_topic(question)
    body = _OPENER.sub("", body, count=1)
    body = _LEAD.sub("", body, count=1)
    return re.sub(r"\s+", " ", body).strip().rstrip("?.! ").strip()


def topic_lead(question: str) -> str:
    """The question words that lead ``question`` ("Are", "How do"; "" when none), as
    :func:`topic_phrase` strips them."""
    body, _ = strip_new_topic(question)
    body = _OPENER.sub("", body, count=1)
    found = _LEAD.match(body)
    return re.sub(r"\s+", " ", found.group(0)).strip() if found else ""


def _unled(text: str) -> str:
    """``text`` without the punctuation that joined it to what came before ("- can that ...")."""
    return re.sub(r"^[\s,;:–—-]+", "", text)


def _tokens(text: str) -> list[re.Match[str]]:
    return list(_WORD.finditer(text))


def _population_switch(body: str, had_opener: bool, topic: str = "") -> tuple[int, int] | None:
    """(start, end) in ``body`` of the group a follow-up switches to, or None: a population word
    (:mod:`chains.populations`) right after a frame word ("about", "in", "among", "for", up to
    three words between: "in radiation oncology department chairs"), or among the first words of an
    elliptic follow-up ("and adults doing the WAIS-IV ..."). A generic word ("people",
    "patients") switches only when qualified ("in people with Chagas disease"). The group runs
    from the word after the frame to the end of its clause."""
    toks = _tokens(body)
    words = [t.group().lower() for t in toks]
    topic_words = _words(topic)
    for j, w in enumerate(words):
        if not is_population(w) or is_food_animal(w, words):
            continue
        after = words[j + 1] if j + 1 < len(words) else ""
        if (w in ANIMALS and after and body[toks[j].end() : toks[j + 1].start()] == " "
                and not is_population(after) and after not in _STOP_AFTER
                and after not in _CLAUSE_VERB and (j == 0 or words[j - 1] not in _FRAME)
                and is_food_animal(w, topic_words)):
            continue  # "and fish oil?" after a question on kids: what is taken, not who
        if w in GENERIC and after not in ("with", "who", "on", "having", "in", "after"):
            continue
        start = None
        for back in range(1, 5):
            if j - back < 0:
                break
            if words[j - back] in _FRAME:
                start = j - back + 1
                break
            if words[j - back] in _CLAUSE_VERB or words[j - back] in _POINTERS:
                break
        if start is None and had_opener and j <= 1:
            start = 0
        if start is None:
            continue
        begin = toks[start].start()
        end_match = _CLAUSE_END.search(body, toks[j].end())
        end = end_match.start() if end_match else len(body)
        # a question verb after the group starts a clause of its own ("kids - can that ..."),
        # except the verb of the group's own relative clause ("kids who *are* infected")
        for k, t in enumerate(toks[j + 1 :], start=j + 1):
            if t.start() >= end:
                break
            if t.group().lower() in _CLAUSE_VERB and words[k - 1] not in _RELATIVE:
                end = t.start()
                break
        return begin, end
    return None


def _qualified(group: str) -> bool:
    """Whether a group names more than who ("kids who survived acute liver failure", "pregnant
    women or new moms", "adults on ECMO"; not "adults", "in kids")."""
    return any(not is_population(w) and w not in QUESTION_STOPWORDS
               for w in _words(group))  # fmt: skip


def _drop_relative_clause(core: str) -> tuple[str, tuple[str, str]]:
    """(``core`` without the relative clause that follows its first group word, what that clause
    said the group has): "kids *who get a liver transplant* end up with lower IQ", "people *who
    had a shunt for hydrocephalus as kids* do as adults", "children *exposed to HIV in the womb
    but not infected* develop normally" (a participle opens it too). The clause runs from "who" /
    "that" / the participle to the verb that carries the topic's predicate
    (:data:`_PREDICATE_VERBS`) or the end; what it said the group has is the object of its first
    "for" / "to" / "with", with that word (("for", "hydrocephalus"), ("to", "HIV"); ("", "") for
    the transplant). A qualified group switch brings its own clause."""
    toks = _tokens(core)
    for i, t in enumerate(toks):
        if not is_population(t.group().lower()):
            continue
        if i + 2 >= len(toks):
            return core, ("", "")
        nxt = toks[i + 1].group().lower()
        if nxt in ("who", "that", "whose"):
            first = i + 3
        elif _participle(nxt):
            first = i + 2
        else:
            return core, ("", "")
        end = len(core)
        for u in toks[first:]:
            if u.group().lower() in _PREDICATE_VERBS:
                end = u.start()
                break
        clause = [u for u in toks[i + 1 :] if u.start() < end]
        had = _clause_object(clause)
        out = re.sub(r"\s{2,}", " ", core[: toks[i].end()] + " " + core[end:]).strip(" ,")
        return out, had
    return core, ("", "")


# the words after which a relative clause names what its group has ("a shunt *for*
# hydrocephalus", "exposed *to* HIV", "diagnosed *with* ADHD")
_HAS_WORDS = ("for", "to", "with")
# past participles that do not end in -ed ("children *born* preterm")
_IRREGULAR_PARTICIPLES = frozenset("born given taken fed bred grown kept".split())


def _participle(word: str) -> bool:
    """Whether ``word`` right after a group word opens a reduced relative clause on it
    ("children *exposed* to", "babies *treated* with", "kids *born* preterm")."""
    return word in _IRREGULAR_PARTICIPLES or (
        len(word) > 4 and word.endswith("ed") and word not in QUESTION_STOPWORDS)


def _clause_object(clause: Sequence[re.Match[str]]) -> tuple[str, str]:
    """(the word, the noun phrase after it) for the clause's first "for" / "to" / "with": the
    phrase's words up to a small word, a group word or a verb of the clause (at most three)."""
    words = [t.group() for t in clause]
    for i, w in enumerate(words):
        if w.lower() not in _HAS_WORDS:
            continue
        out: list[str] = []
        for v in words[i + 1 : i + 4]:
            low = v.lower()
            if (low in QUESTION_STOPWORDS or is_population(low) or low in _CLAUSE_VERB
                    or (out and _participle(low))):
                break
            out.append(v)
        return w.lower(), " ".join(out)
    return "", ""


def _with_what_it_had(group: str, had: tuple[str, str]) -> str:
    """A qualified group switch keeps what the old group's clause said it has ("babies treated
    with choroid plexus coagulation instead of a shunt" + "hydrocephalus"), unless the new clause
    names that itself or has an object of its own after the same word ("kids exposed to mercury"
    for "kids exposed to lead")."""
    word, thing = had
    group_words = _words(group)
    if not thing or set(_words(thing)) <= set(group_words) or word in group_words:
        return group
    return f"{group} with {thing}"


def _replace_population(core: str, group: str, old_group: str = "") -> str:
    """``core`` with its population words taken out and ``group`` in the place of the first
    (appended as "in <group>" when the topic named no group). A group an earlier switch put in
    (``old_group``) is replaced whole; a lower-case word qualifying a population word ("nursing
    students", "surgical residents") goes with it. A switch naming sexes alone replaces the
    topic's one sex word ("preterm boys" -> "preterm girls"; a state only women have, "pregnant",
    goes when the switch names no female), or is added to a topic that names its group in more
    than one word and no sex ("what about boys compared with girls?" after "Do preemies end up
    with a lower IQ as adults?": who they were and when they were tested stay)."""
    if names_sex_only(group):
        sexes = [t for t in _tokens(core) if t.group().lower() in SEXES]
        if len({t.group().lower() for t in sexes}) == 1:  # "preterm boys" -> "preterm girls"
            start = sexes[0].start()
            state = re.search(r"\b(\w+)\s+$", core[:start])
            if (state and state.group(1).lower() in FEMALE_STATES
                    and not FEMALES & {w.lower() for w in _words(group)}):
                start = state.start()  # "pregnant women" -> "men", not "pregnant men"
            return core[:start] + group + core[sexes[0].end() :]
        if not sexes and len(_groups_named(core) - LIFE_STAGES) > 1:
            return f"{core} in {group}"
    if old_group and old_group in core:
        return core.replace(old_group, group, 1)
    all_toks = _tokens(core)
    core_words = [t.group().lower() for t in all_toks]
    # a switch to persons keeps a time of life that modifies the topic ("childhood IQ"); a
    # switch to another time of life ("what about adolescence?") replaces it
    to_persons = not any(w.lower() in LIFE_STAGES for w in _words(group))
    toks = [t for i, t in enumerate(all_toks)
            if (is_population(t.group()) or is_possessive_population(t.group()))
            and not is_food_animal(t.group(), core_words)
            and not (to_persons and _modifies_next(core, all_toks, i))]  # fmt: skip
    if not toks:
        return f"{core} in {group}".strip()
    first = all_toks.index(toks[0])
    # a word before a possessive group is no qualifier of it ("reading kids' X-rays")
    if first > 0 and not is_possessive_population(toks[0].group()):
        mod = all_toks[first - 1].group()
        if (mod.islower() and mod not in QUESTION_STOPWORDS and len(mod) > 2
                and core[all_toks[first - 1].end() : toks[0].start()] == " "):
            toks = [all_toks[first - 1], *toks]
    out = core[: toks[0].start()] + group
    prev = toks[0].end()
    for t in toks[1:]:
        out += core[prev : t.start()]
        prev = t.end()
    out += core[prev:]
    out = re.sub(r"\b(\w+)'s\b(?=\s*'s)", r"\1", out)
    out = re.sub(r"\s+'s\b", "", out)
    out = re.sub(r"\b(or|and|of|with|in)\s+(?=(?:or|and|of|with|in)\b|[,?.]|$)", "", out)
    out = re.sub(r"\b(than|as)\s+(?=[,?.]|$)", "", out)  # "common in women than?", "IQ as?"
    return re.sub(r"\s{2,}", " ", out).strip(" ,")


def _modifies_next(core: str, toks: Sequence[re.Match[str]], i: int) -> bool:
    """Whether token ``i`` is a time-of-life word modifying the word after it ("*childhood*
    intelligence", not "in childhood"): :func:`chains.populations.is_life_stage_modifier`, the
    two one space apart, no preposition before it."""
    if i + 1 >= len(toks) or core[toks[i].end() : toks[i + 1].start()] != " ":
        return False
    if i > 0 and toks[i - 1].group().lower() in _PREPOSITIONS:
        return False
    nxt = toks[i + 1].group()
    return nxt.lower() not in QUESTION_STOPWORDS and is_life_stage_modifier(toks[i].group(), nxt)


def _bare_switch(body: str) -> str | None:
    """The first clause of an elliptic follow-up when it is a bare noun phrase ("depression",
    "the Niigata poisoning", "their motor skills"), else None."""
    m = _CLAUSE_END.search(body)
    clause = body[: m.start()] if m else body
    words = [w.lower() for w in _WORD.findall(clause)]
    if not words or words[0] in _CLAUSE_VERB or any(w in _CLAUSE_VERB for w in words):
        return None
    if not _own_terms(clause):
        return None
    return clause.strip()


def _switch_into_clause(clause: str, switch: str, core: str,
                        similar: Similarity | None) -> str | None:
    """The question after a bare switch with the switch in place of the pronoun that stands for
    it ("what about too much iodine - can *that* lower kids' IQ?" -> "can too much iodine lower
    kids' IQ"), when the switch names a thing of its own (not only how much or when of the
    topic's: "high doses") and the clause is a question (it opens with a question verb) that
    restates the topic's other side (:func:`_restates`) and points back at nothing else; else
    None."""
    toks = _tokens(clause)
    if not toks or toks[0].group().lower() not in _CLAUSE_VERB:
        return None
    if not [w for w in _own_terms(switch) if w not in _RELATIONAL]:
        return None  # "what about high doses - do they harm memory?": doses of the topic's
    for i, t in enumerate(toks):
        if t.group().lower() not in _SWITCH_POINTERS:
            continue
        others = " ".join(u.group() for j, u in enumerate(toks) if j != i)
        if any(w in _POINTERS for w in _words(others)) or not _restates(others, core, similar):
            return None
        return clause[: t.start()] + switch + clause[t.end() :]
    return None


def _restates(clause: str, topic: str, similar: Similarity | None) -> bool:
    """Whether ``clause`` names, in its words or alike ones (``COUNTERPART_BAR``), a concept of
    the topic: the other side of the relation it asks about ("can that lower *kids' IQ*", "are
    *smarter people* more likely to get it" for "being highly intelligent"), not only how the
    switch itself fares ("do they get better over time")."""
    from grounding.concepts import question_concepts

    topic_terms = content_terms(topic)
    mine = [w for w in _own_terms(clause) if w not in _LIGHT_VERBS and w not in _RELATIONAL]
    if any(_has(topic_terms, w) for w in mine):
        return True
    theirs = [c.text for c in question_concepts(topic)]
    if similar is None or not mine or not theirs:
        return False
    return any(max(similar(m, theirs)) >= COUNTERPART_BAR for m in mine)


# words that say how much, when or in what form of something else ("high *doses*", "*exposure*
# before birth"): a switch made only of them names nothing without the topic's subject
_RELATIONAL = frozenset(
    """
    dose doses dosage dosages amount amounts level levels exposure exposures intake intakes use
    concentration concentrations duration timing quantity quantities form forms type types kind
    kinds high higher low lower much more less large larger small smaller long longer short
    shorter early earlier late later too very daily regular heavy light
    """.split()
)


# verbs a relative clause may have and still only point back ("older adults who *get* one")
_LIGHT_VERBS = frozenset(
    "get gets got getting have has had having do does did take takes took taking use uses used "
    "using need needs needed receive receives received".split()
)


def _without_pointing_clause(group: str) -> str:
    """A group without a relative clause that only points back at the topic ("older adults
    *who get one*", "kids *who have it*"): it says nothing the topic does not."""
    m = re.search(r"\s+(?:who|that|which)\s+(.*)$", group, re.IGNORECASE)
    if m is None:
        return group
    said = [w for w in _words(m.group(1))
            if w not in _POINTERS and w not in _LIGHT_VERBS and w not in QUESTION_STOPWORDS]
    return group if said else group[: m.start()]


def asks_for_a_cause(question: str) -> bool:
    """Whether ``question`` asks if something causes what the conversation spoke of ("could the
    sedatives given around the operation be the cause?"): it names an exposure and leans on the
    topic for its outcome, so it is no topic of its own however complete it reads."""
    return _CAUSE_OF_TOPIC.search(question) is not None


def _own_terms(text: str) -> list[str]:
    """The content words of ``text`` that name something (no pointers, no generic group)."""
    return [t for t in content_terms(text) if t not in _POINTERS and t not in GENERIC]


def _replace_counterpart(core: str, switch: str, similar: Similarity | None) -> str:
    """``core`` with the words ``switch`` stands in for replaced by it (their MiniLM cosine with
    the switch >= ``COUNTERPART_BAR``); without a counterpart the switch is added."""
    switch = re.sub(r"^(?:the|a|an|their|its|his|her)\s+", "", switch, flags=re.IGNORECASE)
    # a word that frames the question ("later", "higher", "predict") is no counterpart: "what
    # about dying earlier?" names an outcome, it does not replace the "later" of "later life"
    toks = [
        t for t in _tokens(core)
        if t.group().lower() not in QUESTION_STOPWORDS and not is_population(t.group().lower())
        and t.group().lower() not in QUESTION_FRAME and len(t.group()) > 2
    ]  # fmt: skip
    if similar is not None and toks:
        own = {w.lower() for w in _own_terms(switch)}
        cos = similar(switch, [t.group() for t in toks])
        hit = [t for t, c in zip(toks, cos, strict=True)
               if c >= COUNTERPART_BAR and t.group().lower() not in own]  # fmt: skip
        if hit:
            start, end = _restated_span(core, switch, hit[0], hit[-1])
            out = core[:start] + switch
            prev = end if start < hit[0].start() or end > hit[-1].end() else hit[0].end()
            for t in hit[1:]:
                if t.start() >= prev:
                    out += core[prev : t.start()]
                    prev = t.end()
            out += core[prev:]
            return re.sub(r"\s{2,}", " ", out).strip(" ,")
    return f"{core}, {switch}"


# small words a switch's restated phrase may pass over ("hearing loss in *one* ear")
RESTATED_GAP = 2


def _restated_span(core: str, switch: str, first: re.Match[str],
                   last: re.Match[str]) -> tuple[int, int]:
    """The span of ``core`` a switch replaces: its counterparts (``first`` .. ``last``) and the
    words of the same phrase it restates beside them ("what about hearing loss in both ears?"
    for "children with hearing loss in one ear": "hearing loss in one ear", not "ear" alone).
    A restated side needs a content word of the switch; up to ``RESTATED_GAP`` small words it
    does not have may lie between (the "one" of "in one ear")."""
    from indexing.tokenize import STOPWORDS

    said = {w.lower() for w in _WORD.findall(switch)}
    toks = _tokens(core)
    starts = [t.start() for t in toks]
    i, j = starts.index(first.start()), starts.index(last.start())

    def reach(order: Sequence[int], edge: int) -> int:
        best, gap = edge, 0
        for k in order:
            near, far = sorted((k, best))
            if re.search(r"[,;:?!()]", core[toks[near].end() : toks[far].start()]):
                break
            w = toks[k].group().lower()
            if w in said and w not in STOPWORDS:
                best, gap = k, 0
            elif (w in said or w in STOPWORDS) and gap < RESTATED_GAP:
                gap += 1
            else:
                break
        return best

    lo = reach(range(i - 1, -1, -1), i)
    hi = reach(range(j + 1, len(toks)), j)
    return toks[lo].start(), toks[hi].end()


def _added_words(text: str) -> tuple[str, ...]:
    """A follow-up's own words as it wrote them (content words and the words the index keeps,
    "effects" of "side effects"; no pointers), at most ``CARRY_MAX``."""
    from indexing.tokenize import STOPWORDS

    keep = set(_own_terms(text)) | {
        w.lower() for w in _WORD.findall(text)
        if w.lower() not in STOPWORDS and w.lower() not in _POINTERS and len(w) > 2
        and w.lower() not in GENERIC and w.lower() not in _HOW
    }  # fmt: skip
    out: list[str] = []
    for w in _WORD.findall(text):
        lw = w.lower()
        if lw in keep and lw not in (o.lower() for o in out):
            out.append(w)
    return tuple(out[:CARRY_MAX])


def _names_something(text: str, corpus: CorpusTerms | None) -> bool:
    """Whether a follow-up names a concept of its own (grounding.concepts.Concept.
    names_a_topic)."""
    from grounding.concepts import question_concepts

    cleaned = " ".join(_added_words(text))
    return bool(cleaned) and any(c.names_a_topic for c in question_concepts(cleaned, corpus))


def refers_to_a_study(question: str) -> bool:
    """Whether ``question`` singles out a study the conversation brought up ("was the dental
    filling one a randomized trial?", "how big was that Swedish registry study?")."""
    return _STUDY_REFERENCE.search(question) is not None


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _reaches_back(
    question: str, previous: Resolution, earlier: Sequence[Resolution]
) -> Resolution | None:
    """The earlier turn a follow-up reaches back to past the last one: it names with a
    determiner a group ("on the girls", "the kids'": the same MeSH check tag as the topic's
    "children") that the current topic no longer holds and an earlier topic did (the latest
    such turn), else None. "A child's genotype" names one as well: after "babies fed formula",
    the children of the turns before."""
    named = [m.group(1).lower() for m in _NAMED_GROUP.finditer(question)]
    named = [w for w in named if is_population(w) and w not in GENERIC]
    current = _groups_named(previous.core)
    for w in named:
        group = _group_key(w)
        if group in current:
            return None
        for res in reversed(earlier):
            if res is not previous and group in _groups_named(res.core):
                return res
    return None


# check tags whose words are other names of one age group ("kids", "children"); a word that
# also says the sex ("girls") is a group of its own
_AGE_TAGS = frozenset(
    ["Infant, Newborn", "Infant", "Child, Preschool", "Child", "Adolescent", "Adult",
     "Middle Aged", "Aged"]
)
_SEXED = frozenset("boy boys girl girls".split())


def _group_key(word: str) -> str:
    """One key for the words that name one group: an age group's check tag ("kids" and
    "children": Child), else the word in the singular ("girls": girl)."""
    tag = heading_of(word)
    if tag in _AGE_TAGS and word not in _SEXED:
        return tag
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


def _groups_named(text: str) -> set[str]:
    """The groups a text names (:func:`_group_key`), possessives too ("children's IQ")."""
    words = (re.sub(r"['\u2019]s?$", "", w) for w in _words(text))
    return {_group_key(w) for w in words if is_population(w)}


def _study_detail(previous: Resolution, body: str) -> Resolution:
    """A detail of a study the last turns found: their topic and their words, then its own."""
    rest = _unled(_OPENER.sub("", body, count=1).strip().rstrip("?.! "))
    added = tuple(dict.fromkeys(previous.added + _added_words(rest)))[: CARRY_MAX + 4]
    standalone = f"{previous.core}: {' '.join(added)}" if added else previous.core
    return Resolution(standalone.strip() + "?", "detail", previous.core, added, previous.group,
                      condition=previous.condition, lead=previous.lead)


def _carried(previous: Resolution, rest: str, *, switched: bool,
             corpus: CorpusTerms | None) -> tuple[str, ...]:
    """The words a resolved follow-up adds to the topic: its own (``rest``), and the last
    turn's where it leans on them."""
    added = _added_words(rest)
    if _points_to_last_thing(previous, rest, switched):
        # "did their brain scans change with it?" after the iPad therapy app: "it" is the app
        return tuple(dict.fromkeys(previous.added + added))[:CARRY_MAX]
    if not added and previous.added and not (switched and (previous.aside
                                                              or previous.kind == "detail")):
        # "was that a big study?": the last turn's study; "and in dental students?" after "what
        # about how they do on clinical placements?": the placements, in dental students; but
        # "and in adults with NF1?" after "can a statin fix that?" asks the topic in adults
        return previous.added
    if (not _names_something(rest, corpus) and previous.added and not switched
            and previous.kind != "detail"):
        # a study detail's words ("how many kids were followed in that trial?") describe that
        # study, not the topic: a later turn asking something of its own leaves them behind
        return tuple(dict.fromkeys(previous.added + added))[:CARRY_MAX]
    return added


def _points_to_last_thing(previous: Resolution, rest: str, switched: bool) -> bool:
    """Whether a follow-up's "it" (or "this", "that") is the thing the last turn brought."""
    return previous.new_thing and not switched and bool(_THING_POINTERS & set(_words(rest)))


def resolve_next(
    previous: Resolution | None,
    question: str,
    corpus: CorpusTerms | None = None,
    similar: Similarity | None = None,
    earlier: Sequence[Resolution] = (),
) -> Resolution:
    """Resolve ``question`` against the conversation so far (``previous``: the last turn's
    resolution, None for the first turn; ``earlier``: every turn's resolution so far, oldest
    first)."""
    body, announced = strip_new_topic(question)
    if previous is None or announced:
        kind = "first" if previous is None else "new_topic"
        return Resolution(body.strip(), kind, topic_phrase(body), lead=topic_lead(body))
    back = _reaches_back(body, previous, earlier)
    if back is not None:
        # "how big was that Swedish registry study on the girls?": the girls' topic, two turns
        # back, before the switch to boys
        previous = Resolution(back.standalone, back.kind, back.core, (), back.group,
                              condition=back.condition, lead=back.lead)
    if refers_to_a_study(body):
        return _study_detail(previous, body)
    leans = asks_for_a_cause(body)
    if not leans and names_its_own_slots(body, previous.core):
        # "Does eating fish while pregnant make the baby smarter?" after "Can vitamin D pills
        # make kids smarter?": a question of its own, searched alone; it is the new topic
        return Resolution(body.strip(), "new_topic", topic_phrase(body), lead=topic_lead(body))
    if not leans and names_own_topic(body, corpus):
        # it may lead the search (retrievers.followup.topic_weights); the conversation's topic
        # with its words is the context form, and it is the next turn's topic
        added = _added_words(body)
        context = f"{previous.core}: {' '.join(added)}?" if added else body.strip()
        return Resolution(context, "own_topic", topic_phrase(body), lead=topic_lead(body))
    had_opener = bool(_SWITCH_OPENER.match(body))
    rest = _OPENER.sub("", body, count=1).strip().rstrip("?.! ")
    core, rest, new_group, asked, switch, condition = _switched(previous, rest, had_opener,
                                                               similar)
    switched = new_group != ""
    added = () if asked else _carried(previous, rest, switched=switched, corpus=corpus)
    lead = "" if asked else previous.lead
    standalone = core if not added else f"{core}: {' '.join(added)}"
    kept = new_group if switched else previous.group
    focus = ""
    if _points_to_last_thing(previous, rest, switched):
        focus = focus_query(core, added, new_group, corpus)  # with the thing "it" stands for
    elif len(_own_terms(rest)) >= FOCUS_MIN_TERMS:
        focus = focus_query(core, _added_words(rest), new_group, corpus)
    elif switched:
        focus = focus_query(core, _added_words(rest), in_abstracts_words(new_group), corpus)
    elif switch:
        focus = focus_query(previous.core, _added_words(f"{switch} {rest}"),
                            in_abstracts_words(previous.group) if previous.group else "", corpus)
    aside = not had_opener and bool(_added_words(rest)) and not leans
    new_thing = (aside and not switched and not (_THING_POINTERS & set(_words(rest)))
                 and _names_something(rest, corpus))
    return Resolution(standalone.strip() + "?", "resolved", core, added, kept, focus, aside,
                      new_thing, condition, lead)


def _switched(previous: Resolution, rest: str, had_opener: bool,
              similar: Similarity | None) -> tuple[str, str, str, bool, str, tuple[str, str]]:
    """(the topic after the follow-up's switch, the follow-up's words left, the group switched
    to or "", whether the follow-up asked a question of its own about the switch, the words of a
    bare switch that replaced their counterpart or "", what the topic's group had): a group
    replaces the topic's group; a bare switch replaces its counterpart, or, when a question
    about it follows ("and ALS - are smarter people more likely to get it?"), that question is
    the topic and nothing of the earlier turns' words is carried."""
    core, condition = previous.core, previous.condition
    group = _population_switch(rest, had_opener, core)
    if group is not None:
        new_group = _without_pointing_clause(rest[group[0] : group[1]].strip())
        if not previous.group and _qualified(new_group):
            # "kids who survived acute liver failure" for "kids who get a liver transplant"
            core, condition = _drop_relative_clause(core)
        # "adults on treatment" after "kids who are infected" (with HIV, the topic's): with HIV
        new_group = _with_what_it_had(new_group, condition)
        core = _replace_population(core, new_group, previous.group)
        rest = (rest[: group[0]] + " " + rest[group[1] :]).strip()
        return core, _unled(rest), new_group, False, "", condition
    if had_opener and (switch := _bare_switch(rest)) is not None:
        after = _unled(rest[len(switch) :])
        merged = _switch_into_clause(after, switch, core, similar)
        if merged is not None:
            return topic_phrase(merged), "", "", True, "", ("", "")
        return _replace_counterpart(core, switch, similar), after, "", False, switch, condition
    return core, _unled(rest), "", False, "", condition


def topic_anchor(core: str, corpus: CorpusTerms | None = None) -> list[str]:
    """The topic's anchor: its group words and its subject, the first concept that is not only
    a group and has an essential word (else the first such concept at all): "needed ECMO",
    "emotional intelligence", "cannabis". A question is usually "does <subject> change
    <outcome> in <group>"; a follow-up brings its own outcome or exposure."""
    from grounding.concepts import question_concepts

    words = _words(core)
    groups: list[str] = []
    subject = ""
    for c in question_concepts(core, corpus):
        cw = c.text.split()
        group = [w for w in cw if (is_population(w) or is_possessive_population(w))
                 and not is_food_animal(w, words)]  # fmt: skip
        for w in group:
            if w.lower() not in (g.lower() for g in groups):
                groups.append(w)
        rest = [w for w in cw if w not in group]
        essential = {e.lower() for e in c.essential}
        if not subject and (len(rest) >= 2 or any(w.lower() in essential for w in rest)):
            subject = " ".join(rest)
    return [*groups[:FOCUS_GROUPS], *([subject] if subject else [])]


def focus_query(core: str, own: Sequence[str], new_group: str = "",
                corpus: CorpusTerms | None = None) -> str:
    """The follow-up's own words with only the topic's anchor (:func:`topic_anchor`; a group
    switch's new group in place of the old one)."""
    anchor = topic_anchor(core, corpus)
    if new_group:
        anchor = [a for a in anchor if not all(is_population(w) for w in _words(a))]
        anchor.insert(0, new_group)
    return " ".join([*anchor, *own]).strip()


def resolve_conversation(
    questions: Sequence[str],
    corpus: CorpusTerms | None = None,
    similar: Similarity | None = None,
) -> list[Resolution]:
    """Every turn of a conversation resolved, in order (see the module docstring)."""
    out: list[Resolution] = []
    for q in questions:
        out.append(resolve_next(out[-1] if out else None, q, corpus, similar, out))
    return out


def standalone_question(
    question: str,
    previous_questions: Sequence[str],
    corpus: CorpusTerms | None = None,
    similar: Similarity | None = None,
) -> Resolution:
    """The follow-up ``question`` resolved after ``previous_questions`` (the user's own words,
    oldest first)."""
    turns = [q for q in previous_questions if q.strip()]
    return resolve_conversation([*turns, question], corpus, similar)[-1]


def embedding_similarity(encoder: object) -> Similarity:
    """:data:`Similarity` from a sentence encoder (``encode(texts)`` -> L2-normalised rows)."""

    def similar(phrase: str, words: Sequence[str]) -> Sequence[float]:
        rows = encoder.encode([phrase, *words])  # type: ignore[attr-defined]
        return [float(x) for x in rows[1:] @ rows[0]]

    return similar


def _slots(question: str) -> tuple[int, int]:
    """(groups, other concepts) a question names: its concepts
    (:func:`grounding.concepts.question_concepts`, maximal runs of content words between the
    words that frame it) made only of population words (:mod:`chains.populations`: "pregnant
    women", "baby"), and the others (an exposure or an outcome: "eating fish", "adult
    mortality"). Runs made only of pointers or words for a study are no slot."""
    from grounding.concepts import question_concepts

    groups = others = 0
    for concept in question_concepts(question):
        words = [w for w in _words(concept.text) if w not in _POINTERS]
        if not words or all(w in _STUDY_WORDS for w in words):
            continue
        if all(is_population(w) for w in words):
            groups += 1
        else:
            others += 1
    return groups, others


def names_its_own_slots(question: str, topic: str) -> bool:
    """A complete question (:func:`chains.queries.complete_question`: nothing in it points
    back, continues or switches) that names its own exposure and outcome (two concepts that
    are no group), or its own group and an outcome (:func:`_slots`), with
    ``NEW_SUBJECT_MIN_TERMS`` content words: a question of its own, searched alone, even when
    it shares a word with the conversation's ``topic`` ("Does eating fish while pregnant make
    the baby smarter?" after "Can vitamin D pills make kids smarter?": "smarter"). A follow-up
    that switches one slot ("what about adults?", "and fish oil?") names one slot and leans on
    the topic for the others; one that speaks of "the study" / "the trial" asks about what the
    conversation found."""
    if not topic or not complete_question(question) or _THE_STUDY.search(question):
        return False
    if len(content_terms(question)) < NEW_SUBJECT_MIN_TERMS or refers_to_a_study(question):
        return False
    groups, others = _slots(question)
    return others >= 2 or (groups >= 1 and others >= 1)


def new_subject(question: str, topic: str) -> bool:
    """A complete question (:func:`chains.queries.complete_question`) that shares no content
    word with the conversation's ``topic``: another subject, even when no concept of it is
    rare enough to be essential ("Is it possible to predict the future mental state of a
    patient using the available data?" after a question on gang violence). A short one ("how
    long did the benefit last?", three content words) asks about what was said: it needs
    ``NEW_SUBJECT_MIN_TERMS`` content words to carry a subject of its own. A long one
    (``LONG_QUESTION_TERMS`` content words or more, no "and" / "what about" opening it) is
    another subject even with a pronoun or "even" in it: they point inside the question ("does
    a 6-month-old baby's sensitivity to number predict *their* maths ability ...")."""
    own = content_terms(question)
    if not topic or len(own) < NEW_SUBJECT_MIN_TERMS:
        return False
    if not complete_question(question) and (
        len(own) < LONG_QUESTION_TERMS or _SWITCH_OPENER.match(question)
    ):
        return False
    return not any(_has(content_terms(topic), w) for w in own)


def plan_followup(
    question: str,
    previous_questions: Sequence[str],
    corpus: CorpusTerms | None = None,
    similar: Similarity | None = None,
) -> tuple[str, list[str], dict[str, object]]:
    """(text to search as written, previous questions, options of
    :func:`retrievers.followup.retrieve_followup`) for a follow-up: the one place the chat and
    ``eval conversations`` decide how a follow-up is searched. A follow-up announcing a new
    topic is searched alone (nothing of the old topic); any other is searched as written and as
    resolved against the conversation (path ``resolved``; one with a topic of its own may lead:
    ``topic_weights``)."""
    from chains.queries import needs_context

    turns = [q for q in previous_questions if q.strip()]
    resolutions = resolve_conversation([*turns, question], corpus, similar)
    res = resolutions[-1]
    if res.kind == "new_topic":
        return res.standalone, [], {"stands_alone": True}
    topic = resolutions[-2].core if len(resolutions) > 1 else ""
    return question, list(previous_questions), {
        "rewrite": res.standalone,
        "resolved": True,
        "stands_alone": not needs_context(question),
        "own_topic": res.kind != "detail" and not asks_for_a_cause(question) and (
            names_own_topic(question, corpus) or new_subject(question, topic)),
        "own_words": _names_something(question, corpus),
        "focus": res.focus or None,
        "lead": res.shown_lead,
    }
