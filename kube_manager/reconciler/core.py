"""The reconciler: the owned objects in the config API follow the translator's desired state.

Level-triggered (SPEC section 7). Events only say *which* keys to look at; what to do is always
decided by comparing the desired body (the translator's published, read-only `DesiredState`) with
the object actually in the config API (`db.actual`, our owned objects as listed at start and as we
wrote them since). Data flows one way: the reconciler reads the desired state and never asks
anyone upstream (which NetworkPolicy a deny rule protects is part of that state), and it pushes the
sync states it owns to its `StateListener` as they change.

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

A resync (at start, then every `kube_timer_interval`) lists our objects once per type plus all VMIs,
replaces what we believed with what is there (keeping what was written since the listing began), and
queues every key whose desired and actual differ: drift is repaired, leftovers are garbage-collected.
"""
from __future__ import annotations

import logging
import time
from contextlib import closing
from typing import AbstractSet, Any, Dict, Iterable, List, Optional, Protocol, Set, Tuple, Union

import gevent.event

from kube_manager.records.db import PARKED, PENDING, RETRYING, SYNCED, Database, Key
from kube_manager.observability.logging_setup import kv
from kube_manager.settings import ReconcilerSettings
from kube_manager.translator.changes import RefChange
from kube_manager.translator.published import DesiredState
from kube_manager.plumbing.gcpolicy import collector_paused, freeze_young
from vnc_client.errors import VncError, WriteRefused, is_temporary
from vnc_client.ratelimit import ExponentialRateLimiter, half_jitter

from .actual import ActualState, describe_key
from .ahead import Ahead, ahead
from .diff import ObjKey, Progress
from .executor import Executor
from .gates import Gates
from .paging import PageWalk
from .ownership import OWNED_TYPES, SHARED_TYPES, OwnershipMarks, list_type
from .pod_worker import PodKeyWorker
from .pods import VMI, PodKey, PodTagger, VmiApi
from .progress import ACTIVE, BLOCKED, ProgressBook
from .workqueue import WorkQueue
from .shared import Bookkeeping, Counters
from .writer import ObjectApi, ObjectWriter

log = logging.getLogger(__name__)

__all__ = ["ConfigApiCalls", "Counters", "Reconciler", "StateListener"]

# Order in which a resync queues keys: what others refer to first, so fewer keys park.
_RANK = {t: n for n, t in enumerate(OWNED_TYPES)}
# Order in which a resync lists them (after the VMIs): the largest listings first, so that the
# config API renders the next one while the reconciler folds in the last.
_LIST_ORDER = ("firewall-rule", "firewall-policy", "tag", "address-group", "application-policy-set")
assert sorted(_LIST_ORDER) == sorted(OWNED_TYPES)

WorkKey = Union[ObjKey, PodKey]
# Seconds the first listings of a restart are given to go out before the initial lists are
# translated: a connect and a request to a config API on the same LAN take well under that.
LISTINGS_SEND_GRACE = 0.01


class ConfigApiCalls(ObjectApi, VmiApi, Protocol):
    """The config API calls the reconciler makes (vnc_client.client.VncClient fits)."""


class StateListener(Protocol):
    """Where the reconciler pushes sync states as they change (the kind handlers, for the pages)."""

    def states_changed(self, source: "Reconciler", keys: Optional[Iterable[ObjKey]]) -> None:
        """The `state_of` of `keys` may have changed (of every key, when None)."""


class KeyHandler(Protocol):
    """The handler of one kind of work-queue key (`ObjectWriter`, `PodKeyWorker`)."""

    @property
    def metric_kind(self) -> str:
        """The `kind` label of the reconcile-duration metric."""

    def handle(self, key: Any) -> None: ...

    def may_appear(self, key: Any) -> bool: ...

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

    The pipeline (kube_manager/service/pipeline.py) calls `objects_changed` / `pods_changed` with the keys
    the translator reported, after the records (`db.pods[..].tags`) follow; sync states are pushed
    to `on_states` as they change.
    """

    def __init__(self, client: ConfigApiCalls, db: Database, desired: DesiredState, marks: OwnershipMarks,
                 settings: Optional[ReconcilerSettings] = None, observer: Optional[Observer] = None,
                 on_states: Optional[StateListener] = None) -> None:
        settings = settings or ReconcilerSettings()
        self.client = client
        self.db = db
        self.marks = marks
        self.settings = settings
        self.counters = Counters()
        self.desired = desired
        self._observer = observer
        self._on_states = on_states
        self.queue: WorkQueue[WorkKey] = WorkQueue(on_depth=observer.queue_depth if observer else None)
        self.executor: Executor[WorkKey] = Executor(
            self.queue, self._handle, concurrency=settings.concurrency,
            backoff=ExponentialRateLimiter(settings.retry_base, settings.retry_cap, half_jitter),
            on_error=self._failed, on_handled=self._timed)
        self._book = ProgressBook(self._enqueue, self._left_active, _order)
        self.gates = Gates(marks.cluster, desired)
        self.aps_key, self.denyall_key = self.gates.aps_key, self.gates.denyall_key
        self.actual = ActualState(db, desired, self.gates.indexes, self._book.notify)
        books = Bookkeeping(self.actual, self._book, self.queue, self.counters)
        self.objects = ObjectWriter(client, marks, self, books)
        self.conflicts = self.objects.conflicts
        tagger = PodTagger(client, db, self, self._managed_tag, self._tier_hold)
        self.pods = PodKeyWorker(tagger, self.gates, books, settings)
        self._synced_once = gevent.event.Event()
        self._listings: Optional[Tuple[int, PageWalk[Any], Ahead[Any]]] = None  # the first resync's, sent early

    # --- driving -------------------------------------------------------------------------------

    def start(self) -> None:
        self.executor.start()

    def stop(self, timeout: float = 5.0) -> None:
        self.executor.stop(timeout)

    def abandon(self) -> None:
        """Leadership lost: queued and in-flight work is dropped, never completed (the client's
        write gate already refuses every write of this term)."""
        log.warning("reconciler abandoned its work", extra=kv(queued=len(self.queue), scheduled=self.queue.scheduled))
        if self._listings is not None:
            self._listings[2].close()
            self._listings = None
        self.executor.abandon()

    def initial_lists_in(self) -> None:
        """Every first Kubernetes list is in and about to be translated: the first resync's first
        listings (the VMIs and the firewall rules, the largest) are sent now, so that the config API
        renders them while this process translates; their answers are read when the resync wants
        them. At 15,000 NetworkPolicies the rules' listing took 2 s of a restart's 7.5 s after the
        translation; now it is mostly rendered by the time the translation ends."""
        if self._synced_once.is_set() or self._listings is not None:
            return
        self._listings = self._list_all(head_start=2)
        # A moment for the requests to go out (connect, send) before this process translates for
        # seconds without yielding; one turn of the hub was not always enough for a connect, and a
        # request still unsent by then merely goes out after the translation, as before.
        gevent.sleep(LISTINGS_SEND_GRACE)

    def objects_changed(self, keys: Iterable[ObjKey]) -> None:
        """The desired bodies of `keys` changed (created, modified or gone)."""
        if not self._synced_once.is_set():
            return  # the first resync looks at everything anyway
        for key in sorted(keys, key=_order):
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
        """List what the config API holds, repair and garbage-collect; returns the keys queued."""
        started = time.monotonic()
        listings, self._listings = self._listings, None
        since, walk, listed = listings or self._list_all()
        # Each page is folded in (and dropped) in turn, the next page under way meanwhile (the
        # config API renders it while we fold); decoded listings hold no reference cycles for the
        # collector to look for. What the fold builds lives until the next resync: it is frozen at
        # the end in one young pass, not walked by the young and middle passes that the first
        # allocations after the pause would start (0.4 s of a 15,000-NetworkPolicy restart).
        with collector_paused():
            queued = self._fold_and_queue(walk, listed, since)
            freeze_young()
        if self._observer is not None:
            self._observer.reconciled("resync", time.monotonic() - started)
        log.info("resync done", extra=kv(queued=queued, owned=self.actual.count(),
                                         desired=sum(map(len, self.desired.objects.values())),
                                         seconds=round(time.monotonic() - started, 3)))
        return queued

    def _fold_and_queue(self, walk: PageWalk[Any], listed: Ahead[Any], since: int) -> int:
        """The resync's listings folded in, a page at a time; every key that is not settled queued
        (how many)."""
        with closing(listed) as answers:
            self.pods.load(walk.pages(answers, VMI), since)
            for obj_type in _LIST_ORDER:
                self.actual.load(obj_type, walk.pages(answers, obj_type), since)
        self.counters.reads += walk.count
        self.actual.loaded(since)
        self._book.deferred.clear()
        self.db.parked.clear()  # a resync tries parked keys again
        # Only what is to be queued is sorted (queue order matters; after a restart with nothing
        # changed, nothing is queued, and sorting every key was a tenth of the resync).
        unsettled = self.actual.unsettled()
        for key in sorted(unsettled, key=_order):
            self._enqueue(key)
        tagger = self.pods.tagger
        untagged: List[PodKey] = []
        for pod in self.pods.keys(self.db.pods):
            if tagger.needs_work(pod.pod):
                untagged.append(pod)
            else:
                tagger.mark(pod.pod, SYNCED)
        for pod in sorted(untagged):
            self._enqueue(pod)
        self._synced_once.set()
        self._push_states(everything=True)
        return len(unsettled) + len(untagged)

    def _list_all(self, head_start: int = 0) -> Tuple[int, PageWalk[Any], Ahead[Any]]:
        """A resync's listings (the VMIs, then each type) a page at a time (reconciler/paging.py),
        `head_start` page calls started at once; with the `since` of their `load`s."""
        since = self.actual.begin_listing()
        fields = self.actual.compared_fields()  # the translator's fields: known before it translates
        limit = self.settings.list_page_limit
        walk: PageWalk[Any] = PageWalk([(VMI, self.pods.tagger.vmi_pages(limit)), *(
            (t, list_type(self.client, self.marks, t, fields.get(t), limit)) for t in _LIST_ORDER)])
        return since, walk, ahead(walk.calls(), head_start)

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
        """`synced`, `pending`, `retrying` or `parked`: what the introspect pages show for one object
        (by the invariant of `converged`, a key without a progress state is settled)."""
        if key in self.db.parked:
            return PARKED
        status = self._book.status(key)
        if status == BLOCKED or key in self._book.deferred:
            return RETRYING
        if status == ACTIVE or not self._synced_once.is_set():
            return PENDING
        return SYNCED

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
        for key in sorted(self._book.unsettled(), key=_order)[:limit]:
            reason = self.db.parked.get(key)
            found.append(f"{describe_key(key)} {self.state_of(key)}" + (f" ({reason})" if reason else ""))
        return found

    def _push_states(self, everything: bool = False) -> None:
        """Tell `on_states` which keys' `state_of` may have changed since the last push (every
        key's after a resync); called at the end of each entry point, so the pages follow at once."""
        changed = self._book.pop_changes()
        if self._on_states is not None:
            self._on_states.states_changed(self, None if everything else changed)

    # --- diff.View -----------------------------------------------------------------------------

    def present(self, key: ObjKey) -> bool:
        return self.actual.present(key)

    def progress(self, waiter: WorkKey, key: WorkKey) -> Progress:
        return self._book.progress(waiter, key, self._handler(key).may_appear(key))

    def gate_add(self, holder: ObjKey, ref_field: str, target: ObjKey) -> Optional[WorkKey]:
        return self.gates.gate_add(self.actual, holder, ref_field, target)

    def gate_remove(self, holder: ObjKey, ref_field: str) -> Optional[ObjKey]:
        return self.gates.gate_remove(self.actual, holder)

    def gate_write(self, key: ObjKey) -> Optional[WorkKey]:
        return self.gates.gate_write(self.actual, key)

    def referrers(self, key: ObjKey) -> List[WorkKey]:
        found: List[WorkKey] = list(self.actual.referrers(key))
        if key[0] == "tag" and len(key[1]) == 1:
            found.extend(self.pods.tagger.referrers(key[1][0]))
        return found

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

    def _tier_hold(self, removed: AbstractSet[str]) -> Tuple[Set[str], List[ObjKey]]:
        """Tags a pod keeps for now, and what it waits for to drop them (tiers.py)."""
        return self.gates.tiers.hold(self.actual, removed)

    def _managed_tag(self, tag: str) -> bool:
        """Tags a pod's VMI may lose: ours, or wanted by us (another cluster's are left alone)."""
        key = ("tag", (tag,))
        return self.actual.get(key) is not None or self.actual.desired(key) is not None


def _order(key: WorkKey) -> tuple:
    return (_RANK.get(key[0], len(_RANK)), key)
