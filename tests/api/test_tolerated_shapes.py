"""Issue 10, item 2: the request shapes current client libraries send where the API document
is silent, declared in the spec (`x-path-param`) and checked as strictly as the rest: a
repeated path value must equal the path (else 400 ERR_INVALID_FIELD, details.field)."""

from __future__ import annotations

import pytest

from tests.factories import assert_error
from tunnelgw.core import ids
from tunnelgw.core.spec import load as load_spec
from tunnelgw.models import Edge, EventSubscription, TunnelGroupBackend

SPEC = load_spec()
PATCH_PATHS = sorted(path for path, item in SPEC["paths"].items() if "patch" in item)

# A create body per resource whose PATCH takes `id`.
CREATES = {
    "/api_keys": {"description": "k"},
    "/backends/http_response": {"body": "b"},
    "/ssh_certificate_authorities": {"private_key_type": "ed25519"},
    "/reserved_domains": {"name": None},
    "/agent_ingresses": {"domain": None},
}


def _create(admin, collection: str) -> str:
    body = dict(CREATES[collection])
    if "name" in body:
        body["name"] = "t" + ids.new_id("x")[-12:].lower()
    if "domain" in body:
        body["domain"] = "i" + ids.new_id("x")[-12:].lower() + ".example.com"
    response = admin.post(collection, json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def test_every_patch_body_declares_the_path_id():
    resolved = SPEC["components"]["schemas"]
    for path in PATCH_PATHS:
        schema = SPEC["paths"][path]["patch"]["requestBody"]["content"]["application/json"]
        name = schema["schema"]["$ref"].rsplit("/", 1)[-1]
        props = resolved[name]["properties"]
        if "{type}" in path:
            assert props["type"]["x-path-param"] == "type"
            assert props["subscription_id"]["x-path-param"] == "subscription_id"
        else:
            assert props["id"] == {"$ref": "#/components/schemas/PathIdEcho"}, path


@pytest.mark.parametrize("collection", sorted(CREATES))
def test_patch_accepts_the_path_id(admin, collection):
    id_ = _create(admin, collection)
    url = f"{collection}/{id_}"
    same = admin.patch(url, json={"id": id_, "description": "via a client library"})
    assert same.status_code == 200, same.text
    assert same.json()["description"] == "via a client library"
    assert admin.patch(url, json={"id": None}).status_code == 200
    assert admin.patch(url, json={"id": id_}).json()["description"] == "via a client library"


@pytest.mark.parametrize("collection", sorted(CREATES))
def test_patch_with_another_id_is_invalid_and_changes_nothing(admin, collection):
    id_ = _create(admin, collection)
    other_id = _create(admin, collection)
    url = f"{collection}/{id_}"
    for wrong in (other_id, "", "x", id_.upper()):
        body = assert_error(
            admin.patch(url, json={"id": wrong, "description": "no"}), 400, "ERR_INVALID_FIELD"
        )
        assert body["details"]["field"] == "id"
    assert admin.get(url).json()["description"] != "no"
    assert_error(admin.patch(url, json={"id": 5}), 400, "ERR_WRONG_TYPE")


def test_patch_of_certificate_authority_and_ssh_user_certificate_take_the_id(admin, tmp_path):
    from tests.factories import ssh_keygen, x509_certificate

    ca = admin.post("/certificate_authorities", json={"ca_pem": x509_certificate(ca=True)})
    assert ca.status_code == 201, ca.text
    url = f"/certificate_authorities/{ca.json()['id']}"
    assert admin.patch(url, json={"id": ca.json()["id"], "metadata": "m"}).status_code == 200
    assert_error(admin.patch(url, json={"id": "ca_x"}), 400, "ERR_INVALID_FIELD")

    sshca = admin.post("/ssh_certificate_authorities", json={}).json()
    cert = admin.post(
        "/ssh_user_certificates",
        json={
            "ssh_certificate_authority_id": sshca["id"],
            "public_key": ssh_keygen(tmp_path, "ed25519"),
        },
    ).json()
    url = f"/ssh_user_certificates/{cert['id']}"
    assert admin.patch(url, json={"id": cert["id"], "metadata": "m"}).status_code == 200
    assert_error(admin.patch(url, json={"id": sshca["id"]}), 400, "ERR_INVALID_FIELD")


def test_an_unknown_id_in_path_and_body_is_still_404(admin):
    missing = ids.new_id("ak")
    assert_error(admin.patch(f"/api_keys/{missing}", json={"id": missing}), 404, "ERR_NOT_FOUND")


def test_create_still_refuses_id(admin):
    body = assert_error(admin.post("/api_keys", json={"id": "ak_x"}), 400, "ERR_UNKNOWN_FIELD")
    assert body["details"]["field"] == "id"


# Event sources.


@pytest.fixture
def esb(admin, factory) -> str:  # type: ignore[no-untyped-def]
    return str(factory.row(EventSubscription, admin.creds.account_id).id)


def test_event_source_create_accepts_the_subscription_id(admin, esb):
    url = f"/event_subscriptions/{esb}/sources"
    created = admin.post(url, json={"subscription_id": esb, "type": "api_key_created.v0"})
    assert created.status_code == 201, created.text
    assert created.json()["type"] == "api_key_created.v0"
    null = admin.post(url, json={"subscription_id": None, "type": "api_key_updated.v0"})
    assert null.status_code == 201


def test_event_source_create_with_another_subscription_is_invalid(admin, factory, esb):
    other = factory.row(EventSubscription, admin.creds.account_id).id
    url = f"/event_subscriptions/{esb}/sources"
    body = assert_error(
        admin.post(url, json={"subscription_id": other, "type": "api_key_created.v0"}),
        400,
        "ERR_INVALID_FIELD",
    )
    assert body["details"]["field"] == "subscription_id"
    assert admin.get(url).json()["sources"] == []
    assert_error(admin.post(url, json={"subscription_id": esb}), 400, "ERR_MISSING_FIELD")


def test_event_source_update_accepts_subscription_id_and_type(admin, esb):
    url = f"/event_subscriptions/{esb}/sources"
    admin.post(url, json={"type": "api_key_created.v0"})
    source = f"{url}/api_key_created.v0"
    for body in (
        {"subscription_id": esb, "type": "api_key_created.v0"},
        {"subscription_id": esb},
        {"type": "api_key_created.v0"},
        {"subscription_id": None, "type": None},
        {},
    ):
        updated = admin.patch(source, json=body)
        assert updated.status_code == 200, (body, updated.text)
        assert updated.json()["type"] == "api_key_created.v0"
    assert admin.patch(source).status_code == 200  # no body at all


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"type": "api_key_updated.v0"}, "type"),
        ({"type": "not_a_type"}, "type"),
        ({"subscription_id": "esb_0ERZHb3hGoaYLY3tKA0JZBzonDJ"}, "subscription_id"),
        ({"subscription_id": "", "type": "api_key_created.v0"}, "subscription_id"),
    ],
)
def test_event_source_update_with_other_values_is_invalid(admin, esb, body, field):
    url = f"/event_subscriptions/{esb}/sources"
    admin.post(url, json={"type": "api_key_created.v0"})
    error = assert_error(
        admin.patch(f"{url}/api_key_created.v0", json=body), 400, "ERR_INVALID_FIELD"
    )
    assert error["details"]["field"] == field


def test_event_source_update_refuses_other_fields(admin, esb):
    url = f"/event_subscriptions/{esb}/sources"
    admin.post(url, json={"type": "api_key_created.v0"})
    assert_error(
        admin.patch(f"{url}/api_key_created.v0", json={"description": "x"}),
        400,
        "ERR_UNKNOWN_FIELD",
    )


# The TLS edge backend module, wrapped.


@pytest.fixture
def edge(admin, factory):  # type: ignore[no-untyped-def]
    return factory.row(Edge, admin.creds.account_id, id=ids.new_id("edgtls"), kind="tls")


@pytest.fixture
def backend(admin, factory):  # type: ignore[no-untyped-def]
    return factory.row(TunnelGroupBackend, admin.creds.account_id)


def _module(backend_id: str, enabled: bool) -> dict[str, object]:
    uri = f"http://testserver/backends/tunnel_group/{backend_id}"
    return {"enabled": enabled, "backend": {"id": backend_id, "uri": uri}}


def test_wrapped_module_is_the_flat_one(admin, edge, backend):
    url = f"/edges/tls/{edge.id}/backend"
    wrapped = {"id": edge.id, "module": {"enabled": False, "backend_id": backend.id}}
    put = admin.put(url, json=wrapped)
    assert put.status_code == 200, put.text
    assert put.json() == _module(backend.id, False)
    assert admin.get(url).json() == _module(backend.id, False)
    # enabled absent or null in the module is true, as in the flat form.
    for module in ({"backend_id": backend.id}, {"backend_id": backend.id, "enabled": None}):
        assert admin.put(url, json={"module": module}).json() == _module(backend.id, True)
    # The flat form may repeat the id too; a null module is unset.
    flat = {"id": edge.id, "module": None, "backend_id": backend.id, "enabled": False}
    assert admin.put(url, json=flat).json() == _module(backend.id, False)


@pytest.mark.parametrize(
    ("body", "status", "code", "field"),
    [
        (
            {"id": "edgtls_0ERZHb3hGoaYLY3tKA0JZBzonDJ", "module": {"backend_id": "B"}},
            400,
            "ERR_INVALID_FIELD",
            "id",
        ),
        ({"module": {}}, 400, "ERR_MISSING_FIELD", "module.backend_id"),
        ({"module": {"enabled": True}}, 400, "ERR_MISSING_FIELD", "module.backend_id"),
        ({"module": {"backend_id": "bkdtg_x"}}, 400, "ERR_INVALID_FIELD", "module.backend_id"),
        ({"module": {"backend_id": "B", "x": 1}}, 400, "ERR_UNKNOWN_FIELD", "module.x"),
        (
            {"module": {"enabled": "yes", "backend_id": "B"}},
            400,
            "ERR_WRONG_TYPE",
            "module.enabled",
        ),
        (
            {"module": {"backend_id": "B"}, "backend_id": "B"},
            400,
            "ERR_CONFLICTING_FIELDS",
            "module",
        ),
        ({"module": {"backend_id": "B"}, "enabled": True}, 400, "ERR_CONFLICTING_FIELDS", "module"),
        ({"module": []}, 400, "ERR_WRONG_TYPE", "module"),
        ({"module": {"backend_id": "U"}}, 404, "ERR_REFERENCE_NOT_FOUND", "module.backend_id"),
    ],
)
def test_wrapped_module_rules(admin, edge, backend, body, status, code, field):
    def real(value):
        if isinstance(value, dict):
            return {k: real(v) for k, v in value.items()}
        return (
            {"B": backend.id, "U": "bkdtg_2pQcK8sTu9vWxY0zAb1Cd2Ef3Gh"}.get(value, value)
            if isinstance(value, str)
            else value
        )

    body = real(body)
    if "id" not in body and code == "ERR_INVALID_FIELD" and field == "id":
        body["id"] = "edgtls_0ERZHb3hGoaYLY3tKA0JZBzonDJ"
    url = f"/edges/tls/{edge.id}/backend"
    error = assert_error(admin.put(url, json=body), status, code)
    assert error["details"]["field"] == field
    assert_error(admin.get(url), 404, "ERR_BACKEND_MODULE_NOT_SET")
