"""The Milvus collection: connection, schema, explicit index parameters, manifest.

One collection holds every chunk: the primary key is the chunk id (``<pmid>-<index>``), so
``index update`` upserts by chunk id. Fields:

==============  ===================  ===========================================================
id              VARCHAR (primary)    chunk id
pmid            VARCHAR              article; deletions and per-article bookkeeping
chunk_index     INT64
content_hash    VARCHAR              ``indexing.build.article_hash`` of the article
n_chunks        INT64                the article's chunk count: complete iff all rows are there
search_text     VARCHAR, analysed    title + chunk text: what BM25 and the embedding see
title_lc        VARCHAR              case-folded title, for "title contains" filters
year            INT64                publication year, -1 when unknown
journal         VARCHAR
authors_lc      VARCHAR              ``| name | name |`` for author filters
metadata        JSON                 the chunk's full metadata, returned as the Document's
dense           FLOAT_VECTOR         MiniLM embedding (L2-normalised), COSINE
sparse          SPARSE_FLOAT_VECTOR  output of the BM25 function over ``search_text``
==============  ===================  ===========================================================

The chunk text itself is ``search_text`` minus the title line (see :func:`chunk_text`), which
saves storing the abstract twice. The manifest (settings, counts, build state) lives in the
collection's properties, so a server deployment needs no local files.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from indexing.store import Manifest
from ingest.metadata import ChunkMeta
from settings.config import Config
from settings.errors import IndexMissingError, UserFacingError

if TYPE_CHECKING:
    from pymilvus import MilvusClient

MANIFEST_PROPERTY = "pubmed_assistant.manifest"
MAX_TEXT = 65_535  # Milvus' VARCHAR limit, in bytes
MAX_KEY = 512
HOW_TO_BUILD = (
    "build it with `.venv/bin/python -m app index build` (retrieval.backend: milvus in cfg.yaml)"
)


class MilvusUnavailableError(UserFacingError):
    """The Milvus server or the milvus-lite database cannot be opened."""


class MilvusManifest(Manifest):
    """:class:`indexing.store.Manifest` plus where the collection lives and its build state."""

    backend: Literal["milvus"] = "milvus"
    uri: str = ""
    collection: str = ""
    state: Literal["building", "complete"] = "building"
    plan_key: str = ""  # settings + corpus checksum of the build in progress
    dense_index: str = ""
    analyzer: str = ""
    written_articles: int = 0  # upserted by the last run (the rest were already there)
    deleted_articles: int = 0  # removed by the last run (no longer in the corpus)


@contextlib.contextmanager
def quiet_logs(*loggers: str) -> Iterator[None]:
    """Silence these loggers for a moment (library tracebacks for conditions handled here)."""
    levels = {name: logging.getLogger(name).level for name in loggers}
    for name in loggers:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def connect(cfg: Config) -> MilvusClient:
    """A client for ``retrieval.milvus.uri``; the token comes from the environment only."""
    try:
        from pymilvus import MilvusClient
    except ImportError:
        raise MilvusUnavailableError(
            "retrieval.backend is milvus but pymilvus is not installed: "
            "`.venv/bin/pip install -r requirements.txt`"
        ) from None
    m = cfg.retrieval.milvus
    kwargs: dict[str, Any] = {"timeout": m.timeout_s}
    if m.is_lite:
        path = lite_path(cfg)
        path.parent.mkdir(parents=True, exist_ok=True)
        uri = str(path)
    else:
        uri = m.uri
        token = os.environ.get(m.token_env, "")
        if token:
            kwargs["token"] = token
    if m.db_name:
        kwargs["db_name"] = m.db_name
    try:
        # milvus-lite logs a traceback when the database is locked; the error below says it all
        with quiet_logs("milvus_lite.server_manager"):
            return MilvusClient(uri=uri, **kwargs)
    except Exception as err:  # pymilvus raises several types for the same condition
        hint = (
            "another process (a running `app serve`, a test, a build) may have this milvus-lite "
            "database open; milvus-lite allows one process at a time, so stop it or use a Milvus "
            "server (an http:// milvus.uri)"
            if m.is_lite
            else f"check that the server is up and that ${m.token_env} holds a valid token"
        )
        raise MilvusUnavailableError(f"cannot open Milvus at {uri}: {err}; {hint}") from None


def lite_path(cfg: Config) -> Path:
    return cfg.resolve(cfg.retrieval.milvus.uri)


def release(cfg: Config) -> None:
    """Stop this process' in-process milvus-lite server for the configured path (frees its lock)."""
    if not cfg.retrieval.milvus.is_lite:
        return
    with contextlib.suppress(ImportError):
        from milvus_lite.server_manager import server_manager_instance

        server_manager_instance.release_server(str(lite_path(cfg)))


def create_collection(client: MilvusClient, cfg: Config, dimension: int) -> None:
    """The schema above, the BM25 function and explicit index parameters."""
    from pymilvus import DataType, Function, FunctionType

    m = cfg.retrieval.milvus
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("pmid", DataType.VARCHAR, max_length=32)
    schema.add_field("chunk_index", DataType.INT64)
    schema.add_field("content_hash", DataType.VARCHAR, max_length=64)
    schema.add_field("n_chunks", DataType.INT64)
    schema.add_field(
        "search_text",
        DataType.VARCHAR,
        max_length=MAX_TEXT,
        enable_analyzer=True,
        analyzer_params=analyzer_params(cfg),
    )
    schema.add_field("title_lc", DataType.VARCHAR, max_length=MAX_TEXT)
    schema.add_field("year", DataType.INT64)
    schema.add_field("journal", DataType.VARCHAR, max_length=MAX_KEY)
    schema.add_field("authors_lc", DataType.VARCHAR, max_length=MAX_TEXT)
    schema.add_field("metadata", DataType.JSON)
    schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dimension)
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(
        Function(
            name="search_text_bm25",
            function_type=FunctionType.BM25,
            input_field_names=["search_text"],
            output_field_names=["sparse"],
        )
    )
    index = client.prepare_index_params()
    index.add_index(
        "dense",
        index_type=m.dense_index,
        metric_type="COSINE",
        params=dict(m.dense_index_params) if m.dense_index in ("HNSW", "IVF_FLAT") else {},
    )
    bm25 = cfg.retrieval.bm25
    index.add_index(
        "sparse",
        index_type="SPARSE_INVERTED_INDEX",
        metric_type="BM25",
        params={"inverted_index_algo": "DAAT_MAXSCORE", "bm25_k1": bm25.k1, "bm25_b": bm25.b},
    )
    for scalar in ("pmid", "year"):
        index.add_index(scalar, index_type="INVERTED")
    client.create_collection(m.collection, schema=schema, index_params=index)


def analyzer_params(cfg: Config) -> dict[str, Any]:
    """The standard tokenizer (lower-cased ``\\w+``), with English stop words when cfg asks."""
    m = cfg.retrieval.milvus
    if m.analyzer == "english":
        return {"type": "english"}
    params: dict[str, Any] = {"tokenizer": "standard", "filter": ["lowercase"]}
    if cfg.retrieval.bm25.stopwords:
        from indexing.tokenize import STOPWORDS

        params["filter"].append({"type": "stop", "stop_words": sorted(STOPWORDS)})
    return params


def read_manifest(client: MilvusClient, cfg: Config) -> MilvusManifest | None:
    """The collection's manifest, or None when the collection does not exist."""
    name = cfg.retrieval.milvus.collection
    if not client.has_collection(name):
        return None
    props = client.describe_collection(name).get("properties") or {}
    raw = props.get(MANIFEST_PROPERTY)
    if not raw:
        return None
    return MilvusManifest.model_validate_json(raw)


def write_manifest(client: MilvusClient, cfg: Config, manifest: MilvusManifest) -> None:
    client.alter_collection_properties(
        cfg.retrieval.milvus.collection,
        properties={MANIFEST_PROPERTY: manifest.model_dump_json(exclude={"file_sha256"})},
    )


def chunk_text(search_text: str, metadata: Mapping[str, Any]) -> str:
    """The chunk's passage: ``Chunk.search_text`` is ``title + "\\n" + text`` when titled."""
    title = ChunkMeta.from_metadata(metadata).title
    prefix = f"{title}\n"
    if title and search_text.startswith(prefix):
        return search_text[len(prefix) :]
    return search_text


def describe_location(cfg: Config) -> str:
    m = cfg.retrieval.milvus
    where = str(lite_path(cfg)) if m.is_lite else m.uri
    return f"{where} (collection {m.collection})"


def missing_error(cfg: Config, reason: str = "") -> IndexMissingError:
    detail = f": {reason}" if reason else ""
    return IndexMissingError(
        f"no Milvus search index at {describe_location(cfg)}{detail}; {HOW_TO_BUILD}"
    )

