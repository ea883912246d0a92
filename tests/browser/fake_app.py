"""Chainlit target for browser tests that must not load the model: app/ui.py, unchanged, with a
scripted assistant (tests/browser/fakes.py) behind it. ``FAKE_TOKEN_DELAY`` sets its pace."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

if not os.environ.get("PUBMED_ASSISTANT_CFG"):  # the chat's history in the test's folder
    import tempfile

    from app.config import load_config
    from tests.browser.harness import write_test_config

    # FAKE_APP_FOLDER: set by tests.browser.harness.Server beside the server's log, in pytest's
    # own temporary folder; run by hand, a fresh temporary one
    _folder = Path(os.environ.get("FAKE_APP_FOLDER") or tempfile.mkdtemp(prefix="fake_app_"))
    _folder.mkdir(parents=True, exist_ok=True)
    os.environ["PUBMED_ASSISTANT_CFG"] = str(write_test_config(load_config(),
                                                               _folder / "cfg.yaml"))

from app import ui  # registers the Chainlit handlers  # noqa: E402
from tests.browser.fakes import FakeAssistant, corpus_sources  # noqa: E402

_DELAY = float(os.environ.get("FAKE_TOKEN_DELAY", "0.05"))
# FAKE_SOURCE_PMIDS="pmid,pmid" FAKE_CORPUS="file:file": the sources are those real articles
_PMIDS = [p for p in os.environ.get("FAKE_SOURCE_PMIDS", "").split(",") if p]
_SOURCES = (corpus_sources(_PMIDS, os.environ["FAKE_CORPUS"].split(os.pathsep)) if _PMIDS
            else None)
ui.BACKEND = ui.Backend(lambda: FakeAssistant(token_delay=_DELAY, sources=_SOURCES))
