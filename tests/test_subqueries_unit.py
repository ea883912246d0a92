"""Multi-query's sub-queries (chains.subqueries): only queries about the question are searched,
at least two, near-copies dropped. A bag-of-words encoder stands in for MiniLM here; the real
model and encoder run in tests/test_conversation_real.py."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from chains.subqueries import (
    DUPLICATE_BAR,
    SUBQUERY_BAR,
    derived_queries,
    is_query_form,
    select_queries,
    sub_queries,
)

QUESTION = "Does breastfeeding increase children's IQ?"
CHATTER = "These are all related to the same topic but in different ways."


class BagOfWords:
    """Cosine of lower-cased word sets (stop words and all): enough to tell on-topic lines."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vocab = sorted({w for t in texts for w in self.words(t)})
        rows = np.array([[float(w in self.words(t)) for w in vocab] for t in texts])
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)

    @staticmethod
    def words(text: str) -> set[str]:
        return {w.rstrip("s") for w in re.findall(r"[a-z]+", text.lower())} - {
            "the", "a", "in", "of", "do", "doe", "are", "but", "to", "all", "these"}


def test_a_remark_is_not_a_sub_query_and_the_question_gives_two() -> None:
    subs = sub_queries(QUESTION, CHATTER, 3, BagOfWords())
    assert CHATTER not in subs and len(subs) == 2, subs
    assert subs == derived_queries(QUESTION)
    assert subs[0] == "breastfeeding increase children IQ"


def test_queries_about_the_question_are_kept_in_order() -> None:
    raw = ("1. breastfeeding duration and IQ in children\n2. Please provide your answer below.\n"
           "3. Does breastfeeding raise IQ in children?")  # fmt: skip
    subs = sub_queries(QUESTION, raw, 3, BagOfWords())
    assert subs == ["breastfeeding duration and IQ in children",
                    "Does breastfeeding raise IQ in children?"]  # fmt: skip


def test_an_off_topic_question_and_a_near_copy_are_dropped() -> None:
    kept, sims = select_queries(QUESTION, ["How can we make loans more affordable for everyone?",
                                           "Does breastfeeding increase children's IQ ?"],
                                BagOfWords(), 3)  # fmt: skip
    assert kept == [] and sims[0] < SUBQUERY_BAR and sims[1] >= DUPLICATE_BAR


def test_the_form_of_a_query() -> None:
    assert is_query_form("Is breastfeeding linked to intelligence in children?")
    assert is_query_form("breastfeeding duration IQ")
    for line in ("Can you provide me with a list of all the medical abstracts?",
                 "from flask import Flask, request, jsonify", "Does a year of",
                 "Head circumference at",
                 "Counseling mothers was found to be associated with higher IQ scores at 15.",
                 "Does it?"):  # fmt: skip
        assert not is_query_form(line), line


def test_without_an_encoder_the_parsers_checks_alone_decide() -> None:
    subs = sub_queries(QUESTION, "breastfeeding IQ meta-analysis\nbreastfeeding cognition", 3)
    assert subs == ["breastfeeding IQ meta-analysis", "breastfeeding cognition"]
