"""The watch plumbing shared by the emulator's store and HTTP server: the subscription of one open
watch, the items its queue carries, and the event lines the stream sends."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional

from gevent.queue import Queue

from kube_manager.registry import Resource
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


class WatchCacheVersions:
    """The version a periodic bookmark of each resource carries, as the real watch cache's (a
    bookmark goes out only past the version its watch started from): the last write of that
    resource, the cluster's version when it was last listed, or the cluster's version the cache
    heard of last. A real API server writes its own Lease every 10 s and its caches hear of the
    revision (measured against kube-apiserver v1.37.2: a quiet watch's bookmarks, a minute apart,
    carried a version past the last write of their kind); `progress_interval` is that period, and
    `renew` the write."""

    def __init__(self, progress_interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._interval = progress_interval
        self._clock = clock
        self._written: Dict[str, int] = {}
        self._progress = 0
        self._progress_at = clock()

    def written(self, resource: str, version: int) -> None:
        """A write of `resource` at `version`, or a list of it when the cluster was at `version`."""
        self._written[resource] = version

    def notify(self, version: int) -> None:
        """The caches hear of the cluster's `version` now (what `KubeStore.send_bookmarks` forces)."""
        self._progress, self._progress_at = version, self._clock()

    def version(self, resource: str, renew: Callable[[], int]) -> int:
        if self._clock() - self._progress_at >= self._interval:
            self.notify(renew())
        return max(self._written.get(resource, 0), self._progress)
