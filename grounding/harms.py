"""Harms as one concept: "side effects" asked, "adverse events" or "toxicity" written.

A clinician asks about a treatment's harms as often as about its benefit, and names them in
words that otherwise only frame a question: "side" is an English stop word, "effects" and
"events" say what is asked of a concept, and "adverse" alone qualifies anything. Read word by
word, "any long-term side effects?" names nothing, so an abstract on a drug's effectiveness was
taken to address a question about its harms. The phrase is one concept, and an abstract names
it when it writes any of the names clinical writing gives harms (MeSH's "Drug-Related Side
Effects and Adverse Reactions" and the words trials report them under: toxicity, tolerability,
safety).
"""

from __future__ import annotations

import re

from indexing.stems import stem

# how a question names harms
ASKED = re.compile(
    r"\b(?:side[\s-]+effects?|adverse\s+(?:drug\s+)?(?:effects?|events?|reactions?))\b",
    re.IGNORECASE,
)
# how an abstract names them
NAMED = re.compile(
    r"\b(?:side[\s-]+effects?|adverse\s+(?:drug\s+)?(?:effects?|events?|reactions?|outcomes?)"
    r"|toxicit(?:y|ies)|tolerab(?:ility|le)|(?:well|poorly)\s+tolerated|safety)\b",
    re.IGNORECASE,
)
# what a sentence names harms by, as stems (grounding.stance reads sentences as stems)
STEMS = frozenset(stem(w) for w in "side adverse toxicity tolerability tolerated safety".split())


def asked_spans(question: str) -> list[tuple[int, int]]:
    """Where ``question`` asks about harms ("side effects", "adverse events"), as spans."""
    return [m.span() for m in ASKED.finditer(question)]


def names_harms(text: str) -> bool:
    """Whether ``text`` (a source's title and abstract) names harms in any of their names."""
    return NAMED.search(text) is not None
