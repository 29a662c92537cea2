"""Build OpenTofu and the platform's Terraform provider from the Go module proxy, once per machine.

    python tests/terraform/build.py   # builds what is missing, prints the cache directory
                                      # (it holds bin/tofu and bin/terraform-provider-ngrok)

The binaries land in ``~/.cache/tunnelgw/terraform/tofu-<v>_provider-<v>/bin`` (or under
``TUNNELGW_TERRAFORM_CACHE``); a binary that is already there is not built again, so only the
first run on a machine pays for the build.

OpenTofu is built from a throwaway wrapper module that requires ``github.com/opentofu/opentofu``
at a released version and repeats the ``replace`` directives of OpenTofu's own go.mod (its fork of
HCL): a ``replace`` in a dependency's go.mod is ignored by ``go install module@version``, which
therefore refuses to build it.

The provider (``github.com/ngrok/terraform-provider-ngrok``) is built the same way from the proxy.
When the proxy does not serve it (it answers 403 "not available" for this module at the time of
writing), the module's repository is asked directly (``GOPROXY=direct``, verified against the
checksum database); failing that, ``TUNNELGW_TERRAFORM_PROVIDER_SRC`` may name a checkout of the
provider's repository at the wanted tag; it is then built from there, its dependencies still
coming from the proxy.
Nothing of either project is copied into this repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOFU_MODULE = "github.com/opentofu/opentofu"
TOFU_VERSION = os.environ.get("TUNNELGW_TOFU_VERSION", "v1.12.6")
PROVIDER_MODULE = "github.com/ngrok/terraform-provider-ngrok"
PROVIDER_VERSION = os.environ.get("TUNNELGW_TERRAFORM_PROVIDER_VERSION", "v0.8.0")
PROVIDER_BINARY = "terraform-provider-ngrok"

# Every `go` command is bounded; a cold OpenTofu build on 2 cores takes a few minutes.
GO_TIMEOUT = int(os.environ.get("TUNNELGW_TERRAFORM_BUILD_TIMEOUT", "2400"))


class BuildUnavailableError(RuntimeError):
    """The module proxy refused a module (and no local source was given)."""


def cache_dir() -> Path:
    root = os.environ.get("TUNNELGW_TERRAFORM_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "tunnelgw" / "terraform"
    return base / f"tofu-{TOFU_VERSION}_provider-{PROVIDER_VERSION}"


def _go(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    go = shutil.which("go")
    if go is None:
        raise BuildUnavailableError("no `go` on PATH")
    proc = subprocess.run(
        [go, *args],
        cwd=cwd,
        env={**os.environ, "GOFLAGS": "-mod=mod", "GOWORK": "off", **(env or {})},
        capture_output=True,
        text=True,
        timeout=GO_TIMEOUT,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"go {' '.join(args)} failed in {cwd}:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def _download(
    module: str, version: str, cwd: Path, env: dict[str, str] | None = None
) -> dict[str, str]:
    """``go mod download -json``; BuildUnavailableError when the proxy refuses the module."""
    go = shutil.which("go")
    if go is None:
        raise BuildUnavailableError("no `go` on PATH")
    proc = subprocess.run(
        [go, "mod", "download", "-json", f"{module}@{version}"],
        cwd=cwd,
        env={**os.environ, "GOWORK": "off", **(env or {})},
        capture_output=True,
        text=True,
        timeout=GO_TIMEOUT,
        check=False,
    )
    try:
        info: dict[str, str] = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise RuntimeError(f"go mod download {module}@{version}: {proc.stderr}") from exc
    if info.get("Error"):
        raise BuildUnavailableError(f"{module}@{version}: {info['Error']}")
    return info


def _replaces(go_mod: str) -> list[str]:
    """The ``replace`` directives of a go.mod (single-line and block forms), as lines."""
    out: list[str] = []
    in_block = False
    for raw in go_mod.splitlines():
        line = raw.split("//", 1)[0].strip()
        if in_block:
            if line == ")":
                in_block = False
            elif line:
                out.append(line)
        elif line == "replace (":
            in_block = True
        elif line.startswith("replace "):
            out.append(line[len("replace ") :])
        # Local-path replacements (=> ./x) cannot be repeated outside the module.
    return [r for r in out if not r.split("=>", 1)[1].strip().startswith(".")]


def _build_from_proxy(
    module: str,
    version: str,
    package: str,
    out: Path,
    work: Path,
    env: dict[str, str] | None = None,
) -> None:
    info = _download(module, version, work, env)
    go_mod = Path(info["GoMod"]).read_text()
    go_line = next(
        (ln for ln in go_mod.splitlines() if ln.startswith("go ")),
        "go 1.22",
    )
    wrapper = work / "wrapper"
    wrapper.mkdir()
    lines = ["module tunnelgw.test/gobuild", "", go_line, "", f"require {module} {version}", ""]
    lines += [f"replace {r}" for r in _replaces(go_mod)]
    (wrapper / "go.mod").write_text("\n".join(lines) + "\n")
    # `go get` fills in the requirement graph (and go.sum) as the module's own go.mod pins it.
    _go(["get", f"{package}@{version}"], wrapper, env)
    _go(["build", "-trimpath", "-o", str(out), package], wrapper, {"CGO_ENABLED": "0"})


def build_tofu(bin_dir: Path) -> Path:
    out = bin_dir / "tofu"
    if out.exists():
        return out
    with tempfile.TemporaryDirectory(prefix="tunnelgw-tofu-") as tmp:
        tmp_out = Path(tmp) / "tofu"
        _build_from_proxy(TOFU_MODULE, TOFU_VERSION, f"{TOFU_MODULE}/cmd/tofu", tmp_out, Path(tmp))
        shutil.move(tmp_out, out)
    return out


def build_provider(bin_dir: Path) -> Path:
    out = bin_dir / PROVIDER_BINARY
    if out.exists():
        return out
    with tempfile.TemporaryDirectory(prefix="tunnelgw-tfprovider-") as tmp:
        tmp_out = Path(tmp) / PROVIDER_BINARY
        try:
            try:
                _build_from_proxy(
                    PROVIDER_MODULE, PROVIDER_VERSION, PROVIDER_MODULE, tmp_out, Path(tmp)
                )
            except BuildUnavailableError as by_proxy:
                # A proxy's 403 is final for `go`; the module's own repository may still
                # answer (GOPROXY=direct: git, checked against the checksum database).
                shutil.rmtree(Path(tmp) / "wrapper", ignore_errors=True)
                try:
                    _build_from_proxy(
                        PROVIDER_MODULE,
                        PROVIDER_VERSION,
                        PROVIDER_MODULE,
                        tmp_out,
                        Path(tmp),
                        {"GOPROXY": "direct"},
                    )
                except BuildUnavailableError as direct:
                    raise BuildUnavailableError(
                        f"the module proxy: {by_proxy}; the repository (GOPROXY=direct): {direct}"
                    ) from None
        except BuildUnavailableError as refused:
            src = os.environ.get("TUNNELGW_TERRAFORM_PROVIDER_SRC")
            if not src:
                raise BuildUnavailableError(
                    f"{refused}; set TUNNELGW_TERRAFORM_PROVIDER_SRC to a checkout of "
                    f"{PROVIDER_MODULE} at {PROVIDER_VERSION} to build it from there"
                ) from None
            ldflags = f"-X main.version={PROVIDER_VERSION.lstrip('v')}"
            _go(
                ["build", "-trimpath", "-ldflags", ldflags, "-o", str(tmp_out), "."],
                Path(src),
                {"CGO_ENABLED": "0"},
            )
        shutil.move(tmp_out, out)
    return out


def build() -> Path:
    """Build what is missing; return the directory holding bin/tofu and the provider."""
    bin_dir = cache_dir() / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    # The provider first: when it cannot be had (the proxy refuses it and no checkout is
    # given), nothing is spent on OpenTofu's build (minutes on a fresh machine).
    build_provider(bin_dir)
    build_tofu(bin_dir)
    return cache_dir()


def main() -> int:
    started = time.monotonic()
    try:
        where = build()
    except BuildUnavailableError as exc:
        print(f"not built: {exc}", file=sys.stderr)
        return 2
    print(where)
    print(f"({time.monotonic() - started:.0f}s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
