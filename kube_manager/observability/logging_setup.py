"""Logging of the daemon: one line per record, `key=value` fields, to a file or to standard error.

Lines look like

    2024-05-01T10:00:00.123Z level=INFO logger=kube_manager.kube.watcher msg="watch started" resource=pods rv=42

so that they can be grepped and parsed without a schema. Structured fields are passed with
`log.info("watch started", extra=kv(resource="pods", rv=42))`. A traceback is folded into one
`exc="..."` field so that one record stays one line. The file handler reopens the file when logrotate
moves it. Every configured secret is replaced by `***` in the final line, whatever logged it.
"""
from __future__ import annotations

import logging
import logging.handlers
import sys
import time
from typing import Any, Dict, Iterable, Optional

from kube_manager.settings import ConfigError, OperatorSettings
from kube_manager.plumbing.kvlog import FIELDS_ATTR, kv  # noqa: F401 (kv re-exported: the house import)

HANDLER_NAME = "kube-manager"
REDACTED = "***"
# Third-party loggers that are too chatty at DEBUG (the kubernetes client logs whole response bodies).
NOISY_LOGGERS = ("urllib3", "kubernetes")


def _quote(value: Any) -> str:
    text = str(value)
    if text and not any(c in text for c in ' "=\\\n\r\t'):
        return text
    escaped = (text.replace("\\", "\\\\").replace('"', '\\"')
               .replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t"))
    return f'"{escaped}"'


class KeyValueFormatter(logging.Formatter):
    """Formats a record as one `key=value` line (UTC timestamp first)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        # Longest first, so that a secret containing another is masked whole.
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        parts = [f"{stamp}.{int(record.msecs):03d}Z", f"level={record.levelname}",
                 f"logger={record.name}", f"msg={_quote(record.getMessage())}"]
        fields = getattr(record, FIELDS_ATTR, None) or {}
        parts.extend(f"{key}={_quote(value)}" for key, value in fields.items())
        if record.exc_info:
            parts.append(f"exc={_quote(self.formatException(record.exc_info))}")
        return self._redact(" ".join(parts))

    def _redact(self, line: str) -> str:
        for secret in self._secrets:
            line = line.replace(secret, REDACTED)
        return line


def setup_logging(level: int = logging.INFO, log_file: str = "",
                  secrets: Iterable[str] = ()) -> logging.Handler:
    """Route the root logger to `log_file` (standard error when empty) at `level`.

    Raises OSError when the file cannot be opened; the caller reports it against [DEFAULTS] log_file.
    """
    handler: logging.Handler
    if log_file:
        handler = logging.handlers.WatchedFileHandler(log_file, encoding="utf-8")
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(KeyValueFormatter(secrets))
    # Named, so that a second setup (tests, a reload) replaces it instead of adding another.
    handler.set_name(HANDLER_NAME)
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == HANDLER_NAME]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(level)
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(max(level, logging.INFO))
    return handler


def setup_from_settings(settings: OperatorSettings, logger: Optional[logging.Logger] = None) -> logging.Handler:
    """Set up logging from the settings tree, then log what loading it found.

    Raises `ConfigError` naming [DEFAULTS] log_file when the file cannot be opened.
    """
    try:
        handler = setup_logging(settings.log.level, settings.log.file, settings.secrets())
    except OSError as exc:
        raise ConfigError(f"[DEFAULTS] log_file: cannot open {settings.log.file!r}: "
                          f"{exc.strerror or exc}") from None
    settings.origin.log(logger or logging.getLogger("kube_manager.settings"))
    return handler
