"""Split abstracts into chunks measured in the embedding model's own tokens.

Sentences are packed greedily up to ``chunk_size`` tokens; the next chunk starts with trailing
sentences of the previous one worth at most ``chunk_overlap`` tokens. A sentence longer than a
chunk is cut on token offsets. No chunk is ever contained in its predecessor (a LangChain splitter
bug), which :func:`chunk_text` guarantees by construction and tests check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ingest.metadata import ChunkMeta, chunk_metadata
from ingest.models import Article
from ingest.sentences import SplitRule, sentence_texts

# Chunks are packed from the project's sentence splitter under a plainer rule than abstracts are
# read with: a sentence ends at . ! ? followed by space and an upper-case letter, digit or bracket,
# or at a newline (abstract section paragraphs are separated by newlines); no abbreviation,
# parenthesis or section-label checks. It is the rule every published index was chunked with: a
# different one moves chunk boundaries, so every article would be re-chunked and re-embedded and
# every retrieval figure re-measured (the smarter ``ingest.sentences.ABSTRACTS`` rule changes the
# chunks of most articles; docs/design.md "One sentence splitter").
CHUNKS = SplitRule(
    closers="",
    starts="A-Z0-9(\\[",
    abbreviations=False,
    parentheses=False,
    section_labels=False,
    lines=True,
)


class Tokenizer(Protocol):
    """What chunking needs of a Hugging Face fast tokenizer: token ids, and character offsets."""

    def __call__(
        self, text: str, *, add_special_tokens: bool = ..., return_offsets_mapping: bool = ...
    ) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class Chunk:
    pmid: str
    index: int
    text: str  # the passage (abstract part)
    metadata: dict[str, Any]  # the JSON record ingest.metadata.chunk_metadata writes

    @property
    def chunk_id(self) -> str:
        return f"{self.pmid}-{self.index}"

    @property
    def search_text(self) -> str:
        """What gets embedded and BM25-indexed: the title is part of what is searched."""
        title = ChunkMeta.from_metadata(self.metadata).title
        return f"{title}\n{self.text}" if title else self.text


class TokenChunker:
    """Chunker bound to a tokenizer that returns offsets (a Hugging Face fast tokenizer)."""

    def __init__(self, tokenizer: Tokenizer, chunk_size: int, chunk_overlap: int) -> None:
        if chunk_overlap >= chunk_size:
            raise ValueError("chunk_overlap must be smaller than chunk_size")
        self.tokenizer = tokenizer
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap

    def count(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _cut_long(self, sentence: str) -> list[str]:
        """Cut an over-long sentence into token windows (with overlap) on character offsets."""
        enc = self.tokenizer(sentence, add_special_tokens=False, return_offsets_mapping=True)
        offsets = enc["offset_mapping"]
        step = self.chunk_size - self.chunk_overlap
        pieces = []
        for start in range(0, len(offsets), step):
            window = offsets[start : start + self.chunk_size]
            pieces.append(sentence[window[0][0] : window[-1][1]])
            if start + self.chunk_size >= len(offsets):
                break
        return pieces

    def chunk_text(self, text: str) -> list[str]:
        sentences: list[tuple[str, int]] = []
        for sentence in sentence_texts(text, CHUNKS):
            n = self.count(sentence)
            if n > self.chunk_size:
                sentences.extend((p, self.count(p)) for p in self._cut_long(sentence))
            else:
                sentences.append((sentence, n))
        return [" ".join(s for s, _ in group) for group in self._pack(sentences)]

    def _pack(self, sentences: list[tuple[str, int]]) -> Iterator[list[tuple[str, int]]]:
        current: list[tuple[str, int]] = []
        size = 0
        new_in_current = False  # does ``current`` hold anything beyond the carried-over overlap?
        for sentence, n in sentences:
            if current and size + n > self.chunk_size:
                if new_in_current:
                    yield current
                current, size = self._overlap_tail(current, n)
                new_in_current = False
            current.append((sentence, n))
            size += n
            new_in_current = True
        if current and new_in_current:
            yield current

    def _overlap_tail(
        self, chunk: list[tuple[str, int]], incoming: int
    ) -> tuple[list[tuple[str, int]], int]:
        tail: list[tuple[str, int]] = []
        size = 0
        for sentence, n in reversed(chunk):
            if size + n > self.chunk_overlap or size + n + incoming > self.chunk_size:
                break
            tail.insert(0, (sentence, n))
            size += n
        return tail, size

    def chunk_article(self, article: Article) -> list[Chunk]:
        meta = chunk_metadata(article)
        texts = self.chunk_text(article.abstract) or [article.title]
        return [
            Chunk(
                article.pmid, i, text, {**meta, "chunk_index": i, "chunk_id": f"{article.pmid}-{i}"}
            )
            for i, text in enumerate(texts)
        ]

    def chunk_articles(
        self, articles: Iterable[Article], progress: Callable[[int], None] | None = None
    ) -> list[Chunk]:
        out: list[Chunk] = []
        for article in articles:
            out.extend(self.chunk_article(article))
            if progress:
                progress(1)
        return out
