"""Structured log fields for the client's own records.

The library may import nothing of the application, so it carries the one function it needs: its
records put their fields under the `extra` attribute `kv_fields`, the convention the application's
formatter (kube_manager.observability.logging_setup) renders as `key=value`; a test keeps the two
names equal.
"""
from __future__ import annotations

from typing import Any, Dict

FIELDS_ATTR = "kv_fields"


def kv(**fields: Any) -> Dict[str, Dict[str, Any]]:
    """The `extra` argument carrying structured fields for one record."""
    return {FIELDS_ATTR: fields}
