"""Age groups: which one a question asks about, and which one an article studied.

Two groups, each named by words that name an age and nothing else ("older" and "aged" also
describe ages within any group): the young (children, adolescents, infants, "pediatric") and
the grown (adults, the elderly). A question asks about a group when it names it. A title that
names one scopes the abstract's own question to it (:func:`other_age_group`, for stances). An
article studied a group when its title names people of that group only, or, where the title
names nobody, when its title and abstract name people of that group and never of the other:
"children", "adults", "pediatric" name people; "childhood" is a period of life and "adult
height" a measure (an adult study of ADHD "persisting from childhood" studied adults; a
bone-age study that predicts "adult height" studied neither group by that word).
"""

from __future__ import annotations

import re

YOUNG = frozenset({"child", "children", "childhood", "kid", "kids", "infant", "infants",
                   "adolescent", "adolescents", "adolescence", "teen", "teens", "teenagers",
                   "paediatric", "pediatric", "youth", "preschool", "preschoolers", "toddlers",
                   "newborns", "neonates", "neonatal", "schoolchildren"})  # fmt: skip
# (a hyphenated age such as "middle-aged" reaches these sets as its parts, so none is listed)
GROWN = frozenset({"adult", "adults", "elderly", "seniors", "midlife", "postmenopausal"})
_WORD = re.compile(r"[a-z]+")


def words_of(text: str) -> list[str]:
    """Lower-cased words; a hyphenated or possessive word gives its parts ("middle-aged")."""
    return _WORD.findall(text.lower())


# (the group, the group it excludes)
AGE_GROUPS: tuple[tuple[frozenset[str], frozenset[str]], ...] = ((YOUNG, GROWN), (GROWN, YOUNG))


def other_age_group(title: str, question: str) -> bool:
    """Whether an abstract's title scopes it to an age group the question does not ask about
    ("... methylphenidate in ADULT ADHD", asked about "kids"): then the abstract's own question
    is not the user's, and its findings answer the user only where they state the relation."""
    asked = set(words_of(question.lower()))
    titled = set(words_of(title.lower()))
    return any(titled & group and not asked & group and asked & other
               for group, other in AGE_GROUPS)  # fmt: skip


# An abstract names the people it studied with these: nouns and adjectives for young people
# ("children", "pediatric", "adolescent depression": the depression of adolescents), and for
# grown people the plural, "elderly", or "adult" qualifying a word for people ("adult
# subjects", "adult children"). A period of life ("ADHD persisting from childhood") is when
# something happened, and "adult" before anything else is what young people become ("a
# predictor of adult height", "adult outcomes" of exposure in the womb); neither names who was
# studied.
_YOUNG_PEOPLE = frozenset({"children", "kids", "infants", "adolescents", "teens", "teenagers",
                           "paediatric", "pediatric", "youth", "youths", "preschoolers",
                           "toddlers", "newborns", "neonates", "schoolchildren", "child",
                           "infant", "adolescent", "teen", "teenage"})  # fmt: skip
_GROWN_PEOPLE = frozenset({"adults", "elderly", "seniors", "postmenopausal"})
_GROWN_SINGULAR = frozenset({"adult"})
_PERSONS = frozenset({"subject", "subjects", "patient", "patients", "participant",
                      "participants", "children", "offspring", "survivors", "men", "women",
                      "males", "females", "volunteers", "individuals", "persons", "people",
                      "population", "populations", "sample", "samples", "cohort", "cohorts",
                      "twins", "siblings", "controls", "cases", "outpatients",
                      "inpatients"})  # fmt: skip
STUDIED: tuple[tuple[frozenset[str], frozenset[str]], ...] = (
    (_YOUNG_PEOPLE, _GROWN_PEOPLE), (_GROWN_PEOPLE, _YOUNG_PEOPLE)
)


def people_named(text: str) -> set[str]:
    """The words of ``text`` that name people of an age group (see above); "adult" qualifying a
    word for people is given as "adults"."""
    words = words_of(text)
    named = {w for w in words if w in _YOUNG_PEOPLE or w in _GROWN_PEOPLE}
    for w, after in zip(words, words[1:], strict=False):
        if w in _GROWN_SINGULAR and after in _PERSONS:
            named.add("adults")
    return named


def studies_other_age_group(title: str, abstract: str, question: str) -> bool:
    """Whether a source studied only the age group that the question, naming the other one
    alone, does not ask about: its title names people of that group only ("... opioid use in
    children", whatever its background says of adults), or, where the title names nobody, its
    title and abstract name people of only that group ("children" six times, "adults" never,
    asked about adults). A period of life, "childhood", or a measure, "adult height", names
    nobody: "Childhood IQ and adult mortality" is scoped by its abstract."""
    asked = set(words_of(question.lower()))
    titled = people_named(title)
    named = titled if any(titled & people for people, _ in STUDIED) else people_named(
        f"{title} {abstract}"
    )
    return any(named & people and not named & others and not asked & group and asked & other
               for (group, other), (people, others) in zip(AGE_GROUPS, STUDIED, strict=True))


def asks_one_age_group(question: str) -> bool:
    """Whether ``question`` names one age group and not the other ("... in adults?")."""
    asked = set(words_of(question))
    return any(asked & group and not asked & other for group, other in AGE_GROUPS)
