"""Pod tagging: the tags a pod must carry go on every VMI of its virtual machine (SPEC section 2).

Contrail's CNI names a pod's virtual-machine after the pod uid (uuid = uid) and hangs the pod's
virtual-machine-interfaces (VMIs) on it. kube-manager does not own VMIs; it only sets tags on them
with `POST /set-tag` (`is_global: true`), one call per VMI carrying every change at once: single-valued
types are set or removed, the multi-valued `label` type gets `add_values` / `delete_values`.

To keep the request count at the minimum, the VMIs and their current tags come from one listing (in
pages) at start and at each resync (`VmiIndex.load`); only a pod the listing did not know costs a
read of its VM (and of a VMI the listing did not have). A pod whose VM or VMI does not exist yet (the CNI has not run)
is shown as `no-vm` and retried with backoff. Tags that are not ours are never removed from a VMI:
only tags we own or want are managed. A pod on the node's network (`spec.hostNetwork`) never gets a
VM from the CNI: its handler records that, and it is left alone. A label tag that a
ClusterNetworkPolicy tier deny rule in the config API still uses is kept (the pod's new tags are
added at once) until the tier deny rules are written as desired, then dropped (tiers.py).

A pod's tagging state (shown as its VMI state) is decided by `PodTagger` alone and pushed downstream
to the status book (`SyncProgress.pod_tagged`), which writes it into the pod's record; the tagger
reads it back from there (`settled`) to tell convergence.
"""
from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from typing import (AbstractSet, Any, Callable, Dict, FrozenSet, Iterable, Iterator, List, Mapping, NamedTuple,
                    Optional, Protocol, Sequence, Set, Tuple)

from kube_manager.records.db import HOST_NETWORK, NO_VM, PENDING, RETRYING, SYNCED, Database, Key
from kube_manager.observability.logging_setup import kv
from kube_manager.status.protocol import SyncProgress
from kube_manager.translator.published import DesiredState
from vnc_client.errors import NotFound

from .compare import own_copy, tag_key
from .diff import ObjKey, Progress, View
from .multimap import Multimap

log = logging.getLogger(__name__)

VMI = "virtual-machine-interface"
LABEL_TYPE = "label"     # the multi-valued predefined tag type
POD = "pod"              # the first part of every pod's work-queue key


class VmiApi(Protocol):
    """The part of the config API client pod tagging needs."""

    def list_pages(self, obj_type: str, page_limit: Optional[int], *, detail: bool = False,
                   fields: Optional[Sequence[str]] = None,
                   exclude_hrefs: bool = False) -> Iterator[List[Dict[str, Any]]]: ...

    def read(self, obj_type: str, ident: Any, *, fields: Optional[Sequence[str]] = None) -> Dict[str, Any]: ...

    def set_tags(self, obj_type: str, obj_uuid: str,
                 changes: Mapping[str, Optional[Mapping[str, Any]]]) -> None: ...


class PodKey(NamedTuple):
    """A pod's work-queue key, of its own type so that the reconciler hands it to the pod handler.
    Shaped as an object key, `("pod", (namespace, name))`, so that both kinds sort together."""

    kind: str
    pod: Key


def pod_key(namespace: str, name: str) -> PodKey:
    return PodKey(POD, (namespace, name))


def _split(tag: str) -> Tuple[str, str]:
    tag_type, _, value = tag.partition("=")
    return tag_type, value


def _global_tags(body: Mapping[str, Any]) -> Set[str]:
    """The global tags ("type=value") of a VMI body's `tag_refs`."""
    return {ref["to"][0] for ref in body.get("tag_refs") or []
            if isinstance(ref, dict) and len(ref.get("to") or []) == 1}


def _vm_uuid(body: Mapping[str, Any]) -> Optional[str]:
    for ref in body.get("virtual_machine_refs") or []:
        if isinstance(ref, dict) and ref.get("uuid"):
            return ref["uuid"]
    return None


@dataclass
class VmiIndex:
    """VMIs by VM uuid, with the global tags each one carries, as far as we know."""

    tags: Dict[str, AbstractSet[str]] = field(default_factory=dict)  # vmi uuid -> tags (shared, read-only)
    by_vm: Multimap[str, str] = field(default_factory=Multimap)    # vm uuid -> vmi uuids
    vm_of: Dict[str, str] = field(default_factory=dict)            # vmi uuid -> vm uuid
    by_tag: Dict[str, Set[str]] = field(default_factory=dict)      # tag -> vmi uuids
    names: Dict[str, str] = field(default_factory=dict)            # vmi uuid -> fq_name, for logs
    # Equal tag sets as one frozenset of interned tags: VMIs mostly carry the same few tags, and a
    # set of strings decoded anew per VMI was most of the index's memory on a large cluster.
    _tag_sets: Dict[FrozenSet[str], FrozenSet[str]] = field(default_factory=dict, repr=False)

    def load(self, pages: Iterable[Iterable[Mapping[str, Any]]], kept: Callable[[str], bool]) -> int:
        """Replace the index with a listing of every VMI, a page at a time; a known VMI `kept`
        (written since the listing started) keeps what we know of it. Returns the VMIs listed."""
        listed: Set[str] = set()
        for page in pages:
            for body in page:
                uuid = body.get("uuid")
                if not uuid:
                    continue
                listed.add(uuid)
                known = uuid in self.tags
                if known and kept(uuid):
                    continue
                vm, tags, name = _vm_uuid(body), _global_tags(body), ":".join(body.get("fq_name") or ())
                if known and self.tags[uuid] == tags and self.vm_of.get(uuid) == vm and self.names[uuid] == name:
                    continue  # as we knew it: nothing of the listing is kept
                # the uuids as copies of their own: nothing of the listing outlives it
                self.put(own_copy(uuid), own_copy(vm), tags, name)
        for uuid in [u for u in self.tags if u not in listed and not kept(u)]:
            self.drop(uuid)
        for tag in [t for t, vmis in self.by_tag.items() if not vmis]:
            del self.by_tag[tag]
        self._tag_sets.clear()
        self._tag_sets.update((tags, tags) for tags in map(frozenset, self.tags.values()))  # the same sets
        return len(listed)

    def put(self, vmi: str, vm: Optional[str], tags: AbstractSet[str], name: str = "") -> None:
        name = name or self.names.get(vmi, "")
        self.drop(vmi)
        self.names[vmi] = name
        shared = frozenset(map(sys.intern, tags))
        shared = self.tags[vmi] = self._tag_sets.setdefault(shared, shared)
        for tag in shared:
            self.by_tag.setdefault(tag, set()).add(vmi)
        if vm:
            self.vm_of[vmi] = vm
            self.by_vm.add(vm, vmi)

    def drop(self, vmi: str) -> None:
        self.names.pop(vmi, None)
        for tag in self.tags.pop(vmi, ()):
            self.by_tag.get(tag, set()).discard(vmi)
        vm = self.vm_of.pop(vmi, None)
        if vm is not None:
            self.by_vm.discard(vm, vmi)

    def vmis_of(self, vm: str) -> List[str]:
        return sorted(self.by_vm.get(vm))


def tag_changes(current: AbstractSet[str], desired: AbstractSet[str], managed: Callable[[str], bool],
                skip: AbstractSet[str] = frozenset()) -> Dict[str, Optional[Dict[str, Any]]]:
    """The `set-tag` changes that turn `current` into `desired` on one VMI.

    Tags for which `managed` is false (not ours) are never removed. Tags in `skip` (not creatable yet)
    are neither added nor counted as wanted, so that an old value is not dropped for nothing.
    """
    wanted = desired - skip
    skipped_types = {_split(t)[0] for t in skip if _split(t)[0] != LABEL_TYPE}
    changes: Dict[str, Optional[Dict[str, Any]]] = {}
    by_type: Dict[str, Set[str]] = {}
    for tag in wanted:
        tag_type, value = _split(tag)
        by_type.setdefault(tag_type, set()).add(value)
    for tag_type, values in by_type.items():
        if tag_type == LABEL_TYPE:
            continue
        have = {_split(t)[1] for t in current if _split(t)[0] == tag_type}
        if have != values:
            changes[tag_type] = {"is_global": True, "value": sorted(values)[0]}
    for tag in sorted(current - desired):
        tag_type, _value = _split(tag)
        if (tag_type != LABEL_TYPE and tag_type not in by_type and tag_type not in skipped_types
                and managed(tag)):
            changes[tag_type] = None
    add = sorted(_split(t)[1] for t in wanted - current if _split(t)[0] == LABEL_TYPE)
    delete = sorted(_split(t)[1] for t in current - desired
                    if _split(t)[0] == LABEL_TYPE and managed(t) and t not in skip)
    if add or delete:
        changes[LABEL_TYPE] = {"is_global": True, "add_values": add, "delete_values": delete}
    return changes


def apply_changes(current: AbstractSet[str], changes: Mapping[str, Optional[Mapping[str, Any]]]) -> Set[str]:
    """The tags a VMI carries after `changes` (what the server does with a set-tag)."""
    result = set(current)
    for tag_type, change in changes.items():
        if tag_type == LABEL_TYPE and change is not None:
            result -= {f"{LABEL_TYPE}={v}" for v in change.get("delete_values") or []}
            result |= {f"{LABEL_TYPE}={v}" for v in change.get("add_values") or []}
            continue
        result = {t for t in result if _split(t)[0] != tag_type}
        if change is not None:
            result.add(f"{tag_type}={change['value']}")
    return result


@dataclass
class PodOutcome:
    """What happened to one pod: `done` (nothing left, or waiting on `pending` tags being created),
    or not (retry with backoff: no VM yet, or tags that failed)."""

    done: bool
    pending: List[ObjKey] = field(default_factory=list)
    blocked: List[ObjKey] = field(default_factory=list)
    written: List[str] = field(default_factory=list)  # VMIs tagged (one set-tag each)
    holding: List[ObjKey] = field(default_factory=list)  # tier deny objects old tags are kept for


class TaggerView(View, Protocol):
    """`diff.View`, and which tags a pod's VMI may lose (view.py's `KeyView` fits)."""

    def managed_tag(self, tag: str) -> bool:
        """Ours, or wanted by us (another cluster's are left alone)."""

    def tier_hold(self, removed: AbstractSet[str]) -> Tuple[Set[str], List[ObjKey]]:
        """Of the tags a pod is to lose, those kept for now, and until what is written (tiers.py)."""


class PodTagger:
    """Brings the tags of one pod's VMIs to the pod's desired tags: the translator's, read from the
    published desired state (`DesiredState.pod_tags`), for the pods Kubernetes knows (`db.pods`:
    their uid, and whether they are on the node's network)."""

    def __init__(self, client: VmiApi, db: Database, desired: DesiredState, view: TaggerView,
                 status: SyncProgress) -> None:
        self._client = client
        self._db = db
        self._desired = desired
        self._status = status  # where the tagging states go (the status book writes them)
        self._view = view
        self._managed = view.managed_tag
        self.index = VmiIndex()

    def vmi_pages(self, page_limit: int) -> Iterator[List[Dict[str, Any]]]:
        """A listing of every VMI in pages, for `load`."""
        # A plain listing (uuid, fq_name and these fields): a VMI's other fields are never read.
        return self._client.list_pages(VMI, page_limit, fields=["virtual_machine_refs", "tag_refs"], exclude_hrefs=True)

    def load(self, pages: Iterable[List[Dict[str, Any]]], kept: Callable[[str], bool]) -> None:
        """Refresh the index with a listing of every VMI (`vmi_pages`)."""
        log.info("listed VMIs", extra=kv(count=self.index.load(pages, kept)))

    def _tags(self, key: Key) -> Tuple[str, ...]:
        """The tags the pod is to carry (none for a pod the translator rejected)."""
        return self._desired.pod_tags(key) or ()

    def untaggable(self, key: Key) -> bool:
        """A host-network pod: nothing to tag, nothing to wait for."""
        record = self._db.pods.get(key)
        return record is not None and record.host_network

    def missing(self, key: Key) -> Optional[List[str]]:
        """The tags the pod is to carry that some VMI of it lacks (all, when none is known)."""
        record = self._db.pods.get(key)
        if record is None:
            return None
        vmis = self.index.vmis_of(record.uid)
        return [t for t in self._tags(key) if not vmis or any(t not in self.index.tags[v] for v in vmis)]

    def needs_work(self, key: Key) -> bool:
        """Whether the pod's known VMIs differ from its desired tags (or none are known)."""
        record = self._db.pods.get(key)
        if record is None:
            return False
        vmis = self.index.vmis_of(record.uid)
        desired = set(self._tags(key))
        # a VMI carrying exactly the desired tags needs no change (the common case, decided at C speed)
        return not vmis or any(self.index.tags[v] != desired and tag_changes(self.index.tags[v], desired, self._managed)
                               for v in vmis)

    def referrers(self, tag: str) -> List[PodKey]:
        """Pods whose VMIs still carry `tag` although they should not (what blocks its delete)."""
        uid_to_key = {r.uid: k for k, r in self._db.pods.items()}
        result = []
        for vmi in self.index.by_tag.get(tag, ()):
            key = uid_to_key.get(self.index.vm_of.get(vmi, ""))
            if key is not None and tag not in self._tags(key):
                result.append(pod_key(*key))
        return result

    def settled(self, key: Key) -> bool:
        """Whether the pod holds convergence no more: tagged, or nothing to tag."""
        record = self._db.pods.get(key)
        return record is None or record.vmi_state in (SYNCED, HOST_NETWORK)

    def mark(self, key: Key, state: str, error: str = "") -> None:
        """The tagging state of pod `key`, when decided outside a sync (a failed or parked try, or a
        resync that found its VMIs as they should be)."""
        if key in self._db.pods:
            self._status.pod_tagged(key, state, error)

    def sync(self, key: Key) -> PodOutcome:
        """One attempt at tagging the pod `key`; raises the client's errors for the caller to retry."""
        record = self._db.pods.get(key)
        if record is None or record.host_network:
            return PodOutcome(done=True)  # deleted (the CNI removes its VMIs), or no VMI to tag
        vmis = self.index.vmis_of(record.uid) or self._discover(record.uid)
        if not vmis:
            self._status.pod_tagged(key, NO_VM, f"no virtual-machine {record.uid} with an interface in the config API yet")
            return PodOutcome(done=False)
        waiter = pod_key(*key)
        desired = set(self._tags(key))
        outcome = PodOutcome(done=True)
        missing = {t for t in desired if not self._view.present(tag_key(t))}
        for tag in sorted(missing):
            state = self._view.progress(waiter, tag_key(tag))
            (outcome.pending if state is Progress.PENDING else outcome.blocked).append(tag_key(tag))
        if outcome.pending:
            self._status.pod_tagged(key, PENDING)
            return outcome
        kept, outcome.holding = self._view.tier_hold({t for v in vmis for t in self.index.tags[v] - desired
                                            if _split(t)[0] == LABEL_TYPE and self._managed(t)})
        gone = []
        for vmi in vmis:
            changes = tag_changes(self.index.tags[vmi], desired, self._managed, skip=missing | kept)
            if not changes:
                continue
            try:
                self._client.set_tags(VMI, vmi, changes)
            except NotFound:
                # The CNI removed it first (the pod deleted or its interface replaced): an interface
                # that is gone needs no tag. Not a refused write: the pod is looked at again.
                self.index.drop(vmi)
                gone.append(vmi)
                continue
            outcome.written.append(vmi)
            self.index.put(vmi, record.uid, apply_changes(self.index.tags[vmi], changes))
            log.info("tagged pod VMI", extra=kv(pod=f"{key[0]}/{key[1]}", fq_name=self.index.names.get(vmi, ""),
                                                 uuid=vmi, changes=",".join(sorted(changes))))
        if gone:
            log.info("pod VMI gone before it was tagged; looking again", extra=kv(
                pod=f"{key[0]}/{key[1]}", uuids=",".join(gone)))
            self._status.pod_tagged(key, RETRYING, "an interface was removed while being tagged; "
                                    "looking for the pod's interfaces again")
            outcome.done = False
        elif outcome.blocked:
            self._status.pod_tagged(key, RETRYING, "tags not created yet: " + ", ".join(
                sorted(":".join(k[1]) for k in outcome.blocked)))
            outcome.done = False
        elif outcome.holding:
            self._status.pod_tagged(key, PENDING, "keeps " + ", ".join(sorted(kept))
                                    + " until the tier deny rules using them are written")
        else:
            self._status.pod_tagged(key, SYNCED, "")
        return outcome

    def _discover(self, vm_uuid: str) -> List[str]:
        """Read the pod's VM (uuid = pod uid) and any of its VMIs the index does not know."""
        try:
            vm = self._client.read("virtual-machine", vm_uuid, fields=["virtual_machine_interface_back_refs"])
        except NotFound:
            return []
        for ref in vm.get("virtual_machine_interface_back_refs") or []:
            uuid = ref.get("uuid")
            if uuid and uuid not in self.index.tags:
                try:
                    vmi = self._client.read(VMI, uuid, fields=["tag_refs", "virtual_machine_refs"])
                except NotFound:
                    continue
                self.index.put(uuid, vm_uuid, _global_tags(vmi), ":".join(vmi.get("fq_name") or ()))
        return self.index.vmis_of(vm_uuid)
