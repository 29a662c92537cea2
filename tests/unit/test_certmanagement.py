"""Certificate management: the job's transitions at explicit times with non-zero delays
(tunnelgw.rules.certmanagement), the certificates of the issuing CA (tunnelgw.crypto.issuing, also
read back with `openssl`), and the naming rules of reserved domains (tunnelgw.rules.reserved_names).
"""

from __future__ import annotations

import shutil
import subprocess
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tunnelgw.core.errors import ApiError
from tunnelgw.core.settings import Settings
from tunnelgw.crypto import issuing
from tunnelgw.rules import certmanagement as cm
from tunnelgw.rules import reserved_names
from tunnelgw.rules.certmanagement import Settled, Status

T0 = datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)
S = timedelta(seconds=1)
DAY = timedelta(days=1)
SETTINGS = Settings(
    certificate_issue_delay_seconds=60,
    certificate_retry_seconds=300,
    certificate_validity_days=90,
    certificate_renew_before_days=30,
)
DOMAIN = "app.example.com"
FAILING = "app.example.invalid"
MSG = "provisioning a certificate from letsencrypt"


def settle(status: Status, now: datetime, domain: str = DOMAIN) -> Settled | None:
    return cm.settle(status, domain, "letsencrypt", now, SETTINGS)


def job(started: datetime, renews_at: datetime | None = None) -> Status:
    return Status(renews_at=renews_at, job_started_at=started, job_msg=MSG)


# Transitions.


def test_a_new_job_is_in_progress_until_the_delay_has_passed():
    started = cm.started("letsencrypt", T0)
    assert started == job(T0)
    assert cm.next_event(started, SETTINGS) == T0 + 60 * S
    assert not cm.is_due(started, T0 + 59 * S, SETTINGS)
    assert settle(started, T0 + 59 * S) is None


def test_the_job_completes_with_a_certificate():
    settled = settle(job(T0), T0 + 60 * S)
    assert settled == Settled(Status(renews_at=T0 + 60 * S + 60 * DAY), T0 + 60 * S)
    assert cm.window(T0 + 60 * S, SETTINGS) == (T0 + 60 * S, T0 + 60 * S + 90 * DAY)
    # Read much later (but before the renewal): the same certificate, issued at completion.
    assert settle(job(T0), T0 + 59 * DAY) == settled
    assert settled is not None
    assert not cm.is_due(settled.status, T0 + 59 * DAY, SETTINGS)


def test_renewal_starts_at_renews_at_and_completes_after_the_delay():
    renews = T0 + 60 * DAY
    issued = Status(renews_at=renews)
    assert cm.next_event(issued, SETTINGS) == renews
    assert settle(issued, renews - S) is None
    running = settle(issued, renews)
    assert running == Settled(job(renews, renews_at=renews), None)  # old certificate stays
    assert running is not None
    assert settle(running.status, renews + 59 * S) is None
    assert settle(running.status, renews + 60 * S) == Settled(
        Status(renews_at=renews + 60 * S + 60 * DAY), renews + 60 * S
    )
    # Straight from the issued state to after the renewal's completion: one issue.
    assert settle(issued, renews + 61 * S) == Settled(
        Status(renews_at=renews + 60 * S + 60 * DAY), renews + 60 * S
    )


def test_many_periods_later_only_the_latest_certificate_is_issued():
    period = 60 * S + 60 * DAY  # delay + time in use
    now = T0 + 3 * period + 61 * S
    assert settle(job(T0), now) == Settled(
        Status(renews_at=T0 + 3 * period + 60 * S + 60 * DAY), T0 + 3 * period + 60 * S
    )
    # A renewal job running at `now`: the certificate before it is issued.
    now = T0 + 3 * period + 30 * S
    assert settle(job(T0), now) == Settled(
        job(T0 + 3 * period, renews_at=T0 + 3 * period), T0 + 2 * period + 60 * S
    )


def test_a_domain_under_invalid_fails_and_retries():
    failed = settle(job(T0), T0 + 60 * S, FAILING)
    assert failed is not None
    assert failed.issue_at is None
    status = failed.status
    assert (status.job_started_at, status.job_error_code) == (T0, cm.DNS_ERROR)
    assert status.job_retries_at == T0 + 360 * S
    assert FAILING in (status.job_msg or "")
    assert ".invalid" in (status.job_msg or "")
    assert status.renews_at is None
    assert cm.next_event(status, SETTINGS) == T0 + 360 * S
    assert settle(status, T0 + 359 * S, FAILING) is None

    restarted = settle(status, T0 + 360 * S, FAILING)
    assert restarted == Settled(job(T0 + 360 * S), None)
    assert restarted is not None
    assert settle(restarted.status, T0 + 419 * S, FAILING) is None
    again = settle(restarted.status, T0 + 420 * S, FAILING)
    assert again is not None
    assert (again.status.job_started_at, again.status.job_retries_at) == (
        T0 + 360 * S,
        T0 + 720 * S,
    )


def test_failures_long_after_are_computed_in_closed_form():
    # Started at T0, restarts every 360 s (60 s delay + 300 s retry).
    settled = settle(job(T0), T0 + 10_000 * S, FAILING)
    assert settled is not None
    assert settled.status.job_started_at == T0 + 9720 * S  # 27 * 360
    assert settled.status.job_error_code == cm.DNS_ERROR
    assert settled.status.job_retries_at == T0 + 10_080 * S
    in_progress = settle(job(T0), T0 + 9750 * S, FAILING)
    assert in_progress == Settled(job(T0 + 9720 * S), None)
    years = settle(job(T0), T0 + 3650 * DAY + 100 * S, FAILING)  # no loop: instant
    assert years is not None
    assert years.status.job_error_code == cm.DNS_ERROR


@pytest.mark.parametrize(
    ("domain", "fails"),
    [
        ("a.invalid", True),
        ("*.a.example.invalid", True),
        ("invalid.example.com", False),
        ("a.invalidx", False),
    ],
)
def test_which_domains_fail(domain, fails):
    assert cm.fails(domain) is fails


def test_nothing_happens_without_a_job_or_renewal():
    assert cm.next_event(Status(), SETTINGS) is None
    assert settle(Status(), T0 + 1000 * DAY) is None


def test_naive_times_from_sqlite_are_utc():
    class Row:
        renews_at = None
        job_started_at = T0.replace(tzinfo=None)
        job_msg = MSG
        job_error_code = None
        job_retries_at = None

    status = Status.of(Row())
    assert status == job(T0)
    target = Row()
    Status(renews_at=T0).write_to(target)
    assert (target.renews_at, target.job_started_at, target.job_msg) == (T0, None, None)


def test_timing_rounds_the_delay_up_and_keeps_a_day_of_use():
    timing = cm.Timing.of(
        Settings(
            certificate_issue_delay_seconds=2.5,
            certificate_validity_days=10,
            certificate_renew_before_days=20,
        )
    )
    assert timing.delay == 3 * S
    assert timing.in_use == DAY


def test_policy_and_exclusion():
    config = Settings(certificate_authority="zerossl")
    assert cm.policy(None, config) is None
    assert cm.policy({}, config) == cm.Policy("zerossl", "rsa")
    assert cm.policy({"authority": "", "private_key_type": ""}, config) == cm.Policy(
        "zerossl", "rsa"
    )
    assert cm.policy({"private_key_type": "ecdsa"}, config) == cm.Policy("zerossl", "ecdsa")
    cm.check_exclusive({"certificate_id": "cert_x", "certificate_management_policy": None})
    cm.check_exclusive({"certificate_id": None, "certificate_management_policy": {}})
    with pytest.raises(ApiError) as caught:
        cm.check_exclusive({"certificate_id": "cert_x", "certificate_management_policy": {}})
    assert caught.value.code.error_code == "ERR_CONFLICTING_FIELDS"


# Reserved names.


@pytest.mark.parametrize(
    ("name", "domain", "expected"),
    [
        ("App", None, "app.tunnelgw.test"),
        (None, "app", "app.tunnelgw.test"),
        ("", "A.Example.com", "a.example.com"),
        ("app", "APP.tunnelgw.test", "app.tunnelgw.test"),
        ("*.x.example.com", None, "*.x.example.com"),
    ],
)
def test_requested_domain(name, domain, expected):
    assert reserved_names.requested(name, domain, Settings()) == expected


@pytest.mark.parametrize(
    ("name", "domain", "code", "field"),
    [
        (None, None, "ERR_MISSING_FIELD", "domain"),
        ("", "", "ERR_MISSING_FIELD", "domain"),
        ("a", "b", "ERR_CONFLICTING_FIELDS", "name"),
        ("tunnelgw.test", None, "ERR_INVALID_DOMAIN", "name"),
        ("x", "Tunnelgw.Test", "ERR_CONFLICTING_FIELDS", "name"),
        (None, "tunnelgw.test", "ERR_INVALID_DOMAIN", "domain"),
    ],
)
def test_requested_domain_errors(name, domain, code, field):
    with pytest.raises(ApiError) as caught:
        reserved_names.requested(name, domain, Settings())
    assert caught.value.code.error_code == code
    assert caught.value.details["field"] == field


def test_a_long_shared_domain_cannot_make_a_name_too_long():
    config = Settings(shared_domain=("s" * 60 + ".") * 4 + "test")
    with pytest.raises(ApiError) as caught:
        reserved_names.requested("a" * 63, None, config)
    assert caught.value.code.error_code == "ERR_INVALID_DOMAIN"


def test_targets():
    config = Settings(cname_suffix="c.example.net", acme_challenge_suffix="acme.example.net")
    assert reserved_names.targets("a.tunnelgw.test", config) == (None, None)
    assert reserved_names.targets("*.a.tunnelgw.test", config) == (None, None)
    cname, acme = reserved_names.targets("shop.example.com", config)
    assert acme is None
    assert cname is not None
    assert cname.endswith(".c.example.net")
    assert len(cname) == 34
    cname, acme = reserved_names.targets("*.example.com", config)
    assert cname is not None
    assert acme is not None
    label, _, suffix = acme.partition(".")
    assert (len(label), suffix, label.isalnum(), label.lower()) == (20, "acme.example.net",
                                                                   True, label)  # fmt: skip


# The issuing CA and its certificates.


@pytest.fixture(scope="module")
def ca() -> issuing.Issued:
    return issuing.new_ca("letsencrypt", T0)


def _load(issued: issuing.Issued) -> x509.Certificate:
    return x509.load_pem_x509_certificate(issued.certificate_pem.encode())


def test_the_issuing_ca(ca):
    cert = _load(ca)
    assert cert.subject.rfc4514_string() == "CN=tunnelgw issuing CA (letsencrypt)"
    assert cert.issuer == cert.subject
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert cert.not_valid_before_utc == T0
    assert cert.not_valid_after_utc == T0 + timedelta(days=3650)
    assert isinstance(cert.public_key(), ec.EllipticCurvePublicKey)
    cert.verify_directly_issued_by(cert)
    key = serialization.load_der_private_key(ca.private_key_der, password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)


def _rsa_2048(key: object) -> bool:
    return isinstance(key, rsa.RSAPublicKey) and key.key_size == 2048


def _p256(key: object) -> bool:
    return isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1"


@pytest.mark.parametrize(("key_type", "check"), [("rsa", _rsa_2048), ("ecdsa", _p256)])
@pytest.mark.parametrize("domain", ["app.example.com", "*.example.com"])
def test_issued_certificates(ca, key_type, check, domain):
    issued = issuing.issue(
        ca.certificate_pem, ca.private_key_der, domain, key_type, T0, T0 + 90 * DAY
    )
    cert = _load(issued)
    assert check(cert.public_key())
    cert.verify_directly_issued_by(_load(ca))
    assert cert.issuer == _load(ca).subject
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == [domain]
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == domain
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert (cert.not_valid_before_utc, cert.not_valid_after_utc) == (T0, T0 + 90 * DAY)
    key = serialization.load_der_private_key(issued.private_key_der, password=None)
    assert key.public_key().public_numbers() == cert.public_key().public_numbers()  # type: ignore[union-attr]


def test_a_domain_too_long_for_a_common_name_is_in_the_san_only(ca):
    domain = ("a" * 60 + ".") * 2 + "example.com"
    cert = _load(
        issuing.issue(ca.certificate_pem, ca.private_key_der, domain, "ecdsa", T0, T0 + DAY)
    )
    assert list(cert.subject) == []
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert san.critical  # RFC 5280: critical when the subject is empty
    assert san.value.get_values_for_type(x509.DNSName) == [domain]


def test_unknown_key_type():
    with pytest.raises(ValueError, match="key type"):
        issuing.new_key("dsa")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_openssl_reads_and_verifies_an_issued_certificate(tmp_path):
    now = datetime.now(UTC).replace(microsecond=0)
    ca = issuing.new_ca("letsencrypt", now - DAY)
    leaf = issuing.issue(
        ca.certificate_pem, ca.private_key_der, "*.shop.example.com", "rsa", now, now + 90 * DAY
    )
    (tmp_path / "ca.pem").write_text(ca.certificate_pem)
    (tmp_path / "leaf.pem").write_text(leaf.certificate_pem)
    text = subprocess.run(
        ["openssl", "x509", "-noout", "-text", "-in", str(tmp_path / "leaf.pem")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "Issuer: CN = tunnelgw issuing CA (letsencrypt)" in text
    assert "Subject: CN = *.shop.example.com" in text
    assert "DNS:*.shop.example.com" in text
    assert "TLS Web Server Authentication" in text
    assert "Public-Key: (2048 bit)" in text
    assert "CA:FALSE" in text
    verified = subprocess.run(
        ["openssl", "verify", "-purpose", "sslserver", "-CAfile", str(tmp_path / "ca.pem"),
         str(tmp_path / "leaf.pem")],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert verified.stdout.strip().endswith(": OK")
