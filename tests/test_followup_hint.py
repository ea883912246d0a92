"""The hint under a follow-up asked in a mode that answers each question on its own
(app/followup_hint.py); the browser test is tests/test_ui_browser_conversation.py."""

from __future__ import annotations

import pytest

from app.followup_hint import followup_hint
from chains import modes


@pytest.mark.parametrize("question", ["what about adults?", "any long-term side effects?",
                                      "and in adults with NF1?"])  # fmt: skip
def test_a_follow_up_in_plain_or_multi_query_names_the_conversational_button(question: str) -> None:
    for mode in ("plain", "multi-query"):
        hint = followup_hint(mode, True, question)
        assert hint is not None
        assert f"**{modes.mode_buttons()[mode]}** answers each question on its own" in hint
        assert "choose **Conversational**" in hint


def test_no_hint_where_the_question_stands_alone_or_the_mode_follows_up() -> None:
    # mutations caught: the asked-before check dropped (first case), the mode check dropped
    # (second), the needs-context check dropped (third)
    assert followup_hint("plain", False, "what about adults?") is None
    assert followup_hint("conversational", True, "what about adults?") is None
    assert followup_hint("plain", True, "Does iodine supplementation in pregnancy improve "
                                        "children's IQ?") is None
    assert modes.followup_modes() == ("conversational",)
