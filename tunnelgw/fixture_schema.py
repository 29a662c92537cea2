"""Fixture files: parse YAML or JSON keeping every node's position, check them against
`fixture.schema.yaml`, and report each problem as `FILE:LINE:COLUMN: <json path>: <message>`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
import yaml

Path_ = tuple[str | int, ...]
SCHEMA_FILE = "fixture.schema.yaml"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class Issue:
    """One problem in a fixture file, at a 1-based line and column."""

    file: str
    line: int
    column: int
    path: Path_
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {json_path(self.path)}: {self.message}"


class FixtureError(Exception):
    """A fixture file that cannot be loaded; `issues` holds every problem found. `written`:
    an api item was refused after the rows before it were written."""

    def __init__(self, issues: Iterable[Issue], *, written: bool = False) -> None:
        self.issues = sorted(issues, key=lambda i: (i.line, i.column, i.message))
        self.written = written
        super().__init__("\n".join(str(issue) for issue in self.issues))


def json_path(path: Path_) -> str:
    """`$.edges[0].kind`; keys that are not identifiers are quoted (`$["a b"]`)."""
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.fullmatch(part):
            out += f".{part}"
        else:
            out += f'["{part}"]'
    return out


@dataclass
class Document:
    """The parsed file: plain data, and the position of every value and mapping key."""

    file: str
    data: Any
    positions: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    key_positions: dict[Path_, tuple[int, int]] = field(default_factory=dict)

    def issue(self, path: Path_, message: str, *, at_key: bool = False) -> Issue:
        """An issue at `path` (its key when `at_key`), else at its nearest parent."""
        where = self.key_positions.get(path) if at_key else None
        probe = path
        while where is None:
            where = self.positions.get(probe)
            if not probe:
                break
            probe = probe[:-1]
        line, column = where or (1, 1)
        return Issue(self.file, line, column, path, message)


def parse(text: bytes, file: str) -> Document:
    """The document in `text` (YAML, or JSON, which is YAML); raises FixtureError."""
    try:
        source = text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FixtureError([Issue(file, 1, 1, (), f"not UTF-8 text: {exc}")]) from None
    if source.lstrip()[:1] in ("{", "["):
        # JSON allows tabs between tokens, YAML does not; a tab inside a JSON string is
        # invalid JSON anyway, so one space per tab keeps every column where it was.
        source = source.replace("\t", " ")
    doc = Document(file, None)
    try:
        node = yaml.compose(source, Loader=yaml.SafeLoader)
        if node is None:
            raise FixtureError([Issue(file, 1, 1, (), "the file is empty")])
        doc.data = _Builder(doc).build(node, ())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        raise FixtureError([Issue(file, line, column, (), problem or str(exc))]) from None
    return doc


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


class _Builder:
    """Turns a composed node tree into plain data, recording positions on the way."""

    _TIMESTAMP = "tag:yaml.org,2002:timestamp"

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.constructor = yaml.SafeLoader("")

    def build(self, node: yaml.Node, path: Path_) -> Any:
        self.doc.positions[path] = _mark(node)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        if node.tag == self._TIMESTAMP:
            return node.value  # RFC 3339 strings stay strings
        return self.constructor.construct_object(node, deep=True)

    def _mapping(self, node: yaml.MappingNode, path: Path_) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.constructor.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise yaml.MarkedYAMLError(
                    problem=f"mapping keys must be strings, not {key!r}",
                    problem_mark=key_node.start_mark,
                )
            if key in out:
                raise yaml.MarkedYAMLError(
                    problem=f"duplicate key {key!r}", problem_mark=key_node.start_mark
                )
            self.doc.key_positions[(*path, key)] = _mark(key_node)
            out[key] = self.build(value_node, (*path, key))
        return out


@cache
def schema() -> dict[str, Any]:
    """The fixture format's JSON Schema (package data)."""
    text = resources.files("tunnelgw").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    loaded: dict[str, Any] = yaml.safe_load(text)
    jsonschema.Draft202012Validator.check_schema(loaded)
    return loaded


def validate(doc: Document) -> list[Issue]:
    """Every schema violation of `doc`, one issue each (extra keys: one per key)."""
    validator = jsonschema.Draft202012Validator(schema())
    issues: list[Issue] = []
    for error in validator.iter_errors(doc.data):
        issues.extend(_issues(doc, error))
    return issues


def _issues(doc: Document, error: jsonschema.ValidationError) -> Iterator[Issue]:
    path: Path_ = tuple(error.absolute_path)
    rule: dict[str, Any] = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = rule.get("properties", {})
        for key in error.instance:
            if key not in known:
                yield doc.issue((*path, key), f"unknown key {key!r}", at_key=True)
        return
    if error.validator == "pattern" and "description" in rule:
        message = f"{error.instance!r} is not {rule['description']}"
    elif error.validator == "required":
        message = error.message.replace("is a required property", "is required")
    else:
        message = error.message
    yield doc.issue(path, message)
