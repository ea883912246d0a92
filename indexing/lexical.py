"""Publish a lexical-only build: chunks and BM25 now, the dense index later.

``make run`` on a fresh clone calls this (``index build --dense-later``) so the chat opens in well
under a minute: parsing, chunking (the embedding model's tokenizer only, no model weights) and
BM25 need no embedding. The manifest says ``dense: pending``; the chat then runs the full build
(:func:`indexing.build.build_index`) in the background, which publishes the complete index with
the same atomic swap, resuming from its shards when it was interrupted.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from indexing.bm25 import BM25Index
from indexing.build import article_hash, bm25_build_settings, write_articles, write_chunks
from indexing.chunking import TokenChunker, Tokenizer
from indexing.embeddings import resolve_model_dir
from indexing.store import METADATA_SCHEMA, Manifest, location, new_build_dir, open_current, publish
from ingest.models import Article
from settings.errors import IndexMissingError

if TYPE_CHECKING:
    from settings.config import Config


def load_tokenizer(cfg: Config) -> Tokenizer:
    """The embedding model's tokenizer alone (what chunking measures in), without its weights."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(resolve_model_dir(cfg.index.embedding_model)))


def build_lexical_index(
    cfg: Config,
    articles: Sequence[Article],
    *,
    corpus_checksum: str = "",
    corpus_files: Sequence[str] = (),
    dropped_short: int = 0,
    bad_records: int = 0,
    base_checksum: str = "",
    library_pmids: Sequence[str] = (),
) -> Manifest:
    """Chunk ``articles``, build BM25 and publish them with ``dense: pending``. An index that
    another process published meanwhile for the same corpus is returned as it is."""
    if not articles:
        raise ValueError("no articles to index")
    loc = location(cfg)
    with loc.lock():
        try:
            manifest = open_current(cfg, verify=False, old_schema_ok=True)[1]
            if (manifest.corpus_checksum == corpus_checksum and corpus_checksum
                    and manifest.metadata_schema == METADATA_SCHEMA):
                return manifest
        except IndexMissingError:
            pass
        started = time.perf_counter()
        chunker = TokenChunker(load_tokenizer(cfg), cfg.index.chunk_size, cfg.index.chunk_overlap)
        chunks = chunker.chunk_articles(articles)
        build_dir = new_build_dir(loc)
        write_chunks(build_dir, chunks)
        write_articles(build_dir, {a.pmid: article_hash(a) for a in articles})
        bm25 = cfg.retrieval.bm25
        BM25Index.build(
            [c.search_text for c in chunks], k1=bm25.k1, b=bm25.b, stopwords=bm25.stopwords,
            phrases=True,
        ).save(build_dir)
        manifest = Manifest(
            name=cfg.index.name,
            embedding_model=cfg.index.embedding_model,
            embedding_backend=cfg.index.embedding_backend,
            dimension=0,
            chunk_size=cfg.index.chunk_size,
            chunk_overlap=cfg.index.chunk_overlap,
            metadata_schema=METADATA_SCHEMA,
            bm25_settings=bm25_build_settings(cfg),
            corpus_checksum=corpus_checksum,
            corpus_files=list(corpus_files),
            base_checksum=base_checksum,
            library_pmids=list(library_pmids),
            articles=len(articles),
            chunks=len(chunks),
            dropped_short=dropped_short,
            bad_records=bad_records,
            build_seconds=round(time.perf_counter() - started, 2),
            embedded_articles=0,
            dense="pending",
        )
        publish(loc, build_dir, manifest)
        return manifest
