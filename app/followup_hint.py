"""A follow-up sent in a mode that answers each question on its own ("what about adults?" in
Plain): the answer cannot be about the conversation, so the chat says so under it and names the
mode button that reads questions against the conversation (:func:`chains.modes.followup_modes`).
Whether the question needs the conversation is :func:`chains.queries.needs_context`, the test the
conversational mode itself uses."""

from __future__ import annotations

from chains import modes
from chains.queries import needs_context


def followup_hint(mode: str, asked_before: bool, question: str) -> str | None:
    """The hint to show after the answer, or None: only when something was asked before in this
    chat, ``mode`` does not follow up, a mode that does exists, and the question cannot stand
    alone."""
    following = modes.followup_modes()
    if not asked_before or mode in following or not following or not needs_context(question):
        return None
    buttons = modes.mode_buttons()
    return (f"This reads as a follow-up, but **{buttons.get(mode, mode)}** answers each "
            "question on its own, so the answer above is not about the conversation so far. "
            f"To ask it as a follow-up, choose **{buttons[following[0]]}** below the message "
            "box and send it again.")
