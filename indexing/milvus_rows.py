"""What one Milvus row holds: a chunk's fields, metadata and vector (:func:`chunk_row`), and the
vectors of the published FAISS index reused for articles whose content is unchanged
(:class:`FaissVectors`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from indexing.build import article_hash, published_vectors, schema1_article_hash
from indexing.chunking import Chunk
from indexing.milvus_fields import authors_key, title_key, year_value
from indexing.store import METADATA_SCHEMA
from ingest.models import Article

if TYPE_CHECKING:
    from settings.config import Config

JOURNAL_MAX_BYTES = 512


# -- vectors ------------------------------------------------------------------------------------
class FaissVectors:
    """Vectors of the published FAISS index, for chunks whose article is unchanged."""

    def __init__(self, chunk_rows: dict[str, int], texts: list[str], hashes: dict[str, str],
                 vectors: np.ndarray, schema: int = METADATA_SCHEMA) -> None:
        self.chunk_rows = chunk_rows
        self.texts = texts
        self.hashes = hashes
        self.vectors = vectors
        self.schema = schema  # the FAISS build's metadata schema: which article hash it stored

    @classmethod
    def load(cls, cfg: Config) -> FaissVectors | None:
        """None when there is no FAISS index or it was built with other embedding settings."""
        published = published_vectors(cfg)
        if published is None:
            return None
        stored, hashes, vectors, schema = published
        rows = {cid: i for i, cid in enumerate(stored.chunk_ids)}
        return cls(rows, stored.texts, hashes, vectors, schema)

    def for_article(self, chunks: Sequence[Chunk], article: Article) -> np.ndarray | None:
        """The article's vectors when FAISS holds exactly these chunks of the same content."""
        want = article_hash(article) if self.schema == METADATA_SCHEMA else (
            schema1_article_hash(article))
        if not chunks or self.hashes.get(chunks[0].pmid) != want:
            return None
        rows = [self.chunk_rows.get(c.chunk_id) for c in chunks]
        found = [r for r in rows if r is not None]
        if len(found) < len(rows) or any(
            self.texts[r] != c.text for r, c in zip(found, chunks, strict=True)
        ):
            return None
        return self.vectors[found]


# -- rows ---------------------------------------------------------------------------------------
def _truncate_bytes(text: str, limit: int) -> str:
    raw = text.encode()
    return text if len(raw) <= limit else raw[:limit].decode(errors="ignore")


def chunk_row(chunk: Chunk, vector: np.ndarray, content_hash: str, n_chunks: int) -> dict[str, Any]:
    meta = chunk.metadata
    return {
        "id": chunk.chunk_id,
        "pmid": chunk.pmid,
        "chunk_index": chunk.index,
        "content_hash": content_hash,
        "n_chunks": n_chunks,
        "search_text": chunk.search_text,
        "title_lc": title_key(meta.get("title")),
        "year": year_value(meta.get("year")),
        "journal": _truncate_bytes(meta.get("journal") or "", JOURNAL_MAX_BYTES),
        "authors_lc": authors_key(meta.get("authors")),
        "metadata": meta,
        "dense": np.asarray(vector, dtype=np.float32).tolist(),
    }
