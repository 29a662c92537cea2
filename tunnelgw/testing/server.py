"""`TunnelgwServer`: a real `tunnelgw serve` in its own process, for test suites.

The server runs as `python -m tunnelgw serve` (the interpreter running this code, the
`tunnelgw` package this module was imported from) on 127.0.0.1 and a free port, in its own
process group, with the admin API on. Credentials:

- temporary data directory (the default): the server's first start creates the account, with
  a token chosen here (`TUNNELGW_BOOTSTRAP_TOKEN`); its id is read from the server's
  start-up banner. One process start, no extra CLI run.
- `database_url` (an existing database, possibly holding other accounts): a fresh account
  from `tunnelgw accounts create` (which migrates first) before `serve`, so tests never see
  or touch another account.

Only the standard library is imported here at import time (httpx, pydantic and the fixture
loader load at first use), so the pytest plugin stays cheap to import.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Self, TypeVar

from tunnelgw.testing import inputs, process
from tunnelgw.testing.accounts import ApiSession, TunnelgwAccount, TunnelgwOperator

if TYPE_CHECKING:
    import httpx

LOG_TAIL_CHARS = 6000
_BANNER_ACCOUNT = re.compile(r"\baccount (acct_[0-9A-Za-z]+)")
_PORT_IN_USE = "address already in use"
_PORT_ATTEMPTS = 3
T = TypeVar("T")


class TunnelgwStartError(RuntimeError):
    """The server (or the account set-up before it) failed to start; `log` is its output."""

    def __init__(self, message: str, log: str) -> None:
        self.log = log
        tail = log[-LOG_TAIL_CHARS:]
        cut = "[...]\n" if len(log) > len(tail) else ""
        super().__init__(f"{message}\n--- tunnelgw server log (tail) ---\n{cut}{tail}")


class TunnelgwServer(ApiSession):
    """A tunnelgw server in its own process, for tests.

    ```python
    with TunnelgwServer(certificate_issue_delay_seconds=0) as server:
        with server.client() as client:
            client.post("/reserved_domains", json={"domain": "app.example.com"})
        server.reset()
    ```

    Keyword arguments other than the named ones are server settings
    (`tunnelgw.core.settings.Settings`, passed as `TUNNELGW_<NAME>`); an unknown name is a
    TypeError. The environment's own `TUNNELGW_*` variables are not passed on.

    Besides its own account, the server makes accounts on demand with its operator token
    (generated here): `create_account()` gives a `TunnelgwAccount` of its own (dropped with
    `drop()` or at the end of its `with` block), `accounts()` lists them.
    """

    def __init__(
        self,
        *,
        database_url: str | None = None,
        fixture: str | os.PathLike[str] | Mapping[str, Any] | None = None,
        port: int | None = None,
        startup_timeout: float = 60.0,
        stop_timeout: float = 10.0,
        **settings: Any,
    ) -> None:
        inputs.check_settings(settings)
        self.database_url = database_url
        self.fixture = fixture
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.settings = dict(settings)
        self._port = port
        self._fixed_port = port is not None
        self._token: str | None = None
        self._account_id: str | None = None
        self._operator: TunnelgwOperator | None = None
        self._operator_token = secrets.token_urlsafe(32)
        self._data_dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._http: httpx.Client | None = None
        self._kept_log: bytes | None = None  # the log's tail after stop()
        self._log_end = 0
        self.start_summary: dict[str, Any] | None = None

    # Life cycle.

    def __enter__(self) -> Self:
        """Start the server unless start() was called already; stop it at the block's end."""
        return self.start() if self._data_dir is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Self:
        """Start the server and wait until `/readyz` answers 200 (at most `startup_timeout`
        seconds); raises TunnelgwStartError with the log's tail if it does not."""
        if self._data_dir is not None:
            raise RuntimeError("this TunnelgwServer was started already (one start per object)")
        seed = inputs.start_fixture(self.fixture)  # a bad fixture fails before any process starts
        self._data_dir = data_dir = Path(tempfile.mkdtemp(prefix="tunnelgw-"))
        log = (data_dir / process.LOG_FILE).open("ab")
        self._finalizer = weakref.finalize(
            self, process.shutdown, os.getpid(), None, log, data_dir, self.stop_timeout
        )
        try:
            env = self._env(data_dir)
            if self.database_url is None:
                self._token = env["TUNNELGW_BOOTSTRAP_TOKEN"] = "tgw_" + secrets.token_urlsafe(32)
            else:
                self._create_account(env, log, data_dir)
                env["TUNNELGW_SEED_ACCOUNT"] = self.account_id
            if isinstance(seed, bytes):
                (data_dir / "fixture.yaml").write_bytes(seed)
                seed = data_dir / "fixture.yaml"
            if seed is not None:
                env["TUNNELGW_SEED"] = str(seed)
            self._spawn(env, log, data_dir)
            if self._account_id is None:
                self._account_id = self._banner_account()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the server (SIGTERM to its process group, SIGKILL after `stop_timeout`
        seconds) and remove its data directory. Safe to call more than once."""
        self._close_http()
        if self._operator is not None:
            self._operator.close()
        if self._finalizer is not None and self._finalizer.alive:
            self._kept_log, self._log_end = self._finalizer() or (b"", 0)

    @property
    def running(self) -> bool:
        """Whether the server process is still there (without reaping it: see process.exited)."""
        proc = self._proc
        return proc is not None and proc.returncode is None and not process.exited(proc.pid)

    # What tests use.

    @property
    def base_url(self) -> str:
        return f"http://{process.HOST}:{self._require(self._port, 'base_url')}"

    @property
    def port(self) -> int:
        return self._require(self._port, "port")

    @property
    def token(self) -> str:
        """The admin API key's token of the server's account."""
        return self._require(self._token, "token")

    @property
    def account_id(self) -> str:
        return self._require(self._account_id, "account_id")

    @property
    def operator_token(self) -> str:
        """The server's operator token (TUNNELGW_OPERATOR_TOKEN): accounts on demand."""
        return self._operator_token

    @property
    def operator(self) -> TunnelgwOperator:
        """The server's operator: makes, lists and drops accounts."""
        if self._operator is None:
            self._operator = TunnelgwOperator(self.base_url, self.operator_token)
            self._operator.server = self
        return self._operator

    def create_account(
        self,
        name: str = "",
        fixture: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    ) -> TunnelgwAccount:
        """A new account of its own (admin user and key), with `fixture` loaded into it;
        see `TunnelgwOperator.create_account`."""
        return self.operator.create_account(name, fixture)

    def accounts(self) -> list[dict[str, Any]]:
        """Every account of the server (its own included), newest first."""
        return self.operator.accounts()

    @property
    def data_dir(self) -> Path:
        """The server's temporary data directory (removed at stop)."""
        return self._require(self._data_dir, "data_dir")

    @property
    def pid(self) -> int:
        """The server's process id (also its process group id)."""
        return self._require(self._proc, "pid").pid

    def log_text(self, since: int = 0) -> str:
        """The server's output so far, from byte offset `since` (a `log_position()`); after
        stop(), the last MiB of it."""
        if self._kept_log is not None:
            start = max(0, since - (self._log_end - len(self._kept_log)))
            return self._kept_log[start:].decode(errors="replace")
        return process.read_log(self.data_dir / process.LOG_FILE, since)

    def log_position(self) -> int:
        """The log's current size in bytes, for `log_text(since=...)`."""
        if self._kept_log is not None:
            return self._log_end
        try:
            return (self.data_dir / process.LOG_FILE).stat().st_size
        except OSError:
            return 0

    def __repr__(self) -> str:
        if self._account_id is None:
            return "<TunnelgwServer (not started)>"
        state = "running" if self.running else "stopped"
        return f"<TunnelgwServer {self.base_url} {self._account_id} {state}>"

    # Internals.

    def _require(self, value: T | None, what: str) -> T:
        if value is None:
            raise RuntimeError(f"TunnelgwServer.{what}: the server is not started")
        return value

    def _env(self, data_dir: Path) -> dict[str, str]:
        env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith("TUNNELGW_") and name != "PROMETHEUS_MULTIPROC_DIR"
        }
        # The server runs the tunnelgw imported here; its directory also comes before the
        # caller's own paths, so a project's `models` or `handlers` package cannot shadow ours.
        env["PYTHONPATH"] = os.pathsep.join(
            [process.package_root(), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
        env["PYTHONUNBUFFERED"] = "1"
        env["TUNNELGW_DATA_DIR"] = str(data_dir)
        for variable in inputs.ALWAYS_ON.values():
            env[variable] = "1"
        env["TUNNELGW_OPERATOR_TOKEN"] = self._operator_token
        if self.database_url is not None:
            env["TUNNELGW_DATABASE_URL"] = self.database_url
        for name, value in self.settings.items():
            if value is not None:
                env[f"TUNNELGW_{name.upper()}"] = inputs.env_value(value)
        return env

    def _create_account(self, env: dict[str, str], log: IO[bytes], data_dir: Path) -> None:
        """A fresh account in the given database (`tunnelgw accounts create` migrates it
        first), so the tests never see another account's data."""
        command = [sys.executable, "-m", "tunnelgw", "accounts", "create", "--name", "testing"]
        try:
            done = subprocess.run(  # noqa: S603 - our own interpreter and module
                command,
                env=env,
                cwd=data_dir,
                capture_output=True,
                timeout=self.startup_timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            partial = (exc.stdout or b"") + (exc.stderr or b"")
            raise TunnelgwStartError(
                f"`tunnelgw accounts create` did not finish in {self.startup_timeout} s",
                partial.decode(errors="replace"),
            ) from None
        output = (done.stdout + done.stderr).decode(errors="replace")
        log.write(f"$ tunnelgw accounts create\n{output}".encode())
        log.flush()
        if done.returncode != 0:
            raise TunnelgwStartError(
                f"`tunnelgw accounts create` failed (exit status {done.returncode})", output
            )
        text = done.stdout.decode(errors="replace")
        try:
            created, _ = json.JSONDecoder().raw_decode(text, text.index("{"))
            self._account_id = str(created["account_id"])
            self._token = str(created["token"])
        except (ValueError, KeyError, TypeError):
            raise TunnelgwStartError(
                "`tunnelgw accounts create` printed no account", output
            ) from None

    def _spawn(self, env: dict[str, str], log: IO[bytes], data_dir: Path) -> None:
        for attempt in range(_PORT_ATTEMPTS):
            if not self._fixed_port:
                self._port = process.free_port()
            command = [
                sys.executable,
                *("-m", "tunnelgw", "serve", "--host", process.HOST, "--port", str(self._port)),
            ]
            log.write(f"$ tunnelgw serve --port {self._port}\n".encode())
            log.flush()
            attempt_log = self.log_position()
            self._proc = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                command,
                env=env,
                cwd=data_dir,  # nothing importable there (sys.path[0] under -m)
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stopped as one
            )
            self._finalizer_for(self._proc, log, data_dir)
            try:
                self._wait_ready()
                return
            except TunnelgwStartError:
                taken = _PORT_IN_USE in self.log_text(since=attempt_log).lower()
                if self._fixed_port or not taken or attempt == _PORT_ATTEMPTS - 1:
                    raise
                # Another process took the free port between our probe and the bind.

    def _finalizer_for(self, proc: subprocess.Popen[bytes], log: IO[bytes], data_dir: Path) -> None:
        if self._finalizer is not None:
            self._finalizer.detach()
        self._finalizer = weakref.finalize(
            self, process.shutdown, os.getpid(), proc, log, data_dir, self.stop_timeout
        )

    def _wait_ready(self) -> None:
        import httpx

        assert self._proc is not None
        url = f"{self.base_url}/readyz"
        deadline = time.monotonic() + self.startup_timeout
        with httpx.Client(timeout=2.0, trust_env=False) as probe:
            while True:
                if process.exited(self._proc.pid):
                    process.terminate(self._proc, self.stop_timeout)  # its workers too; reaped
                    raise TunnelgwStartError(
                        f"tunnelgw serve exited with status {self._proc.returncode} before "
                        "it was ready",
                        self.log_text(),
                    )
                with contextlib.suppress(httpx.TransportError):
                    if probe.get(url).status_code == 200:
                        return
                if time.monotonic() >= deadline:
                    process.terminate(self._proc, self.stop_timeout)
                    raise TunnelgwStartError(
                        f"tunnelgw serve was not ready within {self.startup_timeout} s ({url})",
                        self.log_text(),
                    )
                time.sleep(0.05)

    def _banner_account(self) -> str:
        """The account the server's first start created (its banner names it)."""
        found = _BANNER_ACCOUNT.search(self.log_text())
        if found is None:
            raise TunnelgwStartError(
                "tunnelgw serve printed no account banner on its first start", self.log_text()
            )
        return found.group(1)
