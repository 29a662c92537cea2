"""Logging for `tunnelgw serve`: uvicorn's configuration plus our loggers, applied by uvicorn
in every worker process. One access-log line per request comes from `tunnelgw.access`; its
handler buffers lines and writes them at most `ACCESS_FLUSH_SECONDS` later (or as soon as
64 KiB are waiting), one write for many requests; every other logger writes each line at once.
A text line is one line whatever a client sent: control characters in it are escaped (JSON
lines escape them anyway).
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from typing import Any

import orjson
from uvicorn.config import LOGGING_CONFIG

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
_RECORD_FIELDS = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message"}
ACCESS_FLUSH_SECONDS = 0.25
ACCESS_BUFFER_BYTES = 64 * 1024


# C0 and C1 controls, DEL and the Unicode line and paragraph separators, as Python escapes
# (`\n`, `\x1b`, `\u2028`): a path with `%0a` cannot start a line of its own.
_ESCAPES = {
    code: chr(code).encode("unicode_escape").decode("ascii")
    for code in (*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029)
}


def escape_controls(text: str) -> str:
    """`text` with its control characters escaped (see `_ESCAPES`: all of them are
    non-printable, so printable text is returned as it is without a pass over it)."""
    return text if text.isprintable() else text.translate(_ESCAPES)


class TextFormatter(logging.Formatter):
    """The text format, one line per record (control characters escaped; a traceback
    follows on lines of its own), the time formatted once per second rather than per line."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802
        return escape_controls(super().formatMessage(record))

    def __init__(self, fmt: str = TEXT_FORMAT, *args: Any, **kwargs: Any) -> None:
        super().__init__(fmt, *args, **kwargs)
        self._second = -1
        self._text = ""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        if datefmt is not None:
            return super().formatTime(record, datefmt)
        return f"{self._seconds(int(record.created))},{int(record.msecs):03d}"

    def _seconds(self, second: int) -> str:
        if second != self._second:
            self._second = second
            self._text = time.strftime(self.default_time_format, self.converter(second))
        return self._text

    def line(self, name: str, level: str, message: str) -> str:
        """The line `format` makes of a record of `name` at `level` (its name) logged now
        with `message` and no traceback, made without the record."""
        now = time.time()
        second = int(now)
        stamp = f"{self._seconds(second)},{int((now - second) * 1000):03d}"
        return f"{stamp} {level} {name} {escape_controls(message)}"


class BufferedStreamHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A stream handler that gathers lines and writes them in batches: when 64 KiB wait, or
    from a background timer `ACCESS_FLUSH_SECONDS` after the first waiting line; `flush()`
    (and so `logging.shutdown()` at exit) writes whatever waits."""

    def __init__(self, stream: Any = None) -> None:
        super().__init__(stream)
        self._lines: list[str] = []
        self._size = 0
        self._timer: threading.Timer | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:
            self.handleError(record)
            return
        self.write(line)

    def write(self, line: str) -> None:
        """Add `line` (formatted, without its terminator) to what waits."""
        line += self.terminator
        self._lines.append(line)
        self._size += len(line)
        if self._size >= ACCESS_BUFFER_BYTES:
            self.flush()
        elif self._timer is None:
            self._timer = threading.Timer(ACCESS_FLUSH_SECONDS, self.flush)
            self._timer.daemon = True
            self._timer.start()

    def flush(self) -> None:
        self.acquire()
        try:
            lines, self._lines, self._size = self._lines, [], 0
            timer, self._timer = self._timer, None
            if timer is not None and timer is not threading.current_thread():
                timer.cancel()
            if lines and self.stream is not None:
                self.stream.write("".join(lines))
                self.stream.flush()
        finally:
            self.release()


def direct_text(
    logger: logging.Logger, level: int
) -> tuple[BufferedStreamHandler, TextFormatter] | None:
    """The handler and formatter of `logger` when a line at `level` (enabled on the logger)
    may be written to it straight from its text (`BufferedStreamHandler.write` of
    `TextFormatter.line`), skipping the log record (~2 us) and the formatter's passes
    (~3 us): its only handler is buffered, passes the level and formats with the default
    text format, and neither it nor the logger has filters or passes records on. Otherwise
    None, and the record goes the usual way (JSON lines, a handler someone added, a test's
    capture)."""
    handlers = logger.handlers
    if len(handlers) != 1 or logger.filters or logger.propagate:
        return None
    handler = handlers[0]
    formatter = handler.formatter
    if (
        type(handler) is not BufferedStreamHandler
        or handler.level > level
        or handler.filters
        or type(formatter) is not TextFormatter
        or formatter._fmt != TEXT_FORMAT
        or formatter.datefmt is not None
    ):
        return None
    return handler, formatter


class JSONFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and the record's extras."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update({k: v for k, v in vars(record).items() if k not in _RECORD_FIELDS})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


def lean_records() -> None:
    """Log records without thread and process names, which no format of ours shows and which
    cost a lookup on every record (one access-log line per request)."""
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


def log_config(level: str = "info", *, json_logs: bool = False) -> dict[str, Any]:
    """A `logging.config.dictConfig` for uvicorn's `log_config`."""
    config: dict[str, Any] = copy.deepcopy(LOGGING_CONFIG)
    formatter: dict[str, Any] = {
        "()": f"{__name__}.JSONFormatter" if json_logs else f"{__name__}.TextFormatter"
    }
    config["formatters"]["tunnelgw"] = formatter
    config["handlers"]["tunnelgw"] = {
        "class": "logging.StreamHandler",
        "formatter": "tunnelgw",
        "stream": "ext://sys.stderr",
    }
    config["handlers"]["tunnelgw_access"] = {
        "()": f"{__name__}.BufferedStreamHandler",
        "formatter": "tunnelgw",
        "stream": "ext://sys.stderr",
    }
    config["loggers"]["tunnelgw"] = {
        "handlers": ["tunnelgw"],
        "level": level.upper(),
        "propagate": False,
    }
    config["loggers"]["tunnelgw.access"] = {
        "handlers": ["tunnelgw_access"],
        "level": level.upper(),
        "propagate": False,
    }
    # Connexion logs every rejected request; our access log already has them.
    config["loggers"]["connexion"] = {
        "handlers": ["tunnelgw"],
        "level": "ERROR",
        "propagate": False,
    }
    if json_logs:
        for name in ("default", "access"):
            config["formatters"][name] = formatter
    return config
