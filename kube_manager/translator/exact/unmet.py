"""The NetworkPolicies none of whose allows can have a pair (SPEC 14), kept by their services only.

A pair rule meets an egress allow with an ingress allow whose services meet. A policy none of whose
services meets a service of the other direction, of any policy known (its own included), has no
pair: its allows are neither read as items nor filed (`pairs.py`); only its services are kept here.
That is the whole of a cluster whose egress services (say DNS) meet no ingress service (its apps'
ports), and reading every allow of every policy was most of the exact mode's cost there.

What holds here: no service of a policy kept here meets a service of the other direction of any
policy known, read or kept. So a policy that comes with a service meeting one of a kept policy's
wakes it (`meeting`: it is read then), and a policy woken that way meets no policy but the one
that woke it. A policy read stays read while it is not changed, even once what it met is gone.
"""
from __future__ import annotations

from typing import Dict, FrozenSet, Iterable, List, Set, Tuple

from ..bodies import MARK_CACHE_LIMIT
from ..ports import Service
from .items import meet_services

PolicyKey = Tuple[str, str]
Services = Tuple[FrozenSet[Service], FrozenSet[Service]]  # a policy's (egress, ingress) services


class UnmetPolicies:
    """The policies kept unread, by service and direction (0 egress, 1 ingress)."""

    def __init__(self) -> None:
        self._services: Dict[PolicyKey, Services] = {}
        self._by_service: Tuple[Dict[Service, Set[PolicyKey]], Dict[Service, Set[PolicyKey]]] = ({}, {})
        # per direction: a service of the other direction -> the services kept here it meets (few
        # services, met by every policy that comes; cleared when a service comes or goes)
        self._meeting: Tuple[Dict[Service, List[Service]], Dict[Service, List[Service]]] = ({}, {})

    def __contains__(self, key: PolicyKey) -> bool:
        return key in self._services

    def add(self, key: PolicyKey, services: Services) -> None:
        self._services[key] = services
        for direction, found in enumerate(services):
            table = self._by_service[direction]
            for service in found:
                keys = table.get(service)
                if keys is None:
                    keys = table[service] = set()
                    self._meeting[direction].clear()
                keys.add(key)

    def remove(self, key: PolicyKey) -> bool:
        """Forget `key`; whether it was kept here."""
        services = self._services.pop(key, None)
        if services is None:
            return False
        for direction, found in enumerate(services):
            table = self._by_service[direction]
            for service in found:
                keys = table[service]
                keys.discard(key)
                if not keys:
                    del table[service]
                    self._meeting[direction].clear()
        return True

    def meeting(self, services: Services) -> Set[PolicyKey]:
        """The policies kept here with a service that meets one of `services` across directions."""
        found: Set[PolicyKey] = set()
        for direction, others in ((1, services[0]), (0, services[1])):
            table = self._by_service[direction]
            if table:
                for service in others:
                    for met in self._met(direction, service):
                        found |= table[met]
        return found

    def _met(self, direction: int, service: Service) -> List[Service]:
        cache = self._meeting[direction]
        met = cache.get(service)
        if met is None:
            if len(cache) >= MARK_CACHE_LIMIT:
                cache.clear()
            met = cache[service] = [kept for kept in self._by_service[direction]
                                    if meet_services(kept, service) is not None]
        return met


def services_meet(egress: Iterable[Service], ingress: FrozenSet[Service]) -> bool:
    """Whether some egress service meets some ingress one (a policy's own allows can pair)."""
    for out in egress:  # (no generator: asked of every policy, most of one direction only)
        for into in ingress:
            if meet_services(out, into) is not None:
                return True
    return False
