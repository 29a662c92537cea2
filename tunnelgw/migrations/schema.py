"""The SQLite schema at the newest revision, kept in `schema.sql` beside this module: the
statements SQLAlchemy's `create_all` issues for every model on an empty database, in its
order. A first start builds its database from the file (`migrate`), so a server need not
import every model to start: a table's module is imported when a request first uses it
(tunnelgw.models). The file is generated from the models, like a lock file: after changing
a model, write it again with `python -m tunnelgw.migrations.schema`;
tests/unit/test_migrations.py fails while it differs from what the models give."""

from __future__ import annotations

from pathlib import Path
from typing import Any

FILE = Path(__file__).with_name("schema.sql")
_HEADER = (
    "-- The SQLite schema at the newest revision, generated from tunnelgw.models by\n"
    "-- `python -m tunnelgw.migrations.schema`: do not edit (tunnelgw/migrations/schema.py).\n\n"
)
_END = ";\n\n"  # after each statement; none of SQLAlchemy's DDL holds it (the test reads back)


def generated() -> list[str]:
    """The statements `create_all` issues for every model on an empty SQLite database, as
    SQLAlchemy's mock engine records them (its documented way to have the DDL without a
    database); a table's indexes, which it issues in no fixed order, sorted by name."""
    from sqlalchemy import create_mock_engine
    from sqlmodel import SQLModel

    from tunnelgw import models

    models.load_all()
    statements: list[str] = []

    def record(sql: Any, *_multiparams: Any, **_params: Any) -> None:
        compiled = str(sql.compile(dialect=engine.dialect)).strip()
        statements.append("\n".join(line.rstrip() for line in compiled.splitlines()))

    engine = create_mock_engine("sqlite://", record)
    # By name where their keys leave the order open (create_all's own is the models' import
    # order), so that the file is the same however they were imported.
    SQLModel.metadata.create_all(engine, SQLModel.metadata.sorted_tables, checkfirst=False)
    # create_all issues each table's indexes after it, in no fixed order (a set): sorted by
    # name here, so that the file is the same on every run.
    tables: list[list[str]] = []
    for sql in statements:
        if sql.startswith("CREATE TABLE"):
            tables.append([sql])
        else:
            tables[-1].append(sql)
    return [sql for table, *indexes in tables for sql in (table, *sorted(indexes))]


def render(statements: list[str]) -> str:
    return _HEADER + "".join(statement + _END for statement in statements)


def stored() -> list[str]:
    """The statements of `schema.sql`."""
    text = FILE.read_text(encoding="utf-8")
    if not text.startswith(_HEADER):
        raise ValueError(f"{FILE}: not a schema file written by {__name__}")
    return text[len(_HEADER) :].split(_END)[:-1]


if __name__ == "__main__":
    FILE.write_text(render(generated()), encoding="utf-8")
    print(f"wrote {FILE}")
