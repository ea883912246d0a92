"""Negatives for the auto-labelled set: each question asked of an abstract that never names its
exposure (``python -m app eval autolabel --out NEG.jsonl --swap SET.jsonl``).

A rule that lets a source cover a question's concept "by meaning" (a synonym, a lay word, a brand
name) is only as good as its refusals: an abstract about memantine must not answer a question
about inclisiran. The hand-written unanswerable files hold 35 questions; this set holds one per
auto-labelled item. For every item, the exposure of its question (the first essential concept
before the relation word, :func:`grounding.stance.question_relation`) is replaced by the exposure
of the closest other item's question (MiniLM cosine of the questions: a near miss on the same
topic, as a user's unanswerable question is) whose essential words the abstract never writes:
"Is maternal smoking associated with offspring IQ?" asked of a breastfeeding abstract becomes
"Is breastfeeding duration associated with ...", and the reverse. Its answer is none: the
abstract does not address it, and any verdict shown on it is a wrong answer.

The abstract may still state the swapped-in exposure in other words (rarely, for the nearest
question's exposure); the set measures how much more often a rule accepts, not an absolute
error rate.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import numpy as np


class Encoder(Protocol):
    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def exposure_text(question: str, corpus: Any = None) -> tuple[str, tuple[str, ...]] | None:
    """The question's exposure as written and its essential words (with the index's corpus
    counts when ``corpus`` is given, as the chat reads them): the first concept with essential
    words before the relation word ("Does X improve Y?"), else the first such concept; None
    when the question has no essential concept."""
    from grounding.concepts import question_concepts
    from grounding.stance import question_relation

    concepts = [c for c in question_concepts(question, corpus) if c.words]
    sides = question_relation(question).sides
    essential = [(c, side) for c, side in zip(concepts, sides or [0] * len(concepts),
                                              strict=False) if c.essential]  # fmt: skip
    if not essential:
        return None
    before = [c for c, side in essential if side == 0]
    chosen = before[0] if before else essential[0][0]
    return chosen.text, chosen.essential


def swap_items(
    items: Sequence[dict[str, Any]], encoder: Encoder, corpus: Any = None
) -> Iterator[dict[str, Any]]:
    """One negative per item that has an exposure and a neighbour whose exposure its abstract
    never writes (see the module's doc); essential words as ``corpus`` counts them."""
    from grounding.concepts import stems_of
    from indexing.stems import stem

    exposures = [exposure_text(r["question"], corpus) for r in items]
    vectors = np.asarray(encoder.encode([r["question"] for r in items]), dtype=np.float32)
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    for i, row in enumerate(items):
        own = exposures[i]
        if own is None or own[0] not in row["question"]:
            continue
        abstract = stems_of(row["context"])
        for j in np.argsort(-sims[i]):
            other = exposures[int(j)]
            if other is None or items[int(j)]["gold_pmids"] == row["gold_pmids"]:
                continue
            if any(stem(w) in abstract for w in other[1]) or set(other[1]) == set(own[1]):
                continue
            yield {
                **row,
                "qid": f"{row['qid']}~{items[int(j)]['qid']}",
                "question": row["question"].replace(own[0], other[0], 1),
                "answer": None,
                "swapped": [own[0], other[0]],
            }
            break
