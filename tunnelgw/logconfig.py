"""Logging for `tunnelgw serve`: uvicorn's configuration plus our loggers, applied by uvicorn
in every worker process. One access-log line per request comes from `tunnelgw.access`."""

from __future__ import annotations

import copy
import logging
from typing import Any

import orjson
from uvicorn.config import LOGGING_CONFIG

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
_RECORD_FIELDS = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message"}


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


def log_config(level: str = "info", *, json_logs: bool = False) -> dict[str, Any]:
    """A `logging.config.dictConfig` for uvicorn's `log_config`."""
    config: dict[str, Any] = copy.deepcopy(LOGGING_CONFIG)
    formatter: dict[str, Any] = (
        {"()": f"{__name__}.JSONFormatter"} if json_logs else {"format": TEXT_FORMAT}
    )
    config["formatters"]["tunnelgw"] = formatter
    config["handlers"]["tunnelgw"] = {
        "class": "logging.StreamHandler",
        "formatter": "tunnelgw",
        "stream": "ext://sys.stderr",
    }
    config["loggers"]["tunnelgw"] = {
        "handlers": ["tunnelgw"],
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
