"""``python -m app library add|list|remove|sync``: the user's own additions from PubMed."""

from __future__ import annotations

import argparse
import json
import sys

from indexing.incremental import SyncResult, sync_library
from indexing.library_ops import add_search, listing, remove
from ingest.errors import FetchError
from ingest.library import plain_message
from settings.config import Config
from settings.errors import UserFacingError


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _sync_line(sync: SyncResult) -> str:
    m = sync.manifest
    if not sync.changed:
        return f"the index already matched the library ({m.articles} articles)"
    return (f"index published: {m.articles} articles, {m.chunks} chunks ({sync.added} added, "
            f"{sync.removed} removed, {sync.chunks_embedded} chunks embedded)")


# -- add ---------------------------------------------------------------------------------------
def add_arguments_add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", help="a PubMed search, e.g. 'dapagliflozin heart failure'")
    parser.add_argument("--max", type=int, default=None,
                        help="fetch at most N articles (default library.default_max)")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")


def run_add(cfg: Config, args: argparse.Namespace) -> int:
    try:
        outcome = add_search(cfg, args.query, args.max, progress=None if args.json else _say)
    except FetchError as err:
        raise UserFacingError(plain_message(err)) from None
    note = outcome.note
    if args.json:
        print(json.dumps({"id": note.id, "query": note.query, "count": note.count,
                          "fetched": note.fetched, "new": note.new,
                          "articles": outcome.sync.manifest.articles,
                          "seconds": outcome.seconds}, indent=2))
    else:
        print(f"search {note.id}: {note.query!r}: PubMed has {note.count:,} matches, "
              f"{note.fetched} fetched, {note.new} new ({note.already_indexed} already indexed, "
              f"{note.dropped_short} too short); {_sync_line(outcome.sync)}")
    return 0


# -- list --------------------------------------------------------------------------------------
def add_arguments_list(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")


def run_list(cfg: Config, args: argparse.Namespace) -> int:
    rows = listing(cfg)
    if args.json:
        print(json.dumps([{"id": r.note.id, "added_at": r.note.added_at, "query": r.note.query,
                           "user": r.note.user, "count": r.note.count, "fetched": r.note.fetched,
                           "new": r.note.new, "indexed": r.indexed} for r in rows], indent=2))
        return 0
    if not rows:
        print("the library is empty: add a search with `python -m app library add \"QUERY\"`")
        return 0
    print(f"{'id':>4}  {'added (UTC)':<20} {'matches':>9} {'fetched':>7} {'new':>5} "
          f"{'indexed':>7}  query")
    for r in rows:
        n = r.note
        print(f"{n.id:>4}  {n.added_at[:19].replace('T', ' '):<20} {n.count:>9,} {n.fetched:>7} "
              f"{n.new:>5} {r.indexed:>7}  {n.query}")
    return 0


# -- remove ------------------------------------------------------------------------------------
def add_arguments_remove(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", nargs="?", help="the search's query (as listed) or its id")
    parser.add_argument("--pmids", nargs="+", default=[], help="remove only these articles")


def run_remove(cfg: Config, args: argparse.Namespace) -> int:
    if not args.query and not args.pmids:
        raise UserFacingError("say what to remove: a search's query or id, or --pmids")
    removed, sync = remove(cfg, args.query, args.pmids, progress=_say)
    print(f"{removed} article(s) removed from the library; {_sync_line(sync)}")
    return 0


# -- sync --------------------------------------------------------------------------------------
def add_arguments_sync(parser: argparse.ArgumentParser) -> None:
    pass


def run_sync(cfg: Config, args: argparse.Namespace) -> int:
    print(_sync_line(sync_library(cfg, progress=_say)))
    return 0
