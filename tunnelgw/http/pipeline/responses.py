"""The response of one operation: the handler's result checked against the schema of its
status (compiled once per status), list pages rendered through the render cache, and sent."""

from __future__ import annotations

from typing import Any, NoReturn

import orjson
from connexion.operations import AbstractOperation
from starlette.types import Send

from tunnelgw.http import validation
from tunnelgw.http.validation import Compiled
from tunnelgw.services import rendercache

JSON = "application/json"


class Responses:
    """The compiled response validator of each status an operation documents, and for list
    pages rendered through tunnelgw.services.rendercache, the validators of their envelope and
    items."""

    def __init__(self, operation: AbstractOperation) -> None:
        self.operation_id = operation.operation_id
        self.validators: dict[int, Compiled | None] = {}
        for status in operation.responses:
            if status.isdigit():
                schema = operation.response_schema(status, JSON)
                self.validators[int(status)] = Compiled(schema, formats=True) if schema else None
        self.documented = set(self.validators)
        self._pages: dict[tuple[int, str], _PagePlan | None] = {}

    def page_plan(self, status: int, key: str) -> _PagePlan | None:
        """How to validate a `Page` with items under `key` by parts for `status`; None when
        the response schema does not allow it (the page is then rendered and checked whole)."""
        if (status, key) not in self._pages:
            compiled = self.validators.get(status)
            plan = _PagePlan.of(compiled.schema, key) if compiled is not None else None
            self._pages[(status, key)] = plan
        return self._pages[(status, key)]

    def check(self, status: int, body: Any) -> None:
        if status not in self.documented:
            raise validation.nonconforming(f"status {status} is not documented")
        compiled = self.validators[status]
        if compiled is None:
            if body is not None:
                raise validation.nonconforming(f"status {status} documents no body")
            return
        validator = compiled.get()
        if validator.is_valid(body):
            return
        _nonconforming(validator, body, "")


def _nonconforming(validator: Any, body: Any, prefix: str) -> NoReturn:
    error = next(iter(validator.iter_errors(body)))
    path = "/".join(str(part) for part in error.instance_path)
    raise validation.nonconforming(f"at /{prefix}{path}: {error.message}")


class _PagePlan:
    """A list response schema split in two, for pages rendered through the render cache
    (tunnelgw.services.rendercache): the envelope with the items of the array `key`
    unconstrained, and the item schema. Both are compiled from the operation's response
    schema, as `check` is."""

    __slots__ = ("envelope", "item", "key")

    def __init__(self, key: str, envelope: Compiled, item: Compiled) -> None:
        self.key = key
        self.envelope = envelope
        self.item = item

    @classmethod
    def of(cls, schema: dict[str, Any], key: str) -> _PagePlan | None:
        """The plan of `schema`; None unless it is an object whose property `key` is an array
        with an `items` schema."""
        properties = schema.get("properties")
        prop = properties.get(key) if isinstance(properties, dict) else None
        if (
            schema.get("type") != "object"
            or not isinstance(properties, dict)
            or not isinstance(prop, dict)
            or prop.get("type") != "array"
            or not isinstance(prop.get("items"), dict)
        ):
            return None
        envelope = {**schema, "properties": {**properties, key: {**prop, "items": {}}}}
        item = prop["items"]
        if "components" in schema and "components" not in item:  # where "$ref"s resolve
            item = {**item, "components": schema["components"]}
        return cls(key, Compiled(envelope, formats=True), Compiled(item, formats=True))

    def render(self, page: rendercache.Page) -> bytes:
        """The body of `page`: its items through the render cache, each new rendering checked
        against the item schema, and the envelope checked against the response schema with the
        items left to that check. Every byte sent has been validated."""
        item_validator = self.item.get()
        key = self.key

        def check(item: dict[str, Any], index: int) -> None:
            if not item_validator.is_valid(item):
                _nonconforming(item_validator, item, f"{key}/{index}/")

        items = page.items(check, self.item)
        body = page.envelope(items)
        shape = {**body, key: [None] * len(items)}  # the items were checked one by one
        validator = self.envelope.get()
        if not validator.is_valid(shape):
            _nonconforming(validator, shape, "")
        return orjson.dumps(body)


async def send_response(send: Send, status: int, body: bytes, content_type: str | None) -> None:
    headers = [(b"content-length", str(len(body)).encode())]
    if content_type is not None:
        headers.append((b"content-type", content_type.encode("latin-1")))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
