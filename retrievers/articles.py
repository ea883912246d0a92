"""An article's text beyond its retrieved chunk, in one place.

Retrieval ranks chunks and hands on each article's best one; grounding (evidence, stances,
support) needs the whole abstract. The retriever attaches it to each result it returns
(:func:`with_article_texts`, from the same build the search ran on), so the layers above read it
from the result (:func:`article_text`) and never call back down into the search for it. The
chunks of one article overlap by whole sentences, which :func:`join_chunks` drops again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain_core.documents import Document

from ingest.metadata import ChunkMeta

# the metadata key of the whole abstract the retriever attaches to each result
ARTICLE_TEXT = "article_text"

ArticleChunks = Callable[[str], list[Document]]  # pmid -> the article's chunks (any order)


def join_chunks(chunks: Sequence[str]) -> str:
    """Re-join consecutive chunks of one abstract, dropping the sentences each repeats from the
    previous one (the chunker's overlap is a run of whole trailing sentences)."""
    text = ""
    for chunk in chunks:
        chunk = chunk.strip()
        if not text:
            text = chunk
            continue
        overlap = 0
        for k in range(min(len(text), len(chunk)), 0, -1):
            if text.endswith(chunk[:k]) and (k == len(text) or text[-k - 1] == " "):
                overlap = k
                break
        text = text + chunk[overlap:] if overlap else f"{text} {chunk}"
    return text


def _chunk_index(doc: Document) -> int:
    return int(doc.metadata.get("chunk_index", 0))


def whole_abstract(chunks: Sequence[Document]) -> str:
    """One article's chunks (any order) joined back into its abstract."""
    return join_chunks([d.page_content for d in sorted(chunks, key=_chunk_index)])


def last_chunk(chunks: Sequence[Document]) -> str | None:
    """The article's last chunk, where an abstract's conclusion is; None without chunks."""
    return max(chunks, key=_chunk_index).page_content if chunks else None


def with_article_texts(documents: Sequence[Document], chunks_of: ArticleChunks) -> list[Document]:
    """Copies of ``documents`` (the results a search returns) each carrying its article's whole
    abstract under :data:`ARTICLE_TEXT` (its own passage when the article's chunks are not
    found); the index's own documents are left as they are."""
    out: list[Document] = []
    for doc in documents:
        pmid = ChunkMeta.pmid_of(doc.metadata)
        text = (whole_abstract(chunks_of(pmid)) if pmid else "") or doc.page_content
        out.append(Document(page_content=doc.page_content,
                            metadata={**doc.metadata, ARTICLE_TEXT: text}, id=doc.id))  # fmt: skip
    return out


def article_text(doc: Document) -> str:
    """The whole abstract of a search result (:func:`with_article_texts`); its retrieved passage
    when it carries none (a result made elsewhere, e.g. a test's)."""
    return str(doc.metadata.get(ARTICLE_TEXT) or doc.page_content)
