"""``python -m app ingest``: load the corpus (downloading it first with ``--fetch``) and report
what was parsed: files, articles, short abstracts dropped, duplicates, bad records."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ingest.corpus import CorpusReport, find_corpus_files, load_corpus
from ingest.errors import CorpusNotFoundError
from ingest.fetch import FetchReport, fetch_corpus
from settings.config import Config

MAX_BAD_SHOWN = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fetch",
        action="store_true",
        help="download corpus.fetch.query from PubMed into corpus.fetch.out_dir first "
        "(resumes an interrupted download; NCBI_EMAIL / NCBI_API_KEY from the environment)",
    )
    parser.add_argument("--max-records", type=int, help="with --fetch: download at most N records")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(cfg: Config, args: argparse.Namespace) -> int:
    fetched: FetchReport | None = None
    if args.fetch:
        overrides = {"max_records": args.max_records} if args.max_records else None
        fetched = fetch_corpus(cfg, overrides=overrides, progress=not args.json, log=_log)
    try:
        files = find_corpus_files(cfg)
    except CorpusNotFoundError:
        if fetched is None:
            raise  # its message says where to put files and how to fetch them
        files = find_corpus_files(cfg, [str(fetched.out_dir)])
        _log(f"note: {fetched.out_dir} is not in corpus.paths; add it so `index build` finds it")
    load = load_corpus(cfg, files)
    if args.json:
        payload: dict[str, Any] = {"corpus": load.report.to_dict()}
        if fetched is not None:
            payload["fetch"] = {
                k: str(v) if k == "out_dir" else v for k, v in vars(fetched).items()
            }
            payload["fetch"]["files"] = [str(p) for p in fetched.files]
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        print_report(load.report, fetched)
    return 0


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def print_report(report: CorpusReport, fetched: FetchReport | None = None) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    if fetched is not None:
        console.print(
            f"fetched {escape(fetched.query)!s} {fetched.mindate}-{fetched.maxdate}: "
            f"{fetched.total:,} records, {fetched.downloaded} batch(es) downloaded, "
            f"{fetched.skipped} already present in {escape(str(fetched.out_dir))}"
        )
    files = Table(title="corpus files")
    for name, justify in (
        ("file", "left"),
        ("format", "left"),
        ("articles", "right"),
        ("bad", "right"),
    ):
        files.add_column(name, justify=justify)  # type: ignore[arg-type]
    for f in report.files:
        files.add_row(escape(f.path), f.format, f"{f.records:,}", f"{f.bad:,}")
    console.print(files)
    summary = Table(title="corpus", show_header=False)
    summary.add_column("what")
    summary.add_column("count", justify="right")
    for label, value in (
        ("records read", report.records_read),
        ("duplicates replaced", report.duplicates_replaced),
        ("deleted (DeleteCitation)", len(report.deletions)),
        (f"dropped: abstract < {report.min_abstract_chars} chars", report.dropped_short),
        ("bad records", len(report.bad_records)),
        ("articles", report.articles),
    ):
        summary.add_row(label, f"{value:,}")
    console.print(summary)
    console.print(f"checksum {report.checksum[:16]}")
    for bad in report.bad_records[:MAX_BAD_SHOWN]:
        console.print(f"[red]bad record[/red] {escape(str(bad))}", soft_wrap=True)
    if len(report.bad_records) > MAX_BAD_SHOWN:
        console.print(f"... and {len(report.bad_records) - MAX_BAD_SHOWN} more (see --json)")
