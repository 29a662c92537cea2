"""Absolute URLs for `uri` and `next_page_uri`, from the public base URL.

The base is the configured public URL, or else the scheme and host of the current request;
the request middleware sets it once per request.
"""

from __future__ import annotations

from contextvars import ContextVar
from urllib.parse import urlencode

_base: ContextVar[str] = ContextVar("tunnelgw_base_url", default="http://127.0.0.1:8080")


def set_base(base: str) -> None:
    _base.set(base.rstrip("/"))


def base() -> str:
    """The public base URL of the current request (no trailing slash)."""
    return _base.get()


def absolute(path: str, **query: object) -> str:
    """`base + path`, with `query` (None values dropped) as a query string."""
    if not query:
        return _base.get() + path
    params = {k: v for k, v in query.items() if v is not None}
    return f"{_base.get()}{path}" + (f"?{urlencode(params)}" if params else "")


def ref(path: str, id_: str | None) -> dict[str, str] | None:
    """The `Ref` object of the resource `id_` under the collection `path`; None when unset."""
    return None if id_ is None else {"id": id_, "uri": f"{_base.get()}{path}/{id_}"}
