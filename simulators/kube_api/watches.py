"""The watch plumbing shared by the emulator's store and HTTP server: the subscription of one open
watch, the items its queue carries, and the event lines the stream sends."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from gevent.queue import Queue

from kube_manager.kube.resources import Resource
from simulators.kube_api.errors import ApiError


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


# Control items a subscription queue can carry besides event lines.
DROP = "drop"     # break the connection without ending the chunked stream (a network failure)
CLOSE = "close"   # end the stream cleanly (as when the server-side timeout expires)
FREEZE = "freeze"  # keep the connection open but send nothing more, not even bookmarks


@dataclass(frozen=True)
class Bookmark:
    resource_version: int


@dataclass
class Subscription:
    """One open watch: which objects it wants, and the queue its events go to."""

    resource: Resource
    namespace: Optional[str]  # None: all namespaces
    since: int = 0  # the version asked for: nothing at or below it is sent
    queue: Queue = field(default_factory=Queue)

    def wants(self, resource: Resource, namespace: str) -> bool:
        return resource is self.resource and self.namespace in (None, namespace)


@dataclass(frozen=True)
class WatchEvent:
    """One write as the watch history keeps it."""

    resource_version: int
    resource: Resource
    namespace: str
    line: bytes  # the serialised watch event, newline-terminated


def event_line(event_type: str, obj: Dict[str, Any]) -> bytes:
    return json.dumps({"type": event_type, "object": obj}, separators=(",", ":")).encode() + b"\n"
