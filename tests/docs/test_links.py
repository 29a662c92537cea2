"""Every relative link of README.md and docs/*.md names a file of the repository, and every
`#anchor` a heading of the page it points to (GitHub's anchors), so moving a section cannot
leave a link behind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.markdown import DOCUMENTS, ROOT, blocks

_LINK = re.compile(r"\]\(([^)\s]+)\)")
_CODE_SPAN = re.compile(r"(`+).*?\1")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def _prose(path: Path) -> list[str]:
    """The lines of `path` outside fenced code blocks, without inline code spans."""
    lines = path.read_text().splitlines()
    inside: set[int] = set()
    for block in blocks(path):  # the opening fence, the body, the closing fence
        inside.update(range(block.line - 1, block.line + block.text.count("\n") + 1))
    return [_CODE_SPAN.sub("", line) for number, line in enumerate(lines) if number not in inside]


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {anchor(match[1]) for line in _prose(path) if (match := _HEADING.match(line))}


def test_anchor_follows_github() -> None:
    assert anchor("Conventions of every resource") == "conventions-of-every-resource"
    assert anchor("`resolves_to` and the rest: A/B") == "resolves_to-and-the-rest-ab"
    assert {"quick-start", "first-requests"} <= anchors(ROOT / "README.md")


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_relative_links_resolve(path: Path) -> None:
    problems = []
    for line in _prose(path):
        for target in _LINK.findall(line):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            file, _, fragment = target.partition("#")
            linked = (path.parent / file).resolve() if file else path
            if not linked.exists():
                problems.append(f"{target}: no such file")
            elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
                problems.append(f"{target}: no heading with that anchor")
    assert problems == []
