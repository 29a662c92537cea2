"""The platform's API operations (`platform_operations.yaml`) and which of them a spec serves.

Served is derived, never stored: an operation is served when the spec has its method on a
path of the same shape (parameter names aside). The HTTP layer answers the others with 501
ERR_NOT_IMPLEMENTED naming the operation (tunnelgw.http.rendering).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

DATA_FILE = Path(__file__).resolve().parent / "platform_operations.yaml"
STATUSES = ("current", "retired")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_PARAMETER = re.compile(r"\{[^}/]*\}")


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of the platform: `method` on the path template `path` (its parameters
    all named `{id}`, as the platform's client names them), of `family`, `current` or
    `retired`."""

    status: str
    family: str
    method: str
    path: str

    @property
    def name(self) -> str:
        """`PUT /edges/https/{id}/mutual_tls`."""
        return f"{self.method} {self.path}"

    @property
    def shape(self) -> str:
        return path_shape(self.path)


def path_shape(template: str) -> str:
    """A path template with every parameter written `{}`: the same for the platform's
    `/edges/https/{id}/routes/{id}` and this server's `/edges/https/{edge_id}/routes/{id}`."""
    return _PARAMETER.sub("{}", template)


@functools.cache
def operations() -> tuple[Operation, ...]:
    """Every operation of the data file, in its order; ValueError for a malformed entry."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    document = yaml.load(DATA_FILE.read_text(), Loader=loader)  # noqa: S506 - a safe loader
    found = []
    for entry in document["operations"]:
        operation = Operation(*(str(part) for part in entry))
        if operation.status not in STATUSES or operation.method not in METHODS:
            raise ValueError(f"{DATA_FILE.name}: bad entry {entry!r}")
        found.append(operation)
    return tuple(found)


def served_shapes(spec: dict[str, Any]) -> set[tuple[str, str]]:
    """(METHOD, path shape) of every operation `spec` serves."""
    return {
        (method.upper(), path_shape(path))
        for path, item in spec.get("paths", {}).items()
        for method in item
        if method.upper() in METHODS
    }


def is_served(operation: Operation, spec: dict[str, Any]) -> bool:
    return (operation.method, operation.shape) in served_shapes(spec)


def unserved(spec: dict[str, Any]) -> list[Operation]:
    """The platform's operations `spec` does not serve, in the data file's order."""
    return not_in(served_shapes(spec))


def not_in(served: set[tuple[str, str]]) -> list[Operation]:
    """The platform's operations whose (METHOD, path shape) is not in `served`, in order."""
    return [op for op in operations() if (op.method, op.shape) not in served]
