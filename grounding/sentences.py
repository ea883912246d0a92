"""Splitting generated answers into sentences (the abstracts' splitter, :mod:`ingest.sentences`,
with boundaries decided from the text streamed so far)."""

from __future__ import annotations

import re

from ingest.sentences import split_sentences

_LEADING_CITATIONS = re.compile(r"^(?:\s*\[\s*(?:sources?\s*)?\d[\d,;\s–-]*\])+", re.IGNORECASE)


def split_answer_spans(text: str) -> list[tuple[int, str]]:
    """``(start offset, sentence)`` of generated text (``prefix_only`` splitting); citation
    groups written after the full stop ("... improved. [1] Next") stay with the sentence they
    close."""
    out: list[tuple[int, str]] = []
    for s in split_sentences(text, prefix_only=True):
        start, piece = s.start, s.text
        lead = _LEADING_CITATIONS.match(piece)
        if lead and out:
            out[-1] = (out[-1][0], f"{out[-1][1]} {lead.group().strip()}")
            start += lead.end()
            piece = piece[lead.end() :]
            start += len(piece) - len(piece.lstrip())
            piece = piece.strip()
        if piece:
            out.append((start, piece))
    return out


def split_answer(text: str) -> list[str]:
    """The sentences of generated text (see :func:`split_answer_spans`)."""
    return [piece for _, piece in split_answer_spans(text)]
