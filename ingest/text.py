"""Text clean-up shared by every parser, so XML and MEDLINE give the same abstract for one record.

An abstract is stored as paragraphs, one per line; a labelled section is written
``LABEL: text`` (the convention of :class:`ingest.models.Article`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

PARAGRAPH_SEP = "\n"

# NLM's placeholder label for an abstract that has no real sections.
_NO_LABEL = {"", "UNLABELLED", "UNLABELED"}

# Section names that publishers' converters sometimes glue onto the previous sentence
# ("...systems.ResultsThe performance..."). A whitelist: ".ClinicalTrials.gov" must not split.
_RUN_TOGETHER_HEADINGS = (
    "Background",
    "Conclusions",
    "Conclusion",
    "Discussion",
    "Findings",
    "Interpretation",
    "Introduction",
    "Key points",
    "Keypoints",
    "Lay summary",
    "Limitations",
    "Methods",
    "Method",
    "Objectives",
    "Objective",
    "Primary outcomes",
    "Purpose",
    "Results",
    "Secondary outcomes",
    "Aims",
    "Aim",
)
_RUN_TOGETHER_RE = re.compile(
    r"(?<=[a-z0-9)\]%][.!?])(" + "|".join(re.escape(h) for h in _RUN_TOGETHER_HEADINGS) + r")"
    r"(?=[A-Z][a-z])"
)

# MEDLINE text flattens labelled sections into one line: "BACKGROUND: ... RESULTS: ...".
# A label is upper case (digits, spaces, &, /, -, commas allowed) and follows a sentence end.
_INLINE_LABEL_RE = re.compile(r"(?<=[.!?)\]]) +(?=[A-Z][A-Z0-9 ,&/()-]{2,60}: )")
_LEADING_LABEL_RE = re.compile(r"^([A-Z][A-Z0-9 ,&/()-]{2,60}): +(.*)$", re.DOTALL)


# Terminal escape sequences (CSI ... final byte, OSC ... BEL/ST) are removed whole; then every C0
# and C1 control character except newline and tab, and the bidirectional overrides/isolates
# (U+202A-202E, U+2066-2069) that can reverse how a title reads on a page or in a terminal.
_ESCAPE_SEQ = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x9b[0-?]*[ -/]*[@-~]"
)
_UNSAFE_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def strip_unsafe(text: str | None) -> str:
    """``text`` without escape sequences, control characters (newline and tab kept) and bidi
    overrides: what may reach a terminal, a page or the index."""
    if not text:
        return ""
    return _UNSAFE_CHARS.sub("", _ESCAPE_SEQ.sub("", text))


def clean(text: str | None) -> str:
    """Collapse every run of whitespace (line wraps, MathML indentation) to one space; drop
    control characters and bidi overrides (:func:`strip_unsafe`)."""
    return " ".join(strip_unsafe(text).split()) if text else ""


def format_section(label: str | None, text: str) -> str:
    """``LABEL: text`` for a labelled section, else the text alone."""
    text = clean(text)
    label = clean(label)
    if label.upper() in _NO_LABEL or not text:
        return text
    return f"{label}: {text}"


def split_run_together(paragraph: str) -> list[str]:
    """Split ``"...end.ResultsThe..."`` into separate ``RESULTS: The...`` paragraphs."""
    parts = _RUN_TOGETHER_RE.split(paragraph)
    if len(parts) == 1:
        return [paragraph]
    out = [parts[0].strip()] if parts[0].strip() else []
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        out.append(f"{heading.upper()}: {body.strip()}")
    return out


def split_inline_labels(text: str) -> list[str]:
    """Break a one-line MEDLINE abstract at its ``LABEL:`` markers into paragraphs."""
    return [p for p in (s.strip() for s in _INLINE_LABEL_RE.split(text)) if p]


def join_abstract(paragraphs: Iterable[str]) -> str:
    """Normalise paragraphs (repairing glued-on headings) and join them with blank lines."""
    out: list[str] = []
    for paragraph in paragraphs:
        paragraph = clean(paragraph)
        if paragraph:
            out.extend(split_run_together(paragraph))
    return PARAGRAPH_SEP.join(out)


def section_label(paragraph: str) -> str | None:
    """The ``LABEL`` of a ``LABEL: text`` paragraph, or None."""
    match = _LEADING_LABEL_RE.match(paragraph)
    return match.group(1) if match else None
