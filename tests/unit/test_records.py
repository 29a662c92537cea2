"""Records: plain rows carrying their model's behaviour, the values each driver gets, and the
generated per-table SQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import SQLModel

from tunnelgw.core import timefmt
from tunnelgw.models import (
    Edge,
    EventSource,
    HttpResponseBackend,
    JournalEntry,
    Principal,
    SshUserCertificate,
)
from tunnelgw.storage import records
from tunnelgw.storage.records import Record


def test_a_record_has_the_columns_and_the_behaviour_of_its_model():
    row = HttpResponseBackend.new(id="bkdhr_x", account_id="acct_x", body="hi")
    assert isinstance(row, Record)
    assert not isinstance(row, SQLModel)  # no ORM instrumentation at run time
    assert (row.PREFIX, row.PATH) == ("bkdhr", "/backends/http_response")
    assert row.to_api()["body"] == "hi"
    assert row.to_api()["uri"].endswith("/backends/http_response/bkdhr_x")
    # A subclass's override wins over its base's (Edge.uri names the edge kind).
    edge = Edge.new(id="edgtls_x", account_id="acct_x", kind="tls")
    assert edge.uri.endswith("/edges/tls/edgtls_x")
    assert records.model_of(edge) is Edge


def test_new_applies_defaults_and_refuses_unknown_or_missing_columns():
    first = SshUserCertificate.new(
        id="sucrt_a",
        account_id="acct_x",
        ssh_certificate_authority_id="sshca_a",
        public_key="k",
        key_type="ed25519",
        valid_after=datetime(2026, 1, 1, tzinfo=UTC),
        valid_until=datetime(2026, 1, 2, tzinfo=UTC),
        certificate="c",
    )
    assert (first.principals, first.extensions, first.description) == ([], {}, "")
    assert first.created_at.tzinfo is UTC
    second = HttpResponseBackend.new(id="bkdhr_y", account_id="acct_x")
    assert (second.status_code, second.headers) == (200, None)
    # Mutable defaults are fresh per row.
    assert Principal.new(id="usr_a", account_id="acct_x", kind="user").is_admin is False
    with pytest.raises(TypeError, match="no column 'nope'"):
        HttpResponseBackend.new(id="bkdhr_z", account_id="acct_x", nope=1)
    with pytest.raises(TypeError, match="needs a value for 'kind'"):
        Principal.new(id="usr_b", account_id="acct_x")


def test_equality_values_and_primary_keys():
    a = EventSource.new(subscription_id="esb_a", type="t.v0", account_id="acct_x")
    b = EventSource.new(subscription_id="esb_a", type="t.v0", account_id="acct_x")
    b.created_at = a.created_at
    assert a == b
    b.account_id = "acct_y"
    assert a != b
    assert records.primary_key(a) == ("esb_a", "t.v0")
    assert records.as_dict(a)["type"] == "t.v0"
    with pytest.raises(TypeError):
        hash(a)  # rows are mutable


def test_methods_using_super_are_refused():
    class Base:
        def f(self) -> int:
            return 1

    class Child(Base):
        def f(self) -> int:
            return super().f() + 1

    with pytest.raises(TypeError, match="super"):
        records._check_copyable(Child, "f", vars(Child)["f"])


def test_sqlite_timestamps_round_trip_in_sqlalchemys_format():
    when = datetime(2026, 11, 21, 10, 11, 14, 500, tzinfo=UTC)
    text = records.sqlite_time_text(when)
    assert text == "2026-11-21 10:11:14.000500"
    assert records.sqlite_time_text(when.astimezone(timezone_plus_2())) == text
    assert records.stored_time(text) == when  # to the microsecond, as PostgreSQL returns it
    assert records.stored_time("0999-01-02 03:04:05").year == 999


def test_a_timestamp_text_is_reused_only_for_an_equal_timestamp():
    # Each writer keeps its last timestamp and text: an equal value (the same instant in
    # another zone) gets that text, any other value its own, a naive one taken as UTC.
    aware = datetime(2026, 11, 21, 10, 11, 14, tzinfo=timezone_plus_2())
    naive = datetime(2026, 11, 21, 10, 11, 14)
    for _ in range(2):
        assert timefmt.rfc3339(aware) == "2026-11-21T08:11:14Z"
        assert timefmt.rfc3339(aware.astimezone(UTC)) == "2026-11-21T08:11:14Z"
        assert timefmt.rfc3339(naive) == "2026-11-21T10:11:14Z"
        assert timefmt.rfc3339(naive + timedelta(seconds=1)) == "2026-11-21T10:11:15Z"
        assert records.sqlite_time_text(aware) == "2026-11-21 08:11:14.000000"
        assert records.sqlite_time_text(naive) == "2026-11-21 10:11:14.000000"
        assert records.sqlite_time_text(naive.replace(microsecond=7)) == (
            "2026-11-21 10:11:14.000007"
        )


def test_the_clock_makes_one_datetime_per_second(monkeypatch):
    clock = [1_795_000_000.25]
    monkeypatch.setattr(timefmt.time, "time", lambda: clock[0])
    first = timefmt.utcnow()
    assert first == datetime.fromtimestamp(1_795_000_000, UTC)
    clock[0] += 0.5
    assert timefmt.utcnow() is first  # the same second: the same datetime
    clock[0] += 0.5
    assert timefmt.utcnow() == first + timedelta(seconds=1)
    # An account's simulated clock (the admin API) is added before the seconds are cut.
    token = timefmt.clock_offset.set(timedelta(seconds=90, microseconds=800_000))
    try:
        shifted = timefmt.utcnow()
    finally:
        timefmt.clock_offset.reset(token)
    assert shifted.microsecond == 0
    assert shifted.tzinfo is UTC
    assert timedelta(seconds=89) <= shifted - datetime.now(UTC) <= timedelta(seconds=92)


def test_a_timestamp_read_from_sqlite_stays_text_until_read():
    load = records.loader(
        records.record_class(Edge), ["id", "created_at"], ["", "time"], records.SQLITE_DECODERS
    )
    row = load(("edgtls_x", "2026-11-21 10:11:14.000000"))
    # Rendering slices the stored text; nothing is parsed.
    assert row.api_time("created_at") == "2026-11-21T10:11:14Z"
    assert type(getattr(row, records.STORED + "created_at")) is str
    # Reading the attribute parses it once, into an aware UTC datetime.
    assert row.created_at == datetime(2026, 11, 21, 10, 11, 14, tzinfo=UTC)
    assert row.created_at.tzinfo is UTC
    row.created_at = datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert row.api_time("created_at") == "0999-01-02T03:04:05Z"
    empty = load(("edgtls_y", None))
    assert (empty.created_at, empty.api_time("created_at")) == (None, None)
    assert timefmt.rfc3339(row.created_at + timedelta(days=1)) == "0999-01-03T03:04:05Z"


def timezone_plus_2():  # type: ignore[no-untyped-def]
    from datetime import timezone

    return timezone(timedelta(hours=2))


def test_values_for_each_driver():
    assert records.encode_sqlite({"a": [1, "x"]}) == '{"a":[1,"x"]}'
    assert records.encode_sqlite(["x"]) == '["x"]'
    assert records.encode_sqlite(True) is True
    # PostgreSQL's JSON goes as is: the codec set on each connection writes it (orjson).
    assert records.encode_pg({"a": 1}) == {"a": 1}
    assert records.json_text({"a": [1, "x"]}) == '{"a":[1,"x"]}'
    assert records.json_value('{"a":[1,"x"]}') == {"a": [1, "x"]}
    naive = datetime(2026, 1, 1)
    assert records.encode_pg(naive).tzinfo is UTC


def test_inserts_encode_by_the_column_and_values_rows_share_once(monkeypatch):
    # Journal entries' `at` (a timestamp) and `body` (JSON: any value); `status` as is.
    attrs = ("at", "body", "status")
    sql, encoding = records.table_sql(JournalEntry, "sqlite").insert_of(attrs)
    assert sql == 'INSERT INTO "request_journal" ("at", "body", "status") VALUES (?, ?, ?)'
    assert [i for i, _ in encoding] == [0, 1]
    at = datetime(2026, 1, 1, tzinfo=UTC)
    shared = {"a": [1]}
    rows = [(at, "x", 1), (at, 12, 2), (at, None, 3), (at, shared, 4), (at, shared, 5)]
    text = "2026-01-01 00:00:00.000000"
    assert records.encode_rows(rows, encoding) == [
        [text, '"x"', 1],
        [text, "12", 2],
        [text, None, 3],
        [text, '{"a":[1]}', 4],
        [text, '{"a":[1]}', 5],
    ]
    calls: list[object] = []
    monkeypatch.setattr(records.orjson, "dumps", lambda v: calls.append(v) or b"{}")
    _, pg_encoding = records.table_sql(JournalEntry, "postgresql").insert_of(attrs)
    encoded = records.encode_rows([(at, shared, 1), (at, shared, 2)], pg_encoding)
    assert calls == [shared]  # the same object in consecutive rows: encoded once
    assert encoded[0][1] is encoded[1][1]
    assert records.json_text(encoded[0][1]) is encoded[0][1]  # PostgreSQL's codec takes it
    assert records.SQLITE_DECODERS["json"](12) == 12  # SQLite's numeric affinity


def test_loader_decodes_each_kind_and_keeps_nulls():
    load = records.loader(
        records.record_class(Edge),
        ["id", "hostports", "backend_enabled", "created_at"],
        ["", "json", "bool", "time"],
        records.SQLITE_DECODERS,
    )
    row = load(("edgtls_x", '["a:1"]', 1, "2026-01-01 00:00:00.000000"))
    assert (row.id, row.hostports, row.backend_enabled) == ("edgtls_x", ["a:1"], True)
    assert row.api_time("created_at") == "2026-01-01T00:00:00Z"
    empty = load(("edgtls_y", None, None, None))
    assert (empty.hostports, empty.backend_enabled, empty.created_at) == (None, None, None)


def test_generated_sql_quotes_identifiers_and_uses_the_dialects_placeholder():
    sqlite = records.table_sql(EventSource, "sqlite")
    assert sqlite.by_pk.endswith('WHERE "subscription_id" = ? AND "type" = ?')
    assert sqlite.insert.startswith('INSERT INTO "event_source" (')
    pg = records.table_sql(HttpResponseBackend, "postgresql")
    assert pg.delete == 'DELETE FROM "http_response_backend" WHERE "id" = %s'
    assert pg.update(("meta", "body")) == (
        'UPDATE "http_response_backend" SET "metadata" = %s, "body" = %s WHERE "id" = %s'
    )
