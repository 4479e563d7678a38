"""Lists of the emulated API server as the real one pages them: every page of a paged list is cut
from a snapshot taken at the first page's resourceVersion (etcd reads at that revision), so that
writes between pages show neither twice nor never; a continue token whose version has been
compacted away (or whose snapshot the emulator no longer keeps) is 410 Expired; a list asking for a
resourceVersion the store has not reached is 504 `ResourceVersionTooLarge` (the real server first
waits 3 s for its cache to catch up; the emulator, whose store is its cache, answers at once)."""
from __future__ import annotations

import base64
import binascii
import json
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Tuple

from kube_manager.registry import Resource
from simulators.kube_api.errors import ApiError, too_large_resource_version
from simulators.kube_api.store import KubeStore
from simulators.kube_api.watches import expired

SNAPSHOTS_KEPT = 16  # paged lists under way at once; an older one's next page is 410
SnapshotKey = Tuple[str, Optional[str], int]  # resource, namespace, resourceVersion
EXPIRED_CONTINUE = ("The provided continue parameter is too old to display a consistent list result. "
                    "You can start a new list without the continue parameter.")


class Lister:
    """Builds list answers of a `KubeStore`, keeping the snapshots of paged lists under way."""

    def __init__(self, store: KubeStore) -> None:
        self.store = store
        self._snapshots: "OrderedDict[SnapshotKey, List[Dict[str, Any]]]" = OrderedDict()

    def answer(self, res: Resource, namespace: Optional[str], limit: Optional[int], token: str,
               resource_version: Optional[int]) -> Dict[str, Any]:
        store = self.store
        if token:
            list_rv, after = _decode_continue(token)
            items = self._snapshots.get((res.name, namespace, list_rv))
            if items is None or list_rv < store.compacted_resource_version:
                raise expired(EXPIRED_CONTINUE)
            items = [i for i in items if _item_key(i) > after]
        else:
            if resource_version is not None and resource_version > store.resource_version:
                raise too_large_resource_version(resource_version, store.resource_version)
            list_rv, items = store.resource_version, store.list(res.name, namespace)
            store.listed(res)  # the watch cache caught up with the cluster to answer
            for item in items:  # built-in kinds' list items carry no kind, as from the real server
                if not res.crd:
                    item.pop("kind", None)
                    item.pop("apiVersion", None)
        meta: Dict[str, Any] = {"resourceVersion": str(list_rv)}
        if limit and len(items) > limit:
            if not token:
                self._keep((res.name, namespace, list_rv), items)
            items = items[:limit]
            meta["continue"] = _encode_continue(list_rv, _item_key(items[-1]))
        return {"kind": res.list_kind, "apiVersion": res.api_version, "metadata": meta, "items": items}

    def _keep(self, key: SnapshotKey, items: List[Dict[str, Any]]) -> None:
        self._snapshots[key] = items
        self._snapshots.move_to_end(key)
        while len(self._snapshots) > SNAPSHOTS_KEPT:
            self._snapshots.popitem(last=False)


def _encode_continue(list_rv: int, after: Tuple[str, str]) -> str:
    raw = json.dumps({"rv": list_rv, "after": list(after)}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_continue(token: str) -> Tuple[int, Tuple[str, str]]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), (str(data["after"][0]), str(data["after"][1]))
    except (ValueError, KeyError, IndexError, TypeError, binascii.Error):
        raise ApiError(400, "BadRequest", "invalid continue token") from None


def _item_key(item: Dict[str, Any]) -> Tuple[str, str]:
    meta = item["metadata"]
    return meta.get("namespace", ""), meta["name"]
