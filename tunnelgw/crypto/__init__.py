"""Pure cryptography for certificates, private keys and SSH certificates: no database, no HTTP.

`x509` parses uploaded CA certificates, `tls` uploaded TLS certificate chains with their
private keys (and derives the fields of every TLS certificate), `ssh` generates SSH CA keys
and signs user certificates, `issuing` makes the issuing CA and the TLS certificates it
signs, `keys` holds the key-encryption key and wraps private keys at rest. Invalid input
raises `CryptoError`, whose `rule` names the check that failed; handlers turn it into an API
error.
"""

from __future__ import annotations

import enum


class Rule(enum.Enum):
    """The input checks of this package.

    Member names are error code names of `tunnelgw.core.errors.Code` (`ERR_<name>` on the wire);
    a unit test keeps the two in step, so handlers map a rule with `Code[rule.name]`.
    """

    INVALID_PEM = "the text is not PEM"
    NOT_A_CERTIFICATE = "a PEM block is not a certificate"
    INVALID_CERTIFICATE = "the certificate block does not hold a valid X.509 certificate"
    MULTIPLE_CERTIFICATES = "more than one certificate"
    NOT_A_CA = "the certificate is not a CA certificate"
    CHAIN_OUT_OF_ORDER = "a certificate of a chain is not the issuer of the one before it"
    INVALID_PRIVATE_KEY = "the private key cannot be read"
    ENCRYPTED_PRIVATE_KEY = "the private key is encrypted"
    UNSUPPORTED_KEY_TYPE = "a key type or size that TLS certificates here cannot use"
    PRIVATE_KEY_MISMATCH = "the private key does not belong to the leaf certificate"
    FIELD_TOO_LONG = "a value is longer than its limit"
    INVALID_SSH_PUBLIC_KEY = "not an SSH public key in authorized-keys format"
    UNSUPPORTED_SSH_KEY_TYPE = "an SSH key type that cannot be certified"
    INVALID_VALIDITY = "the validity period is invalid"
    INVALID_FIELD = "a value is invalid"
    INVALID_CSR = "the text is not one PEM certificate signing request"
    CSR_SIGNATURE_INVALID = "the signing request's signature does not verify"


class CryptoError(ValueError):
    """Input rejected by `rule`; `field` names the offending input when there are several."""

    def __init__(self, rule: Rule, msg: str, *, field: str | None = None) -> None:
        super().__init__(msg)
        self.rule = rule
        self.msg = msg
        self.field = field
