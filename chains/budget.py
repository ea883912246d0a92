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
MessageBuilder = Callable[[list[Document], list[tuple[str, str]]], list[BaseMessage]]


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
) -> Fitted:
    docs = list(documents)
    hist = list(history)
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
        if len(words) <= 8:
            break
        # cut proportionally to the overshoot (at least 10%) to converge in a few steps
        keep = max(8, int(len(words) * min(0.9, budget / max(tokens, 1))))
        docs[-1] = Document(page_content=" ".join(words[:keep]) + " …", metadata=docs[-1].metadata)
        truncated = True
        msgs = build(docs, hist)
        tokens = count(msgs)
    return Fitted(msgs, docs, hist, tokens, dropped_docs, dropped_turns, truncated)
