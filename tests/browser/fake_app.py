"""Chainlit target for browser tests that must not load the model: app/ui.py, unchanged, with a
scripted assistant (tests/browser/fakes.py) behind it. ``FAKE_TOKEN_DELAY`` sets its pace."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app import ui  # registers the Chainlit handlers
from tests.browser.fakes import FakeAssistant

_DELAY = float(os.environ.get("FAKE_TOKEN_DELAY", "0.05"))
ui.BACKEND = ui.Backend(lambda: FakeAssistant(token_delay=_DELAY))
