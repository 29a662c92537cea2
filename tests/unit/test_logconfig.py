"""Logging configuration: our loggers in uvicorn's config, text or JSON lines."""

from __future__ import annotations

import json
import logging

from tunnelgw.logconfig import JSONFormatter, log_config


def test_config_adds_our_logger_at_the_level():
    config = log_config("warning")
    assert config["loggers"]["tunnelgw"]["level"] == "WARNING"
    assert "format" in config["formatters"]["tunnelgw"]


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
