"""The retrieved sources as grounding sees them: whole abstracts, split, embedded once per question.

Retrieval ranks each article by its best chunk and hands on, with each result, the article's whole
abstract (:func:`retrievers.articles.article_text`): evidence and support read that, never the
search again. :class:`SourcePool` embeds every sentence of every source and the question in ONE
batch, which is what keeps grounding at a few tens of ms a question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from langchain_core.documents import Document

from grounding.terms import content_terms, numbers
from ingest.metadata import ChunkMeta
from ingest.sentences import Sentence, split_sentences
from retrievers.articles import article_text


class SentenceEncoder(Protocol):
    """Anything that embeds texts into L2-normalised rows (``indexing.embeddings.Embedder``)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def load_encoder(cfg: Any) -> SentenceEncoder:
    """The project's MiniLM embedder as the index config describes it (same model, same cache)."""
    from indexing.embeddings import build_embedder

    return build_embedder(cfg, queries=True)


@dataclass
class SourceText:
    """One numbered source ([n]) and its abstract's sentences with their terms and numbers."""

    n: int
    abstract: str
    pmid: str = ""
    title: str = ""
    sentences: list[Sentence] = field(default_factory=list)
    terms: list[set[str]] = field(default_factory=list)
    numbers: set[str] = field(default_factory=set)
    words: set[str] = field(default_factory=set)  # every content word of the abstract
    retracted: bool = False  # no evidence, no stance (chains.grounded.without_retracted)

    @classmethod
    def build(cls, n: int, abstract: str, *, pmid: str = "", title: str = "") -> SourceText:
        sentences = split_sentences(abstract)
        return cls(
            n,
            abstract,
            pmid,
            title,
            sentences,
            [content_terms(s.text) for s in sentences],
            numbers(abstract),
            content_terms(abstract, generic=True),
        )


@dataclass
class SourcePool:
    """Sources of one question plus MiniLM vectors of the question and of every sentence.

    ``vectors[i]`` belongs to ``rows[i] = (source index, sentence index)``.
    """

    question: str
    sources: list[SourceText]
    encoder: SentenceEncoder
    question_vector: np.ndarray
    vectors: np.ndarray
    rows: list[tuple[int, int]]

    @classmethod
    def build(
        cls,
        question: str,
        abstracts: Sequence[str],
        encoder: SentenceEncoder,
        *,
        pmids: Sequence[str] = (),
        titles: Sequence[str] = (),
        retracted: Sequence[bool] = (),
    ) -> SourcePool:
        """Split and embed (one batch) the abstracts, numbered [1..] in the given order."""
        sources = [
            SourceText.build(
                i + 1,
                text,
                pmid=pmids[i] if i < len(pmids) else "",
                title=titles[i] if i < len(titles) else "",
            )
            for i, text in enumerate(abstracts)
        ]
        for source, flag in zip(sources, retracted, strict=False):
            source.retracted = flag
        rows = [(si, j) for si, s in enumerate(sources) for j in range(len(s.sentences))]
        texts = [question] + [sources[si].sentences[j].text for si, j in rows]
        matrix = np.asarray(encoder.encode(texts), dtype=np.float32)
        return cls(question, sources, encoder, matrix[0], matrix[1:], rows)

    @classmethod
    def from_documents(
        cls,
        question: str,
        documents: Sequence[Document],
        encoder: SentenceEncoder,
    ) -> SourcePool:
        """Sources numbered as the chain numbers them: document i is [i + 1], read as the whole
        abstract its search result carries."""
        texts = [article_text(d) for d in documents]
        metas = [ChunkMeta.from_metadata(d.metadata) for d in documents]
        return cls.build(
            question,
            texts,
            encoder,
            pmids=[m.pmid for m in metas],
            titles=[m.title for m in metas],
            retracted=[m.retracted for m in metas],
        )

    def source(self, n: int) -> SourceText | None:
        return self.sources[n - 1] if 1 <= n <= len(self.sources) else None

    def sentence_rows(self, source_index: int) -> list[int]:
        return [i for i, (si, _) in enumerate(self.rows) if si == source_index]

    def question_similarities(self) -> np.ndarray:
        """Cosine of the question to every sentence (rows order)."""
        if not len(self.vectors):
            return np.zeros(0, dtype=np.float32)
        similarities: np.ndarray = self.vectors @ self.question_vector
        return similarities
