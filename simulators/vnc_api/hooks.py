"""Type-specific behaviour of the embedded server, shaped like the real server's resource classes.

The real contrail-api runs `pre_dbe_alloc`, `pre_dbe_create`, `pre_dbe_update` and `post_dbe_delete`
hooks per resource type (`vnc_cfg_api_server/resources/*.py`). `ResourceHooks` is the same set of
extension points; `tags` and `security` implement the ones kube-manager depends on, and the
virtual-machine-interface rules live here. Hooks raise `ApiError` to refuse a request.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol

from .errors import bad_request
from .store import Ref, RefMap, Store, StoredObject


Undo = List[Callable[[], None]]


@dataclass
class Change:
    """What an update request sets: whole property values and whole ref fields, by field name.

    `added`, when known (a ref-update), holds per field of `refs` only the refs the stored object
    does not have yet; checks of single refs look at `new_refs` so that adding one ref to a long
    list costs one check, not one per ref of the list."""

    props: Dict[str, Any] = field(default_factory=dict)
    refs: Dict[str, Mapping[str, Ref]] = field(default_factory=dict)
    added: Optional[Dict[str, RefMap]] = None

    def new_refs(self, current: StoredObject) -> Dict[str, RefMap]:
        """Per ref field of the change, the refs that `current` does not hold (by target)."""
        if self.added is not None:
            return self.added
        return {f: {u: r for u, r in refs.items() if u not in current.refs.get(f, {})}
                for f, refs in self.refs.items()}


class HookedApi(Protocol):
    """What the write pipelines and the type hooks may ask of the config API that runs them: its
    store, look-ups, and the writes a hook makes itself (a tag's value pool, a rule's tag refs).
    `ConfigApi` (api.py) is the one implementation; naming only this here keeps the pipelines and
    hooks from importing the API that imports them."""

    store: Store

    def resolve_type(self, name: Any, status: int = 404) -> str: ...

    def lookup(self, obj_type: str, fq_name: List[str]) -> Optional[StoredObject]: ...

    def create_internal(self, obj_type: str, body: Dict[str, Any]) -> StoredObject: ...

    def update_internal(self, obj: StoredObject, change: Change) -> None: ...

    def delete_internal(self, obj_type: str, uuid: str) -> None: ...


class ResourceHooks:
    """No-op hooks; subclasses override what their type needs."""

    def pre_alloc(self, api: HookedApi, body: Dict[str, Any]) -> None:
        """Before the fq_name uniqueness check (may rename the object, as tags do)."""

    def pre_create(self, api: HookedApi, obj: StoredObject, undo: Undo) -> None:
        """After parent and refs are resolved and the uuid is set, before the object is stored.
        Side effects (objects created, ids allocated) push their reversal on `undo`."""

    def pre_update(self, api: HookedApi, current: StoredObject, change: Change) -> None:
        """Before a PUT, ref-update or set-tag change is applied to `current`."""

    def post_delete(self, api: HookedApi, obj: StoredObject) -> None:
        """After the object left the store (free ids, delete implicit objects)."""


class VirtualMachineInterfaceHooks(ResourceHooks):
    """A VMI must name its virtual network on create, and gets a MAC address as on the real server."""

    def pre_create(self, api: HookedApi, obj: StoredObject, undo: Undo) -> None:
        if not obj.refs.get("virtual_network_refs"):
            raise bad_request("Virtual Machine Interface must have valide Virtual Network reference")
        macs = obj.props.get("virtual_machine_interface_mac_addresses") or {}
        if not macs.get("mac_address"):
            obj.props["virtual_machine_interface_mac_addresses"] = {"mac_address": [_mac_for(obj.uuid)]}


def _mac_for(uuid: str) -> str:
    """A locally administered MAC derived from the uuid, as the real server's allocator does."""
    digits = uuid.replace("-", "")
    return "02:" + ":".join(digits[i:i + 2] for i in range(0, 10, 2))
