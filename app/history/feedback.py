"""``python -m app feedback export [--since DATE] [--out F.jsonl]``: every rated answer as one
line in the eval files' shape (``qid``, ``question``, ``gold_pmids``), ready to become a question
set: ``gold_pmids`` are the sources of an answer rated up (an answer rated down has none: what it
cited did not help), with the rating, comment, answer, mode, model and answer style beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

from app.history.db import connect_args, database_url, describe_failure, shown_url, sqlite_path
from app.history.turns import ANSWER_KEY
from settings.config import Config
from settings.errors import UserFacingError

QUERY = """
-- the chat rates the run that answered (the answer is its child), or a message itself
SELECT f."id" AS feedback_id, f."value" AS value, f."comment" AS comment,
       s."metadata" AS metadata, s."createdAt" AS created_at, s."threadId" AS thread_id,
       t."userIdentifier" AS user_identifier
FROM feedbacks f
JOIN steps s ON (s."id" = f."forId" OR s."parentId" = f."forId")
     AND s."type" = 'assistant_message'
LEFT JOIN threads t ON t."id" = s."threadId"
ORDER BY s."createdAt" ASC, f."id" ASC
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--since", type=dt.date.fromisoformat, default=None, metavar="DATE",
                        help="only answers given on or after this day (YYYY-MM-DD, UTC)")
    parser.add_argument("--rating", choices=("all", "up", "down"), default="all",
                        help="only answers rated up (a question set with gold PMIDs), or down")
    parser.add_argument("--out", type=Path, default=None, metavar="F.jsonl",
                        help="write here (default: standard output)")


def to_line(row: dict[str, Any]) -> dict[str, Any] | None:
    """One rated answer as an eval-file line (None for a rated message that is not an answer)."""
    meta = row.get("metadata")
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except ValueError:
            return None
    record = meta.get(ANSWER_KEY) if isinstance(meta, dict) else None
    if not isinstance(record, dict) or not record.get("question"):
        return None
    up = int(row["value"]) == 1
    pmids = [str(p) for p in record.get("pmids") or []]
    return {
        "qid": f"feedback-{str(row['feedback_id'])[:8]}",
        "question": record["question"],
        "gold_pmids": pmids if up else [],
        "rating": "up" if up else "down",
        "comment": row.get("comment") or "",
        "answer": record.get("answer", ""),
        "source_pmids": pmids,
        "mode": record.get("mode"),
        "model": record.get("model"),
        "style": record.get("style"),
        "answered_at": row.get("created_at"),
        "thread_id": row.get("thread_id"),
        "user": row.get("user_identifier"),
    }


class NoHistoryTables(LookupError):
    """The database has no chat history tables yet (the chat makes them on first start)."""


async def rated_answers(url: str, since: dt.date | None = None) -> list[dict[str, Any]]:
    from sqlalchemy import inspect, text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url, connect_args=connect_args(url))
    try:
        async with engine.connect() as conn:
            tables = await conn.run_sync(lambda c: set(inspect(c).get_table_names()))
            if not {"feedbacks", "steps", "threads"} <= tables:
                raise NoHistoryTables(shown_url(url))
            rows = [dict(r._mapping) for r in await conn.execute(text(QUERY))]
    finally:
        await engine.dispose()
    lines = [line for line in map(to_line, rows) if line is not None]
    if since is not None:
        day = since.isoformat()
        lines = [x for x in lines if str(x.get("answered_at") or "")[:10] >= day]
    return lines


def run(cfg: Config, args: argparse.Namespace) -> int:
    url = database_url(cfg)
    if not cfg.history.url and not sqlite_path(cfg).is_file():
        raise UserFacingError(f"no chat history at {sqlite_path(cfg)} (history.folder in "
                              "cfg.yaml): nothing has been rated yet")
    try:
        lines = asyncio.run(rated_answers(url, args.since))
        if getattr(args, "rating", "all") != "all":
            lines = [x for x in lines if x["rating"] == args.rating]
    except NoHistoryTables:
        raise UserFacingError(f"no chat history in {shown_url(url)} yet (the chat makes its "
                              "tables on first start): nothing has been rated yet") from None
    except Exception as err:
        raise UserFacingError(f"cannot read the chat history at {shown_url(url)}: "
                              f"{describe_failure(err, cfg.history.password_env)}") from None
    text_out = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)
    if args.out is None:
        sys.stdout.write(text_out)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text_out, encoding="utf-8")
        ups = sum(x["rating"] == "up" for x in lines)
        print(f"wrote {len(lines)} rated answers ({ups} up, {len(lines) - ups} down) to "
              f"{args.out}", file=sys.stderr)
    return 0
