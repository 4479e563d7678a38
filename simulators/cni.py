"""An emulated Contrail CNI: gives each pod of the emulated API server its VM and VMI.

On a real node the Contrail CNI (with the vrouter agent) creates, for every pod, a virtual-machine
whose uuid is the pod uid and a virtual-machine-interface on the pod network. kube-manager finds a
pod's VMIs through that VM to tag them (SPEC section 2). In the demo mode and the tests there is no
node, so this module plays that part against the config API, through the same REST client the
daemon uses: subscribe `on_event` to the emulator's store (`KubeStore.add_listener`) and every pod
added gets its VM and VMI (after `delay` seconds, to show a late CNI), every pod deleted loses them.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Sequence

import gevent
import gevent.lock

from kube_manager.observability.logging_setup import kv
from vnc_client.errors import Conflict, NotFound
from vnc_client.schema import DEFAULT_PROJECT

log = logging.getLogger(__name__)

DEFAULT_POD_NETWORK = DEFAULT_PROJECT + ["k8s-default-pod-network"]


class CniApi(Protocol):
    """The config API calls the emulated CNI makes (vnc_client.client.VncClient fits)."""

    def create(self, obj_type: str, body: Mapping[str, Any]) -> Dict[str, Any]: ...

    def read(self, obj_type: str, ident: Any, *, fields: Optional[Sequence[str]] = None) -> Dict[str, Any]: ...

    def delete(self, obj_type: str, ident: Any) -> None: ...


def instance_name(pod: Mapping[str, Any]) -> str:
    """`<pod name>__<pod uid>`, as the real kube-manager names a pod's VM and VMI."""
    meta = pod.get("metadata") or {}
    return f"{meta.get('name', '')}__{meta.get('uid', '')}"


class CniEmulator:
    """Creates and deletes pods' VMs and VMIs in the config API; see the module docstring."""

    def __init__(self, client: CniApi, *, network: Sequence[str] = DEFAULT_POD_NETWORK, delay: float = 0.0,
                 spawn_later: Callable[..., Any] = gevent.spawn_later) -> None:
        self._client = client
        self.network = list(network)
        self.delay = delay
        self._spawn_later = spawn_later
        self._network_ready = False
        self._network_lock = gevent.lock.Semaphore()
        self.attached: Dict[str, str] = {}  # pod uid -> VMI uuid
        self.failures: List[str] = []

    def on_event(self, resource: str, event_type: str, obj: Dict[str, Any]) -> None:
        """A `KubeStore` listener: attach added pods (maybe late), detach deleted ones."""
        if resource != "pods":
            return
        if event_type == "ADDED":
            self._spawn_later(self.delay, self._safely, self.attach, obj)
        elif event_type == "DELETED":
            self._spawn_later(0, self._safely, self.detach, obj)

    def attach(self, pod: Mapping[str, Any]) -> str:
        """Create the pod's VM (uuid = pod uid) and one VMI on the pod network; idempotent.
        Returns the VMI uuid."""
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        if not uid:
            raise ValueError("a pod without metadata.uid cannot get a VM")
        self._ensure_network()
        name = instance_name(pod)
        try:
            vm_uuid = self._client.create("virtual-machine", {"fq_name": [name], "uuid": uid})["uuid"]
        except Conflict:
            vm_uuid = uid
        vmi_fq = DEFAULT_PROJECT + [name]
        try:
            vmi = self._client.create("virtual-machine-interface", {
                "fq_name": vmi_fq, "parent_type": "project",
                "virtual_machine_refs": [{"to": [name], "uuid": vm_uuid}],
                "virtual_network_refs": [{"to": self.network}]})
            vmi_uuid = vmi["uuid"]
        except Conflict:
            vmi_uuid = self._client.read("virtual-machine-interface", vmi_fq)["uuid"]
        self.attached[uid] = vmi_uuid
        log.info("emulated CNI attached pod", extra=kv(pod=name, vm=vm_uuid, vmi=vmi_uuid))
        return vmi_uuid

    def detach(self, pod: Mapping[str, Any]) -> None:
        """Delete the pod's VMI and VM (missing ones are fine)."""
        name = instance_name(pod)
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        for obj_type, ident in (("virtual-machine-interface", DEFAULT_PROJECT + [name]),
                                ("virtual-machine", uid or [name])):
            try:
                self._client.delete(obj_type, ident)
            except NotFound:
                pass
        self.attached.pop(uid, None)
        log.info("emulated CNI detached pod", extra=kv(pod=name))

    def _ensure_network(self) -> None:
        with self._network_lock:  # pods attach concurrently; one of them creates the network
            if self._network_ready:
                return
            try:
                self._client.create("virtual-network", {"fq_name": self.network, "parent_type": "project"})
            except Conflict:
                pass
            self._network_ready = True

    def _safely(self, action: Callable[[Mapping[str, Any]], Any], pod: Mapping[str, Any]) -> None:
        try:
            action(pod)
        except Exception as exc:  # an emulator problem must never take the daemon down
            self.failures.append(f"{instance_name(pod)}: {exc}")
            log.warning("emulated CNI failed", extra=kv(pod=instance_name(pod), error=str(exc)))
