"""The tables Chainlit 2.12's ``SQLAlchemyDataLayer`` reads and writes, created on first start and
upgraded in place (a column added later is added to an existing file; nothing is dropped).

Every column is one that ``chainlit.data.sql_alchemy`` names in its queries or that a
``to_dict`` it stores can carry: ``Step.to_dict`` (``defaultOpen``, ``autoCollapse``,
``showInput``, ``generation``...), ``Message.to_dict`` (``command``, ``modes``,
``waitForAnswer``), ``Element.to_dict`` (``autoPlay``, ``playerConfig``, ``props``...) and the
``Feedback`` dataclass. Chainlit inserts only the keys whose value is not None, so a missing
column fails only the rows that carry it: ``tests/test_history_schema.py`` checks these lists
against the installed Chainlit.

SQLite stores JSON and tag lists as text (the data layer binds them as strings:
:mod:`app.history.store`); PostgreSQL gets JSONB and TEXT[] as in Chainlit's documented schema.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    ForeignKey,
    Integer,
    MetaData,
    Table,
    Text,
    inspect,
)
from sqlalchemy.engine import Connection
from sqlalchemy.types import TypeEngine

log = logging.getLogger("app.history")

SCHEMA_VERSION = 1  # informational: the upgrade adds whatever column is missing


def _json(dialect: str) -> TypeEngine[Any]:
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import JSONB

        return JSONB()
    return Text()


def _tags(dialect: str) -> TypeEngine[Any]:
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import ARRAY

        return ARRAY(Text())
    return Text()  # a JSON list, written by app.history.store


def tables(dialect: str) -> MetaData:
    """The five tables for a database of ``dialect`` (``sqlite``, ``postgresql``...)."""
    md = MetaData()
    Table(
        "users", md,
        Column("id", Text, primary_key=True),
        Column("identifier", Text, nullable=False, unique=True),
        Column("createdAt", Text),
        Column("metadata", _json(dialect), nullable=False),
    )
    Table(
        "threads", md,
        Column("id", Text, primary_key=True),
        Column("createdAt", Text),
        Column("name", Text),
        Column("userId", Text, ForeignKey("users.id", ondelete="CASCADE")),
        Column("userIdentifier", Text),
        Column("tags", _tags(dialect)),
        Column("metadata", _json(dialect)),
    )
    Table(
        "steps", md,
        Column("id", Text, primary_key=True),
        Column("name", Text, nullable=False),
        Column("type", Text, nullable=False),
        Column("threadId", Text, ForeignKey("threads.id", ondelete="CASCADE"), nullable=False),
        Column("parentId", Text),
        Column("streaming", Boolean, nullable=False),
        Column("waitForAnswer", Boolean),
        Column("isError", Boolean),
        Column("metadata", _json(dialect)),
        Column("tags", _tags(dialect)),
        Column("input", Text),
        Column("output", Text),
        Column("createdAt", Text),
        Column("command", Text),
        Column("modes", _json(dialect)),
        Column("start", Text),
        Column("end", Text),
        Column("generation", _json(dialect)),
        Column("showInput", Text),
        Column("language", Text),
        Column("indent", Integer),
        Column("defaultOpen", Boolean),
        Column("autoCollapse", Boolean),
    )
    Table(
        "elements", md,
        Column("id", Text, primary_key=True),
        Column("threadId", Text, ForeignKey("threads.id", ondelete="CASCADE")),
        Column("type", Text),
        Column("url", Text),
        Column("chainlitKey", Text),
        Column("name", Text, nullable=False),
        Column("display", Text),
        Column("objectKey", Text),
        Column("size", Text),
        Column("page", Integer),
        Column("language", Text),
        Column("forId", Text),
        Column("mime", Text),
        Column("props", _json(dialect)),
        Column("autoPlay", Boolean),
        Column("playerConfig", _json(dialect)),
    )
    Table(
        "feedbacks", md,
        Column("id", Text, primary_key=True),
        Column("forId", Text, nullable=False),
        Column("threadId", Text, ForeignKey("threads.id", ondelete="CASCADE")),
        Column("value", Integer, nullable=False),
        Column("comment", Text),
    )
    return md


def create_or_upgrade(conn: Connection) -> list[str]:
    """Create the missing tables and add the missing columns (sync; run it through
    ``AsyncConnection.run_sync``). Returns what was added, as ``table.column`` (or ``table``).
    Existing rows and columns are never touched."""
    dialect = conn.dialect.name
    md = tables(dialect)
    inspector = inspect(conn)
    existing = set(inspector.get_table_names())
    added: list[str] = []
    for table in md.sorted_tables:
        if table.name not in existing:
            table.create(conn)
            added.append(table.name)
            continue
        have = {c["name"] for c in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name in have:
                continue
            kind = column.type.compile(dialect=conn.dialect)
            # added columns are nullable: rows written before the upgrade have no value
            conn.exec_driver_sql(f'ALTER TABLE "{table.name}" ADD COLUMN "{column.name}" {kind}')
            added.append(f"{table.name}.{column.name}")
    for item in added:
        if "." in item:
            log.info("history: upgraded the schema: added column %s", item)
    return added
