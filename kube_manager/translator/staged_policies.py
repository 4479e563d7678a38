"""Staged policies (SPEC 17): read, validated and kept apart, never emitted.

A NetworkPolicy or ClusterNetworkPolicy annotated `contrail-kube-manager/staged: "true"` is parsed
as any other (so its errors are reported) and then kept here instead of in its kind's source: the
source forgets it as it would a deleted policy, so staging an enforced policy takes its objects out
exactly as a delete does, and the reconciler's make-before-break ordering of deletes applies
unchanged. Removing the annotation hands the manifest back to the source, as a create.

Any other value of the annotation is a mistake the operator must see, and never a reason to stop
enforcing: the policy goes to its source as usual and the value is one more of its errors.

`StagedSplit` wraps one policy kind's `KindSource` and is that kind's source in the translator's
`KindTable`; what it keeps is read with `staged()`, as of the last event (staging changes no
object, so there is nothing to flush).
"""
from __future__ import annotations

import copy
import dataclasses
import logging
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple

from kube_manager.plumbing.kvlog import kv

from .bodies import FqName
from .cnp.parse import parse_cnp
from .kind_source import Emitted, Identity, KindSource
from .parsecache import ParseCache
from .policy import parse_policy
from .rejections import describe_object, object_logger

STAGED_ANNOTATION = "contrail-kube-manager/staged"
STAGED_VALUE = "true"

log = logging.getLogger(__name__)

# Reads a policy's manifest as its kind's source would, without recording it: its identity and
# its errors; raises InvalidInput when the policy cannot be identified.
PolicyReader = Callable[[Mapping[str, Any]], Tuple[Identity, Tuple[str, ...]]]


def staged_value(manifest: Any) -> Optional[str]:
    """The annotation's value as written; None when the manifest does not carry it."""
    metadata = manifest.get("metadata") if isinstance(manifest, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(annotations, dict) or STAGED_ANNOTATION not in annotations:
        return None
    return str(annotations[STAGED_ANNOTATION])


def value_problem(value: str) -> str:
    return (f"annotation {STAGED_ANNOTATION}: {value!r} is not {STAGED_VALUE!r}; the policy is "
            f"enforced, not staged")


def enforced(manifest: Mapping[str, Any]) -> Dict[str, Any]:
    """The manifest as it would be once promoted: without the annotation (a copy)."""
    copied = dict(manifest)
    metadata = copy.deepcopy(dict(manifest.get("metadata") or {}))
    annotations = dict(metadata.get("annotations") or {})
    annotations.pop(STAGED_ANNOTATION, None)
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    copied["metadata"] = metadata
    return copied


@dataclass(frozen=True)
class StagedPolicy:
    """One staged policy: its manifest (annotation included) and its errors as translated."""

    kind: str
    namespace: str  # "" for a ClusterNetworkPolicy
    name: str
    manifest: Mapping[str, Any]
    errors: Tuple[str, ...]

    @property
    def uid(self) -> str:
        return str((self.manifest.get("metadata") or {}).get("uid") or "")

    @property
    def generation(self) -> int:
        generation = (self.manifest.get("metadata") or {}).get("generation")
        return generation if isinstance(generation, int) else 0


@dataclass(frozen=True)
class StagedStatus:
    """The status of a staged policy: nothing emitted, its errors as translated."""

    errors: Tuple[str, ...]
    firewall_policy: Optional[FqName] = None
    rules: Tuple[FqName, ...] = ()
    deny_rules: Tuple[FqName, ...] = ()


class StagedSplit:
    """One policy kind's source, with its staged policies kept apart (see the module docstring)."""

    def __init__(self, inner: KindSource, read: PolicyReader) -> None:
        self._inner = inner
        self._read = read
        self.kind = inner.kind
        self._staged: Dict[Identity, StagedPolicy] = {}
        self._problems: Dict[Identity, str] = {}  # enforced, with a misspelt annotation

    def identity(self, manifest: Any) -> Identity:
        return self._inner.identity(manifest)

    def upsert(self, manifest: Mapping[str, Any]) -> Identity:
        value = staged_value(manifest)
        if value == STAGED_VALUE:
            identity, errors = self._read(manifest)  # raises before anything changes
            self._inner.remove(*identity)
            self._problems.pop(identity, None)
            self._staged[identity] = StagedPolicy(self.kind, identity[0], identity[1], manifest, errors)
            return identity
        identity = self._inner.upsert(manifest)
        self._staged.pop(identity, None)
        problem = value_problem(value) if value is not None else None
        if problem is None:
            self._problems.pop(identity, None)
        elif self._problems.get(identity) != problem:
            self._problems[identity] = problem
            object_logger(self.kind, *identity).warning("%s: %s", describe_object((self.kind,) + identity), problem,
                                                        extra=kv(reason=problem))
        return identity

    def remove(self, namespace: str, name: str) -> None:
        self._inner.remove(namespace, name)
        self._staged.pop((namespace, name), None)
        self._problems.pop((namespace, name), None)

    def status(self, namespace: str, name: str) -> Optional[Emitted]:
        key = (namespace, name)
        staged = self._staged.get(key)
        if staged is not None:
            return StagedStatus(staged.errors)
        status = self._inner.status(namespace, name)
        problem = self._problems.get(key)
        if status is None or problem is None:
            return status
        return dataclasses.replace(status, errors=tuple(status.errors) + (problem,))  # type: ignore[type-var]

    def errors(self) -> Iterator[Dict[str, str]]:
        yield from self._inner.errors()
        for (namespace, name), problem in self._problems.items():
            yield {"kind": self.kind, "namespace": namespace, "name": name, "reason": problem}
        for staged in self._staged.values():
            for reason in staged.errors:
                yield {"kind": self.kind, "namespace": staged.namespace, "name": staged.name, "reason": reason}

    def staged(self) -> Mapping[Identity, StagedPolicy]:
        """The staged policies, by (namespace, name): a live read-only view."""
        return self._staged


def split_policy_sources(network_policies: KindSource, cluster_policies: KindSource,
                         cache: ParseCache) -> Tuple[StagedSplit, StagedSplit]:
    """The NetworkPolicy and ClusterNetworkPolicy sources with their staged policies kept apart."""
    def read_network_policy(manifest: Mapping[str, Any]) -> Tuple[Identity, Tuple[str, ...]]:
        policy = parse_policy(manifest, cache)
        return policy.key, policy.errors

    def read_cluster_policy(manifest: Mapping[str, Any]) -> Tuple[Identity, Tuple[str, ...]]:
        policy = parse_cnp(manifest)
        return ("", policy.name), policy.errors

    return StagedSplit(network_policies, read_network_policy), StagedSplit(cluster_policies, read_cluster_policy)


StagedKey = Tuple[str, str, str]  # (kind, namespace, name); namespace "" when cluster-scoped
POLICY_KINDS = ("NetworkPolicy", "ClusterNetworkPolicy")


def staged_key(kind: str, manifest: Mapping[str, Any]) -> StagedKey:
    metadata = manifest.get("metadata") or {}
    namespace = "" if kind == POLICY_KINDS[1] else str(metadata.get("namespace") or "default")
    return kind, namespace, str(metadata.get("name") or "")


def promoted(objects: Mapping[str, Any], keys: Optional[Any] = None) -> Dict[str, List[Mapping[str, Any]]]:
    """Manifests by kind with the staged policies among `keys` (every one when None) enforced, as
    if their annotation were removed; the other staged policies stay staged. A new mapping, the
    manifests not copied unless promoted."""
    result: Dict[str, List[Mapping[str, Any]]] = {kind: list(items) for kind, items in objects.items()}
    for kind in POLICY_KINDS:
        result[kind] = [enforced(m) if staged_value(m) == STAGED_VALUE and (keys is None or staged_key(kind, m) in keys)
                        else m for m in result.get(kind, ())]
    return result


def staged_keys(objects: Mapping[str, Any]) -> List[StagedKey]:
    """The staged policies among manifests by kind, in kind then namespace and name order."""
    return sorted(staged_key(kind, m) for kind in POLICY_KINDS for m in objects.get(kind, ())
                  if staged_value(m) == STAGED_VALUE)
