"""A follow-up that is no question of its own kind asks what the question it continues asked
(grounding.yes_no.asks_yes_no); the real chain's check is in tests/test_chains_e2e.py."""

from __future__ import annotations

from grounding.yes_no import asks_yes_no

FIRST = "Are stimulant medications effective for ADHD in children?"


def test_an_elliptical_follow_up_of_a_yes_no_question_is_one() -> None:
    # mutation caught: asks_yes_no reading the follow-up alone -> False for each
    assert asks_yes_no("what about adults?", [FIRST])
    assert asks_yes_no("and in teenagers?", [FIRST])
    # the question continued is the last one of its own kind, not "what about adults?"
    assert asks_yes_no("any long-term side effects?", [FIRST, "what about adults?"])


def test_a_follow_up_of_its_own_kind_or_alone_keeps_it() -> None:
    # mutations caught: the wh-question check dropped from _elliptical -> True for the first;
    # the earlier question's kind not read -> True for the second; no conversation -> True
    assert not asks_yes_no("what age were the kids tested at?", [FIRST])
    assert not asks_yes_no("what about adults?", ["What is the IQ of children with NF1?"])
    assert not asks_yes_no("what about adults?", None)
    assert asks_yes_no("Is it safe in pregnancy?", None)
