"""Age groups: which one a question asks about, and which one a source studied.

Two groups, each named by words that name an age and nothing else ("older" and "aged" also
describe ages within any group): the young (children, adolescents, infants, "pediatric") and
the grown (adults, the elderly). A question asks about a group when it names it; an abstract
studied a group when its title names it and not the other, or, with an untitled age, when its
title and abstract together name that group and never the other (an adult study that recalls
"childhood" ADHD names both, and is scoped to neither).
"""

from __future__ import annotations

from grounding.concepts import words_of

YOUNG = frozenset({"child", "children", "childhood", "kid", "kids", "infant", "infants",
                   "adolescent", "adolescents", "adolescence", "teen", "teens", "teenagers",
                   "paediatric", "pediatric", "youth", "preschool", "preschoolers", "toddlers",
                   "newborns", "neonates", "neonatal", "schoolchildren"})  # fmt: skip
# (a hyphenated age such as "middle-aged" reaches these sets as its parts, so none is listed)
GROWN = frozenset({"adult", "adults", "elderly", "seniors", "midlife", "postmenopausal"})
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


def studies_other_age_group(title: str, abstract: str, question: str) -> bool:
    """Whether a source studied only the age group that the question, naming the other one
    alone, does not ask about: its title says so (:func:`other_age_group`), or its title and
    abstract name only that group ("children" six times, "adults" never, asked about adults)."""
    if other_age_group(title, question):
        return True
    asked = set(words_of(question.lower()))
    named = set(words_of(f"{title} {abstract}".lower()))
    return any(named & group and not named & other and not asked & group and asked & other
               for group, other in AGE_GROUPS)  # fmt: skip
