"""The answer mode beside the chat's message box: one button per mode of
:data:`chains.modes.MODE_TABLE`, the current one highlighted, switched in one click.

They are Chainlit *commands* shown as buttons (``button``), kept selected after a question is sent
(``persistent``), the server's current mode pre-selected (``selected``). Each question arrives with
the highlighted button's text as ``message.command``, so the mode an answer uses is the one the
user sees. Clicking the highlighted button again clears it; the question is then answered in the
configured default (``chains.mode``) and that button is highlighted again
(:func:`mode_for_message` says when to re-send the buttons).
"""

from __future__ import annotations

from typing import Any

from chains import modes

# Lucide icon names (the icons Chainlit's frontend bundles); a mode not listed gets the default.
ICONS = {"plain": "message-square", "conversational": "messages-square", "multi-query": "list-tree"}
DEFAULT_ICON = "circle"


def mode_commands(selected: str) -> list[dict[str, Any]]:
    """Chainlit's ``CommandDict`` list: one persistent button per mode, ``selected`` highlighted."""
    return [
        {
            "id": spec.button_text,
            "icon": ICONS.get(spec.name, DEFAULT_ICON),
            "description": f"{spec.label}: {spec.summary}",
            "button": True,
            "persistent": True,
            "selected": spec.name == selected,
        }
        for spec in modes.MODE_TABLE  # read when called (a test may add a mode)
    ]


def mode_of_command(command: str | None) -> str | None:
    """The mode whose button text is ``command`` (None: no button, or not a mode's)."""
    if not command:
        return None
    return next((name for name, text in modes.mode_buttons().items() if text == command), None)


def mode_for_message(command: str | None, default: str) -> tuple[str, bool]:
    """(the mode a question sent with ``command`` is answered in, whether to re-send the buttons
    so that mode is highlighted again: no button was highlighted)."""
    mode = mode_of_command(command)
    if mode is None:
        return default, True
    return mode, False


def mode_after_resume(mode: str, default: str, resumed: str | None,
                      unselected: bool = False) -> tuple[str, str | None]:
    """(the mode a question in a conversation reopened from the sidebar is answered in, the
    resumed mode to keep for the next question). The page keeps the button it had highlighted
    (a new chat's default) and the server cannot change it, so questions sent with the default's
    button continue in the conversation's stored mode, every one of them, until the user picks
    another mode: another button, or clearing the highlighted one (``unselected``), which asks
    for the default itself."""
    if resumed is None or unselected:
        return mode, None
    if mode == default:
        return resumed, resumed
    return mode, None


async def show_mode_buttons(selected: str) -> None:
    """Send the buttons to this chat's page, ``selected`` highlighted (when none is)."""
    import chainlit as cl
    from chainlit.types import CommandDict

    commands = [CommandDict(**c) for c in mode_commands(selected)]  # type: ignore[typeddict-item]
    await cl.context.emitter.set_commands(commands)
