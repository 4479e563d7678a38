"""The reconciler: the owned objects in the config API follow the translator's desired state.

Level-triggered (SPEC section 7). Events only say *which* keys to look at; what to do is always
decided by comparing the desired body (the translator's published, read-only `DesiredState`) with
the object actually in the config API (`db.actual`, our owned objects as listed at start and as we
wrote them since). Data flows one way: the reconciler reads the desired state and never asks
anyone upstream (which NetworkPolicy a deny rule protects is part of that state), and it pushes its
progress downstream to the status book as it changes (`kube_manager/status/protocol.py`'s
`SyncProgress`: the keys whose sync state may have changed, with `SyncStates`, the read-only view
that answers for them; and the pods' tagging states).

The rooms: `Reconciler` (here) takes the events, runs the resync and hands each work-queue key to
its handler: `(resource type, fq_name)` keys to `ObjectWriter` (writer.py: plan and write one
object), `PodKey`s to `PodKeyWorker` (pod_worker.py, tagging in pods.py). `ProgressBook`
(progress.py) keeps where each key stands and who waits for whom; `ActualState` (actual.py) what
the config API holds and how it differs from the desired state; `Gates` (gates.py) make before
break.

How a key is handled (one worker per key at a time, see `workqueue` and `executor`):
- `diff.plan` says what to write next, or what to wait for; a waiting key is parked on the keys it
  waits for (progress.py).
- The APS and `<cluster>-denyall` refer to every NetworkPolicy: their two long ref lists are
  planned from a `RefListIndex` of where desired and actual differ, fed by the translator's per-ref
  changes (`refs_changed`) and by our own writes, so one event costs O(refs it moved).
- Writing one object (create conflicts, deletes, missing parents): writer.py.
- Error classes (`vnc_client.errors.is_temporary`): 5xx, connection errors, timeouts and 409: the
  key backs off (capped), the others keep going. Any other refusal (400, 403, a 404 about a
  reference ...) and any unexpected exception while handling one key parks that key: its state is
  `parked` with the server's message (`db.parked`), nothing retries it until its desired state
  changes or the next resync.
- Make before break, on top of plain existence: gates.py.

A resync (resync.py; at start, then every `kube_timer_interval`) lists our objects once per type plus all VMIs,
replaces what we believed with what is there (keeping what was written since the listing began), and
queues every key whose desired and actual differ: drift is repaired, leftovers are garbage-collected.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Dict, Iterable, List, Mapping, Optional, Protocol, Union

import gevent.event

from kube_manager.records.db import PARKED, PENDING, RETRYING, SYNCED, Database, Key
from kube_manager.observability.logging_setup import kv
from kube_manager.settings import ReconcilerSettings
from kube_manager.status.protocol import SyncProgress
from kube_manager.translator.changes import RefChange
from kube_manager.translator.published import DesiredState
from vnc_client.errors import VncError, WriteRefused, is_temporary
from vnc_client.ratelimit import ExponentialRateLimiter, half_jitter

from .actual import ActualState, describe_key
from .diff import ObjKey, Progress
from .executor import Executor
from .gates import Gates
from .ownership import OWNED_TYPES, SHARED_TYPES, OwnershipMarks
from .pod_worker import PodKeyWorker
from .pods import PodKey, PodTagger, VmiApi
from .progress import ACTIVE, BLOCKED, ProgressBook
from .resync import Resync
from .view import KeyView
from .workqueue import WorkQueue
from .shared import Bookkeeping, Counters
from .writer import ObjectApi, ObjectWriter

log = logging.getLogger(__name__)

__all__ = ["ConfigApiCalls", "Counters", "Reconciler", "SyncStates"]

# Order in which keys are queued (`Reconciler._order`): what others refer to first, so fewer keys park.
_RANK = {t: n for n, t in enumerate(OWNED_TYPES)}

WorkKey = Union[ObjKey, PodKey]


class ConfigApiCalls(ObjectApi, VmiApi, Protocol):
    """The config API calls the reconciler makes (vnc_client.client.VncClient fits)."""


class SyncStates:
    """Where each object's write stands, read-only: what the reconciler hands downstream with the
    keys whose state may have changed (status/protocol.py's `ObjectStates`)."""

    def __init__(self, parked: Mapping[Any, str], book: ProgressBook, synced_once: gevent.event.Event) -> None:
        self._parked = parked
        self._book = book
        self._synced_once = synced_once

    def state_of(self, key: ObjKey) -> str:
        """`synced`, `pending`, `retrying` or `parked`: what the introspect pages show for one object
        (by the invariant of `Reconciler.converged`, a key without a progress state is settled)."""
        if key in self._parked:
            return PARKED
        status = self._book.status(key)
        if status == BLOCKED or key in self._book.deferred:
            return RETRYING
        if status == ACTIVE or not self._synced_once.is_set():
            return PENDING
        return SYNCED


class KeyHandler(Protocol):
    """The handler of one kind of work-queue key (`ObjectWriter`, `PodKeyWorker`)."""

    @property
    def metric_kind(self) -> str:
        """The `kind` label of the reconcile-duration metric."""

    def handle(self, key: Any) -> None: ...

    def activated(self, key: Any) -> None: ...

    def left_active(self, key: Any) -> None: ...

    def failed(self, key: Any, reason: str, permanent: bool) -> None: ...


class Observer(Protocol):
    """Metrics hooks (kube_manager.observability.metrics.Metrics fits)."""

    def queue_depth(self, depth: int) -> None: ...

    def reconciled(self, kind: str, seconds: float) -> None: ...


class Reconciler:
    """Keeps `db.actual` (and the config API) equal to the translator's published desired state;
    see the module docstring.

    The event dispatcher (kube_manager/service/dispatcher.py) calls `objects_changed` /
    `pods_changed` with the keys the translator reported; progress is pushed to `status` as it
    changes.
    """

    def __init__(self, client: ConfigApiCalls, db: Database, desired: DesiredState, marks: OwnershipMarks,
                 status: SyncProgress, settings: Optional[ReconcilerSettings] = None,
                 observer: Optional[Observer] = None) -> None:
        settings = settings or ReconcilerSettings()
        self.client = client
        self.db = db
        self.marks = marks
        self.settings = settings
        self.counters = Counters()
        self.desired = desired
        self._observer = observer
        self._status = status
        self.queue: WorkQueue[WorkKey] = WorkQueue(on_depth=observer.queue_depth if observer else None)
        self.executor: Executor[WorkKey] = Executor(
            self.queue, self._handle, concurrency=settings.concurrency,
            backoff=ExponentialRateLimiter(settings.retry_base, settings.retry_cap, half_jitter),
            on_error=self._failed, on_handled=self._timed)
        self._book = ProgressBook(self._enqueue, self._left_active, self._order)
        self.gates = Gates(marks.cluster, desired)
        self.aps_key, self.denyall_key = self.gates.aps_key, self.gates.denyall_key
        self.actual = ActualState(db, desired, self.gates.indexes, self._book.notify)
        books = Bookkeeping(self.actual, self._book, self.queue, self.counters)
        view = KeyView(self.actual, self._book, self.gates)
        self.objects = ObjectWriter(client, marks, view, books)
        self.conflicts = self.objects.conflicts
        tagger = PodTagger(client, db, desired, view, status)
        view.pod_referrers = tagger.referrers
        self.pods = PodKeyWorker(tagger, self.gates, books, settings)
        self._synced_once = gevent.event.Event()
        self.states = SyncStates(db.parked, self._book, self._synced_once)
        self.resyncs = Resync(client, desired, marks, settings, books, self.pods, db.parked, lambda: db.pods,
                              self._enqueue, self._order, self._resynced, observer)

    # --- driving -------------------------------------------------------------------------------

    def start(self) -> None:
        self.executor.start()

    def stop(self, timeout: float = 5.0) -> None:
        self.executor.stop(timeout)

    def abandon(self) -> None:
        """Leadership lost: queued and in-flight work is dropped, never completed (the client's
        write gate already refuses every write of this term)."""
        log.warning("reconciler abandoned its work", extra=kv(queued=len(self.queue), scheduled=self.queue.scheduled))
        self.resyncs.abandon()
        self.executor.abandon()

    def initial_lists_in(self) -> None:
        """Every first Kubernetes list is in and about to be translated: the first resync's first
        listings go out now (resync.py, `Resync.send_early`)."""
        if not self._synced_once.is_set():
            self.resyncs.send_early()

    def objects_changed(self, keys: Iterable[ObjKey]) -> None:
        """The desired bodies of `keys` changed (created, modified or gone)."""
        if not self._synced_once.is_set():
            return  # the first resync looks at everything anyway
        for key in sorted(keys, key=self._order):
            self._unpark_failed(key)
            self._enqueue(key)
        self._push_states()

    def refs_changed(self, changes: Iterable[RefChange]) -> None:
        """Refs of the APS or `<cluster>-denyall` moved in the desired state (before `objects_changed`
        names those two): their indexes follow, so that planning them costs O(refs moved)."""
        if not self._synced_once.is_set():
            return  # the first resync loads the indexes from the desired bodies
        for change in changes:
            self.actual.want_ref((change.resource_type, tuple(change.fq_name)), change.ref_type,
                                 (change.ref_type, tuple(change.ref_fq_name)),
                                 change.sequence if change.operation == "ADD" else None)

    def pods_changed(self, keys: Iterable[Key]) -> None:
        """The desired tags of these pods (`(namespace, name)`) changed, or the pods came or went."""
        if not self._synced_once.is_set():
            return
        for key in self.pods.keys(keys):
            self._unpark_failed(key)
            self._enqueue(key)

    def resync(self) -> int:
        """List what the config API holds, repair and garbage-collect; returns the keys queued
        (resync.py)."""
        return self.resyncs.run()

    def _resynced(self) -> None:
        """A resync is in: changes are handled one by one from now on, every state may have moved."""
        self._synced_once.set()
        self._push_states(everything=True)

    # --- state for others ----------------------------------------------------------------------

    def converged(self) -> bool:
        """Everything desired is in the config API, nothing else of ours is, every pod is tagged.

        Cheap, by an invariant: a key that is not settled is always queued, running, waiting or
        backing off, so it has a progress state; only deletes of shared objects someone else still
        uses (left for the next resync) do not count against convergence.
        """
        if not self._synced_once.is_set() or not self.queue.is_idle():
            return False
        if any(not self._deferred_shared_delete(k) for k in self._book.unsettled()):
            return False
        return all(self.pods.tagger.settled(key) for key in self.db.pods)

    def wait_converged(self, timeout: float, stop: Optional[gevent.event.Event] = None) -> bool:
        """Wait until `converged()`; False on timeout, on `stop`, or when the work queue is idle
        without convergence (what is left, such as a name conflict, only a resync can change)."""
        deadline = time.monotonic() + timeout
        while not (stop is not None and stop.is_set()):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if not self.queue.wait_idle(min(remaining, 0.5)):  # wakes up now and then for `stop`
                continue
            if self.converged():
                return True
            if self.queue.is_idle():
                return False
        return False

    def state_of(self, key: ObjKey) -> str:
        """`synced`, `pending`, `retrying` or `parked` (`SyncStates`)."""
        return self.states.state_of(key)

    def figures(self) -> Dict[str, int]:
        """Writes by operation and objects owned: what the logs report."""
        counters = self.counters
        return {"created": counters.create, "updated": counters.update, "deleted": counters.delete,
                "tagged": counters.set_tag, "failures": counters.failures, "owned": self.actual.count()}

    def summary(self) -> Dict[str, int]:
        return {**self._book.counts(), "queued": len(self.queue), "scheduled": self.queue.scheduled,
                "parked": len(self.db.parked), "conflicts": len(self.conflicts)}

    def unsettled(self, limit: int) -> List[str]:
        """Up to `limit` keys that hold convergence, each with its state (and why, if parked)."""
        found = []
        for key in sorted(self._book.unsettled(), key=self._order)[:limit]:
            reason = self.db.parked.get(key)
            found.append(f"{describe_key(key)} {self.state_of(key)}" + (f" ({reason})" if reason else ""))
        return found

    def _push_states(self, everything: bool = False) -> None:
        """Tell the status book which keys' state may have changed since the last push (every
        key's after a resync); called at the end of each entry point, so the pages follow at once."""
        changed = self._book.pop_changes()
        self._status.objects_progressed(self.states, None if everything else changed)

    # --- handling one key ----------------------------------------------------------------------

    def _handler(self, key: WorkKey) -> KeyHandler:
        """Each kind of key has its own handler."""
        return self.pods if isinstance(key, PodKey) else self.objects

    def _handle(self, key: WorkKey) -> bool:
        """Handle one key, its failure confined to it: a temporary one goes back to the executor
        (backoff, then retried), any other parks the key (SPEC section 7)."""
        try:
            self._book.activate(key)
            self._book.unpark(key)
            self._handler(key).handle(key)
        except Exception as exc:
            if is_temporary(exc) or isinstance(exc, WriteRefused):
                raise  # backoff; a refused write (not the leader) is no verdict on the object
            self._park_failed(key, exc)
        finally:
            self._push_states()
        return True

    def _enqueue(self, key: WorkKey) -> None:
        if key in self._book.deferred or key in self.db.parked:
            return  # left alone until the next resync (or, if parked, a change of its own)
        self._book.activate(key)
        self._handler(key).activated(key)
        self.queue.add(key)

    def _left_active(self, key: WorkKey) -> None:
        self._handler(key).left_active(key)

    def _failed(self, key: WorkKey, exc: BaseException, delay: float) -> None:
        self.counters.failures += 1
        # A refused write (not the leader) is routine at the end of a term: no warning for it.
        log.log(logging.INFO if isinstance(exc, WriteRefused) else logging.WARNING,
                "config API write failed, will retry", extra=kv(
                    key=describe_key(key), error=f"{type(exc).__name__}: {exc}", retry_in=round(delay, 3),
                    failures=self.executor.backoff.num_requeues(key)))
        self._handler(key).failed(key, f"{type(exc).__name__}: {exc}", permanent=False)
        self._book.set(key, BLOCKED)
        self._push_states()

    def _park_failed(self, key: WorkKey, exc: Exception) -> None:
        """A permanent failure: `key` waits, with the reason shown, for a change or the next resync."""
        self.counters.failures += 1
        reason = f"{type(exc).__name__}: {exc}"
        self.db.parked[key] = reason
        log.error("config API write refused, parked until its desired state changes or the next resync",
                  extra=kv(key=describe_key(key), error=reason), exc_info=not isinstance(exc, VncError))
        self.executor.backoff.forget(key)
        self._handler(key).failed(key, reason, permanent=True)
        self._book.changed(key)
        self._book.set(key, BLOCKED)

    def _unpark_failed(self, key: WorkKey) -> None:
        """The desired state of `key` changed: a parked key gets another try."""
        if self.db.parked.pop(key, None) is not None:
            self._book.changed(key)

    def _timed(self, key: WorkKey, seconds: float) -> None:
        if self._observer is not None:
            self._observer.reconciled(self._handler(key).metric_kind, seconds)

    # --- objects -------------------------------------------------------------------------------

    def _deferred_shared_delete(self, key: WorkKey) -> bool:
        return key in self._book.deferred and key[0] in SHARED_TYPES and self.actual.desired(key) is None

    def _order(self, key: WorkKey) -> tuple:
        """The order of keys queued together (an event's, a resync's, those woken at once): what
        others refer to first, so fewer keys park; among firewall rules, the NetworkPolicies' deny
        rules last. A deny rule is needed only once its policy is in the APS, two round trips
        later, whereas the policy's create waits for every pass rule: queued first, the pass rules
        are sent first, and a config API that handles requests one at a time answers them first
        (and with more rules than workers, a deny rule is the one that waits for a worker)."""
        deny = key[0] == "firewall-rule" and self.desired.deny_owner(key[1]) is not None
        return (_RANK.get(key[0], len(_RANK)), deny, key)
