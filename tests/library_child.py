"""A child process for tests/test_library_faults.py: the real ``python -m app`` command line,
killed with ``SIGKILL`` at a chosen point of a library addition (the same state on disk as a
power cut or ``kill -9`` there).

    python -m tests.library_child --kill-at STEP -- --config c.yaml library add "QUERY"

STEP: ``fetch`` (after the first EFetch answer arrived, before the next), ``store`` (the
search's note written, its XML written to a temporary name but not renamed), ``embed`` (inside
the embedding of the new chunks), ``publish`` (the new build complete, just before the symlink
swap). Nothing of the product is replaced; each step is announced on stderr before the kill.
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys
from collections.abc import Callable
from typing import Any


def _kill(step: str) -> None:
    print(f"killed at {step}", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def _after(fn: Callable[..., Any], step: str, calls: int = 1) -> Callable[..., Any]:
    count = [0]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        count[0] += 1
        if count[0] >= calls:
            _kill(step)
        return result

    return wrapper


def install(step: str) -> None:
    import indexing.embeddings
    import ingest.eutils

    if step == "fetch":
        ingest.eutils.EUtilsClient.efetch = _after(  # type: ignore[method-assign]
            ingest.eutils.EUtilsClient.efetch, step)
    elif step == "store":
        real_replace = os.replace

        def replace(src: Any, dst: Any) -> None:
            if str(dst).endswith(".xml.gz"):
                _kill(step)
            real_replace(src, dst)

        os.replace = replace
    elif step == "embed":
        real = indexing.embeddings.Embedder._encode_batches

        def encode(self: Any, batches: Any) -> Any:
            if sum(len(texts) for texts in batches) > 1:  # chunks, not the dimension probe
                _kill(step)
            return real(self, batches)

        indexing.embeddings.Embedder._encode_batches = encode  # type: ignore[method-assign]
    elif step == "publish":
        real_replace = os.replace

        def replace_link(src: Any, dst: Any) -> None:
            if ".link-" in str(src):
                _kill(step)
            real_replace(src, dst)

        os.replace = replace_link
    else:
        raise SystemExit(f"unknown step {step!r}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.library_child")
    parser.add_argument("--kill-at", required=True)
    args, rest = parser.parse_known_args(argv)
    if rest and rest[0] == "--":
        rest = rest[1:]
    from settings.offline import offline_env

    offline_env()
    install(args.kill_at)
    from app.cli import main as app_main

    return app_main(rest)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
