"""A kind defined only here ("Toy", cluster-scoped, `example.com/v1`) that emits Contrail objects:
plugged into a registry of kinds of its own (the product's kinds and it) with a hook for every
layer, to show that a new kind reaches them all with no product file edited (docs/architecture.md,
"Adding a kind").

A toy of size n emits the firewall policy `<cluster>-toy-<name>` in the APS (before the
NetworkPolicies: sequence `0.2`) holding one rule, `<cluster>-toy-<name>-deny`: deny TCP port n
from anywhere to anywhere. A size that is not an integer cannot be read; a size over 10 is kept
but reported.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Mapping, Optional, Set, Tuple

from introspect.listing import Column, ListPage, Snapshot
from kube_manager.handlers.base import Context, Handler, metadata
from kube_manager.kube.kinds import Kind
from kube_manager.records.db import PolicyRecord
from kube_manager.registry import KINDS, PAGE, REACHES_CLUSTER, SOURCE, STATUS, WATCH, KindEntry, Kinds, Resource
from kube_manager.status.policies import PolicyBook
from kube_manager.translator.bodies import DENY, FIREWALL_POLICY, FIREWALL_RULE, FqName, global_fq_name, \
    sequenced_ref
from kube_manager.translator.cluster import TranslatorParts
from kube_manager.translator.kind_source import Emitted
from kube_manager.translator.model import PodInfo
from kube_manager.translator.naming import rule_sequence
from kube_manager.translator.validation import InvalidInput

TOY = "Toy"
TOYS = Resource("toys", TOY, "example.com/v1", namespaced=False)
TOO_BIG = "spec.size: over 10; kept, but reported"
TOY_SEQUENCE = "0.2"
TOY_PAGE_PATH = "/Snh_ToyDatabaseList"

ToyRecords = Dict[str, PolicyRecord]  # by name


def toy(name: str, size: Any) -> Dict[str, Any]:
    return {"apiVersion": TOYS.api_version, "kind": TOY, "metadata": {"name": name}, "spec": {"size": size}}


@dataclass(frozen=True)
class ToyEmitted:
    firewall_policy: Optional[FqName]
    rules: Tuple[FqName, ...]
    errors: Tuple[str, ...]
    deny_rules: Tuple[FqName, ...] = ()


class ToySource:
    """The translator's source of toys (a `KindSource`) that renders them at each flush (a
    `PolicySource`), through the translator's parts."""

    kind = TOY

    def __init__(self, parts: TranslatorParts) -> None:
        self._parts = parts
        self.sizes: Dict[str, int] = {}
        self._dirty: Set[str] = set()
        self._emitted: Dict[str, ToyEmitted] = {}

    def identity(self, manifest: Any) -> Tuple[str, str]:
        return "", str(manifest.get("metadata", {}).get("name") or "")

    def upsert(self, manifest: Mapping[str, Any]) -> Tuple[str, str]:
        name = manifest["metadata"]["name"]
        size = manifest.get("spec", {}).get("size")
        if not isinstance(size, int) or isinstance(size, bool):
            raise InvalidInput(f"spec.size: {size!r} is not an integer")
        self.sizes[name] = size
        self._dirty.add(name)
        return "", name

    def remove(self, namespace: str, name: str) -> None:
        if self.sizes.pop(name, None) is not None:
            self._dirty.add(name)

    def status(self, namespace: str, name: str) -> Optional[Emitted]:
        return self._emitted.get(name)

    def errors(self) -> Iterator[Dict[str, str]]:
        for name, size in self.sizes.items():
            if size > 10:
                yield {"kind": TOY, "namespace": "", "name": name, "reason": TOO_BIG}

    def flush(self) -> None:
        parts, cluster = self._parts, self._parts.bodies.cluster_name
        for name in sorted(self._dirty):
            policy, rule = global_fq_name(f"{cluster}-toy-{name}"), global_fq_name(f"{cluster}-toy-{name}-deny")
            size = self.sizes.get(name)
            if size is None:
                parts.aps_refs.discard(policy)
                parts.store.drop(FIREWALL_POLICY, policy)
                parts.store.drop(FIREWALL_RULE, rule)
                self._emitted.pop(name, None)
            else:
                any_end = parts.bodies.any_endpoint
                parts.store.put(FIREWALL_RULE, rule, parts.bodies.rule(
                    rule, DENY, parts.bodies.service(("tcp", size, size)), any_end, any_end))
                body = parts.bodies.firewall_policy(policy, [sequenced_ref(rule, rule_sequence(0))])
                parts.store.put(FIREWALL_POLICY, policy, body)
                parts.aps_refs.set(policy, TOY_SEQUENCE, body["fq_name"])
                self._emitted[name] = ToyEmitted(policy, (rule,), (TOO_BIG,) if size > 10 else ())
        parts.log.policies_touched(TOY, (("", name) for name in self._dirty))
        self._dirty.clear()

    def pod_changed(self, old: Optional[PodInfo], new: Optional[PodInfo]) -> None:
        """A toy selects no pod."""

    def namespace_relabelled(self) -> None:
        """A toy selects no namespace."""


class ToyHandler(Handler):
    """Writes the toys' records, then gives every event to the translator's source."""

    kind = TOY

    def __init__(self, context: Context, records: ToyRecords) -> None:
        super().__init__(context)
        self.records = records

    def key(self, obj: Mapping[str, Any]) -> Tuple[str, str]:
        return "", str(metadata(obj).get("name") or "")

    def upsert(self, obj: Dict[str, Any]) -> None:
        name = self.key(obj)[1]
        if name not in self.records:
            self.records[name] = PolicyRecord(str(metadata(obj).get("uid") or ""), "", name)
        super().upsert(obj)

    def delete(self, obj: Dict[str, Any]) -> None:
        self.records.pop(self.key(obj)[1], None)
        super().delete(obj)


class ToyBook(PolicyBook[str, PolicyRecord]):
    """The toys' status, by name."""

    kind = TOY

    def record_key(self, key: Tuple[str, str]) -> str:
        return key[1]

    def _identity(self, name: str) -> Tuple[str, str]:
        return "", name


def toy_page(records: ToyRecords) -> ListPage:
    def rows(snapshot: Snapshot) -> List[Dict[str, Any]]:
        return [{"name": name, "firewall_policy": list(record.firewall_policy), "rules": list(record.rules),
                 "state": record.state, "errors": list(record.errors)} for name, record in sorted(records.items())]
    return ListPage(TOY_PAGE_PATH, "Toys", "toys", ("name", "firewall_policy", "rules", "state", "errors"),
                    (Column("name", "name"), Column("rules", "rules", "list"), Column("state", "sync state", "state"),
                     Column("errors", "errors", "errors")), (), rows, "Each toy and what it emits.", "Kubernetes")


def kinds_with_toys() -> Tuple[Kinds, ToyRecords]:
    """The product's kinds and the toy, with each layer's hook of the toy; and the toys' records
    (what its handler writes, its book keeps the status of and its page shows)."""
    records: ToyRecords = {}
    kinds = Kinds(list(KINDS) + [KindEntry(TOYS, REACHES_CLUSTER)])
    kinds.register(TOY, WATCH, Kind(TOYS, lambda api: None, lambda obj: obj, lambda obj: None,
                                    lambda context: ToyHandler(context, records)))
    kinds.register(TOY, SOURCE, ToySource)
    kinds.register(TOY, STATUS, lambda parts: ToyBook(parts, records))
    kinds.register(TOY, PAGE, toy_page(records))
    return kinds, records
