"""Help (chainlit.md) with what the index holds: Chainlit reads chainlit.md for every page load
(``chainlit.server.get_markdown_str``); the chat's startup handler wraps it so the file's
``{index_summary}`` is replaced by :func:`app.index_summary.help_markdown`."""

from __future__ import annotations

from collections.abc import Callable

from app.index_summary import help_markdown, index_summary
from settings.config import Config


def install_help_summary(config: Callable[[], Config]) -> None:
    """Wrap ``chainlit.server.get_markdown_str`` (once); ``config`` gives the chat's settings."""
    import chainlit.server as _cl_server

    original = _cl_server.get_markdown_str
    if getattr(original, "_index_summary", False):
        return

    def markdown_with_summary(root: str, language: str) -> str | None:
        text = original(root, language)
        return None if text is None else help_markdown(text, index_summary(config()))

    markdown_with_summary._index_summary = True  # type: ignore[attr-defined]
    _cl_server.get_markdown_str = markdown_with_summary
