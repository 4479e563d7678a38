"""The objects the translator refused, with their reasons (SPEC 7, 11).

This is where a failure on one object becomes the rejection of that object and of nothing else: an
object the API server would refuse (InvalidInput), and, as the last line of defence, any unexpected
exception while reading or rendering it, which is then a translator bug confined to the object that
triggered it. Each rejection is logged once (again only when its reason changes), on a logger bound
to the object's kind, namespace and name.
"""
from __future__ import annotations

import logging
from typing import Dict, Tuple

from kube_manager.plumbing.kvlog import BoundLogger, bind, kv

from .validation import InvalidInput

log = logging.getLogger(__name__)

ObjectKey = Tuple[str, str, str]  # (kind, namespace, name); namespace "" for a Namespace


# What a value nested in itself (a YAML anchor used inside itself, which only a file read offline
# can hold) or nested beyond the interpreter's depth amounts to: bad input, not a translator bug.
TOO_DEEP = "nested in itself (a YAML alias inside its own anchor) or too deeply to be read"


def _input_problem(exc: Exception) -> Exception:
    return InvalidInput(TOO_DEEP) if isinstance(exc, RecursionError) else exc


def failure_reason(exc: Exception) -> str:
    """What a rejection says: the validation message, or the unexpected exception."""
    exc = _input_problem(exc)
    if isinstance(exc, InvalidInput):
        return str(exc)
    return f"internal error: {type(exc).__name__}: {exc}"


class Rejections(Dict[ObjectKey, str]):
    """Reasons by object; cleared when the object is deleted or accepted again.

    A dict of its own (reason by key), so that "is anything rejected?", asked for every object a
    bulk load reads, is answered without a call."""

    def discard(self, key: ObjectKey) -> None:
        self.pop(key, None)

    def add(self, key: ObjectKey, exc: Exception) -> None:
        """Reject the object `key` because of `exc` (logged unless it was already rejected so)."""
        exc = _input_problem(exc)
        reason = failure_reason(exc)
        if self.get(key) == reason:
            return
        self[key] = reason
        logger = object_logger(*key)
        if isinstance(exc, InvalidInput):
            logger.warning("%s: rejected: %s", describe_object(key), reason, extra=kv(reason=reason))
        else:
            logger.error("%s: rejected after an unexpected error: %s", describe_object(key), reason,
                         exc_info=exc, extra=kv(reason=reason))


def describe_object(key: ObjectKey) -> str:
    """`Kind namespace/name` (`Kind name` for a namespace), for messages people read."""
    kind, namespace, name = key
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def object_logger(kind: str, namespace: str, name: str) -> BoundLogger:
    """The translator's logger bound to one object: its lines carry kind, namespace and name."""
    return bind(log, kind=kind, namespace=namespace, name=name)
