"""The reconciler: the owned objects in the config API follow the translator's desired state.

Level-triggered (SPEC section 7). Events only say *which* keys to look at; what to do is always
decided by comparing the desired body (the translator's published, read-only `DesiredState`) with
the object actually in the config API (`db.actual`, our owned objects as listed at start and as we
wrote them since). Data flows one way: the reconciler reads the desired state and never asks
anyone upstream (which NetworkPolicy a deny rule protects is part of that state), and it pushes the
sync states it owns to its `StateListener` as they change. Keys are
`(resource type, fq_name)` for Contrail objects and `("pod", (namespace, name))` for pod tagging.

How a key is handled (one worker per key at a time, see `workqueue` and `executor`):
- `diff.plan` says what to write next, or what to wait for. Waiting keys are parked on the keys they
  wait for and woken when the last of those is done (or a failed one recovers), so nothing polls,
  nothing holds a worker, and the APS waiting for a thousand policies is planned again once.
- The APS and `<cluster>-denyall` refer to every NetworkPolicy: their two long ref lists are
  planned from a `RefListIndex` of where desired and actual differ, fed by the translator's per-ref
  changes (`refs_changed`) and by our own writes, so one event costs O(refs it moved).
- Every key has a progress state: absent (settled), ACTIVE (queued, running, or waiting for keys
  that are themselves progressing) or BLOCKED (failed and backing off, or waiting for a failed key).
  A waiting object treats an ACTIVE dependency as "wait" and a BLOCKED one as "do without for now".
- Create conflict (409): read the object; ours -> adopt and update it; a shared object (tag, address
  group) of another owner -> use it as it is; any other object of another owner under our name -> a
  conflict, reported and left alone until the next resync. An object of another owner that the
  listing already saw under our name is that conflict at once, without a create that would fail.
- Delete: 404 is success; 409 (someone else still refers to it) is left for the next resync.
- Error classes (`vnc_client.errors.is_temporary`): 5xx, connection errors, timeouts and 409: the
  key backs off (capped), the others keep going. Any other refusal (400, 403, a 404 about a
  reference ...) and any unexpected exception while handling one key parks that key: its state is
  `parked` with the server's message (`db.parked`), nothing retries it until its desired state
  changes or the next resync. A 404 on a create is a missing parent only if the parent really is
  missing (read back); then only that parent is created.

Make before break (SPEC section 7), on top of plain existence: the deny rules of a NetworkPolicy are
added to `<cluster>-denyall` only once that NetworkPolicy's firewall policy holds all its pass rules
and is in the APS; refs are dropped from any other policy or from the APS only once the denyall
policy holds no deny rule that is no longer wanted.

A resync (at start, then every `kube_timer_interval`) lists our objects once per type plus all VMIs,
replaces what we believed with what is there (keeping what was written since the listing began), and
queues every key whose desired and actual differ: drift is repaired, leftovers are garbage-collected.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Protocol, Sequence, Set, Tuple

import gevent.event

from kube_manager.db import PARKED, PENDING, RETRYING, SYNCED, Database, FqName
from kube_manager.logging_setup import kv
from kube_manager.settings import ReconcilerSettings
from kube_manager.translator.published import DesiredState
from vnc_client.errors import Conflict, NotFound, VncError, WriteRefused, is_temporary
from vnc_client.ratelimit import ExponentialRateLimiter, half_jitter
from vnc_client.schema import DEFAULT_POLICY_MANAGEMENT

from . import diff
from .diff import ObjKey, Progress, Step
from .executor import Executor
from .ownership import OWNED_TYPES, SHARED_TYPES, Lister, Marks, list_objects
from .pods import POD, PodTagger, VmiApi, pod_key, pod_of
from .reflists import RefListIndex
from .workqueue import WorkQueue

log = logging.getLogger(__name__)

ACTIVE = "active"
BLOCKED = "blocked"
# Order in which a resync queues keys: what others refer to first, so fewer keys park.
_RANK = {t: n for n, t in enumerate(OWNED_TYPES)}
_MAX_WRITES_PER_TURN = 4  # create -> 409 -> adopt -> update is 2; more means the server disagrees


class ConfigApi(Lister, VmiApi, Protocol):
    """The config API calls the reconciler makes (vnc_client.client.VncClient fits)."""

    def create(self, obj_type: str, body: Mapping[str, Any]) -> Dict[str, Any]: ...

    def update(self, obj_type: str, ident: Any, body: Mapping[str, Any]) -> Dict[str, Any]: ...

    def ref_update(self, obj_type: str, uuid: str, ref_type: str, ref_uuid: Optional[str] = None, *,
                   ref_fq_name: Optional[Sequence[str]] = None, operation: str = "ADD",
                   attr: Optional[Mapping[str, Any]] = None) -> str: ...

    def delete(self, obj_type: str, ident: Any) -> None: ...


@dataclass
class Counters:
    """Writes by operation, and listing requests; what the benchmark and the logs report."""

    create: int = 0
    update: int = 0
    delete: int = 0
    set_tag: int = 0
    reads: int = 0
    conflicts: int = 0
    failures: int = 0
    last_write_at: float = 0.0  # time.monotonic() of the latest successful write

    def wrote(self, op: str, n: int = 1) -> None:
        setattr(self, op, getattr(self, op) + n)
        self.last_write_at = time.monotonic()

    @property
    def writes(self) -> int:
        return self.create + self.update + self.delete + self.set_tag


@dataclass
class Conflicting:
    """An object of another owner under one of our names: never touched, reported."""

    key: ObjKey
    owner: str


class TranslatorRefChange(Protocol):
    """One ref of a long list moved in the desired state (kube_manager.translator.RefChange fits).

    Read-only properties: RefChange is frozen, and a protocol's plain attributes would demand
    writable ones, so the reconciler would not satisfy the cache's ChangeSink."""

    @property
    def resource_type(self) -> str: ...

    @property
    def fq_name(self) -> FqName: ...

    @property
    def ref_type(self) -> str: ...

    @property
    def operation(self) -> str: ...  # "ADD" | "DELETE"

    @property
    def ref_fq_name(self) -> FqName: ...

    @property
    def sequence(self) -> str: ...


class StateListener(Protocol):
    """Where the reconciler pushes sync states as they change (the kind handlers, for the pages)."""

    def states_changed(self, source: "Reconciler", keys: Optional[Iterable[ObjKey]]) -> None:
        """The `state_of` of `keys` may have changed (of every key, when None)."""


class Observer(Protocol):
    """Metrics hooks (kube_manager.metrics.Metrics is adapted to this by the daemon)."""

    def queue_depth(self, depth: int) -> None: ...

    def reconciled(self, kind: str, seconds: float) -> None: ...


def describe(key: ObjKey) -> str:
    return f"{key[0]} {':'.join(key[1])}"


class Reconciler:
    """Keeps `db.actual` (and the config API) equal to the translator's published desired state;
    see the module docstring.

    The pipeline (kube_manager/pipeline.py) calls `objects_changed` / `pods_changed` with the keys
    the translator reported, after the records (`db.pods[..].tags`) follow; sync states are pushed
    to `on_states` as they change.
    """

    def __init__(self, client: ConfigApi, db: Database, desired: DesiredState, marks: Marks,
                 settings: Optional[ReconcilerSettings] = None, observer: Optional[Observer] = None,
                 on_states: Optional[StateListener] = None) -> None:
        settings = settings or ReconcilerSettings()
        self.client = client
        self.db = db
        self.marks = marks
        self.settings = settings
        self.counters = Counters()
        self.conflicts: Dict[ObjKey, Conflicting] = {}
        self._observer = observer
        self.desired = desired
        self._on_states = on_states
        self.queue: WorkQueue[ObjKey] = WorkQueue(on_depth=observer.queue_depth if observer else None)
        self.executor: Executor[ObjKey] = Executor(
            self.queue, self._handle, concurrency=settings.concurrency,
            backoff=ExponentialRateLimiter(settings.retry_base, settings.retry_cap, half_jitter),
            on_error=self._failed, on_handled=self._timed)
        self.pods = PodTagger(client, db, self, self._managed_tag)
        pod_cap = max(settings.retry_base, settings.pod_retry_cap)
        self._pod_backoff = ExponentialRateLimiter(settings.retry_base, pod_cap, half_jitter)
        pm = tuple(DEFAULT_POLICY_MANAGEMENT)
        self.aps_key: ObjKey = ("application-policy-set", pm + (marks.cluster,))
        self.denyall_key: ObjKey = ("firewall-policy", pm + (f"{marks.cluster}-denyall",))
        # The two ref lists that refer to every NetworkPolicy, planned from their differences.
        self._aps_refs = RefListIndex("firewall_policy_refs", "firewall-policy")
        self._deny_refs = RefListIndex("firewall_rule_refs", "firewall-rule")
        self._indexes: Dict[ObjKey, Dict[str, RefListIndex]] = {
            self.aps_key: {self._aps_refs.ref_field: self._aps_refs},
            self.denyall_key: {self._deny_refs.ref_field: self._deny_refs}}
        self._others: Dict[str, Dict[FqName, Dict[str, Any]]] = {}
        self._referrers: Dict[ObjKey, Set[ObjKey]] = {}
        self._status: Dict[ObjKey, str] = {}
        self._waiting_on: Dict[ObjKey, Set[ObjKey]] = {}   # parked key -> the pending keys it waits for
        self._blocked_on: Dict[ObjKey, Set[ObjKey]] = {}   # parked key -> the failed keys it did without
        self._waiters: Dict[ObjKey, Set[ObjKey]] = {}
        self._deferred: Set[ObjKey] = set()
        self._seq = 0
        self._written_at: Dict[ObjKey, int] = {}
        self._vmi_written_at: Dict[str, int] = {}
        self._synced_once = gevent.event.Event()
        self._state_changes: Set[ObjKey] = set()  # since the last push to on_states
        # Pods being tagged (ACTIVE), by the tags they are to carry: deny rules wait for them.
        self._tagging: Dict[ObjKey, Tuple[str, ...]] = {}
        self._tagging_by_tag: Dict[str, Set[ObjKey]] = {}

    # --- driving -------------------------------------------------------------------------------

    def start(self) -> None:
        self.executor.start()

    def stop(self, timeout: float = 5.0) -> None:
        self.executor.stop(timeout)

    def abandon(self) -> None:
        """Leadership lost: queued and in-flight work is dropped, never completed (the client's
        write gate already refuses every write of this term)."""
        log.warning("reconciler abandoned its work", extra=kv(queued=len(self.queue), scheduled=self.queue.scheduled))
        self.executor.abandon()

    def objects_changed(self, keys: Iterable[ObjKey]) -> None:
        """The desired bodies of `keys` changed (created, modified or gone)."""
        if not self._synced_once.is_set():
            return  # the first resync looks at everything anyway
        for key in sorted(keys, key=_order):
            self._unpark_failed(key)
            self._enqueue(key)
        self._push_states()

    def refs_changed(self, changes: Iterable[TranslatorRefChange]) -> None:
        """Refs of the APS or `<cluster>-denyall` moved in the desired state (before `objects_changed`
        names those two): their indexes follow, so that planning them costs O(refs moved)."""
        if not self._synced_once.is_set():
            return  # the first resync loads the indexes from the desired bodies
        for change in changes:
            field_name = change.ref_type.replace("-", "_") + "_refs"
            index = self._indexes.get((change.resource_type, tuple(change.fq_name)), {}).get(field_name)
            if index is None:
                continue
            target = (change.ref_type, tuple(change.ref_fq_name))
            if change.operation == "ADD":
                index.want(target, {"sequence": change.sequence})
            else:
                index.unwant(target)

    def pods_changed(self, keys: Iterable[tuple]) -> None:
        """The desired tags of these pods (`(namespace, name)`) changed, or the pods came or went."""
        if not self._synced_once.is_set():
            return
        for key in keys:
            if not self.pods.untaggable(key):
                self._unpark_failed(pod_key(*key))
                self._enqueue(pod_key(*key))

    def resync(self) -> int:
        """List what the config API holds, repair and garbage-collect; returns the keys queued."""
        started = time.monotonic()
        since = self._seq
        listing = list_objects(self.client, self.marks)
        self.counters.reads += listing.requests
        self.counters.reads += self.pods.load(keep=[v for v, s in self._vmi_written_at.items() if s > since])
        for obj_type in OWNED_TYPES:
            listed = listing.owned.get(obj_type, {})
            current = self.db.actual.setdefault(obj_type, {})
            for fq_name in set(current) | set(listed):
                key = (obj_type, fq_name)
                if self._written_at.get(key, -1) <= since:
                    self._set_actual(key, listed.get(fq_name), written=False)
        self._others = listing.others
        self._load_desired_indexes()
        self._deferred.clear()
        self.db.parked.clear()  # a resync tries parked keys again
        self._seq += 1
        self._written_at = {k: s for k, s in self._written_at.items() if s > since}
        self._vmi_written_at = {k: s for k, s in self._vmi_written_at.items() if s > since}
        queued = 0
        for key in sorted(self._all_object_keys(), key=_order):
            if not self._settled(key):
                self._enqueue(key)
                queued += 1
        for pod in sorted(self.db.pods):
            if self.pods.untaggable(pod):
                continue
            if self.pods.needs_work(pod):
                self._enqueue(pod_key(*pod))
                queued += 1
            else:
                self.pods.mark(pod, SYNCED)
        self._synced_once.set()
        self._push_states(everything=True)
        if self._observer is not None:
            self._observer.reconciled("resync", time.monotonic() - started)
        log.info("resync done", extra=kv(queued=queued, owned=sum(map(len, self.db.actual.values())),
                                         desired=sum(map(len, self.desired.objects.values())),
                                         seconds=round(time.monotonic() - started, 3)))
        return queued

    # --- state for others ----------------------------------------------------------------------

    def converged(self) -> bool:
        """Everything desired is in the config API, nothing else of ours is, every pod is tagged.

        Cheap, by an invariant: a key that is not settled is always queued, running, waiting or
        backing off, so it has a progress state; only deletes of shared objects someone else still
        uses (left for the next resync) do not count against convergence.
        """
        if not self._synced_once.is_set() or not self.queue.is_idle():
            return False
        if any(not self._deferred_shared_delete(k) for k in self._status):
            return False
        return all(self.pods.settled(key) for key in self.db.pods)

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

    def _push_states(self, everything: bool = False) -> None:
        """Tell `on_states` which keys' `state_of` may have changed since the last push (every
        key's after a resync); called at the end of each entry point, so the pages follow at once."""
        changed, self._state_changes = self._state_changes, set()
        if self._on_states is not None:
            self._on_states.states_changed(self, None if everything else changed)

    def state_of(self, key: ObjKey) -> str:
        """`synced`, `pending`, `retrying` or `parked`: what the introspect pages show for one object
        (by the invariant of `converged`, a key without a progress state is settled)."""
        if key in self.db.parked:
            return PARKED
        status = self._status.get(key)
        if status == BLOCKED or key in self._deferred:
            return RETRYING
        if status == ACTIVE or not self._synced_once.is_set():
            return PENDING
        return SYNCED

    def summary(self) -> Dict[str, int]:
        statuses = list(self._status.values())
        return {"active": statuses.count(ACTIVE), "blocked": statuses.count(BLOCKED),
                "queued": len(self.queue), "scheduled": self.queue.scheduled,
                "deferred": len(self._deferred), "parked": len(self.db.parked),
                "conflicts": len(self.conflicts)}

    def unsettled(self, limit: int) -> List[str]:
        """Up to `limit` keys that hold convergence, each with its state (and why, if parked)."""
        found = []
        for key in sorted(self._status, key=_order)[:limit]:
            reason = self.db.parked.get(key)
            found.append(f"{describe(key)} {self.state_of(key)}" + (f" ({reason})" if reason else ""))
        return found

    # --- diff.View -----------------------------------------------------------------------------

    def present(self, key: ObjKey) -> bool:
        return self._actual(key) is not None or self._borrowed(key)

    def progress(self, waiter: ObjKey, key: ObjKey) -> Progress:
        status = self._status.get(key)
        if status == BLOCKED:
            return Progress.BLOCKED
        if status == ACTIVE:
            return Progress.BLOCKED if self._reaches(key, waiter) else Progress.PENDING
        if key[0] != POD and self._desired(key) is None and not self.present(key):
            return Progress.BLOCKED  # nobody will create it: do without it until things change
        return Progress.PENDING  # settled-looking but not as the waiter needs it: `_park` looks again

    def gate_add(self, holder: ObjKey, ref_field: str, target: ObjKey) -> Optional[ObjKey]:
        """A deny rule enters `<cluster>-denyall` only once its NetworkPolicy's firewall policy holds
        all its pass rules and is in the APS, and no pod is still being given a tag that policy's
        rules use (else that pod would be denied what the new rules allow it)."""
        if holder != self.denyall_key or ref_field != "firewall_rule_refs":
            return None
        owner = self.desired.deny_owner(target[1])
        if owner is None:
            return None
        policy = ("firewall-policy", owner)
        if not self._settled(policy):
            return policy
        if self._actual(self.aps_key) is not None and policy not in self._aps_refs.actual:
            return self.aps_key
        for tag in self.desired.policy_tags(owner):
            for pod in self._tagging_by_tag.get(tag, ()):
                return pod
        return None

    def gate_remove(self, holder: ObjKey, ref_field: str) -> Optional[ObjKey]:
        if holder == self.denyall_key or self._actual(self.denyall_key) is None:
            return None
        return self.denyall_key if self._deny_refs.stale else None

    def referrers(self, key: ObjKey) -> List[ObjKey]:
        found = sorted(self._referrers.get(key, ()))
        found.extend(holder for holder, indexes in self._indexes.items()
                     if any(key in index.actual for index in indexes.values()))
        if key[0] == "tag" and len(key[1]) == 1:
            found.extend(self.pods.referrers(key[1][0]))
        return found

    # --- handling one key ----------------------------------------------------------------------

    def _handle(self, key: ObjKey) -> bool:
        """Handle one key, its failure confined to it: a temporary one goes back to the executor
        (backoff, then retried), any other parks the key (SPEC section 7)."""
        try:
            return self._handle_key(key)
        except Exception as exc:
            if is_temporary(exc) or isinstance(exc, WriteRefused):
                raise  # backoff; a refused write (not the leader) is no verdict on the object
            self._park_failed(key, exc)
            return True
        finally:
            self._push_states()

    def _handle_key(self, key: ObjKey) -> bool:
        self._activate(key)
        self._unpark(key)
        if key[0] == POD:
            return self._handle_pod(key)
        writes = 0
        indexed = self._indexes.get(key)
        if indexed is not None:
            self._check_desired_index(key, indexed)
        while True:
            if self._actual(key) is None and self._borrowed(key):
                step = Step("none")  # a shared object of another owner serves as it is
                break
            step = diff.plan(key, self._desired(key), self._actual(key), self, indexed)
            if step.action in ("none", "wait"):
                break
            if step.ref_change is None:  # a ref-update always consumes one difference of the index
                if writes == _MAX_WRITES_PER_TURN:
                    raise VncError(f"{describe(key)} does not read back as written after {writes} writes")
                writes += 1
            if not self._write(key, step):
                return True  # deferred until the next resync
        self._settle(key, step)
        return True

    def _handle_pod(self, key: ObjKey) -> bool:
        outcome = self.pods.sync(pod_of(key))
        if outcome.written:
            self.counters.wrote("set_tag", len(outcome.written))
        for vmi in outcome.written:
            self._seq += 1
            self._vmi_written_at[vmi] = self._seq
        if outcome.pending:
            self._park(key, outcome.pending, (), ACTIVE)
            return True
        if outcome.done:
            self._pod_backoff.forget(key)
            self._set_status(key, None)
        else:
            self.queue.add_after(key, self._pod_backoff.when(key))
            self._set_status(key, BLOCKED)
        return True

    def _write(self, key: ObjKey, step: Step) -> bool:
        """Carry out one create/update/delete; False when the key is deferred to the next resync."""
        obj_type, fq_name = key
        name = ":".join(fq_name)
        if step.action == "create":
            taken = self._others.get(obj_type, {}).get(fq_name)
            if taken is not None:  # the listing saw it: a create would only meet a 409
                return self._conflict(key, taken)
            try:
                created = self.client.create(obj_type, step.body)
            except Conflict:
                self.counters.conflicts += 1
                return self._adopt(key)
            except NotFound:
                if not self._parent_missing(step.body):
                    raise  # a 404 about a reference: parked with the server's message
                self._create_policy_management()
                return True
            self.counters.wrote("create")
            log.info("created", extra=kv(type=obj_type, fq_name=name, uuid=created.get("uuid"),
                                         complete=step.complete))
            self._set_actual(key, created)
        elif step.action == "update":
            change = step.ref_change
            try:
                if change is None:
                    self.client.update(obj_type, step.uuid, step.body)
                elif step.uuid is None:  # listed without one (never by a sound server): nothing to address
                    raise VncError(f"{describe(key)} has no uuid to send a ref-update to")
                else:
                    self.client.ref_update(obj_type, step.uuid, change.target[0], ref_fq_name=list(change.target[1]),
                                           operation=change.operation, attr=change.attr)
            except NotFound:
                if not self._gone(obj_type, step.uuid):
                    raise  # a 404 about a referred object (deleted by hand): parked, the resync repairs it
                log.info("gone from the config API, will create it again", extra=kv(type=obj_type, fq_name=name))
                self._set_actual(key, None)
                return True
            self.counters.wrote("update")
            if change is None:
                log.info("updated", extra=kv(type=obj_type, fq_name=name, fields=",".join(sorted(step.body)),
                                             complete=step.complete))
                self._set_actual(key, {**(self._actual(key) or {}), **step.body})
            else:
                log.info("updated", extra=kv(type=obj_type, fq_name=name, fields=change.ref_field,
                                             complete=step.complete, ref_update=change.operation,
                                             ref=":".join(change.target[1])))
                self._ref_moved(key, change)
        else:
            try:
                self.client.delete(obj_type, step.uuid)
            except NotFound:
                pass
            except Conflict as exc:
                self._defer(key, f"still referred to by objects that are not ours: {exc.body.strip()[:200]}")
                return False
            self.counters.wrote("delete")
            log.info("deleted", extra=kv(type=obj_type, fq_name=name, uuid=step.uuid))
            self._set_actual(key, None)
        return True

    def _gone(self, obj_type: str, uuid: Optional[str]) -> bool:
        """Whether the object `uuid` no longer exists (after a 404 that may have meant a ref)."""
        self.counters.reads += 1
        try:
            self.client.read(obj_type, uuid, fields=["fq_name"])
        except NotFound:
            return True
        return False

    def _parent_missing(self, body: Mapping[str, Any]) -> bool:
        """After a 404 on a create: whether it was about the parent `default-policy-management`
        (read back to be sure) rather than about a referenced object, which must not be guessed
        into existence by creating a parent."""
        if body.get("parent_type") != "policy-management":
            return False
        self.counters.reads += 1
        try:
            self.client.read("policy-management", list(DEFAULT_POLICY_MANAGEMENT), fields=["fq_name"])
        except NotFound:
            return True
        return False

    def _create_policy_management(self) -> None:
        """SPEC section 1: create `default-policy-management`, which was found missing."""
        try:
            self.client.create("policy-management", {"fq_name": list(DEFAULT_POLICY_MANAGEMENT)})
        except Conflict:
            return  # created meanwhile by someone else: the create of the child is retried
        self.counters.wrote("create")
        log.info("created", extra=kv(type="policy-management", fq_name=":".join(DEFAULT_POLICY_MANAGEMENT)))

    def _adopt(self, key: ObjKey) -> bool:
        """A create found the name taken: read the object and decide whose it is."""
        obj_type, fq_name = key
        existing = self.client.read(obj_type, list(fq_name))
        self.counters.reads += 2  # fqname-to-id, then the read
        if self.marks.owns(existing):
            log.info("adopted an object of ours found by name", extra=kv(type=obj_type, fq_name=":".join(fq_name)))
            self._set_actual(key, existing)
            return True
        if obj_type in SHARED_TYPES:
            log.info("using a shared object of another owner", extra=kv(
                type=obj_type, fq_name=":".join(fq_name), owner=self.marks.describe(existing)))
            self._others.setdefault(obj_type, {})[fq_name] = existing
            self._notify(key)
            return True
        self._others.setdefault(obj_type, {})[fq_name] = existing
        return self._conflict(key, existing)

    def _conflict(self, key: ObjKey, existing: Mapping[str, Any]) -> bool:
        """An object of another owner holds one of our names: reported, left alone until a resync
        lists it gone. Always False (the key is deferred)."""
        owner = self.marks.describe(existing)
        self.conflicts[key] = Conflicting(key, owner)
        self._defer(key, f"name taken by an object that is not ours ({owner})")
        return False

    def _defer(self, key: ObjKey, reason: str) -> None:
        log.warning("left for the next resync", extra=kv(type=key[0], fq_name=":".join(key[1]), reason=reason))
        self._deferred.add(key)
        self._state_changed(key)
        self._set_status(key, BLOCKED)

    def _settle(self, key: ObjKey, step: Step) -> None:
        if step.action == "none" and step.complete:
            self.conflicts.pop(key, None)
            self._set_status(key, None)
        else:
            self._park(key, step.pending, step.blocked, ACTIVE if step.pending else BLOCKED)

    def _failed(self, key: ObjKey, exc: BaseException, delay: float) -> None:
        self.counters.failures += 1
        # A refused write (not the leader) is routine at the end of a term: no warning for it.
        log.log(logging.INFO if isinstance(exc, WriteRefused) else logging.WARNING,
                "config API write failed, will retry", extra=kv(
                    key=describe(key), error=f"{type(exc).__name__}: {exc}", retry_in=round(delay, 3),
                    failures=self.executor.backoff.num_requeues(key)))
        if key[0] == POD:
            self.pods.mark(pod_of(key), RETRYING, f"{type(exc).__name__}: {exc}")
        self._set_status(key, BLOCKED)
        self._push_states()

    def _park_failed(self, key: ObjKey, exc: Exception) -> None:
        """A permanent failure: `key` waits, with the reason shown, for a change or the next resync."""
        self.counters.failures += 1
        reason = f"{type(exc).__name__}: {exc}"
        self.db.parked[key] = reason
        log.error("config API write refused, parked until its desired state changes or the next resync",
                  extra=kv(key=describe(key), error=reason), exc_info=not isinstance(exc, VncError))
        self.executor.backoff.forget(key)
        if key[0] == POD:
            self.pods.mark(pod_of(key), PARKED, reason)
        self._state_changed(key)
        self._set_status(key, BLOCKED)

    def _unpark_failed(self, key: ObjKey) -> None:
        """The desired state of `key` changed: a parked key gets another try."""
        if self.db.parked.pop(key, None) is not None:
            self._state_changed(key)

    def _timed(self, key: ObjKey, seconds: float) -> None:
        if self._observer is not None:
            self._observer.reconciled("pod" if key[0] == POD else "network_policy", seconds)

    # --- progress bookkeeping ------------------------------------------------------------------

    def _enqueue(self, key: ObjKey) -> None:
        if key in self._deferred or key in self.db.parked:
            return  # left alone until the next resync (or, if parked, a change of its own)
        self._activate(key)
        if key[0] == POD:
            self._track_tagging(key, True)
        self.queue.add(key)

    def _track_tagging(self, key: ObjKey, active: bool) -> None:
        for tag in self._tagging.pop(key, ()):
            _unlink(self._tagging_by_tag, tag, key)
        record = self.db.pods.get(pod_of(key)) if active else None
        if record is not None:
            self._tagging[key] = tuple(record.tags)
            for tag in record.tags:
                self._tagging_by_tag.setdefault(tag, set()).add(key)

    def _activate(self, key: ObjKey) -> None:
        if self._status.get(key) != ACTIVE:
            self._status[key] = ACTIVE
            self._state_changed(key)

    def _state_changed(self, key: ObjKey) -> None:
        if key[0] != POD:
            self._state_changes.add(key)

    def _set_status(self, key: ObjKey, status: Optional[str]) -> None:
        before = self._status.get(key)
        if before != status:
            self._state_changed(key)
        if status is None:
            self._status.pop(key, None)
        else:
            self._status[key] = status
        if key[0] == POD and status != ACTIVE:
            self._track_tagging(key, False)  # tagged, or waiting for its VM / retrying: holds nothing
        if before != status and status != ACTIVE:
            self._notify(key)

    def _park(self, key: ObjKey, pending: Sequence[ObjKey], blocked: Sequence[ObjKey], status: str) -> None:
        """`key` waits for `pending` (being written) and did without `blocked` (failed): it is
        looked at again when the last pending one is done, or as soon as a blocked one recovers."""
        self._waiting_on[key] = set(pending)
        self._blocked_on[key] = set(blocked)
        for target in self._waiting_on[key] | self._blocked_on[key]:
            self._waiters.setdefault(target, set()).add(key)
        self._set_status(key, status)
        for target in pending:  # settled-looking, yet not as `key` needs it: look at it again
            if target not in self._status:
                self._enqueue(target)

    def _unpark(self, key: ObjKey) -> None:
        for target in self._waiting_on.pop(key, set()) | self._blocked_on.pop(key, set()):
            _unlink(self._waiters, target, key)

    def _notify(self, key: ObjKey) -> None:
        """`key` changed (written, settled, failed): wake the keys parked on it that can now move.
        A key waiting for several pending keys would only find the others still pending: planning
        it again then is wasted work (for the APS at a cold start, once per NetworkPolicy)."""
        for waiter in sorted(self._waiters.pop(key, ()), key=_order):
            pending = self._waiting_on.get(waiter, set())
            pending.discard(key)
            if pending and key not in self._blocked_on.get(waiter, ()):
                continue
            self._enqueue(waiter)

    def _reaches(self, start: ObjKey, goal: ObjKey) -> bool:
        """Whether `start` waits, directly or not, on `goal` (a wait cycle if `goal` waits on it)."""
        seen, todo = {start}, [start]
        while todo:
            for nxt in self._waiting_on.get(todo.pop(), ()):
                if nxt == goal:
                    return True
                if nxt not in seen and self._status.get(nxt) == ACTIVE:
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    # --- objects -------------------------------------------------------------------------------

    def _desired(self, key: ObjKey) -> Optional[Dict[str, Any]]:
        return self.desired.get(key[0], key[1])

    def _actual(self, key: ObjKey) -> Optional[Dict[str, Any]]:
        return self.db.actual.get(key[0], {}).get(key[1])

    def _borrowed(self, key: ObjKey) -> bool:
        return key[0] in SHARED_TYPES and key[1] in self._others.get(key[0], {})

    def _settled(self, key: ObjKey) -> bool:
        desired, actual = self._desired(key), self._actual(key)
        if desired is None:
            return actual is None
        if actual is None:
            return self._borrowed(key)
        indexed = self._indexes.get(key, {})
        return (not any(index.differ for index in indexed.values())
                and not diff.changed_fields(key[0], desired, actual, skip=indexed.keys()))

    def _deferred_shared_delete(self, key: ObjKey) -> bool:
        return key in self._deferred and key[0] in SHARED_TYPES and self._desired(key) is None

    def _all_object_keys(self) -> Set[ObjKey]:
        keys: Set[ObjKey] = set()
        for source in (self.desired.objects, self.db.actual):
            for obj_type, objects in source.items():
                keys.update((obj_type, fq) for fq in objects)
        return keys

    def _set_actual(self, key: ObjKey, body: Optional[Dict[str, Any]], written: bool = True) -> None:
        """What the config API holds of `key` now (None: nothing); `written` by us, not listed."""
        indexed = self._indexes.get(key, {})
        old = self._actual(key)
        if old is not None:
            for target in diff.all_targets(key[0], old, skip=indexed.keys()):
                _unlink(self._referrers, target, key)
        objects = self.db.actual.setdefault(key[0], {})
        if body is None:
            objects.pop(key[1], None)
            for index in indexed.values():
                index.load_actual(())
        else:
            if indexed:  # the indexes own those lists from now on (`_ref_moved` keeps them true)
                body = {**body, **{name: index.load_actual(body.get(name)) for name, index in indexed.items()}}
            objects[key[1]] = body
            for target in diff.all_targets(key[0], body, skip=indexed.keys()):
                self._referrers.setdefault(target, set()).add(key)
        self._changed(key, written)

    def _ref_moved(self, key: ObjKey, change: diff.RefChange) -> None:
        """One `ref-update` done: the actual body follows, in O(1) for an indexed list."""
        index = self._indexes.get(key, {}).get(change.ref_field)
        if index is None:
            actual = self._actual(key) or {}
            refs = [ref for ref in actual.get(change.ref_field) or []
                    if not (isinstance(ref, dict) and tuple(ref.get("to") or ()) == change.target[1])]
            if change.operation == "ADD":
                refs.append({"to": list(change.target[1]), "attr": change.attr})
            self._set_actual(key, {**actual, change.ref_field: refs})
            return
        if change.operation == "ADD":
            index.hold(change.target, change.attr)
        else:
            index.release(change.target)
        self._changed(key, written=True)

    def _changed(self, key: ObjKey, written: bool) -> None:
        if written:
            self._seq += 1
            self._written_at[key] = self._seq
        self._notify(key)

    def _load_desired_indexes(self) -> None:
        for key, indexed in self._indexes.items():
            desired = self._desired(key) or {}
            for name, index in indexed.items():
                index.load_desired(desired.get(name))

    def _check_desired_index(self, key: ObjKey, indexed: Mapping[str, RefListIndex]) -> None:
        """A cheap guard against a per-ref change report that missed something: the indexed
        desired refs must be as many as the desired body lists; if not, reload them whole."""
        desired = self._desired(key) or {}
        for name, index in indexed.items():
            if not index.desired_count_is(len(desired.get(name) or ())):
                log.warning("desired ref index out of step, reloaded", extra=kv(key=describe(key), field=name))
                index.load_desired(desired.get(name))

    def _managed_tag(self, tag: str) -> bool:
        """Tags a pod's VMI may lose: ours, or wanted by us (another cluster's are left alone)."""
        key = ("tag", (tag,))
        return self._actual(key) is not None or self._desired(key) is not None


def _unlink(index: Dict[Any, Set[ObjKey]], name: Any, key: ObjKey) -> None:
    """Take `key` out of the set `index[name]`, dropping the set once empty."""
    keys = index.get(name)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del index[name]


def _order(key: ObjKey) -> tuple:
    return (_RANK.get(key[0], len(_RANK)), key)
