"""SQLModel tables, one module per table; importing this package registers them all."""

from models.account import Account
from models.api_key import ApiKey
from models.http_response_backend import HttpResponseBackend
from models.principal import Principal

__all__ = ["Account", "ApiKey", "HttpResponseBackend", "Principal"]
