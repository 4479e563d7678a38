"""Writing one Contrail object: plan the next step, carry it out, until nothing is left or the
object must wait (SPEC section 7).

Create conflict (409): read the object; ours -> adopt and update it; a shared object (tag, address
group) of another owner -> use it as it is; any other object of another owner under our name -> a
conflict, reported and left alone until the next resync. An object of another owner that the
listing already saw under our name is that conflict at once, without a create that would fail.
Delete: 404 is success; 409 (someone else still refers to it) is left for the next resync. A 404
on a create is a missing parent only if the parent really is missing (read back); then only that
parent is created. A 404 on an update is an object deleted behind our back only if a read says
so; else it was about a reference, and the key is parked with the server's message.

Every write is logged once at INFO here, with its fq_name (the client logs its request at DEBUG).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Dict, List, Mapping, Optional, Protocol, Sequence

import gevent

from kube_manager.observability.logging_setup import kv
from vnc_client.errors import Conflict, NotFound, VncError
from vnc_client.schema import DEFAULT_POLICY_MANAGEMENT

from . import diff
from .actual import describe_key
from .diff import ObjKey, Step
from .ownership import SHARED_TYPES, Lister, OwnershipMarks
from .progress import ACTIVE, BLOCKED
from .shared import Bookkeeping

log = logging.getLogger(__name__)

_MAX_WRITES_PER_TURN = 4  # create -> 409 -> adopt -> update is 2; more means the server disagrees
# A delete the config API refuses because something still refers to the object is most often a
# race with a CNI: a tag still carried by the VMI of a pod deleted at the same moment, which the CNI
# removes within seconds. It is retried with the key's backoff (0.2 s doubling: some 6 s in all)
# this many times before it is left for the next resync, as a reference that stays is someone's.
_REFERRED_RETRIES = 5


class ObjectApi(Lister, Protocol):
    """The config API calls writing objects takes (vnc_client.client.VncClient fits)."""

    def read(self, obj_type: str, ident: Any, *, fields: Optional[Sequence[str]] = None) -> Dict[str, Any]: ...

    def create(self, obj_type: str, body: Mapping[str, Any]) -> Dict[str, Any]: ...

    def update(self, obj_type: str, ident: Any, body: Mapping[str, Any]) -> Dict[str, Any]: ...

    def ref_update(self, obj_type: str, uuid: str, ref_type: str, ref_uuid: Optional[str] = None, *,
                   ref_fq_name: Optional[Sequence[str]] = None, operation: str = "ADD",
                   attr: Optional[Mapping[str, Any]] = None) -> str: ...

    def delete(self, obj_type: str, ident: Any) -> None: ...


class WriterView(diff.View, Protocol):
    """`diff.View`, and the make-before-break gate of a rule update (gates.py): a narrow view
    (view.py's `KeyView`), never the reconciler that owns the writer."""

    def gate_write(self, key: ObjKey) -> Optional[ObjKey]:
        """What an update of `key` waits for (None: nothing)."""


@dataclass
class Conflicting:
    """An object of another owner under one of our names: never touched, reported."""

    key: ObjKey
    owner: str


@dataclass(eq=False)
class ObjectWriter:
    """The work-queue handler of Contrail objects: brings one to its desired state."""

    metric_kind: ClassVar[str] = "network_policy"

    _client: ObjectApi
    _marks: OwnershipMarks
    _view: WriterView
    books: Bookkeeping
    conflicts: Dict[ObjKey, Conflicting] = field(default_factory=dict, init=False)
    _referred: Dict[ObjKey, int] = field(default_factory=dict, init=False)  # refused deletes so far

    def __post_init__(self) -> None:
        self._actual, self._progress, self._counters = self.books.actual, self.books.progress, self.books.counters

    def handle(self, key: ObjKey) -> None:
        step = self.sync(key)
        if step is None:
            return  # deferred until the next resync
        if step.action == "none" and step.complete:
            self._progress.set(key, None)
        else:
            self._progress.park(key, step.pending, step.blocked, ACTIVE if step.pending else BLOCKED)

    def activated(self, key: ObjKey) -> None:
        """Nothing waits on an object being queued, beyond its progress state."""

    def left_active(self, key: ObjKey) -> None:
        """Nothing to release."""

    def failed(self, key: ObjKey, reason: str, permanent: bool) -> None:
        """The reason shows through `db.parked` and the policy states."""

    def defer(self, key: ObjKey, reason: str) -> None:
        """Left alone until the next resync."""
        log.warning("left for the next resync", extra=kv(type=key[0], fq_name=":".join(key[1]), reason=reason))
        self._progress.defer(key)

    def sync(self, key: ObjKey) -> Optional[Step]:
        """Write until `key` is as desired or must wait: the last step (what it waits for), or
        None when it was deferred to the next resync."""
        actual = self._actual
        writes = 0
        indexed = actual.check_desired_index(key)
        while True:
            if actual.get(key) is None and actual.borrowed(key):
                step = Step("none")  # a shared object of another owner serves as it is
                break
            step = diff.plan(key, actual.desired(key), actual.get(key), self._view, indexed)
            if step.action in ("none", "wait"):
                break
            held = self._held(key) if step.action == "update" else None
            if held is not None:
                step = held
                break
            if step.ref_change is None:  # a ref-update always consumes one difference of the index
                if writes == _MAX_WRITES_PER_TURN:
                    raise VncError(f"{describe_key(key)} does not read back as written after {writes} writes")
                writes += 1
            if not self._write(key, step):
                return None
        if step.action == "none" and step.complete:
            self.conflicts.pop(key, None)
        return step

    def _held(self, key: ObjKey) -> Optional[Step]:
        """The wait of an update its gate holds back (a tier deny rule rewritten to tags some pods
        are still being given), or None."""
        blocker = self._view.gate_write(key)
        if blocker is None:
            return None
        step = Step("wait", complete=False)
        pending = self._view.progress(key, blocker) is diff.Progress.PENDING
        (step.pending if pending else step.blocked).append(blocker)
        return step

    def _write(self, key: ObjKey, step: Step) -> bool:
        """Carry out one create/update/delete; False when the key is deferred to the next resync."""
        obj_type, fq_name = key
        name = ":".join(fq_name)
        if step.action == "create":
            taken = self._actual.other(key)
            if taken is not None:  # the listing saw it: a create would only meet a 409
                return self._conflict(key, taken)
            try:
                created = self._client.create(obj_type, step.body)
            except Conflict:
                self._counters.conflicts += 1
                return self._adopt(key)
            except NotFound:
                if not self._parent_missing(step.body):
                    raise  # a 404 about a reference: parked with the server's message
                self._create_policy_management()
                return True
            self._counters.wrote("create")
            log.info("created", extra=kv(type=obj_type, fq_name=name, uuid=created.get("uuid"),
                                         complete=step.complete))
            self._actual.set(key, created)
        elif step.action == "update":
            return self._update(key, step)
        else:
            try:
                self._client.delete(obj_type, step.uuid)
            except NotFound:
                pass
            except Conflict as exc:
                refused = self._referred.pop(key, 0) + 1
                if refused <= _REFERRED_RETRIES:
                    self._referred[key] = refused
                    raise  # temporary: retried after the key's backoff
                self.defer(key, f"still referred to by objects that are not ours: {exc.body.strip()[:200]}")
                return False
            self._referred.pop(key, None)
            self._counters.wrote("delete")
            log.info("deleted", extra=kv(type=obj_type, fq_name=name, uuid=step.uuid))
            self._actual.set(key, None)
        return True

    def _update(self, key: ObjKey, step: Step) -> bool:
        obj_type, fq_name = key
        name = ":".join(fq_name)
        change = step.ref_change
        try:
            if change is None:
                self._client.update(obj_type, step.uuid, step.body)
            elif step.uuid is None:  # listed without one (never by a sound server): nothing to address
                raise VncError(f"{describe_key(key)} has no uuid to send a ref-update to")
            else:
                self._move_refs(key, step.uuid, step.ref_batch or [change], step.complete)
                return True
        except NotFound:
            if not self._gone(obj_type, step.uuid):
                raise  # a 404 about a referred object (deleted by hand): parked, the resync repairs it
            log.info("gone from the config API, will create it again", extra=kv(type=obj_type, fq_name=name))
            self._actual.set(key, None)
            return True
        self._counters.wrote("update")
        log.info("updated", extra=kv(type=obj_type, fq_name=name, fields=",".join(sorted(step.body)),
                                     complete=step.complete))
        self._actual.set(key, {**(self._actual.get(key) or {}), **step.body})
        return True

    def _move_refs(self, key: ObjKey, uuid: str, changes: Sequence[diff.RefUpdate], complete: bool) -> None:
        """One `ref-update` per change, all sent at once (each is one round trip, and none waits
        for another's answer); each that succeeded is recorded, then the first failure raised."""
        def send(change: diff.RefUpdate) -> None:
            self._client.ref_update(key[0], uuid, change.target[0], ref_fq_name=list(change.target[1]),
                                    operation=change.operation, attr=change.attr)
        if len(changes) == 1:
            outcomes: List[Optional[BaseException]] = [_outcome(send, changes[0])]
        else:
            jobs = [gevent.spawn(_outcome, send, change) for change in changes]
            gevent.joinall(jobs)
            outcomes = [job.value for job in jobs]
        for change, failure in zip(changes, outcomes):
            if failure is not None:
                continue
            self._counters.wrote("update")
            log.info("updated", extra=kv(type=key[0], fq_name=":".join(key[1]), fields=change.ref_field,
                                         complete=complete, ref_update=change.operation,
                                         ref=":".join(change.target[1])))
            self._actual.ref_moved(key, change)
        failure = next((f for f in outcomes if f is not None), None)
        if failure is not None:
            raise failure

    def _gone(self, obj_type: str, uuid: Optional[str]) -> bool:
        """Whether the object `uuid` no longer exists (after a 404 that may have meant a ref)."""
        self._counters.reads += 1
        try:
            self._client.read(obj_type, uuid, fields=["fq_name"])
        except NotFound:
            return True
        return False

    def _parent_missing(self, body: Mapping[str, Any]) -> bool:
        """After a 404 on a create: whether it was about the parent `default-policy-management`
        (read back to be sure) rather than about a referenced object, which must not be guessed
        into existence by creating a parent."""
        if body.get("parent_type") != "policy-management":
            return False
        self._counters.reads += 1
        try:
            self._client.read("policy-management", list(DEFAULT_POLICY_MANAGEMENT), fields=["fq_name"])
        except NotFound:
            return True
        return False

    def _create_policy_management(self) -> None:
        """SPEC section 1: create `default-policy-management`, which was found missing."""
        try:
            self._client.create("policy-management", {"fq_name": list(DEFAULT_POLICY_MANAGEMENT)})
        except Conflict:
            return  # created meanwhile by someone else: the create of the child is retried
        self._counters.wrote("create")
        log.info("created", extra=kv(type="policy-management", fq_name=":".join(DEFAULT_POLICY_MANAGEMENT)))

    def _adopt(self, key: ObjKey) -> bool:
        """A create found the name taken: read the object and decide whose it is."""
        obj_type, fq_name = key
        existing = self._client.read(obj_type, list(fq_name))
        self._counters.reads += 2  # fqname-to-id, then the read
        if self._marks.owns(existing):
            log.info("adopted an object of ours found by name", extra=kv(type=obj_type, fq_name=":".join(fq_name)))
            self._actual.set(key, existing)
            return True
        self._actual.found_other(key, existing)
        if obj_type in SHARED_TYPES:
            log.info("using a shared object of another owner", extra=kv(
                type=obj_type, fq_name=":".join(fq_name), owner=self._marks.describe(existing)))
            self._progress.notify(key)
            return True
        return self._conflict(key, existing)

    def _conflict(self, key: ObjKey, existing: Mapping[str, Any]) -> bool:
        """An object of another owner holds one of our names: reported, left alone until a resync
        lists it gone. Always False (the key is deferred)."""
        owner = self._marks.describe(existing)
        self.conflicts[key] = Conflicting(key, owner)
        self.defer(key, f"name taken by an object that is not ours ({owner})")
        return False


def _outcome(send: Callable[[diff.RefUpdate], None], change: diff.RefUpdate) -> Optional[BaseException]:
    """`send(change)`'s failure, or None: a batch's calls all end before any failure is raised."""
    try:
        send(change)
    except Exception as exc:
        return exc
    return None
