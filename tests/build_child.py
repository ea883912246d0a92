"""A child process for tests/test_build_killed.py: the real command line (``app.cli.main``) or
the real :func:`indexing.store.publish`, with a ``SIGKILL`` at a step the parent chooses.

    python -m tests.build_child [--shard-rows N] [--kill-before STEP] -- --config c.yaml index build
    python -m tests.build_child --kill-before STEP --publish BUILD_DIR MANIFEST_JSON c.yaml

Nothing of the product is replaced: the file operations :func:`indexing.store.publish` performs
(checksumming each file, writing and renaming the manifest, making and renaming the link, pruning
old builds) are counted while it runs, each is announced on stderr as ``publish step <n>: <what>``
and, when ``STEP`` is its number or the start of its description, the process kills itself with
``SIGKILL`` just before it: the same state on disk as a power cut or ``kill -9`` at that moment.
``--shard-rows`` makes the embedding shards (``indexing.build.SHARD_ROWS``) small, so that a
small corpus spans several shards and a kill can land between two of them.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

STEP_PREFIX = "publish step "


class PublishSteps:
    """Counts publish's file operations; kills this process before the chosen one."""

    def __init__(self, kill_before: str | None) -> None:
        self.kill_before = kill_before
        self.count = 0
        self.armed = False

    def step(self, what: str) -> None:
        if not self.armed:
            return
        print(f"{STEP_PREFIX}{self.count}: {what}", file=sys.stderr, flush=True)
        target = self.kill_before
        if target is not None and (target == str(self.count) or what.startswith(target)):
            os.kill(os.getpid(), signal.SIGKILL)
        self.count += 1

    def wrap(self, fn: Callable[..., Any], describe: Callable[..., str]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.step(describe(*args, **kwargs))
            return fn(*args, **kwargs)

        return wrapper

    def install(self) -> None:
        import indexing.store

        store: Any = indexing.store
        store.sha256_file = self.wrap(store.sha256_file, lambda p: f"sha256 {Path(p).name}")
        os.replace = self.wrap(
            os.replace, lambda src, dst: f"replace {Path(src).name} -> {Path(dst).name}"
        )
        shutil.rmtree = self.wrap(  # type: ignore[assignment]
            shutil.rmtree, lambda p, *a, **k: f"rmtree {Path(p).name}"
        )
        path_cls: Any = Path
        path_cls.write_text = self.wrap(Path.write_text, lambda p, *a, **k: f"write {p.name}")
        path_cls.symlink_to = self.wrap(
            Path.symlink_to, lambda p, *a, **k: f"symlink {p.name} -> {a[0] if a else ''}"
        )
        real_publish = store.publish

        @functools.wraps(real_publish)
        def publish(*args: Any, **kwargs: Any) -> None:
            self.armed = True
            try:
                real_publish(*args, **kwargs)
                self.step("return")  # published; the caller has not cleaned up yet
            finally:
                self.armed = False

        store.publish = publish
        build = sys.modules.get("indexing.build")
        if build is not None:  # imported it by name
            build.publish = publish  # type: ignore[attr-defined]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.build_child")
    parser.add_argument("--shard-rows", type=int, default=None)
    parser.add_argument("--kill-before", default=None)
    parser.add_argument("--publish", nargs=3, metavar=("BUILD_DIR", "MANIFEST_JSON", "CONFIG"))
    args, rest = parser.parse_known_args(argv)
    if rest and rest[0] == "--":
        rest = rest[1:]

    from settings.offline import offline_env

    offline_env()
    if not args.publish:
        import indexing.build

        if args.shard_rows:
            indexing.build.SHARD_ROWS = args.shard_rows
    PublishSteps(args.kill_before).install()
    if args.publish:
        import indexing.store
        from settings.config import load_config

        build_dir, manifest_json, config = args.publish
        manifest = indexing.store.Manifest.model_validate_json(Path(manifest_json).read_text())
        indexing.store.publish(indexing.store.location(load_config(config)), Path(build_dir),
                               manifest)  # fmt: skip
        return 0
    from app.cli import main as app_main

    return app_main(rest)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
