"""Structured log fields: `kv` for one record, `bind` for every record about one object.

Apart from logging_setup (which imports the handlers, and with them sockets) so that the pure
translator can log structured lines too.
"""
from __future__ import annotations

import logging
from typing import Any, Dict

FIELDS_ATTR = "kv_fields"


def kv(**fields: Any) -> Dict[str, Dict[str, Any]]:
    """The `extra` argument carrying structured fields for one record."""
    return {FIELDS_ATTR: fields}


class BoundLogger(logging.LoggerAdapter):
    """A logger whose records all carry the same structured fields (an object's kind, namespace
    and name), merged with each record's own `kv` fields: every line about one object can be
    found by grepping for it."""

    def process(self, msg: Any, kwargs: Any) -> Any:
        extra = kwargs.get("extra") or {}
        kwargs["extra"] = {**extra, FIELDS_ATTR: {**self.extra, **extra.get(FIELDS_ATTR, {})}}
        return msg, kwargs


def bind(logger: logging.Logger, **fields: Any) -> BoundLogger:
    """`logger` bound to `fields`, for the lines about one object."""
    return BoundLogger(logger, fields)


