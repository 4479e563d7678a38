"""Structured log fields: `kv` for one record, `bind` for every record about one object.

The one keyed logging style of the project: `log.info("msg", extra=kv(key=value, ...))`, rendered as
`key=value` by kube_manager.observability.logging_setup. A standalone package with no dependency, so that every
layer can use it: the pure translator (which may import neither sockets nor vnc_client), the config
API client (which may import nothing from kube_manager) and the daemon.
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
        kwargs["extra"] = {**extra, FIELDS_ATTR: {**(self.extra or {}), **extra.get(FIELDS_ATTR, {})}}
        return msg, kwargs


def bind(logger: logging.Logger, **fields: Any) -> BoundLogger:
    """`logger` bound to `fields`, for the lines about one object."""
    return BoundLogger(logger, fields)


