"""Keep inline citations ``[n]`` that point at a listed source; drop the others.

Handles ``[1]``, ``[1, 2]``, ``[1-3]``, ``[1][3]`` and ``[Source 2]``; a group whose numbers are
all invalid disappears with the space before it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

_GROUP = re.compile(
    r"(\s?)\[\s*(?:sources?\s*)?(\d+(?:\s*(?:[,;–-]|and)\s*\d+)*)\s*\]", re.IGNORECASE
)


# A citation cut off by the token limit at the very end: "[", "[1", "[1, 2".
_UNCLOSED_TAIL = re.compile(r"\s*\[\s*(?:sources?\s*)?[\d,;\s–-]*$", re.IGNORECASE)


def _numbers(spec: str) -> list[int]:
    out: list[int] = []
    for part in re.split(r"\s*(?:[,;]|and)\s*", spec):
        if re.fullmatch(r"\d+\s*[–-]\s*\d+", part):
            a, b = (int(x) for x in re.split(r"[–-]", part))
            if 0 < b - a < 50:
                out.extend(range(a, b + 1))
                continue
        out.extend(int(x) for x in re.findall(r"\d+", part))
    return out


def clean_citations(text: str, n_sources: int) -> str:
    """Remove citations to numbers outside 1..n_sources; normalise kept groups to ``[1, 2]``."""

    def fix(m: re.Match[str]) -> str:
        kept = _fix_group(m, n_sources)
        return m.group(1) + kept if kept else ""

    cleaned = _UNCLOSED_TAIL.sub("", _GROUP.sub(fix, text))
    return re.sub(r"\s+([.,;:])", r"\1", cleaned) if cleaned != text else cleaned


def cited_numbers(text: str) -> list[int]:
    found: list[int] = []
    for m in _GROUP.finditer(text):
        for n in _numbers(m.group(2)):
            if n not in found:
                found.append(n)
    return found


class CitationStreamFilter:
    """Clean citations in a token stream: text inside an open ``[`` is held until it closes.

    ``feed`` returns what can be shown now; ``flush`` the rest at the end. The concatenation of all
    outputs equals ``clean_citations`` applied to each bracket group.
    """

    MAX_HOLD = 24  # a "[" not closed within this many characters is not a citation

    def __init__(self, n_sources: int) -> None:
        self.n_sources = n_sources
        self._held = ""

    def feed(self, piece: str) -> str:
        out = []
        for ch in piece:
            if self._held:
                self._held += ch
                if ch == "]":
                    out.append(self._release())
                elif len(self._held) > self.MAX_HOLD or ch == "\n":
                    out.append(self._held)
                    self._held = ""
            elif ch == "[":
                self._held = "["
            else:
                out.append(ch)
        return "".join(out)

    def _release(self) -> str:
        held, self._held = self._held, ""
        return _GROUP.sub(lambda m: _fix_group(m, self.n_sources), held)

    def flush(self) -> str:
        held, self._held = self._held, ""
        return "" if _UNCLOSED_TAIL.fullmatch(held) else held

    def run(self, pieces: Iterable[str]) -> Iterator[str]:
        for p in pieces:
            out = self.feed(p)
            if out:
                yield out
        rest = self.flush()
        if rest:
            yield rest


def _fix_group(m: re.Match[str], n_sources: int) -> str:
    keep: list[int] = []
    for n in _numbers(m.group(2)):
        if 1 <= n <= n_sources and n not in keep:
            keep.append(n)
    return "[" + ", ".join(str(n) for n in keep) + "]" if keep else ""
