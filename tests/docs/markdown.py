"""The documents whose examples the tests keep working (README.md and docs/*.md), and their
fenced code blocks, each with the `<!-- example: not run: REASON -->` marker before it, if any."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))

# Fence languages of shell code: every such block must be `bash`, and run or be marked.
SHELL_LANGUAGES = frozenset({"bash", "sh", "shell", "console", "zsh", "shell-session"})
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\s]*)[^`]*$")
_NOT_RUN = re.compile(r"^\s*<!-- example: not run: (?P<reason>.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """A fenced code block: its document, the line of its opening fence (1-based), its
    language (the info string's first word, "" if none), its text, and the reason it is not
    run (None when it carries no marker)."""

    path: Path
    line: int
    language: str
    text: str
    not_run: str | None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.language == "bash" and self.not_run is None


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of the Markdown file `path`, in order; raises ValueError for a
    fence that is never closed."""
    lines = path.read_text().splitlines()
    found: list[Block] = []
    number = 0
    while number < len(lines):
        opening = _FENCE.match(lines[number])
        if opening is None:
            number += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        end = next(
            (
                index
                for index in range(number + 1, len(lines))
                if lines[index].strip().startswith(fence)
                and set(lines[index].strip()) == {fence[0]}
            ),
            None,
        )
        if end is None:
            raise ValueError(f"{path}:{number + 1}: a fence that is never closed")
        body = "\n".join(line[indent:] for line in lines[number + 1 : end])
        found.append(
            Block(path, number + 1, opening["info"].lower(), body + "\n", _marker(lines, number))
        )
        number = end + 1
    return found


def _marker(lines: list[str], fence: int) -> str | None:
    """The reason of the not-run marker on the last non-blank line before the fence."""
    previous = next((line for line in reversed(lines[:fence]) if line.strip()), "")
    marker = _NOT_RUN.match(previous)
    return marker["reason"] if marker else None


def markers(path: Path) -> dict[int, bool]:
    """Each line (1-based) of `path` that is an HTML comment about an example, and whether it
    is a well-formed not-run marker."""
    lines = path.read_text().splitlines()
    return {
        number: _NOT_RUN.match(line) is not None
        for number, line in enumerate(lines, start=1)
        if line.lstrip().startswith("<!--") and "example" in line
    }
