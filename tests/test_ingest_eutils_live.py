"""The E-utilities fetch against NCBI itself: runs only when ``PUBMED_LIVE=1`` is set.

``PUBMED_LIVE=1 NCBI_EMAIL=you@example.org pytest tests/test_ingest_eutils_live.py`` (needs
internet; ``NCBI_API_KEY`` is used when set). It downloads a handful of records of the default
query through ``Bio.Entrez`` in two batches, then re-runs to check the resume finds them all.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.config import config_from_dict
from ingest.corpus import load_corpus
from ingest.fetch import fetch_corpus


@pytest.fixture
def live_cfg(tmp_path: Path):
    if os.environ.get("PUBMED_LIVE") != "1":
        pytest.skip("PUBMED_LIVE is not 1: the live NCBI test needs internet and is opt-in")
    fetch = {
        "query": "intelligence[Title/Abstract]",
        "mindate": "2020/01/01",
        "maxdate": "2020/01/31",
        "batch_size": 3,
        "max_records": 5,
        "out_dir": "data",
    }
    return config_from_dict(
        {"corpus": {"paths": ["data/"], "min_abstract_chars": 0, "fetch": fetch}}, root=tmp_path
    )


def test_live_fetch_downloads_parses_and_resumes(live_cfg) -> None:
    report = fetch_corpus(live_cfg, progress=False)
    assert report.total == 5 and report.downloaded == 2 and report.articles == 5
    articles = load_corpus(live_cfg).articles
    assert len({a.pmid for a in articles}) == 5
    assert all(a.title and a.year and 2019 <= a.year <= 2021 for a in articles)  # pdat: print or e
    again = fetch_corpus(live_cfg, progress=False)
    assert again.downloaded == 0 and again.skipped == 2
