"""The status book's interfaces: what flows into it from upstream, and out of it downstream.

In: the reconciler's progress (`SyncProgress`: which objects' sync states may have changed, with
the read-only view that answers for them, `ObjectStates`; and each pod's tagging state). This is
the one thing of the status book the reconciler knows; it imports nothing else of it.

Out: `PolicyStatusListener`, told each time a policy's (NetworkPolicy or ClusterNetworkPolicy)
state or errors change, from the one place they change (policies.py, `PolicyBook._settle`): what a
Kubernetes Event or a ClusterNetworkPolicy condition is fed from. `PolicyObserver` hears more
from the same place: the record itself at each settling, and whether the reconciler spoke, so that
what it says to Kubernetes (publisher.py) can cite the uid and the generation programmed.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Collection, List, Optional, Protocol, Tuple

if TYPE_CHECKING:
    from kube_manager.records.db import PolicyRecord

Key = Tuple[str, str]  # (namespace, name); ("", name) for a cluster-scoped object
ObjKey = Tuple[str, Tuple[str, ...]]  # a Contrail object: (resource type, fq_name)


class ObjectStates(Protocol):
    """A read-only view of where each Contrail object's write stands (the reconciler publishes
    one: `reconciler.core.SyncStates`)."""

    def state_of(self, key: ObjKey) -> str:
        """`synced`, `pending`, `retrying` or `parked`."""


class SyncProgress(Protocol):
    """Where the reconciler pushes its progress (the status book)."""

    def objects_progressed(self, states: ObjectStates, keys: Optional[Collection[ObjKey]]) -> None:
        """The states of `keys` (of every object, when None) may have changed."""

    def pod_tagged(self, pod: Key, state: str, error: Optional[str] = None) -> None:
        """The tagging state of a pod's VMIs (`error` None: the last one stands)."""


class PolicyStatusListener(Protocol):
    """Told when a policy's state or errors change (policies.py, the one call site)."""

    def policy_status_changed(self, kind: str, key: Key, state: str, errors: List[str],
                              generation: Optional[int]) -> None:
        """`kind` is the Kubernetes kind (`NetworkPolicy`, `ClusterNetworkPolicy`), `key` its
        (namespace, name), `errors` why any part of it was refused (translation and write errors),
        `generation` the `metadata.generation` of the object as last seen (None if not given)."""


class PolicyObserver(Protocol):
    """Told of every settling of a policy's status (policies.py, the one call site), changed or
    not (it keeps what it last heard and acts on differences), and of each policy deleted."""

    def policy_observed(self, record: "PolicyRecord", settled: bool) -> None:
        """`record`'s status was just set; `settled`: its state is the reconciler's word (pushed
        sync states), not left from an earlier generation by a translator flush."""

    def policy_forgotten(self, kind: str, key: Key) -> None:
        """The policy `kind` `key` (the Kubernetes kind, (namespace, name)) was deleted."""
