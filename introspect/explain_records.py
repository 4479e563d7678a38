"""What `/explain` reads of the live DB: the Contrail side from the translator's bodies, the
Kubernetes side from the records, each read only as far as a question needs.

`rule_source` hands the translator's live desired state to a `RuleIndex` (kube_manager/explain/
flow_index.py), which introspect keeps from one question to the next and brings up to date after a
change, told by a `ChangeJournal` (a status book change observer) which objects the translator's
change reports named since; `RecordWorkloads` are the pods as Contrail sees them, read from their
records when a question names them. `RecordsModel` is the Kubernetes reference model over the records as they are when it is
made (one per `db.generation`): it decodes a namespace's policies and a pod's manifest when a
question first needs them, where a model of every manifest would decode the whole cluster after
each change, and it reads each pod's address from its record (the pod handler's copy of the
manifest's `status.podIP`), decoding the manifest only of a pod whose record has none.
"""
from __future__ import annotations

from typing import Any, Collection, Dict, Iterable, Iterator, List, Mapping, Optional, Set, Tuple

from kube_manager.explain.flow_index import ObjKey, RuleSource
from kube_manager.explain.flow_rules import Workload, ip_or_none
from kube_manager.explain.k8s_pods import parse_ip
from kube_manager.explain.k8s_selectors import NAMESPACE_NAME_LABEL, IPAddress, labels_of, object_or_empty
from kube_manager.explain.k8s_semantics import KubernetesModel, Policy, Rejection, compile_namespace, is_staged
from kube_manager.records.db import Database, PodRecord, PolicyRecord, held
from kube_manager.translator import Changes

Key = Tuple[str, str]


def pod_manifest(pod: PodRecord) -> Dict[str, Any]:
    """A pod's manifest, or what its record says of it when it has none."""
    return pod.manifest or {"kind": "Pod", "metadata": {"namespace": pod.namespace, "name": pod.name,
                                                         "uid": pod.uid, "labels": dict(pod.labels)},
                            "status": {"podIP": pod.ip}}


def policy_manifest(record: PolicyRecord, kind: str) -> Dict[str, Any]:
    """A policy's manifest, or what its record says of it when it has none."""
    metadata = {"namespace": record.namespace, "name": record.name, "uid": record.uid} if record.namespace \
        else {"name": record.name, "uid": record.uid}
    return record.manifest or {"kind": kind, "metadata": metadata, "spec": record.spec}


def rule_source(db: Database, cluster_name: str) -> RuleSource:
    """The translator's live bodies and the pods' tags, as a `RuleIndex` reads them: the APS is
    the cluster's (named after it), else the first by fq_name."""
    apses = db.desired.get("application-policy-set", {})
    ordered = [apses[fq] for fq in sorted(apses)]
    aps = next((a for a in ordered if list(a.get("fq_name", []))[-1:] == [cluster_name]),
               ordered[0] if ordered else None)
    return RuleSource(aps, db.desired.get("firewall-policy", {}), db.desired.get("firewall-rule", {}),
                      db.desired.get("address-group", {}),
                      lambda: [pod.tags for pod in db.pods.values()])


class RecordWorkloads(Mapping[Key, Workload]):
    """The pods as Contrail sees them (the tags their VMIs must carry, their IP), read from the
    records when a question names one."""

    def __init__(self, db: Database) -> None:
        self._pods = db.pods

    def __getitem__(self, key: Key) -> Workload:
        pod = self._pods[key]
        return Workload(ip_or_none(pod.ip), frozenset(pod.tags))

    def __iter__(self) -> Iterator[Key]:
        return iter(self._pods)

    def __len__(self) -> int:
        return len(self._pods)


class ChangeJournal:
    """The Contrail objects the translator's change reports named since the index last looked:
    a set of keys, so it never holds more than one entry per object however long nobody asks."""

    def __init__(self) -> None:
        self._touched: Set[ObjKey] = set()

    def translated(self, changes: Changes) -> None:
        """A status book change observer: one report, at each flush."""
        self._touched.update(changes.added)
        self._touched.update(changes.changed)
        self._touched.update(changes.removed)

    def take(self) -> Set[ObjKey]:
        touched, self._touched = self._touched, set()
        return touched


class CompiledNamespaces:
    """Each namespace's compiled NetworkPolicies, kept from one model (one generation) to the next
    with what they were compiled from: each record's name, uid and its manifest and spec as held
    (`held`: set anew, held anew). A namespace none of whose records was set since is neither
    decoded nor compiled again, whatever else changed."""

    def __init__(self) -> None:
        self._kept: Dict[str, Tuple[Tuple[Any, ...], List[Policy], List[Rejection]]] = {}

    def compiled(self, db: Database, namespace: str, keys: Iterable[Key]) -> Tuple[List[Policy], List[Rejection]]:
        """The namespace's policies as the records of `keys` (those still there) now are."""
        records = db.network_policies
        found = [records[key] for key in sorted(keys) if key in records]
        made = tuple((r.name, r.uid, held(r, "manifest"), held(r, "spec")) for r in found)
        kept = self._kept.get(namespace)
        if kept is not None and kept[0] == made:
            return kept[1], kept[2]
        manifests = (policy_manifest(record, "NetworkPolicy") for record in found)
        compiled, rejected = compile_namespace(namespace, [m for m in manifests
                                                           if isinstance(m, dict) and not is_staged(m)])
        self._kept[namespace] = (made, compiled, rejected)
        return compiled, rejected

    def keep_only(self, namespaces: Collection[str]) -> None:
        """Forget the namespaces left out (gone, or without policies now)."""
        for namespace in self._kept.keys() - set(namespaces):
            del self._kept[namespace]


class RecordsModel(KubernetesModel):
    """See the module docstring. `addresses` (IP text -> address) and `namespaces` (compiled
    policies) are the owner's, kept from one model to the next: parsing every pod's IP anew is
    most of a lookup by address, compiling a namespace's policies most of a question."""

    def __init__(self, db: Database, addresses: Dict[str, Optional[IPAddress]],
                 namespaces: Optional[CompiledNamespaces] = None) -> None:
        super().__init__()
        self._db = db
        self._addresses = addresses
        self._compiled = namespaces if namespaces is not None else CompiledNamespaces()
        self._by_namespace: Optional[Dict[str, List[Key]]] = None
        for name, namespace in db.namespaces.items():
            self.namespace_labels[name] = {**labels_of({"labels": dict(namespace.labels)}), NAMESPACE_NAME_LABEL: name}
        # A verdict reads the labels of a pod's namespace only: those of a namespace known by its
        # policies alone are never read.
        for name in {key[0] for key in db.pods}:
            self._known_namespace(name)

    def _pod_manifest(self, key: Key) -> Optional[Mapping[str, Any]]:
        record = self._db.pods.get(key)
        return pod_manifest(record) if record is not None else None

    def _pod_addresses(self) -> Iterable[Tuple[Key, Optional[IPAddress]]]:
        known, fresh = self._addresses, {}
        found = []
        for key, record in self._db.pods.items():
            text = record.ip
            if not text:
                found.append((key, parse_ip(object_or_empty(pod_manifest(record).get("status")).get("podIP"))))
                continue
            address = fresh[text] = known[text] if text in known else parse_ip(text)
            found.append((key, address))
        known.clear()
        known.update(fresh)
        return found

    def _namespaces(self) -> Dict[str, List[Key]]:
        if self._by_namespace is None:
            self._by_namespace = {}
            for key in self._db.network_policies:
                self._by_namespace.setdefault(key[0], []).append(key)
        return self._by_namespace

    def policies(self, namespace: str) -> List[Policy]:
        if namespace not in self._policies:
            self._policies[namespace], self._rejections[namespace] = self._compiled.compiled(
                self._db, namespace, self._namespaces().get(namespace, ()))
        return self._policies[namespace]

    def _namespace_policies(self, namespace: str) -> Iterable[Mapping[str, Any]]:
        records = self._db.network_policies
        manifests = (policy_manifest(records[key], "NetworkPolicy") for key in sorted(self._namespaces().get(namespace, ())))
        return [m for m in manifests if isinstance(m, dict) and not is_staged(m)]

    def _policy_namespaces(self) -> Iterable[str]:
        return [namespace for namespace in self._namespaces() if self._namespace_policies(namespace)]

    def _cluster_policy_manifests(self) -> Iterable[Mapping[str, Any]]:
        records = self._db.cluster_network_policies
        manifests = (policy_manifest(records[name], "ClusterNetworkPolicy") for name in sorted(records))
        return [m for m in manifests if isinstance(m, dict) and not is_staged(m)]
