"""Kubernetes operators (`/kubernetes_operators`), over HTTP (the platform's Python client has
none): registration as the platform's operator sends it, the binding's CSR signed by the
server's issuing CA (checked with `openssl verify`), PATCH rules, bound endpoints."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from tests.factories import assert_error
from tunnelgw.models import Endpoint
from tunnelgw.services import certstore
from tunnelgw.storage import db

PATH = "/kubernetes_operators"
BASE = "http://testserver"
openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")


def make_csr(key: Any = None, algorithm: Any = None) -> tuple[str, Any]:
    """A PEM CSR as the platform's operator makes it (ECDSA P-256, empty subject, SHA-512)."""
    key = key or ec.generate_private_key(ec.SECP256R1())
    request = x509.CertificateSigningRequestBuilder().subject_name(x509.Name([]))
    signed = request.sign(key, algorithm or hashes.SHA512())
    return signed.public_bytes(serialization.Encoding.PEM).decode("ascii"), key


def registration(csr: str | None = None, **fields: Any) -> dict[str, Any]:
    """The create body the platform's operator sends (its KubernetesOperator controller)."""
    body: dict[str, Any] = {
        "metadata": '{"owned-by": "k8s-operator", "namespace.uid": "4c2f"}',
        "description": "Created by the operator",
        "enabled_features": ["ingress", "bindings"],
        "region": "global",
        "deployment": {"name": "k8s-operator", "namespace": "k8s-op", "version": "0.19.0"},
        "binding": {"endpoint_selectors": ["true"], "csr": csr or make_csr()[0]},
    }
    return {**body, **fields}


def issuing_ca(factory: Any) -> str:
    """The issuing CA's certificate (PEM), read where the server keeps it."""

    async def read() -> str:
        async with db.write() as unit:
            return (
                await certstore.issuing_authority(unit, certstore.OPERATOR_BINDINGS_CA)
            ).certificate_pem

    pem: str = factory._run(read)
    return pem


def test_register_get_list_delete(admin):
    made = admin.post(PATH, json=registration())
    assert made.status_code == 201, made.text
    created = made.json()
    assert created["id"].startswith("k8sop_")
    assert created["uri"] == f"{BASE}{PATH}/{created['id']}"
    assert created["updated_at"] == created["created_at"]
    principal = admin.creds.principal_id
    assert created["principal"] == {"id": principal, "uri": ""}  # a user: as the platform
    assert (created["enabled_features"], created["region"]) == (["ingress", "bindings"], "global")
    assert created["deployment"] == {
        "name": "k8s-operator",
        "namespace": "k8s-op",
        "version": "0.19.0",
        "cluster_name": "",
    }
    binding = created["binding"]
    assert binding["endpoint_selectors"] == ["true"]
    assert binding["ingress_endpoint"] == "kubernetes-binding-ingress.tunnelgw.test:443"
    assert binding["cert"]["cert"].startswith("-----BEGIN CERTIFICATE-----")
    url = f"{PATH}/{created['id']}"
    assert admin.get(url).json() == created
    listed = admin.get(PATH).json()
    assert listed == {"operators": [created], "uri": f"{BASE}{PATH}", "next_page_uri": None}
    assert admin.delete(url).status_code == 204
    assert_error(admin.get(url), 404, "ERR_NOT_FOUND")
    assert_error(admin.delete(url), 404, "ERR_NOT_FOUND")


def test_defaults_without_a_binding(admin):
    made = admin.post(PATH, json={})
    assert made.status_code == 201, made.text
    created = made.json()
    assert (created["enabled_features"], created["region"], created["binding"]) == (
        [],
        "global",
        None,
    )
    assert (created["description"], created["metadata"]) == ("", "")
    assert set(created["deployment"].values()) == {""}
    empty = admin.post(PATH, json={"region": "", "enabled_features": ["gateway"]}).json()
    assert (empty["region"], empty["enabled_features"]) == ("global", ["gateway"])
    assert admin.post(PATH, json={"region": "eu"}).json()["region"] == "eu"


def test_the_certificate_is_signed_from_the_csr(admin, factory, tmp_path):
    csr, key = make_csr()
    before = datetime.now(UTC).replace(microsecond=0)
    created = admin.post(PATH, json=registration(csr)).json()
    cert_info = created["binding"]["cert"]
    cert = x509.load_pem_x509_certificate(cert_info["cert"].encode())
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    der = serialization.Encoding.DER
    assert cert.public_key().public_bytes(der, spki) == key.public_key().public_bytes(der, spki)
    assert cert.subject.rfc4514_string() == f"CN={created['id']}"
    ca = x509.load_pem_x509_certificate(issuing_ca(factory).encode())
    assert cert.issuer == ca.subject
    cert.verify_directly_issued_by(ca)
    not_before = cert.not_valid_before_utc
    assert before <= not_before <= datetime.now(UTC)
    assert cert.not_valid_after_utc - not_before == timedelta(days=365)
    assert cert_info["not_before"] == not_before.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert cert_info["not_after"] == cert.not_valid_after_utc.strftime("%Y-%m-%dT%H:%M:%SZ")
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False


@openssl
def test_openssl_verifies_the_certificate_against_the_issuing_ca(admin, factory, tmp_path):
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for csr, _ in (make_csr(), make_csr(rsa_key, hashes.SHA256())):
        cert = admin.post(PATH, json=registration(csr)).json()["binding"]["cert"]["cert"]
        (tmp_path / "ca.pem").write_text(issuing_ca(factory))
        (tmp_path / "cert.pem").write_text(cert)
        verified = _openssl(tmp_path, "verify", "-purpose", "sslclient", "-CAfile", "ca.pem")
        assert verified.strip() == "cert.pem: OK"
    # A certificate of another CA (certificate management's) does not verify against it.
    (tmp_path / "other.pem").write_text(_other_ca(factory))
    result = subprocess.run(
        ["openssl", "verify", "-CAfile", "other.pem", "cert.pem"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0


def _openssl(cwd: Path, *args: str) -> str:
    run = subprocess.run(
        ["openssl", *args, "cert.pem"], cwd=cwd, capture_output=True, text=True, check=True
    )
    return run.stdout


def _other_ca(factory: Any) -> str:
    async def read() -> str:
        async with db.write() as unit:
            return (await certstore.issuing_authority(unit, "letsencrypt")).certificate_pem

    pem: str = factory._run(read)
    return pem


def test_patch_re_signs_a_new_csr_only(admin, factory):
    created = admin.post(PATH, json=registration()).json()
    url = f"{PATH}/{created['id']}"
    first = created["binding"]["cert"]["cert"]
    csr, key = make_csr()
    again = admin.patch(url, json={"binding": {"csr": csr}}).json()
    renewed = again["binding"]["cert"]["cert"]
    assert renewed != first
    cert = x509.load_pem_x509_certificate(renewed.encode())
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    der = serialization.Encoding.DER
    assert cert.public_key().public_bytes(der, spki) == key.public_key().public_bytes(der, spki)
    # The operator sends its CSR on every reconcile: the same one keeps the certificate.
    same = admin.patch(url, json={"binding": {"csr": csr, "endpoint_selectors": ["true"]}})
    assert same.json()["binding"]["cert"]["cert"] == renewed


def test_patch_fields(admin):
    created = admin.post(PATH, json=registration()).json()
    url = f"{PATH}/{created['id']}"
    changed = admin.patch(
        url,
        json={
            "description": "d",
            "metadata": "m",
            "region": "eu",
            "deployment": {"version": "0.20.0"},
            "binding": {"endpoint_selectors": ['obj.url.startsWith("http://")']},
        },
    )
    assert changed.status_code == 200, changed.text
    body = changed.json()
    assert (body["description"], body["metadata"], body["region"]) == ("d", "m", "eu")
    assert body["deployment"] == {**created["deployment"], "version": "0.20.0"}
    assert body["binding"] == {
        **created["binding"],
        "endpoint_selectors": ['obj.url.startsWith("http://")'],
    }
    assert body["updated_at"] >= created["updated_at"]
    assert body["created_at"] == created["created_at"]
    # Namespace and cluster name cannot change (the platform's update type has neither).
    namespace = {"deployment": {"namespace": "x"}}
    assert_error(admin.patch(url, json=namespace), 400, "ERR_UNKNOWN_FIELD")
    reset = admin.patch(url, json={"region": "", "binding": {"endpoint_selectors": []}}).json()
    assert (reset["region"], reset["binding"]["endpoint_selectors"]) == ("global", ["true"])
    ingress = {"binding": {"ingress_endpoint": "bindings.example.com:8443"}}
    assert admin.patch(url, json=ingress).json()["binding"]["ingress_endpoint"] == (
        "bindings.example.com:8443"
    )
    back = admin.patch(url, json={"binding": {"ingress_endpoint": ""}}).json()
    assert back["binding"]["ingress_endpoint"] == "kubernetes-binding-ingress.tunnelgw.test:443"
    assert admin.patch(url).json() == {**back, "updated_at": admin.get(url).json()["updated_at"]}


def test_features_and_binding_go_together(admin):
    body = registration(enabled_features=["ingress"])
    assert_error(admin.post(PATH, json=body), 400, "ERR_BINDING_NOT_ALLOWED")
    no_binding = {"enabled_features": ["bindings"]}
    assert_error(admin.post(PATH, json=no_binding), 400, "ERR_BINDING_REQUIRED")
    no_csr = {**no_binding, "binding": {"endpoint_selectors": ["true"]}}
    assert_error(admin.post(PATH, json=no_csr), 400, "ERR_BINDING_REQUIRED")
    assert admin.get(PATH).json()["operators"] == []  # nothing half-written
    created = admin.post(PATH, json={"enabled_features": ["ingress"]}).json()
    url = f"{PATH}/{created['id']}"
    assert_error(admin.patch(url, json=no_binding), 400, "ERR_BINDING_REQUIRED")
    on = admin.patch(url, json={**no_binding, "binding": {"csr": make_csr()[0]}}).json()
    assert on["binding"]["endpoint_selectors"] == ["true"]
    assert on["binding"]["cert"]["cert"]
    off = admin.patch(url, json={"enabled_features": ["gateway"]}).json()
    assert (off["enabled_features"], off["binding"]) == (["gateway"], None)
    late = {"binding": {"endpoint_selectors": ["true"]}}
    assert_error(admin.patch(url, json=late), 400, "ERR_BINDING_NOT_ALLOWED")
    assert admin.get(url).json() == off


def _corrupt_signature(csr: str) -> str:
    import base64

    body = "".join(csr.strip().splitlines()[1:-1])
    der = bytearray(base64.b64decode(body))
    der[-3] ^= 0x01  # inside the signature's last integer
    text = base64.encodebytes(bytes(der)).decode("ascii")
    return f"-----BEGIN CERTIFICATE REQUEST-----\n{text}-----END CERTIFICATE REQUEST-----\n"


@pytest.mark.parametrize(
    ("csr", "code"),
    [
        ("not a csr", "ERR_INVALID_PEM"),
        (
            "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n",
            "ERR_INVALID_CSR",
        ),
        ("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "ERR_INVALID_CSR"),
        ("bad-signature", "ERR_CSR_SIGNATURE_INVALID"),
        ("two", "ERR_INVALID_CSR"),
        ("p192", "ERR_UNSUPPORTED_KEY_TYPE"),
    ],
)
def test_invalid_csrs(admin, csr, code):
    if csr == "bad-signature":
        csr = _corrupt_signature(make_csr()[0])
    elif csr == "two":
        csr = make_csr()[0] + make_csr()[0]
    elif csr == "p192":
        csr = make_csr(ec.generate_private_key(ec.SECP192R1()), hashes.SHA256())[0]
    body = assert_error(admin.post(PATH, json=registration(csr)), 400, code)
    assert body["details"]["field"] == "binding.csr"
    created = admin.post(PATH, json=registration()).json()
    url = f"{PATH}/{created['id']}"
    assert_error(admin.patch(url, json={"binding": {"csr": csr}}), 400, code)
    assert admin.get(url).json() == created


@pytest.mark.parametrize(
    ("selectors", "index"),
    [(["obj.nope == 1"], 0), (["true", "obj.url =="], 1), (['obj.port == "x"'], 0)],
)
def test_invalid_endpoint_selectors(admin, selectors, index):
    body = registration()
    body["binding"]["endpoint_selectors"] = selectors
    error = assert_error(admin.post(PATH, json=body), 400, "ERR_INVALID_ENDPOINT_SELECTOR")
    assert error["details"]["field"] == f"binding.endpoint_selectors[{index}]"


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"enabled_features": ["ingres"]}, "ERR_INVALID_FIELD", "enabled_features.0"),
        ({"enabled_features": ["ingress", "ingress"]}, "ERR_INVALID_FIELD", "enabled_features"),
        ({"region": "mars"}, "ERR_INVALID_FIELD", "region"),
        ({"deployment": {"name": 3}}, "ERR_WRONG_TYPE", "deployment.name"),
        ({"deployment": {"name": "x" * 256}}, "ERR_FIELD_TOO_LONG", "deployment.name"),
        (
            {"binding": {"ingress_endpoint": "not a host"}},
            "ERR_INVALID_FIELD",
            "binding.ingress_endpoint",
        ),
        ({"binding": {"csr": 7}}, "ERR_WRONG_TYPE", "binding.csr"),
        (
            {"binding": {"endpoint_selectors": ["true"] * 21}},
            "ERR_FIELD_TOO_LONG",
            "binding.endpoint_selectors",
        ),
        ({"cluster": "x"}, "ERR_UNKNOWN_FIELD", "cluster"),
    ],
)
def test_schema_errors(admin, body, code, field):
    error = assert_error(admin.post(PATH, json=body), 400, code)
    assert error["details"]["field"] == field


def test_accounts_are_isolated(admin, other):
    created = admin.post(PATH, json=registration()).json()
    url = f"{PATH}/{created['id']}"
    for response in (
        other.get(url),
        other.patch(url, json={"description": "x"}),
        other.delete(url),
        other.get(f"{url}/bound_endpoints"),
    ):
        assert_error(response, 404, "ERR_NOT_FOUND")
    assert other.get(PATH).json()["operators"] == []
    assert admin.get(url).json() == created


def _endpoint(factory: Any, account_id: str, url: str, bindings: list[str]) -> str:
    scheme, _, hostport = url.partition("://")
    row = factory.row(
        Endpoint,
        account_id,
        proto=scheme,
        hostport=hostport,
        public_url=url,
        type="cloud" if "kubernetes" in bindings else "ephemeral",
        bindings=bindings,
    )
    endpoint_id: str = row.id
    return endpoint_id


def test_bound_endpoints(admin, other, factory):
    account = admin.creds.account_id
    web = _endpoint(factory, account, "http://web.prod:80", ["kubernetes"])
    db_ = _endpoint(factory, account, "tcp://db.prod:5432", ["kubernetes"])
    _endpoint(factory, account, "https://public.example.com", ["public"])
    _endpoint(factory, other.creds.account_id, "http://theirs.prod:80", ["kubernetes"])
    created = admin.post(PATH, json=registration()).json()
    url = f"{PATH}/{created['id']}/bound_endpoints"
    page = admin.get(url).json()
    assert [item["id"] for item in page["endpoints"]] == [db_, web]  # newest first
    assert (page["uri"], page["next_page_uri"]) == (f"{BASE}{url}", None)
    assert page["endpoints"][1] == admin.get(f"/endpoints/{web}").json()
    first = admin.get(url, params={"limit": 1}).json()
    assert [item["id"] for item in first["endpoints"]] == [db_]
    assert first["next_page_uri"] == f"{BASE}{url}?limit=1&before_id={db_}"
    second = admin.get(first["next_page_uri"].removeprefix(BASE)).json()
    assert ([item["id"] for item in second["endpoints"]], second["next_page_uri"]) == ([web], None)
    narrowed = admin.get(url, params={"filter": 'obj.proto == "tcp"'}).json()
    assert [item["id"] for item in narrowed["endpoints"]] == [db_]
    selectors = ['obj.url.startsWith("http://")', 'obj.host == "nothing.prod"']
    patch = {"binding": {"endpoint_selectors": selectors}}
    assert admin.patch(f"{PATH}/{created['id']}", json=patch).status_code == 200
    assert [item["id"] for item in admin.get(url).json()["endpoints"]] == [web]
    admin.patch(f"{PATH}/{created['id']}", json={"enabled_features": ["ingress"]})
    assert admin.get(url).json()["endpoints"] == []  # no binding, nothing bound


def test_bound_endpoints_parameters(admin):
    created = admin.post(PATH, json=registration()).json()
    url = f"{PATH}/{created['id']}/bound_endpoints"
    assert_error(admin.get(url, params={"before_id": created["id"]}), 400, "ERR_INVALID_PARAMETER")
    assert_error(admin.get(url, params={"filter": "obj.nope"}), 400, "ERR_FILTER_UNKNOWN_FIELD")
    assert_error(admin.get(url, params={"limit": 0}), 400, "ERR_INVALID_PARAMETER")
    missing = f"{PATH}/k8sop_{'0' * 27}/bound_endpoints"
    assert_error(admin.get(missing), 404, "ERR_NOT_FOUND")


def test_list_pages_and_filter(admin):
    made = [admin.post(PATH, json={"description": f"op {n}"}).json()["id"] for n in range(3)]
    page = admin.get(PATH, params={"limit": 2}).json()
    assert [item["id"] for item in page["operators"]] == made[:0:-1]
    rest = admin.get(page["next_page_uri"].removeprefix(BASE)).json()
    assert [item["id"] for item in rest["operators"]] == [made[0]]
    found = admin.get(PATH, params={"filter": 'obj.description == "op 1"'}).json()
    assert [item["id"] for item in found["operators"]] == [made[1]]
    nested = admin.get(PATH, params={"filter": 'obj.deployment.name == ""'}).json()
    assert len(nested["operators"]) == 3


def test_fixtures_register_operators(settings, admin, tmp_path):
    from tests.api.test_fixtures import _reset
    from tunnelgw import seeding

    doc = {
        "version": 1,
        "api": {
            "kubernetes_operators": [
                {"ref": "op", **registration(), "deployment": {"cluster_name": "staging"}},
                {"ref": "plain", "enabled_features": ["gateway"]},
            ]
        },
        "endpoints": [
            {
                "ref": "svc",
                "type": "cloud",
                "proto": "http",
                "hostport": "svc.staging:80",
                "bindings": ["kubernetes"],
            },
            {"ref": "pub", "type": "cloud", "proto": "https", "hostport": "pub.example.com:443"},
        ],
    }
    path = tmp_path / "operators.json"
    path.write_text(json.dumps(doc))
    account = admin.creds.account_id
    summary = seeding.load(path, settings, account)
    try:
        labels = summary["labels"]
        made = admin.get(f"{PATH}/{labels['op']}").json()
        assert made["deployment"]["cluster_name"] == "staging"
        assert made["binding"]["cert"]["cert"].startswith("-----BEGIN CERTIFICATE-----")
        assert admin.get(f"{PATH}/{labels['plain']}").json()["binding"] is None
        bound = admin.get(f"{PATH}/{labels['op']}/bound_endpoints").json()["endpoints"]
        assert [item["id"] for item in bound] == [labels["svc"]]
    finally:
        _reset(settings, account)
