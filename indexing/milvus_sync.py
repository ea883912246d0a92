"""Make a Milvus collection hold exactly a set of articles (:func:`sync_collection`).

List what it holds (:func:`scan_present`), skip every article whose rows are all present with the
current content hash, upsert the chunks of new or changed articles in batches (vectors from FAISS
when unchanged, else embedded here), delete chunks an article no longer has and articles that left
the corpus. The build around it: :mod:`indexing.milvus_index`."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from indexing.build import article_hash
from indexing.chunking import Chunk, TokenChunker
from indexing.embeddings import Embedder
from indexing.milvus_fields import string_literal
from indexing.milvus_rows import FaissVectors, chunk_row
from indexing.milvus_store import quiet_logs
from ingest.models import Article

if TYPE_CHECKING:
    from pymilvus import MilvusClient

    from settings.config import Config

SCAN_BATCH = 10_000
DELETE_BATCH = 1_000  # pmids per `pmid in [...]` expression
MAX_QUERY_ROWS = 16_384  # Milvus' limit on one query's rows (1,000 articles have far fewer)


@dataclass
class Present:
    """What the collection already holds for one article."""

    content_hash: str
    n_chunks: int
    ids: set[str] = field(default_factory=set)

    def complete(self, content_hash: str) -> bool:
        return self.content_hash == content_hash and len(self.ids) == self.n_chunks


@dataclass
class SyncReport:
    kept_articles: int = 0
    written_articles: int = 0
    written_chunks: int = 0
    embedded_articles: int = 0
    faiss_vector_articles: int = 0
    deleted_articles: int = 0
    deleted_chunks: int = 0
    new_articles: int = 0


# -- reading the collection ---------------------------------------------------------------------
SCAN_FIELDS = ["id", "pmid", "content_hash", "n_chunks"]


def scan_present(
    client: MilvusClient, collection: str, pmids: Sequence[str] | None = None
) -> dict[str, Present]:
    """pmid -> what the collection holds: every article, or only ``pmids`` (append mode)."""
    out: dict[str, Present] = {}
    if pmids is not None:
        for part in _batches(list(pmids), DELETE_BATCH):
            expr = "pmid in [" + ", ".join(string_literal(p) for p in part) + "]"
            _collect(out, client.query(collection, filter=expr, output_fields=SCAN_FIELDS,
                                       limit=MAX_QUERY_ROWS))
        return out
    # milvus-lite lacks the timestamp RPC that the iterator asks for first; pymilvus falls back
    # to a client-side timestamp, after both sides log a traceback. Only that is silenced.
    with quiet_logs("grpc._server", "pymilvus.client.iterator.query_iterator"):
        it = client.query_iterator(
            collection, batch_size=SCAN_BATCH, filter="", output_fields=SCAN_FIELDS
        )
        try:
            while batch := it.next():
                _collect(out, batch)
        finally:
            it.close()
    return out


def _collect(out: dict[str, Present], rows: list[dict[str, Any]]) -> None:
    for row in rows:
        p = out.setdefault(row["pmid"], Present(row["content_hash"], row["n_chunks"]))
        if p.content_hash != row["content_hash"]:
            p.content_hash = "mixed"  # rows of two versions: rewrite the article
        p.ids.add(row["id"])


def count_rows(client: MilvusClient, collection: str) -> int:
    rows = client.query(collection, filter="", output_fields=["count(*)"])
    return int(rows[0]["count(*)"])


def _batches(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def delete_articles(client: MilvusClient, collection: str, pmids: Sequence[str]) -> None:
    for part in _batches(list(pmids), DELETE_BATCH):
        expr = "pmid in [" + ", ".join(string_literal(p) for p in part) + "]"
        client.delete(collection, filter=expr)


def delete_chunks(client: MilvusClient, collection: str, ids: Sequence[str]) -> None:
    for part in _batches(list(ids), DELETE_BATCH):
        client.delete(collection, ids=list(part))


# -- the sync -----------------------------------------------------------------------------------
def _article_groups(articles: Sequence[Article], chunker: TokenChunker,
                    target: int) -> Iterator[list[tuple[Article, list[Chunk]]]]:
    group: list[tuple[Article, list[Chunk]]] = []
    size = 0
    for article in articles:
        chunks = chunker.chunk_article(article)
        group.append((article, chunks))
        size += len(chunks)
        if size >= target:
            yield group
            group, size = [], 0
    if group:
        yield group


def sync_collection(
    client: MilvusClient,
    cfg: Config,
    articles: Sequence[Article],
    embedder: Embedder,
    *,
    faiss_vectors: FaissVectors | None = None,
    show_progress: bool = False,
    after_batch: Callable[[int], None] | None = None,
    append: bool = False,
) -> SyncReport:
    """Make the collection hold exactly ``articles`` (see the module docstring); with
    ``append``, add or refresh ``articles`` and leave every other article alone (one shard of
    a corpus too large to load at once, such as the PubMed baseline)."""
    name = cfg.retrieval.milvus.collection
    report = SyncReport()
    hashes = {a.pmid: article_hash(a) for a in articles}
    present = scan_present(client, name, list(hashes) if append else None)
    report.new_articles = len(set(hashes) - set(present))
    gone = [] if append else [p for p in present if p not in hashes]
    delete_articles(client, name, gone)
    report.deleted_articles = len(gone)
    todo = [
        a for a in articles if not (a.pmid in present and present[a.pmid].complete(hashes[a.pmid]))
    ]
    report.kept_articles = len(articles) - len(todo)

    chunker = TokenChunker(embedder.tokenizer, cfg.index.chunk_size, cfg.index.chunk_overlap)
    bar = tqdm(total=len(todo), desc="writing to Milvus", unit="article", disable=not show_progress)
    for n, group in enumerate(_article_groups(todo, chunker, cfg.retrieval.milvus.insert_batch)):
        rows, stale, to_embed = [], [], []
        for article, chunks in group:
            content_hash = hashes[article.pmid]
            vectors = faiss_vectors.for_article(chunks, article) if faiss_vectors else None
            if vectors is None:
                to_embed.append((article, chunks))
            else:
                report.faiss_vector_articles += 1
                rows += [
                    chunk_row(c, v, content_hash, len(chunks))
                    for c, v in zip(chunks, vectors, strict=True)
                ]
            if article.pmid in present:
                stale += sorted(present[article.pmid].ids - {c.chunk_id for c in chunks})
        if to_embed:
            flat = [c for _, chunks in to_embed for c in chunks]
            vectors = embedder.encode([c.search_text for c in flat])
            report.embedded_articles += len(to_embed)
            counts = {a.pmid: len(chunks) for a, chunks in to_embed}
            rows += [
                chunk_row(c, v, hashes[c.pmid], counts[c.pmid])
                for c, v in zip(flat, vectors, strict=True)
            ]
        client.upsert(name, rows)
        delete_chunks(client, name, stale)
        report.written_articles += len(group)
        report.written_chunks += len(rows)
        report.deleted_chunks += len(stale)
        bar.update(len(group))
        if after_batch:
            after_batch(n)
    bar.close()
    client.flush(name)
    return report
