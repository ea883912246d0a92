"""Offline page: Chainlit's stock index.html links Google Fonts and a CDN stylesheet; the chat
serves it without those tags. Installed by the chat's startup handler, not at import."""

from __future__ import annotations

import re
from collections.abc import Callable

_EXTERNAL_TAG = re.compile(
    r"<(?:link|script)\b[^>]*\b(?:href|src)\s*=\s*[\"'](?:https?:)?//[^>]*>(?:\s*</script>)?",
    re.IGNORECASE,
)


def strip_external_tags(html: str) -> str:
    """Remove ``<link>``/``<script>`` tags that load from another host (fonts, CDN CSS)."""
    return _EXTERNAL_TAG.sub("", html)


def install_offline_html() -> None:
    """Wrap ``chainlit.server.get_html_template`` (once) so pages carry no external tags."""
    import chainlit.server as _cl_server

    original: Callable[[str], str] = _cl_server.get_html_template
    if getattr(original, "_offline", False):
        return

    def offline_html_template(root_path: str) -> str:
        return strip_external_tags(original(root_path))

    offline_html_template._offline = True  # type: ignore[attr-defined]
    _cl_server.get_html_template = offline_html_template
