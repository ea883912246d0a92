"""Release generated text sentence by sentence, only what passes the support check.

:class:`GroundedStream` buffers the LLM's tokens; a sentence is complete once the next sentence's
first character has arrived (and any citation written after its full stop), then it is checked and
either released in its displayable form (citations repaired) or dropped. :func:`filter_answer`
makes the same decisions over a finished answer: both split with ``split_answer`` (boundaries
depend only on the text before them) and check with the same :class:`SupportChecker`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field

from langchain_core.runnables import RunnableGenerator

from grounding.sentences import split_answer, split_answer_spans
from grounding.support import CheckedSentence, SupportChecker
from grounding.terms import citation_numbers, strip_citations

_OPEN_CITATION = re.compile(r"^\s*\[[^\]]*$")
_TERMINATED = re.compile(r"[.!?][\"'”’)\]]*\s*$")


@dataclass
class FilteredAnswer:
    """The decisions over a whole answer and the text a user sees."""

    sentences: list[CheckedSentence] = field(default_factory=list)

    @property
    def kept(self) -> list[CheckedSentence]:
        return [s for s in self.sentences if s.kept]

    @property
    def text(self) -> str:
        return " ".join(s.text for s in self.kept)


class GroundedStream:
    """Feed token pieces; get back the display text of each sentence as soon as it passes."""

    def __init__(self, checker: SupportChecker) -> None:
        self.checker = checker
        self.decisions: list[CheckedSentence] = []
        self._buffer = ""
        self._released = 0

    def _emit(self, sentence: str) -> str:
        decision = self.checker.check(sentence)
        self.decisions.append(decision)
        if not decision.kept:
            return ""
        sep = " " if self._released else ""
        self._released += 1
        return sep + decision.text

    def feed(self, piece: str) -> str:
        """Add a piece of generated text; return what may be shown now ("" while buffering)."""
        self._buffer += piece
        spans = split_answer_spans(self._buffer)
        parts = [p for _, p in spans]
        if len(parts) < 2:
            return ""
        # The last part may still grow; while it is (the start of) a citation group, the
        # sentence before it may still receive that citation, so it waits too.
        hold = 1
        if _OPEN_CITATION.match(parts[-1]) or not parts[-1].strip("[] \t\n"):
            hold = 2
        ready = parts[:-hold]
        if not ready:
            return ""
        self._buffer = self._buffer[spans[len(ready)][0] :]
        return "".join(self._emit(s) for s in ready)

    def flush(self) -> str:
        """End of the stream: decide whatever is left. A last sentence with no closing
        punctuation was cut off (by the token limit, a stop or the time limit): not shown."""
        parts, self._buffer = split_answer(self._buffer), ""
        out = "".join(self._emit(s) for s in parts[:-1])
        if parts and not _TERMINATED.search(strip_citations(parts[-1])):
            claim = strip_citations(parts[-1])
            cited = citation_numbers(parts[-1])
            self.decisions.append(
                CheckedSentence(parts[-1], claim, cited, [], False, "incomplete")
            )
            return out
        return out + "".join(self._emit(s) for s in parts[-1:])

    @property
    def result(self) -> FilteredAnswer:
        return FilteredAnswer(list(self.decisions))

    def run(self, pieces: Iterable[str]) -> Iterator[str]:
        for p in pieces:
            out = self.feed(p)
            if out:
                yield out
        rest = self.flush()
        if rest:
            yield rest

    async def arun(self, pieces: AsyncIterator[str]) -> AsyncIterator[str]:
        async for p in pieces:
            out = self.feed(p)
            if out:
                yield out
        rest = self.flush()
        if rest:
            yield rest


def filter_answer(text: str, checker: SupportChecker) -> FilteredAnswer:
    """The same decisions as streaming, over a finished answer."""
    return FilteredAnswer([checker.check(s) for s in split_answer(text)])


def grounded_runnable(checker: SupportChecker) -> RunnableGenerator[str, str]:
    """An LCEL step (``prompt | llm | StrOutputParser() | grounded_runnable(checker)``) that
    streams only supported sentences. One checker per question: it remembers released text."""

    def transform(pieces: Iterator[str]) -> Iterator[str]:
        yield from GroundedStream(checker).run(pieces)

    async def atransform(pieces: AsyncIterator[str]) -> AsyncIterator[str]:
        async for out in GroundedStream(checker).arun(pieces):
            yield out

    return RunnableGenerator(transform, atransform, name="grounded_sentences")
