"""Who a question is about: the population words of a question, by the MeSH check tags.

NLM's indexers tag every article with the groups it studied (MeSH "check tags": Infant, Child,
Adolescent, Adult, Aged, Pregnancy, Female, Male, Humans, Animals and the species under it);
the corpus's own MeSH headings hold them (``pubmedqa_pqal.xml.gz``: Humans 959, Female 785,
Male 703, Middle Aged 542, Adult 492, Aged 414, Adolescent 204, Child 107, Pregnancy 65, Infant
52, Infant, Newborn 49, Animals 44), and the "Persons" branch names groups by what they do
(Students, Nursing; Physicians; Athletes). tests/test_populations_real.py checks that each
heading is in the corpus. Users say "kids", "teens", "older people", "new moms", "rats", so
each heading comes with the lay words that name it. A follow-up that names another group ("what
about adults?") replaces the group of the conversation's topic (:mod:`chains.conversation`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# heading -> the words (lower case, singular and plural) a question uses for it
CHECK_TAGS: dict[str, str] = {
    "Infant, Newborn": "newborn newborns neonate neonates neonatal preterm preemies",
    "Infant": "infant infants baby babies toddler toddlers",
    "Child, Preschool": "preschool preschooler preschoolers",
    "Child": "child children childhood kid kids pediatric paediatric schoolchildren "
    "school-age schoolchild boy boys girl girls",
    "Adolescent": "adolescent adolescents adolescence teen teens teenage teenager teenagers "
    "youth youths juvenile juveniles",
    "Young Adult": "young-adult",
    "Adult": "adult adults adulthood grown-ups",
    "Middle Aged": "middle-aged midlife",
    "Aged": "elderly older seniors aged geriatric retirees",
    "Pregnancy": "pregnancy pregnant prenatal antenatal mother mothers mom moms mum mums "
    "maternal postpartum",
    "Female": "woman women female females",
    "Male": "man men male males father fathers paternal",
    "Humans": "people persons individuals humans patients population",
    # the "Persons" branch of MeSH (Students, Nursing; Physicians; Athletes; Survivors ...)
    "Persons": "student students resident residents trainee trainees nurse nurses physician "
    "physicians doctor doctors surgeon surgeons clinician clinicians chair chairs athlete "
    "athletes soldier soldiers veteran veterans worker workers employee employees survivor "
    "survivors twin twins sibling siblings parent parents caregiver caregivers conscript "
    "conscripts",
    "Animals": "animal animals rat rats mouse mice rodent rodents monkey monkeys primate "
    "primates dog dogs cat cats pig pigs sheep bird birds chicken chickens hen hens fish "
    "fishes zebrafish bee bees honeybee honeybees ant ants insect insects",
}

# heading -> the words abstracts use for it, where users' words differ ("teens" -> adolescents)
ABSTRACT_WORDS: dict[str, str] = {
    "Infant, Newborn": "neonates",
    "Infant": "infants",
    "Child": "children",
    "Adolescent": "adolescents",
    "Adult": "adults",
    "Aged": "older adults",
}

POPULATION_WORDS: frozenset[str] = frozenset(
    w for words in CHECK_TAGS.values() for w in words.split()
)

# Words that name a sex and nothing else about who: a follow-up naming only these ("what about
# boys compared with girls?") asks about that sex within a topic that names its group in more
# than one word ("preemies ... as adults"), unless the topic itself names a sex
SEXES = frozenset("boy boys girl girls man men woman women male males female females".split())
FEMALES = frozenset("girl girls woman women female females".split())


def names_sex_only(group: str) -> bool:
    """Whether ``group`` names sexes and nothing else: its words are sex words and the words of a
    comparison ("boys compared with girls", "men and women"; not "boys with an extra X", "older
    women", "mothers")."""
    words = [w.lower() for w in re.findall(r"[A-Za-z-]+", group)]
    return (any(w in SEXES for w in words)
            and all(w in SEXES or w in _COMPARING for w in words))


# States only women have: a switch to another sex leaves them ("pregnant women" -> "men").
FEMALE_STATES = frozenset(
    "pregnant expectant lactating breastfeeding nursing menopausal premenopausal "
    "perimenopausal postmenopausal".split()
)


_COMPARING = frozenset("compared comparing versus vs than to with between and or the".split())


# Words that name nobody in particular: a follow-up naming only these ("how many patients were
# in it?") asks about the same people, it does not switch group.
GENERIC = frozenset("people persons individuals humans patients population".split())


# Check-tag words that name a time of life or a parent's side, not persons. Before another word
# they say when or through whom an exposure came ("*childhood* intelligence", "*prenatal*
# exposure", "*maternal* smoking"), not who was studied, so a switch to another group ("and in
# women?") keeps them and adds its group.
LIFE_STAGES = frozenset(
    "childhood adolescence adulthood midlife prenatal antenatal postpartum neonatal maternal "
    "paternal".split()
)


def is_life_stage_modifier(word: str, next_word: str) -> bool:
    """Whether ``word`` is a time-of-life word (:data:`LIFE_STAGES`) used before ``next_word``,
    the word straight after it, as its modifier: ``next_word`` is a word and names no group."""
    return (word.lower() in LIFE_STAGES and next_word[:1].isalpha()
            and not is_population(next_word) and not is_possessive_population(next_word))


def heading_of(word: str) -> str | None:
    """The MeSH check tag a (lower-cased) word names, or None."""
    for heading, words in CHECK_TAGS.items():
        if word in words.split():
            return heading
    return None


def in_abstracts_words(group: str) -> str:
    """``group`` with the words abstracts use for its check tags added where it lacks them
    ("teens living near ferroalloy plants" -> "... adolescents")."""
    have = {w.lower() for w in re.findall(r"[A-Za-z-]+", group)}
    added: list[str] = []
    for w in sorted(have):
        heading = heading_of(w)
        usual = ABSTRACT_WORDS.get(heading or "", "")
        if usual and not set(usual.split()) & have and usual not in added:
            added.append(usual)
    return " ".join([group, *added])


def is_population(word: str) -> bool:
    return word.lower() in POPULATION_WORDS


def is_possessive_population(word: str) -> bool:
    """Whether ``word`` is a group word in the possessive ("kids'", "children's")."""
    bare = _POSSESSIVE.sub("", word.lower())
    return bare != word.lower() and bare in POPULATION_WORDS


_POSSESSIVE = re.compile(r"['\u2019]s?$")


ANIMALS: frozenset[str] = frozenset(CHECK_TAGS["Animals"].split())


def is_food_animal(word: str, others: Sequence[str]) -> bool:
    """Whether ``word``, an animal word, names what people eat or keep rather than who was
    studied: the question (``others``: its words, lower case) also names a human group
    ("eating *fish* while pregnant", "does *chicken* make kids ...", "mercury in *fish* and
    children's IQ": a group named in the possessive counts too)."""
    if word.lower() not in ANIMALS:
        return False
    people = (_POSSESSIVE.sub("", w) if is_possessive_population(w) else w for w in others)
    return any(is_population(w) and w not in ANIMALS and w not in GENERIC for w in people)
