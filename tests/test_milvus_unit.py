"""Milvus backend pieces that need no database: filter expressions, stored keys, settings, config.

The expression tests evaluate each expression's meaning by comparing with ``Filters.matches`` on
the same metadata, through a tiny interpreter of the few Milvus constructs the builder emits.
"""

from __future__ import annotations

import re

import pytest

from app.config import ConfigError, config_from_dict
from indexing.milvus_index import (
    Present,
    _index_params,
    chunk_row,
    plan_key,
    settings_key,
)
from indexing.milvus_store import MilvusManifest, analyzer_params, chunk_text
from retrievers.filters import Filters
from retrievers.loading import parse_backends, with_backend
from retrievers.milvus_filters import (
    authors_key,
    filter_expression,
    like_contains,
    string_literal,
    title_key,
    year_value,
)

# -- a reference interpreter for the emitted subset of the Milvus expression language -----------
_CLAUSE = re.compile(r'(\w+) (>=|<=|like) ("(?:[^"\\]|\\.)*"|-?\d+)')


def _unquote(literal: str) -> str:
    body = literal[1:-1]
    return re.sub(r"\\(.)", r"\1", body)


def _like(value: str, pattern: str) -> bool:
    out, i = "", 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            out += re.escape(pattern[i + 1])
            i += 2
            continue
        out += ".*" if ch == "%" else "." if ch == "_" else re.escape(ch)
        i += 1
    return re.fullmatch(out, value, flags=re.DOTALL) is not None


def evaluate(expr: str, row: dict) -> bool:
    if not expr:
        return True
    parts = expr.split(" and ")
    rebuilt = " and ".join(m.group(0) for m in map(_CLAUSE.fullmatch, parts) if m)
    assert rebuilt == expr, f"unexpected expression syntax: {expr}"
    for part in parts:
        field, op, value = _CLAUSE.fullmatch(part).groups()
        if op == "like":
            if not _like(row[field], _unquote(value)):
                return False
        elif op == ">=" and not row[field] >= int(value):
            return False
        elif op == "<=" and not row[field] <= int(value):
            return False
    return True


def _row(meta: dict) -> dict:
    return {
        "year": year_value(meta.get("year")),
        "title_lc": title_key(meta.get("title")),
        "authors_lc": authors_key(meta.get("authors")),
    }


ARTICLES = [
    {"year": 2019, "title": "COVID-19 and Sepsis", "authors": ["Deary IJ", "Smith J"]},
    {"year": None, "title": "Sepsis in 50% of cases_x", "authors": ["Van der Berg P"]},
    {"year": 2021, "title": 'A "quoted" title \\ with backslash', "authors": ["O'Brien K"]},
    {"year": 2015, "title": "Smithson study", "authors": ["Smithson A", "Desmith B"]},
    {"year": 2016, "title": "", "authors": []},
]
FILTERS = [
    Filters(),
    Filters(year_min=2016),
    Filters(year_max=2019),
    Filters(year_min=2016, year_max=2019),
    Filters(year_min=2019, year_max=2019),
    Filters(title_contains=["sepsis"]),
    Filters(title_contains=["SEPSIS", "covid-19"]),
    Filters(title_contains=["50%"]),
    Filters(title_contains=["50_"]),
    Filters(title_contains=["cases_x"]),
    Filters(title_contains=['"quoted"']),
    Filters(title_contains=["\\ with"]),
    Filters(title_contains=['" or year >= 0 or title_lc like "']),
    Filters(author="Smith"),
    Filters(author="smith"),
    Filters(author="der"),
    Filters(author="O'Brien"),
    Filters(author='Deary" or "1"=="1'),
    Filters(author="%"),
    Filters(author="Smith", year_min=2010, title_contains=["covid"]),
]


@pytest.mark.parametrize("filters", FILTERS, ids=lambda f: f.describe() or "none")
def test_expression_selects_exactly_what_filters_matches_selects(filters: Filters) -> None:
    expr = filter_expression(filters)
    for meta in ARTICLES:
        assert evaluate(expr, _row(meta)) == filters.matches(meta), (expr, meta)


def test_expressions_are_explicit() -> None:
    assert filter_expression(Filters()) == ""
    assert filter_expression(Filters(year_min=2016)) == "year >= 2016"
    assert filter_expression(Filters(year_max=2015)) == "year >= 0 and year <= 2015"
    assert filter_expression(Filters(title_contains=["COVID"])) == 'title_lc like "%covid%"'
    assert filter_expression(Filters(author="Deary")) == 'authors_lc like "% deary %"'


def test_user_text_cannot_break_out_of_the_string_literal() -> None:
    expr = filter_expression(Filters(author='x" or year >= 0 or "'))
    assert expr == 'authors_lc like "% x\\" or year >= 0 or \\" %"'
    assert string_literal('a\\"b') == '"a\\\\\\"b"'
    # LIKE wildcards in user text are literal characters
    assert like_contains("50%_") == '"%50\\\\%\\\\_%"'


def test_unknown_year_never_passes_a_year_filter() -> None:
    row = _row({"year": None, "title": "t", "authors": []})
    assert row["year"] == -1
    for f in (Filters(year_min=-5), Filters(year_max=2030), Filters(year_min=1900, year_max=2100)):
        assert not evaluate(filter_expression(f), row)


def test_author_key_keeps_names_apart() -> None:
    assert authors_key(["Smith  J", "O'Brien|K"]) == "| smith j | o'brien k |"
    assert authors_key([]) == "" and authors_key(None) == ""
    # "j o'brien" spans two names: the pattern cannot match across the separator
    assert not _like(authors_key(["Smith J", "O'Brien K"]), "% j o'brien %")


# -- stored rows and documents ------------------------------------------------------------------
def test_chunk_text_strips_exactly_the_title_line() -> None:
    meta = {"title": "A title"}
    assert chunk_text("A title\nThe passage.", meta) == "The passage."
    assert chunk_text("No title line here", meta) == "No title line here"
    assert chunk_text("Untitled passage", {"title": ""}) == "Untitled passage"


def test_chunk_row_holds_search_text_and_filter_keys() -> None:
    import numpy as np

    from indexing.chunking import Chunk

    meta = {"pmid": "1", "title": "Sepsis", "year": None, "authors": ["Deary IJ"],
            "journal": "J" * 600, "chunk_index": 0, "chunk_id": "1-0"}
    row = chunk_row(Chunk("1", 0, "Body.", meta), np.ones(3), "h", 2)
    assert row["id"] == "1-0" and row["search_text"] == "Sepsis\nBody."
    assert row["year"] == -1 and row["authors_lc"] == "| deary ij |"
    assert row["title_lc"] == "sepsis" and len(row["journal"].encode()) <= 512
    assert row["metadata"] is meta and row["n_chunks"] == 2 and row["dense"] == [1.0, 1.0, 1.0]
    assert chunk_text(row["search_text"], meta) == "Body."


def test_an_article_is_complete_only_with_every_chunk_of_the_same_content() -> None:
    p = Present("h1", 2, {"1-0", "1-1"})
    assert p.complete("h1")
    assert not p.complete("h2")
    assert not Present("h1", 3, {"1-0", "1-1"}).complete("h1")  # interrupted mid-article


# -- settings, config ---------------------------------------------------------------------------
def _cfg(**milvus):
    return config_from_dict({"retrieval": {"backend": "milvus", "milvus": milvus}})


def test_manifest_round_trips_the_settings() -> None:
    cfg = _cfg()
    settings = settings_key(cfg, 384)
    label = "HNSW:M=16,efConstruction=200"
    assert _index_params(label) == {"M": 16, "efConstruction": 200}
    manifest = MilvusManifest(
        name="c", embedding_model=cfg.index.embedding_model,
        embedding_backend=cfg.index.embedding_backend, dimension=384,
        chunk_size=cfg.index.chunk_size, chunk_overlap=cfg.index.chunk_overlap,
        bm25_settings=settings["bm25"], articles=1, chunks=1, dense_index=label,
        analyzer="standard",
    )
    from indexing.milvus_index import manifest_settings

    assert manifest_settings(manifest) == settings
    assert plan_key(settings, "a") != plan_key(settings, "b")
    assert plan_key(settings, "a") != plan_key(settings_key(_cfg(analyzer="english"), 384), "a")


def test_analyzer_is_standard_with_stopwords_only_when_asked() -> None:
    assert analyzer_params(_cfg()) == {"tokenizer": "standard", "filter": ["lowercase"]}
    cfg = config_from_dict(
        {"retrieval": {"backend": "milvus", "bm25": {"stopwords": True}}}
    )
    stop = analyzer_params(cfg)["filter"][1]
    assert stop["type"] == "stop" and "the" in stop["stop_words"]


def test_uri_kinds_and_bad_uri() -> None:
    assert _cfg().retrieval.milvus.is_lite
    assert not _cfg(uri="https://milvus.example:19530").retrieval.milvus.is_lite
    with pytest.raises(ConfigError, match="milvus.uri must be"):
        _cfg(uri="milvus.example:19530")
    with pytest.raises(ConfigError, match="collection"):
        _cfg(collection="drop table;")


def test_backend_list_for_eval_and_bench() -> None:
    cfg = _cfg()
    assert parse_backends(None, cfg) == ["milvus"]
    assert parse_backends("faiss, milvus,faiss", cfg) == ["faiss", "milvus"]
    from app.errors import UserFacingError

    with pytest.raises(UserFacingError, match="unknown --backend 'elastic'"):
        parse_backends("faiss,elastic", cfg)
    other = with_backend(cfg, "faiss")
    assert other.retrieval.backend == "faiss" and cfg.retrieval.backend == "milvus"


def test_token_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import pymilvus

    seen = {}

    class FakeClient:
        def __init__(self, **kwargs: object) -> None:
            seen.update(kwargs)

    monkeypatch.setattr(pymilvus, "MilvusClient", FakeClient)
    monkeypatch.setenv("MY_TOKEN", "user:secret")
    from indexing.milvus_store import connect

    connect(_cfg(uri="http://milvus.example:19530", token_env="MY_TOKEN"))
    assert seen["uri"] == "http://milvus.example:19530" and seen["token"] == "user:secret"
