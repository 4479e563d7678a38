"""A valid cluster, one poisoned object beside it, and what "the others still converge" means.

The poisoned object is a valid Namespace, Pod or NetworkPolicy of namespace `zz` (one that uses
every field the translator reads) with the value at one of its paths replaced by an arbitrary
JSON value. Whatever it becomes, translating the cluster must not raise, and:
- when the object is rejected whole, the translation is exactly the valid cluster's, plus its error
  (and the namespace tag a policy's namespace gets even when the policy is refused for its spec);
- otherwise, as long as it stayed in `zz` (so it shares nothing the valid policies resolve against),
  every valid policy's rules are exactly as without it and every valid pod keeps at least its tags
  (a policy in `zz` may reference more labels, and so add tags: never remove one).
"""
from __future__ import annotations

import copy
from typing import Any, Dict, List, Mapping, Tuple

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from kube_manager.translator import translate
from tests.support.builders import HTTP_8080, namespace, pod, policy

VALID_NAMESPACES = [namespace("a", team="x"), namespace("b", team="y")]
VALID_PODS = [pod("a", "web", "10.0.0.1", {"app": "web"}, [("http", 80, "TCP")]),
              pod("a", "db", "10.0.0.2", {"app": "db"}),
              pod("b", "client", "10.0.1.1", {"app": "client"})]
VALID_POLICIES = [
    policy("a", "web-in", {"podSelector": {"matchLabels": {"app": "web"}},
                           "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "client"}},
                                                  "namespaceSelector": {"matchLabels": {"team": "y"}}}],
                                        "ports": [{"port": "http"}]}]}),
    policy("a", "db-in", {"podSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]},
                          "policyTypes": ["Ingress", "Egress"],
                          "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}],
                                       "ports": [{"port": 5432}, {"protocol": "UDP", "port": 53, "endPort": 60}]}],
                          "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}]}]}),
    policy("b", "deny-all", {"podSelector": {}}),
]
CLEAN = translate({"Namespace": VALID_NAMESPACES,
                   "Pod": VALID_PODS,
                   "NetworkPolicy": VALID_POLICIES}).to_dict()  # the valid cluster alone
VALID_KEYS = {("Namespace", "", "a"), ("Namespace", "", "b")} | {
    (kind, m["metadata"]["namespace"], m["metadata"]["name"])
    for kind, group in (("Pod", VALID_PODS), ("NetworkPolicy", VALID_POLICIES)) for m in group}

def _template_pod() -> Dict[str, Any]:
    manifest = pod("zz", "p", "10.9.0.1", {"app": "web"}, HTTP_8080, uid="uid-zz-p")
    manifest["spec"]["hostNetwork"] = False  # read by the translator, so poisoned like the rest
    return manifest


TEMPLATES: Dict[str, Dict[str, Any]] = {
    "Namespace": namespace("zz", uid="uid-zz", team="z"),
    "Pod": _template_pod(),
    "NetworkPolicy": policy("zz", "np", {
        "podSelector": {"matchLabels": {"app": "web"},
                        "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}]},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "client"}},
                               "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists"}]}},
                              {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}],
                     "ports": [{"protocol": "TCP", "port": 80, "endPort": 90}, {"port": "http"}]}],
        "egress": [{"to": [{"namespaceSelector": {}}], "ports": [{"protocol": "UDP", "port": 53}]}]}, uid="uid-zz-np"),
}
# Fields a template does not hold, poisoned too: absent-but-read fields must be shaped as well.
EXTRA_PATHS = [("status", "podIPs"), ("metadata", "deletionTimestamp"), ("spec", "egress", 0, "ports", 0, "endPort"),
               ("spec", "ingress", 0, "to"), ("spec", "podSelecter")]


def paths(value: Any, prefix: Tuple[Any, ...] = ()) -> List[Tuple[Any, ...]]:
    """Every path into `value` (the root included), dict keys and list indices alike."""
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found.extend(paths(child, prefix + (key,)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.extend(paths(child, prefix + (index,)))
    return found


POISON_POINTS = [(kind, path) for kind, template in TEMPLATES.items()
                 for path in paths(template) + [p for p in EXTRA_PATHS if kind != "Namespace"]]

_WORDS = ["Ingress", "Egress", "TCP", "UDP", "http", "In", "Exists", "10.0.0.0/8", "zz", "a", "app", "web", ""]
_FIELDS = ["metadata", "spec", "name", "namespace", "labels", "podSelector", "matchLabels", "ingress",
           "from", "ports", "port", "ipBlock", "cidr", "containers", "containerPort", "podIP"]
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 64, 2 ** 64) | st.floats() | st.text(max_size=6)
    | st.sampled_from(_WORDS),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(_FIELDS) | st.text(max_size=4), children, max_size=3),
    max_leaves=8)


def poisoned(kind: str, path: Tuple[Any, ...], value: Any) -> Any:
    """The template of `kind` with `value` at `path` (the whole object when the path is empty)."""
    return poison_at(TEMPLATES[kind], path, value)


def poison_at(template: Any, path: Tuple[Any, ...], value: Any) -> Any:
    """A copy of `template` with `value` at `path` (the whole object when the path is empty)."""
    if not path:
        return value
    manifest = copy.deepcopy(template)
    parent = manifest
    for step in path[:-1]:
        if isinstance(parent, dict):
            parent = parent.setdefault(step, {})
        else:
            parent = parent[step] if isinstance(step, int) and step < len(parent) else None
        if not isinstance(parent, (dict, list)):
            return manifest  # the path runs through a scalar: nothing to put
    last = path[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(last, int) and last < len(parent):
        parent[last] = value
    return manifest


POISONS = st.sampled_from(POISON_POINTS).flatmap(
    lambda point: JSON_VALUES.map(lambda value: (point[0], poisoned(point[0], point[1], value))))


def identify(kind: str, manifest: Any) -> Tuple[str, str, str]:
    """(kind, namespace, name) as the translator reports an object it cannot read."""
    metadata = manifest.get("metadata") if isinstance(manifest, dict) else None
    metadata = metadata if isinstance(metadata, dict) else {}
    name = str(metadata.get("name") or "")
    if kind == "Namespace":
        return (kind, "", name)
    return (kind, str(metadata.get("namespace") or "default"), name)


def cluster_with(kind: str, manifest: Any) -> Dict[str, List[Any]]:
    """The valid cluster plus the poisoned object, by kind (as `translate()` takes them)."""
    groups = {"Namespace": list(VALID_NAMESPACES), "Pod": list(VALID_PODS), "NetworkPolicy": list(VALID_POLICIES)}
    groups[kind].append(manifest)
    return groups


def _owned_by_valid_policies(result: Mapping[str, Any]) -> Dict[str, Any]:
    return {obj["fq_name"][-1]: obj for key in ("firewall_rules", "firewall_policies") for obj in result[key]
            if obj["fq_name"][-1].startswith(("k8s-a-", "k8s-b-"))}


def _without_errors(result: Mapping[str, Any]) -> Dict[str, Any]:
    return {key: value for key, value in result.items() if key != "errors"}


def assert_others_converge(kind: str, manifest: Any, result: Mapping[str, Any], clean: Mapping[str, Any]) -> None:
    """`result` (the cluster with the poisoned object) against `clean` (the valid cluster alone);
    see the module docstring."""
    key = identify(kind, manifest)
    if key in VALID_KEYS:
        return  # it replaced a valid object: a legitimate change, not one to compare
    reasons = [e["reason"] for e in result["errors"] if (e["kind"], e["namespace"], e["name"]) == key]
    assert [e for e in result["errors"] if (e["kind"], e["namespace"], e["name"]) != key] == list(clean["errors"])
    whole = rejected_whole(kind, key, result)
    if whole:
        assert reasons, f"{key} rejected without a reason"
        remains = _without_errors(result)
        if kind == "NetworkPolicy":  # a policy rejected for its spec still makes its namespace known (SPEC 8)
            remains["tags"] = [t for t in remains["tags"] if t["fq_name"] != [f"namespace={key[1]}"]]
        assert remains == _without_errors(clean)
        return
    if key[1] != "zz" and kind != "Namespace":
        return  # it moved into a namespace the valid policies resolve against
    assert _owned_by_valid_policies(result) == _owned_by_valid_policies(clean)
    tags = {(w["namespace"], w["name"]): (w["ip"], set(w["tags"])) for w in result["workloads"]}
    for workload in clean["workloads"]:
        ip, found = tags[(workload["namespace"], workload["name"])]
        assert ip == workload["ip"] and found >= set(workload["tags"])


def rejected_whole(kind: str, key: Tuple[str, str, str], result: Mapping[str, Any]) -> bool:
    """Whether the object was refused as a whole (a pod or namespace always is; a policy when
    its metadata, own selector or policyTypes are bad, or reading it failed)."""
    reasons = [e["reason"] for e in result["errors"] if (e["kind"], e["namespace"], e["name"]) == key]
    if kind != "NetworkPolicy":
        return bool(reasons)
    return any(r.endswith("rejected whole") or not r.startswith("spec") for r in reasons)


def fuzz(examples: int) -> settings:
    """Settings of the fuzz tests: a few seconds each, no per-example deadline (a loaded machine)."""
    return settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])
