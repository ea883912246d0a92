"""Fit the answer prompt into the context window.

Budget = ``context_window - max_new_tokens``. Lowest-ranked sources go first (at least one
stays), then older history turns, and last the remaining passages are shortened word by word.
The sources kept are exactly the ones the prompt shows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage

TokenCounter = Callable[[Sequence[BaseMessage]], int]
MessageBuilder = Callable[..., list[BaseMessage]]  # (docs, history[, question]) -> messages


@dataclass
class Fitted:
    messages: list[BaseMessage]
    documents: list[Document]
    history: list[tuple[str, str]] = field(default_factory=list)
    tokens: int = 0
    dropped_sources: int = 0
    dropped_turns: int = 0
    truncated: bool = False


def fit_prompt(
    build: MessageBuilder,
    documents: Sequence[Document],
    history: Sequence[tuple[str, str]],
    count: TokenCounter,
    budget: int,
    *,
    question: str | None = None,
) -> Fitted:
    """With ``question``, ``build`` takes it as a third argument and, when sources and history
    are already cut to the bone, the question itself is shortened last: the prompt always fits."""
    docs = list(documents)
    hist = list(history)
    args: tuple[str, ...] = () if question is None else (question,)
    build = _with_question(build, args)
    msgs = build(docs, hist)
    tokens = count(msgs)
    dropped_docs = dropped_turns = 0
    while tokens > budget and len(docs) > 1:
        docs.pop()
        dropped_docs += 1
        msgs = build(docs, hist)
        tokens = count(msgs)
    while tokens > budget and hist:
        hist.pop(0)
        dropped_turns += 1
        msgs = build(docs, hist)
        tokens = count(msgs)
    truncated = False
    while tokens > budget and docs:
        words = docs[-1].page_content.split()
        if words and words[-1] == "…":  # cut before: without this, 8 words + "…" loop forever
            words.pop()
        if len(words) <= 8:
            break
        # cut proportionally to the overshoot (at least 10%) to converge in a few steps
        keep = max(8, int(len(words) * min(0.9, budget / max(tokens, 1))))
        docs[-1] = Document(page_content=" ".join(words[:keep]) + " …", metadata=docs[-1].metadata)
        truncated = True
        msgs = build(docs, hist)
        tokens = count(msgs)
    if tokens > budget and question is not None:
        words = question.split()
        while tokens > budget and len(words) > 1:
            keep = max(1, int(len(words) * min(0.9, budget / max(tokens, 1))))
            words = words[:keep]
            build = _with_question(build.__wrapped__, (" ".join(words) + " …",))  # type: ignore
            msgs = build(docs, hist)
            tokens = count(msgs)
            truncated = True
    return Fitted(msgs, docs, hist, tokens, dropped_docs, dropped_turns, truncated)


def _with_question(build: MessageBuilder, args: tuple[str, ...]) -> MessageBuilder:
    def bound(docs: list[Document], hist: list[tuple[str, str]]) -> list[BaseMessage]:
        return build(docs, hist, *args)

    bound.__wrapped__ = build  # type: ignore[attr-defined]
    return bound
