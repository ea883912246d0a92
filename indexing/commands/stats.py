"""``python -m app index stats [--json]``: what the current index holds."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from indexing.store import location, open_current

if TYPE_CHECKING:
    from settings.config import Config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(cfg: Config, args: argparse.Namespace) -> int:
    if cfg.retrieval.backend == "milvus":
        from indexing.milvus_index import milvus_stats

        stats = milvus_stats(cfg)
    else:
        folder, manifest = open_current(cfg, verify=False, old_schema_ok=True)
        stats = manifest.stats()
        stats["path"] = str(location(cfg).link)
        stats["size_bytes"] = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        for key, value in stats.items():
            print(f"{key:>20}: {value}")
    return 0
