"""A real OpenSSH server presenting a host certificate, and a real client that decides whether
it trusts the server through a known_hosts `@cert-authority` line: the verification an SSH
host certificate exists for. Needs `sshd` (Debian: openssh-server) and `ssh`."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd")
PRIVSEP_DIR = Path("/run/sshd")  # sshd run as root insists on it


def sshd_binary() -> str | None:
    found = shutil.which("sshd")
    return found or next((p for p in SSHD_CANDIDATES if os.access(p, os.X_OK)), None)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def client_trusts_host(
    directory: Path, host_key: Path, certificate: str, ca_public_key: str
) -> Callable[[str], bool]:
    """A check `trusts(name)`: whether `ssh`, knowing only `@cert-authority * <ca key>`,
    accepts an sshd that holds `host_key` and presents `certificate`, when it connects to it
    under `name` (the name the certificate's principals must list). Starts the server for
    each check, on 127.0.0.1, and stops it by its pid."""
    binary = sshd_binary()
    assert binary is not None
    cert_file = host_key.with_name(host_key.name + "-cert.pub")
    cert_file.write_text(certificate + "\n")
    known_hosts = directory / f"known_hosts_{cert_file.stat().st_ino}"
    known_hosts.write_text(f"@cert-authority * {ca_public_key}\n")
    if os.geteuid() == 0:
        PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)

    def trusts(name: str) -> bool:
        port = _free_port()
        config = directory / f"sshd_config_{port}"
        config.write_text(
            f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
            f"HostCertificate {cert_file}\nPidFile none\nUsePAM no\nStrictModes no\n"
            "AuthorizedKeysFile none\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nLogLevel VERBOSE\n"
        )
        server = subprocess.Popen(
            [binary, "-D", "-e", "-f", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _wait_listening(port, server)
            options = {
                "UserKnownHostsFile": str(known_hosts),
                "GlobalKnownHostsFile": "/dev/null",
                "StrictHostKeyChecking": "yes",
                "BatchMode": "yes",
                "PubkeyAuthentication": "no",
                "ConnectTimeout": "10",
                "HostKeyAlias": name,
            }
            flags = [arg for key, value in options.items() for arg in ("-o", f"{key}={value}")]
            command = ["ssh", "-F", "/dev/null", "-p", str(port), "-l", "nobody", *flags]
            client = subprocess.run(
                [*command, "127.0.0.1", "true"],
                capture_output=True,
                text=True,
                timeout=30,
            )
        finally:
            server.terminate()
            server.communicate(timeout=10)
        # Trusted: the client went on to authenticate (and was refused: no credentials).
        # Not trusted: it stopped at the host key.
        refused_host = "Host key verification failed" in client.stderr
        refused_user = "Permission denied" in client.stderr
        assert refused_host != refused_user, client.stderr
        return refused_user

    return trusts


def _wait_listening(port: int, server: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"sshd exited: {server.stderr.read() if server.stderr else ''}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("sshd did not listen within 10 s")
