"""Shared fixtures: the real shared data (skipped cleanly when absent) and a small real index.

The small index (~450 real articles: every gold article of the first eval questions, ADHD and
stimulant articles for the conversational test, and a slice of each corpus) is built once and
cached under ``.cache/test-index/<key>``; the key covers the selection and the index code, so a
change rebuilds it and a fresh clone builds it from scratch (about a minute on 2 cores).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from settings.offline import offline_env

offline_env()
# The suite runs two workers, and the chat servers, models and Chromium they start, on 2 cores.
# OpenMP threads that spin while they wait (the default of the LLM's and torch's thread pools)
# then take the CPU the other processes need: passive, three test files run together took 0.83
# of the wall time and 0.79 of the CPU, paired runs (docs/tests.md, stop 58). Servers inherit it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
PUBMED_DIR = SHARED_DATA / "pubmed"
EVAL_DIR = SHARED_DATA / "eval"
# Every project module indexing/build.py imports, directly or not (tests/test_test_index_key.py
# checks that none is missing). What ingest does to the articles (ingest/text.py, preprocess.py)
# is in the key already: the parsed articles themselves are hashed.
INDEX_CODE = [
    "indexing/build.py",
    "indexing/chunking.py",
    "indexing/bm25.py",
    "indexing/bm25_counts.py",
    "indexing/phrases.py",
    "indexing/tokenize.py",
    "indexing/auto_backend.py",
    "indexing/backend_cache.py",
    "indexing/embeddings.py",
    "indexing/heap.py",
    "indexing/store.py",
    "indexing/progress.py",
    "ingest/models.py",
    "ingest/links.py",
    "ingest/metadata.py",
    "ingest/design.py",
    "ingest/sentences.py",
    "settings/errors.py",
    "settings/threads.py",
]
SMALL_INDEX_THRESHOLD = 0.25
ADHD = re.compile(r"\b(ADHD|attention[- ]deficit|methylphenidate|stimulant)", re.IGNORECASE)


def require_shared_data() -> Path:
    if not (PUBMED_DIR / "intelligence_2013_2022.xml.gz").is_file():
        pytest.skip(
            f"shared PubMed data not found at {SHARED_DATA} (clone with ../shared beside it)"
        )
    return SHARED_DATA


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return require_shared_data()


@pytest.fixture(scope="session")
def shared_articles(shared_data: Path):
    """Every article of both shared corpora, parsed once per session (a few seconds)."""
    from app.config import load_config
    from ingest.corpus import load_corpus

    cfg = load_config(overrides={"corpus": {"paths": [str(PUBMED_DIR)]}})
    return load_corpus(cfg).articles


def _gold_pmids(name: str, limit: int) -> list[str]:
    path = EVAL_DIR / name
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()[:limit]
    return [p for line in lines for p in json.loads(line)["gold_pmids"]]


def small_selection(articles) -> list:
    gold = set(_gold_pmids("llm_questions_dev.jsonl", 72) + _gold_pmids("pubmedqa_pqal.jsonl", 100)
               + _gold_pmids("verdict_dev.jsonl", 40))  # fmt: skip
    chosen: dict[str, object] = {}
    adhd = [a for a in articles if ADHD.search(a.title + " " + a.abstract)]
    for a in [
        *(a for a in articles if a.pmid in gold),
        *adhd[:80],
        *articles[:120],
        *articles[-80:],
    ]:
        chosen.setdefault(a.pmid, a)
    return list(chosen.values())


TEST_INDEX_BACKEND = "torch"  # the test indexes' embedding backend (see small_index_cfg)


def _key(articles, cfg) -> str:
    h = hashlib.sha256()
    h.update(cfg.index.model_dump_json(exclude={"dir", "name"}).encode())
    h.update(cfg.retrieval.bm25.model_dump_json().encode())
    for rel in INDEX_CODE:
        h.update((REPO / rel).read_bytes())
    for a in articles:
        h.update(a.model_dump_json().encode())
    return h.hexdigest()[:16]


@pytest.fixture(scope="session")
def small_index_cfg(shared_articles):
    """A Config whose index is a real ~450-article FAISS+BM25 index built from shared data."""
    from app.config import load_config
    from indexing.build import build_index
    from indexing.store import IndexMissingError, open_current

    articles = small_selection(shared_articles)
    cache = REPO / ".cache" / "test-index"
    # fp32 torch, named: `auto` would measure every backend again in each fresh folder (its
    # own tests run it: tests/test_auto_backend.py), and fp32 is the reference on any CPU
    fixed = {"embedding_backend": TEST_INDEX_BACKEND}
    cfg = load_config(overrides={"corpus": {"paths": [str(PUBMED_DIR)]}, "index": fixed})
    cfg = load_config(
        overrides={
            "corpus": {"paths": [str(PUBMED_DIR)]},
            "index": {"dir": str(cache), "name": _key(articles, cfg), **fixed},
            # The best cosine of any question grows with corpus size: cfg.yaml's 0.35 is measured
            # on 16.7k articles; on ~450 the same questions score lower (off-topic ones <= 0.27).
            "retrieval": {"score_threshold": SMALL_INDEX_THRESHOLD},
        }
    )
    try:
        open_current(cfg)
    except IndexMissingError:
        build_index(cfg, articles, if_missing=True)  # waits if another process is building it
    return cfg


@pytest.fixture(scope="session")
def small_retriever(small_index_cfg):
    from retrievers.loading import load_retriever

    return load_retriever(small_index_cfg)


@pytest.fixture(scope="session")
def smollm2_hf() -> Any:
    """The packaged SmolLM2 GGUF through transformers (``llm.backend: huggingface``, CPU, 32 new
    tokens), loaded once for the session: its dequantization takes about 40 s under load. A
    module that wants another default length takes a copy (``model_copy``: the same weights;
    ``max_new_tokens`` is only read when it generates)."""
    from llms.hf_chat import LocalHFChatModel
    from llms.llm import get_llm
    from settings.config import HuggingFaceLLMConfig

    model = get_llm(HuggingFaceLLMConfig(device="cpu", max_new_tokens=32))
    assert isinstance(model, LocalHFChatModel)
    return model


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright, one per test module (skipped when it is absent);
    each test opens its own tabs (tests/browser/harness.py ``ChatPage``)."""
    from tests.browser.harness import chromium, require_chromium

    require_chromium()
    with chromium() as launched:
        yield launched


# ---- CI tells the truth: a skipped test is a failure there, except for what CI cannot have ----
# CI (CI=true) has ../shared and Chromium, so a test that skips for want of either hides a broken
# path. Only these skips are allowed there, each for something CI lacks by design.
CI_ALLOWED_SKIPS = (
    "MILVUS_URI is not set",  # a real Milvus server
    "PUBMED_LIVE is not 1",  # live NCBI over the internet
)


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _skip_reason(report) -> str:  # noqa: ANN001 - a pytest report
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _fail_disallowed_skip(report) -> None:  # noqa: ANN001 - a pytest report
    if not (_in_ci() and report.skipped) or hasattr(report, "wasxfail"):
        return
    reason = _skip_reason(report)
    if any(allowed in reason for allowed in CI_ALLOWED_SKIPS):
        return
    report.outcome = "failed"
    allowed = ", ".join(CI_ALLOWED_SKIPS)
    report.longrepr = f"skipped under CI=true, where only these may skip ({allowed}): {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # noqa: ANN001, ANN201 - pytest hook
    outcome = yield
    _fail_disallowed_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):  # noqa: ANN001, ANN201 - pytest hook
    outcome = yield
    _fail_disallowed_skip(outcome.get_result())


# ---- two workers (`make test`: pytest -n 2 --dist loadfile, pytest-xdist) -------------------
# Each worker takes whole test files, in collection order (--no-loadscope-reorder: xdist's default
# hands out the files with the most tests first, which put the one-test browser files, the
# longest, last). The browser and real-model files go first, so that the last files handed out are
# short ones and neither worker is left alone with a long browser test at the end; the order within
# a file is kept. The first two files handed out are one that uses the small index and a browser
# file that does not: while one worker builds the small index (about a minute), the other works
# instead of waiting for it.
HEAVY_FILE = re.compile(r"^test_(ui|api)_browser|_real\.py$")


def pytest_collection_modifyitems(items):  # noqa: ANN001, ANN201 - pytest hook
    items.sort(key=lambda item: 0 if HEAVY_FILE.search(item.path.name) else 1)  # a stable sort
    files = list(dict.fromkeys(item.path for item in items))
    waits = {item.path for item in items if "small_index_cfg" in item.fixturenames}
    if not files or files[0] not in waits:
        return
    busy = next((f for f in files if f not in waits and f.name.startswith("test_ui_browser")),
                None)
    if busy is not None:
        files = [files[0], busy, *(f for f in files[1:] if f != busy)]
        rank = {f: i for i, f in enumerate(files)}
        items.sort(key=lambda item: rank[item.path])
