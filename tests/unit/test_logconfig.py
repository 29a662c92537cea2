"""Logging configuration: our loggers in uvicorn's config, text or JSON lines."""

from __future__ import annotations

import io
import json
import logging
import time

from tunnelgw.http.logconfig import (
    BufferedStreamHandler,
    JSONFormatter,
    TextFormatter,
    direct_text,
    log_config,
)


def test_config_adds_our_logger_at_the_level():
    config = log_config("warning")
    assert config["loggers"]["tunnelgw"]["level"] == "WARNING"
    assert config["loggers"]["tunnelgw.access"]["level"] == "WARNING"
    assert config["formatters"]["tunnelgw"]["()"].endswith("TextFormatter")


def test_json_lines_carry_extras_and_exceptions():
    config = log_config("info", json_logs=True)
    assert config["formatters"]["default"]["()"].endswith("JSONFormatter")
    record = logging.LogRecord("tunnelgw.access", logging.INFO, "", 0, "GET %s", ("/x",), None)
    record.status = 200
    line = json.loads(JSONFormatter().format(record))
    assert line["message"] == "GET /x"
    assert line["status"] == 200
    assert line["level"] == "info"
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()
    assert "boom" in json.loads(JSONFormatter().format(record))["exception"]


def test_text_lines_show_the_time_to_the_millisecond():
    record = logging.LogRecord("tunnelgw", logging.INFO, "", 0, "hello", None, None)
    record.created, record.msecs = 1_800_000_000.25, 250.0
    formatter = TextFormatter()
    first = formatter.format(record)
    assert first.endswith(",250 INFO tunnelgw hello")
    record.msecs = 7.0
    assert formatter.format(record).endswith(",007 INFO tunnelgw hello")
    assert formatter.formatTime(record, "%Y") == time.strftime("%Y", time.localtime(record.created))


def _line(text: str) -> logging.LogRecord:
    return logging.LogRecord("tunnelgw.access", logging.INFO, "", 0, text, None, None)


def test_access_lines_are_written_in_batches(monkeypatch):
    stream = io.StringIO()
    handler = BufferedStreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    for n in range(3):
        handler.handle(
            logging.LogRecord("tunnelgw.access", logging.INFO, "", 0, f"line {n}", None, None)
        )
    assert stream.getvalue() == ""  # waiting for the timer
    handler.flush()
    assert stream.getvalue() == "line 0\nline 1\nline 2\n"
    # A full buffer is written at once; a waiting line is written by the timer.
    monkeypatch.setattr("tunnelgw.http.logconfig.ACCESS_BUFFER_BYTES", 10)
    handler.handle(_line("x" * 20))
    assert stream.getvalue().endswith("x" * 20 + "\n")
    monkeypatch.setattr("tunnelgw.http.logconfig.ACCESS_FLUSH_SECONDS", 0.01)
    monkeypatch.setattr("tunnelgw.http.logconfig.ACCESS_BUFFER_BYTES", 1000)
    handler.handle(_line("late"))
    deadline = time.monotonic() + 5
    while not stream.getvalue().endswith("late\n") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stream.getvalue().endswith("late\n")
    handler.close()


def test_text_lines_escape_what_a_client_sent():
    """A path with %0a (decoded to a newline) or an escape sequence stays on its line."""
    path = (
        "/healthz\n2026-11-26 06:50:00,000 INFO tunnelgw.access DELETE /x 204\r\x1b[2J\x85\u2028é"
    )
    record = logging.LogRecord("tunnelgw.access", logging.INFO, "", 0, "GET %s 404", (path,), None)
    line = TextFormatter().format(record)
    assert "\n" not in line
    assert line.endswith(
        "GET /healthz\\n2026-11-26 06:50:00,000 INFO tunnelgw.access DELETE /x 204"
        "\\r\\x1b[2J\\x85\\u2028é 404"
    )
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()
    first, *traceback = TextFormatter().format(record).split("\n")
    assert first == line  # the traceback follows on lines of its own
    assert traceback[-1] == "ValueError: boom"


def _access_logger(name: str, formatter: logging.Formatter) -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = BufferedStreamHandler(stream)
    handler.setFormatter(formatter)
    logger = logging.getLogger(name)
    logger.handlers[:] = [handler]
    logger.propagate = False
    return logger, stream


def test_a_direct_access_line_is_the_line_of_the_record(monkeypatch):
    """The access log's direct path (no log record) writes what the formatter makes of the
    record, control characters escaped."""
    logger, stream = _access_logger("tunnelgw.test_direct", TextFormatter())
    direct = direct_text(logger, logging.INFO)
    assert direct is not None
    handler, formatter = direct
    monkeypatch.setattr("tunnelgw.http.logconfig.time.time", lambda: 1_800_000_000.0071)
    message = "GET /x\n2026-01-01 00:00:00,000 INFO forged 200"
    handler.write(formatter.line(logger.name, "INFO", message))
    record = logging.LogRecord(logger.name, logging.INFO, "", 0, message, None, None)
    record.created, record.msecs = 1_800_000_000.0071, 7.0
    handler.flush()
    assert stream.getvalue() == TextFormatter().format(record) + "\n"
    assert stream.getvalue().count("\n") == 1
    assert ",007 INFO tunnelgw.test_direct GET /x\\n2026" in stream.getvalue()


def test_the_direct_path_is_left_when_the_logging_is_not_the_default():
    """JSON lines, a filter, a second handler or a level above the line's: the record path."""
    logger, _ = _access_logger("tunnelgw.test_direct_not", TextFormatter())
    assert direct_text(logger, logging.INFO) is not None
    logger.handlers[0].setLevel(logging.WARNING)
    assert direct_text(logger, logging.INFO) is None
    logger.handlers[0].setLevel(logging.NOTSET)
    logger.addFilter(lambda record: True)
    assert direct_text(logger, logging.INFO) is None
    logger.filters.clear()
    logger.addHandler(logging.NullHandler())
    assert direct_text(logger, logging.INFO) is None
    json_logger, _ = _access_logger("tunnelgw.test_direct_json", JSONFormatter())
    assert direct_text(json_logger, logging.INFO) is None
    custom, _ = _access_logger("tunnelgw.test_direct_fmt", TextFormatter("%(message)s"))
    assert direct_text(custom, logging.INFO) is None
