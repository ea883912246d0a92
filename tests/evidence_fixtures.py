"""A small real index for the evidence features (issue #28): the retracted fixture record
(tests/data/retracted_pubmed.xml: a real trial with a retraction notice added), every shared
article that mentions statins, and the first 40 articles of each shared corpus. Real MiniLM
embeddings; built once and cached under ``.cache/test-evidence-index/<key>`` (the key covers the
articles and the index code, as conftest's ``small_index_cfg`` does)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import PUBMED_DIR, SMALL_INDEX_THRESHOLD, TEST_INDEX_BACKEND, _key

REPO = Path(__file__).resolve().parents[1]
RETRACTED = REPO / "tests" / "data" / "retracted_pubmed.xml"
RETRACTED_PMID = "24090588"
STATIN = re.compile(r"\b\w*statins?\b", re.IGNORECASE)


def evidence_articles(shared_articles) -> list:
    from ingest.models import Article
    from ingest.sources import iter_file

    retracted = [a for a in iter_file(RETRACTED) if isinstance(a, Article)]
    chosen = {a.pmid: a for a in retracted}
    statins = [a for a in shared_articles if STATIN.search(f"{a.title} {a.abstract}")]
    for a in [*statins, *shared_articles[:40], *shared_articles[-40:]]:
        chosen.setdefault(a.pmid, a)
    return list(chosen.values())


@pytest.fixture(scope="session")
def evidence_index_cfg(shared_articles):
    from app.config import load_config
    from indexing.build import build_index
    from indexing.store import IndexMissingError, open_current

    articles = evidence_articles(shared_articles)
    fixed = {"embedding_backend": TEST_INDEX_BACKEND}
    base = load_config(overrides={"corpus": {"paths": [str(PUBMED_DIR)]}, "index": fixed})
    cfg = load_config(
        overrides={
            "corpus": {"paths": [str(PUBMED_DIR)]},
            "index": {"dir": str(REPO / ".cache" / "test-evidence-index"),
                      "name": _key(articles, base), **fixed},
            "retrieval": {"score_threshold": SMALL_INDEX_THRESHOLD},
        }
    )
    try:
        open_current(cfg)
    except IndexMissingError:
        build_index(cfg, articles, if_missing=True)
    return cfg
