"""Issue 28: access tokens (`/access_tokens`): scoped bearer credentials that act as their
owner; every operation's scope (tunnelgw.core.scopes) enforced, expiry on the account's
clock, revocation and deletion at once, an inactive owner's tokens refused, agents connecting
with `tunnel:start`, and the request journal naming the credential and scope."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlmodel import select

from tests.factories import assert_error
from tunnelgw.models import AccessToken
from tunnelgw.storage import records
from tunnelgw.testing import TunnelgwServer
from tunnelgw.testing.admin import AdminCalls, TunnelgwError

PATH = "/access_tokens"
CLOCK = "/_admin/clock"
AGENTS = "/_admin/agent_sessions"
JOURNAL = "/_admin/requests"
HRB = "/backends/http_response"


def _token(session: Any, *scopes: str, **body: Any) -> dict[str, Any]:
    made = session.post(PATH, json={"scopes": list(scopes), **body})
    assert made.status_code == 201, made.text
    return made.json()


def _domain() -> str:
    return f"tok-{uuid.uuid4().hex[:10]}.example.com"


def _later(seconds: int) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_crud_and_the_token_is_shown_once(admin, factory):
    made = _token(
        admin, "endpoints:read", "domains:read", "endpoints:read", description="ci", metadata="m"
    )
    assert made["id"].startswith("pat_")
    assert made["uri"] == f"http://testserver{PATH}/{made['id']}"
    assert made["token"].startswith("tgw_pat_")
    assert made["scopes"] == ["endpoints:read", "domains:read"]  # a repeat counts once
    assert made["owner_id"] == admin.creds.principal_id
    assert made["expires_at"] is None
    assert made["revoked_at"] is None
    assert (made["description"], made["metadata"]) == ("ci", "m")

    fetched = admin.get(f"{PATH}/{made['id']}").json()
    assert fetched == {**made, "token": None}
    listed = admin.get(PATH).json()
    assert [t["id"] for t in listed["access_tokens"]] == [made["id"]]
    assert listed["access_tokens"][0]["token"] is None

    changed = admin.patch(
        f"{PATH}/{made['id']}", json={"description": "cd", "scopes": ["tunnels:read"]}
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["scopes"] == ["tunnels:read"]
    assert changed.json()["description"] == "cd"
    assert changed.json()["token"] is None

    async def row(session):
        return (await session.exec(select(AccessToken).where(AccessToken.id == made["id"]))).one()

    stored = factory.query(row)
    assert stored.token_hash == hashlib.sha256(made["token"].encode()).hexdigest()
    assert made["token"] not in {str(v) for v in records.as_dict(stored).values()}

    assert admin.delete(f"{PATH}/{made['id']}").status_code == 204
    assert_error(admin.get(f"{PATH}/{made['id']}"), 404, "ERR_NOT_FOUND")


def test_the_body_is_checked(admin):
    assert_error(admin.post(PATH, json={}), 400, "ERR_MISSING_FIELD")
    assert_error(admin.post(PATH, json={"scopes": []}), 400, "ERR_INVALID_FIELD")
    assert_error(admin.post(PATH, json={"scopes": ["everything"]}), 400, "ERR_INVALID_FIELD")
    assert_error(
        admin.post(PATH, json={"scopes": ["tunnels:read"], "owner_id": admin.creds.principal_id}),
        400,
        "ERR_UNKNOWN_FIELD",
    )
    past = admin.post(PATH, json={"scopes": ["tunnels:read"], "expires_at": "2020-01-01T00:00:00Z"})
    assert assert_error(past, 400, "ERR_INVALID_FIELD")["details"]["field"] == "expires_at"


def test_read_scopes_list_and_get_but_cannot_create(admin, factory):
    made = admin.post(HRB, json={"body": "hi"}).json()
    reader = factory.client(_token(admin, "backends:read")["token"])
    assert reader.get(HRB).status_code == 200
    assert reader.get(f"{HRB}/{made['id']}").status_code == 200
    refused = assert_error(reader.post(HRB, json={"body": "x"}), 403, "ERR_SCOPE_REQUIRED")
    assert refused["details"]["scope"] == "backends:write"
    assert_error(reader.delete(f"{HRB}/{made['id']}"), 403, "ERR_SCOPE_REQUIRED")
    assert admin.get(f"{HRB}/{made['id']}").status_code == 200  # nothing changed


def test_a_write_scope_of_one_family_cannot_touch_another(admin, factory):
    writer = factory.client(_token(admin, "domains:write")["token"])
    created = writer.post("/reserved_domains", json={"domain": _domain()})
    assert created.status_code == 201, created.text
    refused = assert_error(writer.post("/reserved_addrs", json={}), 403, "ERR_SCOPE_REQUIRED")
    assert refused["details"]["scope"] == "tcp-addrs:write"
    # A write scope is not a read scope: reading needs `domains:read`.
    listed = assert_error(writer.get("/reserved_domains"), 403, "ERR_SCOPE_REQUIRED")
    assert listed["details"]["scope"] == "domains:read"
    assert_error(writer.get(PATH), 403, "ERR_SCOPE_REQUIRED")


def test_a_token_gives_no_scope_it_lacks_and_tokens_are_the_callers(admin, factory):
    minter = factory.client(_token(admin, "access-tokens:write", "tunnels:read")["token"])
    refused = minter.post(PATH, json={"scopes": ["tunnels:read", "domains:write"]})
    assert assert_error(refused, 403, "ERR_SCOPE_REQUIRED")["details"]["scope"] == "domains:write"
    child = minter.post(PATH, json={"scopes": ["tunnels:read"]})
    assert child.status_code == 201, child.text
    assert child.json()["owner_id"] == admin.creds.principal_id
    widened = minter.patch(f"{PATH}/{child.json()['id']}", json={"scopes": ["api-keys:write"]})
    assert_error(widened, 403, "ERR_SCOPE_REQUIRED")


def test_only_the_owner_changes_scopes_and_ownership_rules(admin, factory):
    member = factory.principal(admin.creds.account_id)
    mine = _token(member, "tunnels:read")
    admins = _token(admin, "tunnels:read")
    # An admin changes the description of another's token, never its scopes.
    assert admin.patch(f"{PATH}/{mine['id']}", json={"description": "x"}).status_code == 200
    assert_error(
        admin.patch(f"{PATH}/{mine['id']}", json={"scopes": ["endpoints:read"]}),
        403,
        "ERR_NOT_OWNER",
    )
    # Unchanged scopes sent back are no change.
    same = admin.patch(f"{PATH}/{mine['id']}", json={"scopes": ["tunnels:read"]})
    assert same.status_code == 200
    # A non-admin may not touch an admin's token.
    assert member.get(f"{PATH}/{admins['id']}").status_code == 200
    assert_error(member.post(f"{PATH}/{admins['id']}/revoke", json={}), 403, "ERR_NOT_OWNER")
    assert_error(member.delete(f"{PATH}/{admins['id']}"), 403, "ERR_NOT_OWNER")
    assert member.patch(f"{PATH}/{mine['id']}", json={"scopes": ["endpoints:read"]}).json()[
        "scopes"
    ] == ["endpoints:read"]


def test_revoked_tokens_stop_at_once_and_stay_listed(admin, factory):
    made = _token(admin, "access-tokens:read")
    client = factory.client(made["token"])
    assert client.get(PATH).status_code == 200
    revoked = admin.post(f"{PATH}/{made['id']}/revoke", json={"id": made["id"]})
    assert revoked.status_code == 200, revoked.text
    assert revoked.json()["revoked_at"] is not None
    refused = assert_error(client.get(PATH), 401, "ERR_INVALID_CREDENTIALS")
    assert "revoked" in refused["msg"]
    listed = admin.get(PATH).json()["access_tokens"]
    assert [t["revoked_at"] for t in listed] == [revoked.json()["revoked_at"]]
    again = admin.post(f"{PATH}/{made['id']}/revoke")
    assert again.json()["revoked_at"] == revoked.json()["revoked_at"]
    mismatch = admin.post(f"{PATH}/{made['id']}/revoke", json={"id": "pat_x"})
    assert_error(mismatch, 400, "ERR_INVALID_FIELD")


def test_deleted_tokens_stop_at_once(admin, factory):
    made = _token(admin, "access-tokens:write", "access-tokens:read")
    client = factory.client(made["token"])
    assert client.delete(f"{PATH}/{made['id']}").status_code == 204  # a token deletes itself
    assert_error(client.get(PATH), 401, "ERR_INVALID_CREDENTIALS")


def test_expiry_follows_the_accounts_clock(admin, factory):
    made = _token(admin, "tunnels:read", expires_at=_later(600))
    expires = datetime.strptime(made["expires_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert abs(expires - datetime.now(UTC) - timedelta(seconds=600)) < timedelta(seconds=5)
    client = factory.client(made["token"])
    assert client.get("/tunnels").status_code == 200
    assert admin.post(CLOCK, json={"advance_seconds": 3600}).status_code == 200
    refused = assert_error(client.get("/tunnels"), 401, "ERR_INVALID_CREDENTIALS")
    assert "expired" in refused["msg"]
    # The clock decides expires_at at create time too.
    late = admin.post(PATH, json={"scopes": ["tunnels:read"], "expires_at": _later(1200)})
    assert_error(late, 400, "ERR_INVALID_FIELD")
    assert admin.post(CLOCK, json={"reset": True}).status_code == 200
    assert client.get("/tunnels").status_code == 200


def test_an_inactive_owner_stops_its_tokens(admin, factory):
    bot = factory.principal(admin.creds.account_id, "bot")
    made = _token(bot, "tunnels:read")
    assert made["owner_id"] == bot.creds.principal_id
    client = factory.client(made["token"])
    assert client.get("/tunnels").status_code == 200
    path = f"/bot_users/{bot.creds.principal_id}"
    assert admin.patch(path, json={"active": False}).status_code == 200
    assert_error(client.get("/tunnels"), 403, "ERR_PRINCIPAL_INACTIVE")
    assert admin.patch(path, json={"active": True}).status_code == 200
    assert client.get("/tunnels").status_code == 200


def test_the_admin_api_takes_no_access_token(admin, factory):
    client = factory.client(_token(admin, "tunnels:read")["token"])
    assert_error(client.get(CLOCK), 403, "ERR_PERMISSION_DENIED")


def test_tenant_isolation(admin, other, factory):
    made = _token(admin, "tunnels:read")
    for response in (
        other.get(f"{PATH}/{made['id']}"),
        other.patch(f"{PATH}/{made['id']}", json={"description": "x"}),
        other.post(f"{PATH}/{made['id']}/revoke", json={}),
        other.delete(f"{PATH}/{made['id']}"),
    ):
        assert_error(response, 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["access_tokens"] == []
    # A token of one account reads only its own account.
    theirs = factory.client(_token(other, "access-tokens:read")["token"])
    assert_error(theirs.get(f"{PATH}/{made['id']}"), 404, "ERR_NOT_FOUND")


def test_an_agent_connects_with_tunnel_start(admin, factory):
    agent = _token(admin, "tunnel:start")
    started = admin.post(AGENTS, json={"authtoken": agent["token"], "endpoints": []})
    assert started.status_code == 201, started.text
    credential = started.json()["tunnel_session"]["credential"]
    assert credential == {"id": agent["id"], "uri": f"http://testserver{PATH}/{agent['id']}"}
    # The token is an agent's, not an API credential: it holds no API scope.
    assert_error(factory.client(agent["token"]).get("/tunnels"), 403, "ERR_SCOPE_REQUIRED")

    reader = _token(admin, "tunnels:read")
    refused = admin.post(AGENTS, json={"authtoken": reader["token"], "endpoints": []})
    assert assert_error(refused, 403, "ERR_SCOPE_REQUIRED")["details"]["scope"] == "tunnel:start"

    assert admin.post(f"{PATH}/{agent['id']}/revoke").status_code == 200
    revoked = admin.post(AGENTS, json={"authtoken": agent["token"], "endpoints": []})
    assert "revoked" in assert_error(revoked, 403, "ERR_AGENT_AUTH_FAILED")["msg"]
    unknown = admin.post(AGENTS, json={"authtoken": "tgw_pat_" + "x" * 43, "endpoints": []})
    assert_error(unknown, 403, "ERR_AGENT_AUTH_FAILED")


def test_the_journal_names_the_credential_and_scope(admin, factory):
    made = _token(admin, "backends:read")
    client = factory.client(made["token"])
    assert client.get(HRB).status_code == 200
    assert_error(client.post(HRB, json={}), 403, "ERR_SCOPE_REQUIRED")
    entries = admin.get(JOURNAL, params={"limit": 10}).json()["requests"]
    by_key, listed, refused = entries[-3:]
    assert (by_key["operation"], by_key["api_key_id"]) == (
        "access_tokens.create",
        admin.creds.api_key_id,
    )
    assert by_key["access_token_id"] is None
    assert by_key["scope"] == "access-tokens:write"
    assert listed["operation"] == "http_response_backends.list"
    assert (listed["api_key_id"], listed["access_token_id"]) == (None, made["id"])
    assert listed["scope"] == "backends:read"
    assert listed["principal_id"] == admin.creds.principal_id
    assert (refused["status"], refused["error_code"]) == (403, "ERR_SCOPE_REQUIRED")
    assert (refused["access_token_id"], refused["scope"]) == (made["id"], "backends:write")


class _Kit(AdminCalls):
    """The testing kit's calls (tunnelgw.testing) over this suite's in-process client."""

    def __init__(self, session: Any) -> None:
        self.session = session

    def _admin(self, method: str, path: str, body: Any = None) -> Any:
        extra = {} if body is None else {"json": body}
        answer = self.session.request(method, path, **extra)
        if answer.is_error:
            raise TunnelgwError(method, path, answer.status_code, answer.json())
        return answer.json() if answer.content else None


def test_the_kit_makes_a_token_with_given_scopes(admin, factory):
    kit = _Kit(admin)
    token = kit.access_token(["backends:read"], expires_at=_later(600))
    assert token.startswith("tgw_pat_")
    job = factory.client(token)
    # "This job needs only these scopes": its reads work, a write would be refused.
    assert job.get(HRB).status_code == 200
    assert_error(job.post(HRB, json={}), 403, "ERR_SCOPE_REQUIRED")
    made = admin.get(PATH).json()["access_tokens"][0]
    assert (made["scopes"], made["description"]) == (["backends:read"], "testing kit")
    # The scopes a run needed, whichever credential made its requests.
    assert admin.post(HRB, json={"body": "x"}).status_code == 201
    assert kit.scopes_used() == {
        "access-tokens:write",
        "access-tokens:read",
        "backends:read",
        "backends:write",
    }


def test_revoked_and_expired_tokens_are_refused_by_every_worker():
    """Two workers on one database: each request on a new connection (so both workers answer
    some), every one refused once the token is revoked, or once the clock passes expiry."""
    with TunnelgwServer(workers=2) as server:
        revoked = server.access_token(["tunnels:read"])
        expiring = server.access_token(["tunnels:read"], expires_at=_later(600))

        def statuses(token: str) -> set[int]:
            headers = {"Authorization": f"Bearer {token}", "Service-Version": "2"}
            found = set()
            for _ in range(12):
                with httpx.Client(base_url=server.base_url, headers=headers) as client:
                    found.add(client.get("/tunnels", headers={"Connection": "close"}).status_code)
            return found

        assert statuses(revoked) == statuses(expiring) == {200}
        with server.client() as client:
            token_id = client.get(PATH).json()["access_tokens"][-1]["id"]
            assert client.post(f"{PATH}/{token_id}/revoke", json={}).status_code == 200
        assert statuses(revoked) == {401}
        server.advance(3600)
        assert statuses(expiring) == {401}
