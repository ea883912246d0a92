"""A library search against NCBI itself: runs only when ``PUBMED_LIVE=1`` is set (not run here:
this machine has no internet).

``PUBMED_LIVE=1 NCBI_EMAIL=you@example.org pytest tests/test_library_live.py`` searches PubMed
for a drug absent from the shipped corpus and fetches 3 records through the library's client
(rate limit, retries, the checks every EFetch answer gets), writing nothing."""

from __future__ import annotations

import os

import pytest

from ingest.library import search_pubmed
from settings.config import load_config


def test_live_search_fetches_checked_pubmed_records() -> None:
    if os.environ.get("PUBMED_LIVE") != "1":
        pytest.skip("PUBMED_LIVE is not 1: the live NCBI test needs internet and is opt-in")
    cfg = load_config()
    fetched = search_pubmed(cfg, "dapagliflozin heart failure", 3)
    assert fetched.count > 100 and fetched.fetched == 3
    assert all(a.pmid in fetched.elements and a.title for a in fetched.articles)
