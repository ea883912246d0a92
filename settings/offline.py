"""The environment every process runs in: no hub downloads, quiet tokenizers. Set in one place;
the CLI and the chat server call :func:`offline_env` before any model library is imported."""

from __future__ import annotations

import os
from collections.abc import MutableMapping

OFFLINE_ENV: dict[str, str] = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def offline_env(env: MutableMapping[str, str] | None = None) -> MutableMapping[str, str]:
    """Fill in :data:`OFFLINE_ENV` where ``env`` (default ``os.environ``) does not say otherwise."""
    target = os.environ if env is None else env
    for key, value in OFFLINE_ENV.items():
        target.setdefault(key, value)
    return target
