"""SQLModel tables, one module per table; importing this package registers them all."""

from models.account import Account
from models.api_key import ApiKey
from models.certificate_authority import CertificateAuthority
from models.http_response_backend import HttpResponseBackend
from models.principal import Principal
from models.ssh_certificate_authority import SshCertificateAuthority
from models.ssh_user_certificate import SshUserCertificate

__all__ = [
    "Account",
    "ApiKey",
    "CertificateAuthority",
    "HttpResponseBackend",
    "Principal",
    "SshCertificateAuthority",
    "SshUserCertificate",
]
