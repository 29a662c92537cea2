"""Hostile input against every operation of the spec that takes a body or a paged query:
each answer is a documented 4xx (the client validates it against the spec), the server keeps
answering, and nothing is written."""

from __future__ import annotations

import pytest
from sqlmodel import func, select

from tests.conftest import MAX_BODY_BYTES, OPERATOR_TOKEN
from tunnelgw.core.spec import load as load_spec
from tunnelgw.services import accounts

SPEC = load_spec()
JSON = {"Content-Type": "application/json"}

BODY_OPERATIONS = [
    (method.upper(), path)
    for path, item in SPEC["paths"].items()
    for method, op in item.items()
    if method != "parameters" and "requestBody" in op
]
ALL_OPERATIONS = [
    (method.upper(), path)
    for path, item in SPEC["paths"].items()
    for method in item
    if method != "parameters"
]
LIST_OPERATIONS = [
    path
    for path, item in SPEC["paths"].items()
    if "get" in item
    and any("BeforeId" in p.get("$ref", "") for p in item["get"].get("parameters", []))
]

CORPUS = {
    "invalid json": (b'{"description": ', JSON, 400),
    "invalid utf-8": (b'{"description": "\xc3\x28"}', JSON, 400),
    "nul in a string": (b'{"description": "a\\u0000b"}', JSON, 400),
    "lone surrogate": (b'{"description": "\\udfff"}', JSON, 400),
    "10000-deep nesting": (b"[" * 10_000 + b"]" * 10_000, JSON, 400),
    "deep object nesting": (b'{"a":' * 5_000 + b"1" + b"}" * 5_000, JSON, 400),
    "huge float": (b'{"description": 1e400}', JSON, 400),
    "huge integer": (b'{"description": ' + b"9" * 5_000 + b"}", JSON, 400),
    "array for object": (b"[]", JSON, 400),
    "array of objects": (b'[{"description": "x"}]', JSON, 400),
    "string body": (b'"description"', JSON, 400),
    "null body": (b"null", JSON, 400),
    "duplicate keys": (b'{"description": "a", "description": "b"}', JSON, 400),
    "NaN": (b'{"description": NaN}', JSON, 400),
    "oversize string": (b'{"description": "' + b"x" * (MAX_BODY_BYTES + 1) + b'"}', JSON, 413),
    "form content type": (
        b"description=x",
        {"Content-Type": "application/x-www-form-urlencoded"},
        415,
    ),
    "xml content type": (b"<description/>", {"Content-Type": "application/xml"}, 415),
}


Z = "0" * 27


def _concrete(path: str) -> str:
    return (
        # A path id with its own pattern must be well-formed, or the parameter's 400 comes
        # before the body's 413/415.
        path.replace("/edges/tls/{id}", "/edges/tls/edgtls_000000000000000000000000000")
        .replace("/_admin/accounts/{id}", f"/_admin/accounts/acct_{Z}")
        .replace("{edge_id}/routes/{id}", f"edghts_{Z}/routes/edghtsrt_{Z}")
        .replace("/edges/https/{id}", f"/edges/https/edghts_{Z}")
        .replace("/edges/tcp/{id}", f"/edges/tcp/edgtcp_{Z}")
        .replace("{id}", "x_0000000000000000000000000000")
        .replace("{subscription_id}", "esb_" + "0" * 27)
        .replace("{type}", "ip_policy_created.v0")
    )


# The request journal records every request, refused ones too: it is not the account's state.
RECORDS = frozenset({"request_journal"})


def _caller(admin, factory, method: str, path: str):  # type: ignore[no-untyped-def]
    """Who sends the hostile request: the operator for the admin API's account operations
    (their credential is the operator token), else the account's admin; the same account's
    rows are counted either way."""
    security = SPEC["paths"][path][method.lower()].get("security", [])
    if any("operatorToken" in scheme for scheme in security):
        return factory.client(OPERATOR_TOKEN)
    return admin


def _rows(factory, account_id: str) -> int:
    async def count(session):
        total = 0
        for table in accounts.account_tables():  # every table
            if table.name not in RECORDS:
                query = (
                    select(func.count()).select_from(table).where(table.c.account_id == account_id)
                )
                total += (await session.exec(query)).one()
        return total

    return factory.query(count)


@pytest.mark.parametrize(("method", "path"), BODY_OPERATIONS, ids=lambda v: str(v))
def test_hostile_bodies(admin, factory, method, path):
    before = _rows(factory, admin.creds.account_id)
    caller = _caller(admin, factory, method, path)
    for name, (content, headers, status) in CORPUS.items():
        response = caller.request(method, _concrete(path), content=content, headers=headers)
        assert response.status_code == status, (name, response.text)
        assert response.json()["error_code"].startswith("ERR_")
    assert admin.get("/healthz", version=None).status_code == 200
    assert _rows(factory, admin.creds.account_id) == before


@pytest.mark.parametrize("path", LIST_OPERATIONS)
@pytest.mark.parametrize(
    "params",
    [
        {"limit": "-1"},
        {"limit": "0"},
        {"limit": str(10**30)},
        {"limit": "1e3"},
        {"limit": "abc"},
        {"limit": ""},
        {"before_id": "garbage"},
        {"before_id": "x" * 10_000},
        {"beforeId": "../../etc/passwd"},
        {"before_id": "ak_' OR 1=1 --"},
    ],
    ids=lambda p: next(iter(p)) + "=" + next(iter(p.values()))[:12],
)
def test_absurd_query_parameters(admin, factory, path, params):
    response = _caller(admin, factory, "GET", path).get(path, params=params)
    assert response.status_code == 400, response.text
    assert response.json()["error_code"] == "ERR_INVALID_PARAMETER"


UNKNOWN_PARAMETERS = [
    {"bogus": "1"},
    {"filters": "obj.id != ''"},
    {"Limit": "5"},
    {"before_id[]": "x"},
    {"": "x"},
    {"id": "x"},
]


@pytest.mark.parametrize(("method", "path"), ALL_OPERATIONS, ids=lambda v: str(v))
def test_unknown_query_parameters_are_refused_by_every_operation(admin, factory, method, path):
    """An undeclared query parameter is 400 ERR_INVALID_PARAMETER naming it, on every
    operation of the spec (service routes included), before any work is done."""
    declared = {p.get("name") for p in _parameters(method, path) if p.get("in") == "query"}
    before = _rows(factory, admin.creds.account_id)
    caller = _caller(admin, factory, method, path)
    for params in UNKNOWN_PARAMETERS:
        (name,) = params
        if name in declared:
            continue
        response = caller.request(method, _concrete(path), params=params, json={})
        assert response.status_code == 400, (params, response.text)
        body = response.json()
        assert body["error_code"] == "ERR_INVALID_PARAMETER", body
        assert body["details"]["param"] == name
    assert _rows(factory, admin.creds.account_id) == before


def _parameters(method: str, path: str) -> list[dict]:
    item = SPEC["paths"][path]
    refs = [*item.get("parameters", []), *item[method.lower()].get("parameters", [])]
    out = []
    for p in refs:
        if "$ref" in p:
            p = SPEC["components"]["parameters"][p["$ref"].rsplit("/", 1)[-1]]
        out.append(p)
    return out


@pytest.mark.parametrize("path", LIST_OPERATIONS)
@pytest.mark.parametrize(
    "query",
    [
        b"limit=abc&limit=5",
        b"limit=5&limit=5",
        b"before_id=x&before_id=y",
        b"limit=%C2%853",  # U+0085 (NEL), then 3: int() would strip it
        b"limit=%D9%A3",  # ARABIC-INDIC DIGIT THREE
        b"limit=%EF%BC%93",  # FULLWIDTH DIGIT THREE
        b"limit=%E2%80%833",  # EN SPACE, then 3
        b"limit=+3",
        b"limit=3%20",
        b"limit=0x10",
        b"limit=3_0",
    ],
    ids=lambda q: q.decode(),
)
def test_repeated_and_non_ascii_integer_parameters(admin, factory, path, query):
    response = _caller(admin, factory, "GET", path).get(f"{path}?{query.decode()}")
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error_code"] == "ERR_INVALID_PARAMETER"
    assert body["details"]["param"] in ("limit", "before_id")
