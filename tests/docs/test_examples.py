"""Every shell example of README.md and docs/*.md runs as written: each document's ```bash
blocks, in order, in one bash session (`set -euo pipefail`) in an empty directory laid out as
the quick start leaves a checkout, against a live server. A block that cannot run here says
why in a `<!-- example: not run: REASON -->` line right before its fence; any other shell
block fails the test, so no example escapes by accident."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.markdown import DOCUMENTS, ROOT, SHELL_LANGUAGES, Block, blocks, markers
from tunnelgw.testing import TunnelgwServer

TOOLS = ("curl", "jq", "openssl", "ssh-keygen")  # Debian: curl jq openssl openssh-client
SECONDS_PER_DOCUMENT = 120
OUTPUT_TAIL_CHARS = 6000
RUN = [path for path in DOCUMENTS if any(block.runs for block in blocks(path))]


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", DOCUMENTS, ids=_name)
def test_shell_blocks_are_bash_and_run_or_say_why_not(path: Path) -> None:
    problems = []
    for block in blocks(path):
        if block.language == "":
            problems.append(f"{block.where}: a fence without a language (```text for output)")
        elif block.language in SHELL_LANGUAGES and block.language != "bash":
            problems.append(f"{block.where}: shell code fenced as {block.language!r}, not bash")
        elif block.not_run is not None and block.language != "bash":
            problems.append(f"{block.where}: a not-run marker on a {block.language} block")
        elif block.not_run == "":
            problems.append(f"{block.where}: a not-run marker without a reason")
    marked = {block.line for block in blocks(path) if block.not_run is not None}
    for line, well_formed in markers(path).items():
        if not well_formed:
            problems.append(f"{_name(path)}:{line}: not `<!-- example: not run: REASON -->`")
        elif not any(line < fence and not _between(path, line, fence) for fence in marked):
            problems.append(f"{_name(path)}:{line}: a marker that is not right before a fence")
    assert problems == []


def _between(path: Path, marker: int, fence: int) -> bool:
    """Whether a non-blank line lies between the marker and the fence."""
    lines = path.read_text().splitlines()[marker : fence - 1]
    return any(line.strip() for line in lines)


def test_the_examples_are_found() -> None:
    """The pages with examples are run (a parser that found nothing would pass everything)."""
    names = {_name(path) for path in RUN}
    pages = ("using-the-api", "behaviour", "errors", "fixtures", "admin-api", "configuration")
    assert {"README.md", *(f"docs/{page}.md" for page in pages)} <= names
    assert sum(block.runs for path in RUN for block in blocks(path)) >= 15


@pytest.fixture(scope="module")
def server() -> Iterator[TunnelgwServer]:
    if os.environ.get("TUNNELGW_TEST_ENGINE") == "postgresql":
        pytest.skip("the examples run on SQLite, as the quick start does (the SQLite run has them)")
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        packages = "Debian: curl jq openssl openssh-client"
        pytest.skip(f"the examples need {', '.join(missing)} ({packages})")
    with TunnelgwServer() as started:
        yield started


@pytest.mark.parametrize("path", RUN, ids=_name)
def test_the_examples_run(path: Path, server: TunnelgwServer, tmp_path: Path) -> None:
    server.reset()  # each document starts from an empty account, as on a fresh server
    # What the quick start leaves in a checkout: `.venv/bin/tunnelgw` (the command installed
    # with this interpreter), the example fixture, and the server's data directory, which the
    # CLI finds by default.
    command = shutil.which("tunnelgw", path=str(Path(sys.executable).parent)) or shutil.which(
        "tunnelgw"
    )
    if command is None:
        pytest.skip("no `tunnelgw` command installed with this interpreter (pip install .)")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "tunnelgw").symlink_to(command)
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures", target_is_directory=True)
    (tmp_path / "tunnelgw-data").symlink_to(server.data_dir, target_is_directory=True)
    env = {name: value for name, value in os.environ.items() if not name.startswith("TUNNELGW_")}
    env |= {"BASE": server.base_url, "TOKEN": server.token}
    env["OPERATOR_TOKEN"] = server.operator_token  # docs/admin-api.md: accounts on demand
    status, output = _bash(_script(blocks(path)), tmp_path, env)
    assert status == 0, f"{_failed_block(output)} failed (exit {status}):\n{_tail(output)}"


def _script(found: list[Block]) -> str:
    parts = ["set -euo pipefail\n"]
    for block in found:
        if block.runs:
            parts.append(f"printf '\\n>>> %s\\n' '{block.where}'\n{block.text}")
    return "".join(parts)


def _bash(script: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run `script` in bash, in its own process group, killed after SECONDS_PER_DOCUMENT."""
    with subprocess.Popen(
        ["bash", "-c", script],  # bash from PATH, as a reader runs the examples
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    ) as process:
        try:
            output, _ = process.communicate(timeout=SECONDS_PER_DOCUMENT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            text = output.decode(errors="replace")
            pytest.fail(f"not done in {SECONDS_PER_DOCUMENT} s:\n{_tail(text)}")
    return process.returncode, output.decode(errors="replace")


def _failed_block(output: str) -> str:
    starts = [line for line in output.splitlines() if line.startswith(">>> ")]
    return starts[-1].removeprefix(">>> ") if starts else "the script"


def _tail(output: str) -> str:
    return output[-OUTPUT_TAIL_CHARS:]
