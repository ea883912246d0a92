"""Chat first, full index later: the lexical-only publish, the live switch to hybrid, the BM25-only
refusal, the build's progress file and what the chat says about it (fast: real BM25 and the real
MiniLM tokenizer, a hash stand-in for the embedding model)."""

from __future__ import annotations

import argparse
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from rank_bm25 import BM25Okapi

from app import dense_build
from app.index_status import READY, search_line, semantic_status
from indexing import build as build_mod
from indexing.bm25 import BM25Index
from indexing.build import build_index
from indexing.commands.common import index_state, run_indexing
from indexing.drug_names import without_unindexed_drugs
from indexing.lexical import build_lexical_index
from indexing.progress import HOLD_ENV, DenseProgress, read_progress, write_progress
from indexing.store import DENSE_FILE, location, open_current
from indexing.tokenize import tokenizer_for
from ingest.models import Article
from retrievers.backend import FaissBM25Backend
from retrievers.filters import Filters
from retrievers.hybrid import HybridRetriever
from retrievers.live import LiveIndex
from settings.config import load_config
from tests.helpers import cfg_at
from tests.test_indexing import HashEmbedder, tokenizer  # noqa: F401 - a fixture

TOPICS = [
    ("Working memory training in children", "Working memory training improved fluid "
     "intelligence scores in primary school children over six months."),
    ("Sleep and cognition in older adults", "Poor sleep quality predicted faster cognitive "
     "decline in older adults followed for ten years."),
    ("Dyslexia and phonological awareness", "Children with dyslexia showed weaker phonological "
     "awareness and slower rapid naming than typical readers."),
    ("Emotional intelligence of nurses", "Emotional intelligence of hospital nurses was linked "
     "to lower burnout and better patient communication."),
]
ON_TOPIC = "Working memory training and fluid intelligence in primary school children"
OFF_TOPIC = "How do I reverse a list in Python with a for loop?"


def corpus(n: int = 24) -> list[Article]:
    return [
        Article(pmid=f"{3000 + i}", title=f"{TOPICS[i % 4][0]} ({i})",
                abstract=(TOPICS[i % 4][1] + " ") * (2 + i % 3), authors=["Ian Deary"],
                year=2012 + i % 10)  # fmt: skip
        for i in range(n)
    ]


class QueryHashEmbedder(HashEmbedder):
    """The hash stand-in, also for queries (what the FAISS vector store calls)."""

    def embed_query(self, text: str) -> list[float]:
        return self.encode([text])[0].tolist()

    def __call__(self, text: str) -> list[float]:  # LangChain's FAISS takes a function too
        return self.embed_query(text)


def hashed_loader(tok):  # noqa: ANN001, ANN201 - a LiveIndex loader with the stand-in embedder
    return lambda cfg: FaissBM25Backend(cfg, embedder=QueryHashEmbedder(tok))


# -- the lexical-only publish -----------------------------------------------------------------
def test_lexical_publish_serves_bm25_without_a_dense_file(tmp_path, tokenizer) -> None:  # noqa: F811
    cfg = cfg_at(tmp_path, embedding_backend="torch")
    manifest = build_lexical_index(cfg, corpus(), corpus_checksum="c1")
    folder, checked = open_current(cfg)  # every checksum verified
    assert manifest.dense == checked.dense == "pending" and not checked.dense_ready
    assert not (folder / DENSE_FILE).exists() and checked.chunks >= 24
    assert index_state(cfg, "c1") == "pending"
    assert index_state(cfg, "another corpus") == "missing"
    backend = FaissBM25Backend(cfg)
    assert not backend.dense_ready and backend.embedder is None
    assert backend.dense_search(ON_TOPIC, 5, -1.0, Filters()) == []
    assert backend.bm25_search(ON_TOPIC, 5, Filters())


def test_full_build_after_a_lexical_one_embeds_everything_and_is_ready(
    tmp_path, tokenizer,  # noqa: F811
) -> None:
    cfg = cfg_at(tmp_path, embedding_backend="torch")
    build_lexical_index(cfg, corpus(), corpus_checksum="c1")
    assert build_mod.published_vectors(cfg) is None  # nothing to reuse from a lexical build
    manifest = build_index(cfg, corpus(), corpus_checksum="c1", if_missing=True,
                           embedder=HashEmbedder(tokenizer))  # fmt: skip
    assert manifest.dense_ready and manifest.embedded_articles == 24
    folder, _ = open_current(cfg)
    assert (folder / DENSE_FILE).is_file()
    assert index_state(cfg, "c1") == "current"


# -- the live switch --------------------------------------------------------------------------
def test_the_retriever_serves_bm25_then_switches_to_hybrid_without_a_restart(
    tmp_path, tokenizer,  # noqa: F811
) -> None:
    cfg = cfg_at(tmp_path, embedding_backend="torch")
    build_lexical_index(cfg, corpus(), corpus_checksum="c1")
    live = LiveIndex(cfg, load=hashed_loader(tokenizer))
    retriever = HybridRetriever.from_backend(live, cfg)
    assert not retriever.hybrid
    before = retriever.retrieve(ON_TOPIC).documents
    assert before and before[0].metadata["title"].startswith("Working memory")
    assert all(d.metadata["scores"]["dense"] is None for d in before)

    build_index(cfg, corpus(), corpus_checksum="c1", embedder=HashEmbedder(tokenizer))
    assert not retriever.hybrid  # nothing is loaded until the next search
    after = retriever.retrieve(ON_TOPIC).documents
    assert retriever.hybrid and live.reloads == 1
    assert any(d.metadata["scores"]["dense"] is not None for d in after)
    retriever.retrieve(ON_TOPIC)
    assert live.reloads == 1  # the same build is not loaded again


def test_a_new_build_that_does_not_load_is_skipped_and_the_old_one_keeps_serving(
    tmp_path, tokenizer,  # noqa: F811
) -> None:
    cfg = cfg_at(tmp_path, embedding_backend="torch")
    build_lexical_index(cfg, corpus(), corpus_checksum="c1")
    live = LiveIndex(cfg, load=hashed_loader(tokenizer))
    retriever = HybridRetriever.from_backend(live, cfg)
    build_index(cfg, corpus(), corpus_checksum="c1", embedder=HashEmbedder(tokenizer))
    folder, _ = open_current(cfg, verify=False)
    (folder / "bm25_vocab.json").write_text("{}", encoding="utf-8")  # damaged after publish
    assert retriever.retrieve(ON_TOPIC).documents  # still the lexical build
    assert not retriever.hybrid and live.reloads == 0


def test_concurrent_searches_load_a_new_build_once(tmp_path, tokenizer) -> None:  # noqa: F811
    cfg = cfg_at(tmp_path, embedding_backend="torch")
    build_lexical_index(cfg, corpus(), corpus_checksum="c1")
    loads: list[int] = []

    def slow_load(c):  # noqa: ANN001, ANN202
        loads.append(1)
        time.sleep(0.2)  # widens the window two threads could both load in
        return FaissBM25Backend(c, embedder=QueryHashEmbedder(tokenizer))

    live = LiveIndex(cfg, load=slow_load)
    build_index(cfg, corpus(), corpus_checksum="c1", embedder=HashEmbedder(tokenizer))
    seen: list[bool] = []
    threads = [threading.Thread(target=lambda: seen.append(live.snapshot().dense_ready))
               for _ in range(6)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [True] * 6 and len(loads) == 2 and live.reloads == 1  # first load + one


def test_saved_shards_are_counted_before_a_resumed_build_embeds(tmp_path) -> None:
    from indexing.store import ShardCache

    cache = ShardCache(tmp_path / "work", "plan")
    cache.put(0, np.zeros((4, 2), dtype=np.float32))
    cache.put(8, np.zeros((2, 2), dtype=np.float32))  # the last, short shard
    assert cache.saved_rows(10, 4) == 6
    assert ShardCache(tmp_path / "work", "another plan").saved_rows(10, 4) == 0


# -- refusal without a dense index ------------------------------------------------------------
def test_bm25_only_refuses_off_topic_and_answers_on_topic(tmp_path, tokenizer) -> None:  # noqa: F811
    # the shipped retrieval.bm25.refusal_threshold
    cfg = cfg_at(tmp_path, embedding_backend="torch")
    build_lexical_index(cfg, corpus(), corpus_checksum="c1")
    retriever = HybridRetriever.from_backend(LiveIndex(cfg), cfg)
    assert retriever.retrieve(ON_TOPIC).documents
    assert retriever.retrieve(OFF_TOPIC).documents == []
    # a filter that excludes every article leaves nothing to answer from
    assert retriever.retrieve(ON_TOPIC, filters=Filters(year_min=2100)).documents == []


PREGNANCY = Article(
    pmid="3999", title="Prenatal antidepressant exposure and child brain development",
    abstract="Is it safe to take antidepressants while pregnant? Children exposed to them "
    "before birth showed typical development at age three.",
    authors=["Ian Deary"], year=2019)


def test_bm25_only_reads_a_drug_the_index_lacks_as_medicine_not_off_topic(
    tmp_path, tokenizer,  # noqa: F811
) -> None:
    # a brand and its generic name no chunk holds ("Zoloft (sertraline)") once counted as the
    # rarest words there are: the question read as off-topic, refused as outside medicine,
    # where the hybrid chat answers it naming the drug as missing
    cfg = cfg_at(tmp_path, embedding_backend="torch")
    build_lexical_index(cfg, [*corpus(), PREGNANCY], corpus_checksum="c1")
    retriever = HybridRetriever.from_backend(LiveIndex(cfg), cfg)
    found = retriever.retrieve("Is Zoloft safe to take while pregnant for the baby's brain "
                               "development?").documents
    assert found and found[0].metadata["pmid"] == "3999"
    # only a drug name goes; an unknown word that names no drug still counts as the rarest
    # word there is, and a drug the index holds stays
    held = {"aspirin"}
    assert without_unindexed_drugs("Zoloft (sertraline), aspirin or Eurovision?",
                                   held.__contains__) == "(), aspirin or Eurovision?"


def test_relevance_is_the_best_score_over_the_highest_possible() -> None:
    texts = [t + " " + a for t, a in TOPICS] + ["memory memory memory of the children"]
    index = BM25Index.build(texts, k1=1.2, b=0.75, stopwords=False)
    okapi = BM25Okapi([tokenizer_for(False)(t) for t in texts], k1=1.2, b=0.75)
    idf = index.idf()
    for term, col in index.vocab.items():
        assert idf[col] == pytest.approx(okapi.idf[term], rel=1e-6)
    query = "working memory training"
    terms = tokenizer_for(False)(query)
    ceiling = 2.2 * sum(okapi.idf[t] for t in terms)
    best = max(okapi.get_scores(terms))
    assert index.relevance(query, 1.2) == pytest.approx(best / ceiling, rel=1e-5)
    # a word no document has counts as the rarest word there is: the relevance drops
    assert index.relevance(query + " zebrafish", 1.2) < index.relevance(query, 1.2)
    assert index.relevance("", 1.2) == 0.0
    mask = np.zeros(index.size, dtype=bool)
    assert index.relevance(query, 1.2, mask) == 0.0


# -- progress, the hold seam, and what the chat says -------------------------------------------
def test_a_held_build_reports_its_progress_then_publishes(
    tmp_path, tokenizer, monkeypatch,  # noqa: F811
) -> None:
    cfg = cfg_at(tmp_path, embedding_backend="torch")
    build_lexical_index(cfg, corpus(), corpus_checksum="c1")
    release = tmp_path / "release"
    monkeypatch.setenv(HOLD_ENV, str(release))
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(build_index(
        cfg, corpus(), corpus_checksum="c1", embedder=HashEmbedder(tokenizer))))
    worker.start()
    loc = location(cfg)
    for _ in range(600):  # bounded wait for the held build's first progress write
        progress = read_progress(loc.progress)
        if progress is not None:
            break
        time.sleep(0.05)
    assert progress is not None and progress.done == 0 and progress.total >= 24
    status = semantic_status(cfg, building=True)
    assert status is not None and not status.ready
    assert status.text.startswith("Semantic index: 0% (estimating the time left)")
    assert not open_current(cfg)[1].dense_ready  # held: nothing published
    release.touch()
    worker.join(timeout=120)
    assert done and open_current(cfg)[1].dense_ready
    assert semantic_status(cfg, building=False) == semantic_status(cfg, building=True)
    assert semantic_status(cfg, building=False).text == READY  # type: ignore[union-attr]


def test_status_text_says_percent_and_time_left(tmp_path, tokenizer) -> None:  # noqa: F811
    cfg = cfg_at(tmp_path, embedding_backend="torch")
    build_lexical_index(cfg, corpus(), corpus_checksum="c1")
    write_progress(location(cfg).progress,
                   DenseProgress(done=450, total=1000, rate=550 / 690))  # 11.5 minutes left
    status = semantic_status(cfg, building=True)
    assert status is not None
    assert status.text.startswith("Semantic index: 45% (about 12 minutes left).")
    assert "keyword search (BM25)" in status.text
    assert search_line(False, status) == ("**Search:** keywords only (BM25); semantic index "
                                          "45%, about 12 minutes left")  # fmt: skip
    assert search_line(True, None) == "**Search:** hybrid (keywords + meaning)"
    stopped = semantic_status(cfg, building=False)
    assert stopped is not None and "resumes on the next `make run`" in stopped.text


# -- the command and the background process ---------------------------------------------------
def _args(**kw) -> argparse.Namespace:  # noqa: ANN003
    base = {"json": False, "quiet": True, "if_needed": False, "fetch_if_empty": False,
            "dense_later": False}  # fmt: skip
    return argparse.Namespace(**{**base, **kw})


def test_make_run_publishes_bm25_first_and_the_cli_still_builds_everything(
    tmp_path, tokenizer, monkeypatch, capsys,  # noqa: F811
) -> None:
    corpus_dir = Path(__file__).resolve().parents[2] / "shared" / "data" / "fixtures" / "efetch"
    if not corpus_dir.is_dir():
        pytest.skip(f"shared fixtures not found at {corpus_dir}")
    cfg = load_config(overrides={
        "index": {"dir": str(tmp_path), "name": "t", "embedding_backend": "torch"},
        "corpus": {"paths": [str(corpus_dir)], "min_abstract_chars": 0}})  # fmt: skip
    monkeypatch.setattr(build_mod, "build_embedder", lambda c: HashEmbedder(tokenizer))
    assert run_indexing(cfg, _args(if_needed=True, dense_later=True), reuse=False) == 0
    assert "BM25 index of" in capsys.readouterr().out
    assert not open_current(cfg)[1].dense_ready
    assert dense_build.dense_pending(cfg)
    assert run_indexing(cfg, _args(if_needed=True, dense_later=True), reuse=False) == 0
    assert "BM25 index is up to date" in capsys.readouterr().out
    # what the chat's background process runs: the whole index, then nothing left to do
    assert run_indexing(cfg, _args(if_needed=True), reuse=False) == 0
    assert open_current(cfg)[1].dense_ready and not dense_build.dense_pending(cfg)
    assert dense_build.start_if_pending(cfg, None) is None
    assert dense_build.build_command("cfg.yaml")[-4:] == ["index", "build", "--if-needed",
                                                          "--quiet"]  # fmt: skip


# -- the background process for real: killed, the chat keeps its index; started again, it ends --
def test_a_killed_background_build_leaves_bm25_serving_and_the_next_start_completes(
    tmp_path, monkeypatch,
) -> None:
    import signal

    from tests.test_cli_paths import real_records, write_xml

    records = real_records(12)
    write_xml(tmp_path / "corpus" / "a.xml", records)
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(yaml.safe_dump({
        "corpus": {"paths": [str(tmp_path / "corpus")], "min_abstract_chars": 20},
        "index": {"dir": str(tmp_path / "indices"), "name": "bg", "embedding_backend": "torch"},
    }), encoding="utf-8")  # fmt: skip
    cfg = load_config(cfg_file)
    assert run_indexing(cfg, _args(if_needed=True, dense_later=True), reuse=False) == 0
    live = LiveIndex(cfg)
    retriever = HybridRetriever.from_backend(live, cfg)
    question = "Do mitochondria play a role in remodelling lace plant leaves?"
    assert retriever.retrieve(question).documents and not retriever.hybrid

    release = tmp_path / "release"
    monkeypatch.setenv(HOLD_ENV, str(release))  # the child inherits it: held before embedding
    monkeypatch.setattr(dense_build, "_process", None)
    first = dense_build.start_if_pending(cfg, str(cfg_file))
    assert first is not None and dense_build.running()
    assert dense_build.start_if_pending(cfg, str(cfg_file)) is None  # one at a time
    loc = location(cfg)
    for _ in range(1200):  # bounded: until the held child has written its progress
        if read_progress(loc.progress) is not None or first.poll() is not None:
            break
        time.sleep(0.1)
    assert read_progress(loc.progress) is not None, dense_build.log_path(cfg).read_text()
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=60)
    assert not dense_build.running()
    stopped = semantic_status(cfg, building=dense_build.running())
    assert stopped is not None and "resumes on the next `make run`" in stopped.text
    assert retriever.retrieve(question).documents and not retriever.hybrid  # still serving

    monkeypatch.delenv(HOLD_ENV)
    second = dense_build.start_if_pending(cfg, str(cfg_file))
    assert second is not None
    assert second.wait(timeout=300) == 0, dense_build.log_path(cfg).read_text()
    assert retriever.retrieve(question).documents and retriever.hybrid and live.reloads == 1
    assert dense_build.start_if_pending(cfg, str(cfg_file)) is None  # nothing left to build
