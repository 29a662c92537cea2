"""Issue 10, item 7: DELETE /reserved_domains/{id}/certificate is 204 as the API document
says, also while a certificate management policy is attached: the certificate is detached,
management stays on and a new provisioning job starts (`certificate` null until it issues)."""

from __future__ import annotations

import uuid

import pytest

from tests.factories import assert_error, tls_upload
from tunnelgw.core import ids
from tunnelgw.core.errors import Code

PATH = "/reserved_domains"
JOB_MSG = "provisioning a certificate from letsencrypt"


def _domain() -> str:
    return f"c{uuid.uuid4().hex[:12]}.example.com"


@pytest.mark.inprocess  # changes the server's settings
def test_detach_under_a_policy_restarts_provisioning(admin, settings, monkeypatch):
    rd = admin.post(PATH, json={"domain": _domain(), "certificate_management_policy": {}}).json()
    url = f"{PATH}/{rd['id']}"
    issued = admin.get(url).json()  # the job completed at this read (test delay 0)
    assert issued["certificate"] is not None
    policy = issued["certificate_management_policy"]
    # A longer delay, so the new job is seen running.
    monkeypatch.setattr(settings, "certificate_issue_delay_seconds", 3600)
    response = admin.delete(f"{url}/certificate")
    assert (response.status_code, response.content) == (204, b"")
    after = admin.get(url).json()
    assert after["certificate"] is None
    assert after["certificate_management_policy"] == policy
    job = after["certificate_management_status"]["provisioning_job"]
    assert job["msg"] == JOB_MSG
    assert job["error_code"] is None
    assert after["certificate_management_status"]["renews_at"] is None
    # The job then issues a new certificate, not the detached one.
    monkeypatch.setattr(settings, "certificate_issue_delay_seconds", 0)
    reissued = admin.get(url).json()
    assert reissued["certificate"] is not None
    assert reissued["certificate"]["id"] != issued["certificate"]["id"]
    assert reissued["certificate_management_status"]["provisioning_job"] is None


def test_detach_without_a_certificate_changes_nothing(admin):
    rd = admin.post(PATH, json={"domain": _domain()}).json()
    url = f"{PATH}/{rd['id']}"
    before = admin.get(url).json()
    assert admin.delete(f"{url}/certificate").status_code == 204
    assert admin.get(url).json() == before


def test_detach_an_uploaded_certificate(admin):
    upload = tls_upload(dns_names=("up.example.com",))
    body = {"certificate_pem": upload.chain_pem, "private_key_pem": upload.key_pem}
    cert = admin.post("/tls_certificates", json=body).json()
    rd = admin.post(PATH, json={"domain": _domain(), "certificate_id": cert["id"]}).json()
    url = f"{PATH}/{rd['id']}"
    assert admin.get(url).json()["certificate"]["id"] == cert["id"]
    assert admin.delete(f"{url}/certificate").status_code == 204
    got = admin.get(url).json()
    assert got["certificate"] is None
    assert got["certificate_management_policy"] is None


def test_detach_of_unknown_or_foreign_domains_is_404(admin, other):
    rd = admin.post(PATH, json={"domain": _domain()}).json()
    assert_error(other.delete(f"{PATH}/{rd['id']}/certificate"), 404, "ERR_NOT_FOUND")
    missing = ids.new_id("rd")
    assert_error(admin.delete(f"{PATH}/{missing}/certificate"), 404, "ERR_NOT_FOUND")


def test_the_managed_conflict_code_is_gone():
    assert "CERTIFICATE_MANAGED" not in Code.__members__
