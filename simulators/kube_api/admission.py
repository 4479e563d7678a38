"""What the real API server does to a client's write before storing it, for the kinds kube-manager
reads, so that what a client sends over HTTP is refused, defaulted or trimmed as a real cluster would:

- NetworkPolicy (`pkg/apis/networking/v1/defaults.go`, `pkg/apis/networking/validation`): a port's
  protocol defaults to TCP, `policyTypes` to Ingress (plus Egress when egress rules are given);
  protocols other than TCP/UDP/SCTP, ports outside 1-65535, bad port names, `endPort` misuse, peers
  with nothing or an ipBlock beside another selector, CIDRs that do not parse (`10.0.0.0/33`) and
  `except` blocks outside `cidr` are 422 with the real field paths.
- Pod (`pkg/registry/core/pod/strategy.go`): a create drops `status` (phase Pending, class
  BestEffort; the IP arrives through `pods/<name>/status`, as the kubelet writes it), an update keeps
  the stored status.
- ClusterNetworkPolicy status (the published CRD's schema): `status.conditions` required, each a
  metav1.Condition (type, status True/False/Unknown, reason, message, lastTransitionTime required;
  the patterns and bounds of the schema), one per type; a required or unsupported value also
  brings the cause saying the CRD's CEL rules were not checked, as the real server answers.
- Object names: DNS-1123 subdomains (namespaces: labels).

The store's own methods (tests, manifests loaded as a seed) bypass this: they stand for what is
already in etcd, which may have been written by an older server or another tool.
"""
from __future__ import annotations

import ipaddress
import re
from datetime import datetime
from typing import Any, Dict, List, Tuple

from kube_manager.registry import CLUSTER_NETWORK_POLICIES, NAMESPACES, NETWORK_POLICIES, PODS, Resource
from simulators.kube_api.errors import (Cause, bad_value, forbidden, invalid, required, unsupported)
from simulators.kube_api.names import name_causes

PROTOCOLS = ("TCP", "UDP", "SCTP")
POLICY_TYPES = ("Ingress", "Egress")
CONDITION_STATUSES = ("True", "False", "Unknown")
# What the CRD's CEL rules add when the schema's own checks failed first.
CEL_SKIPPED = ("FieldValueInvalid", "<nil>", "Invalid value: null: some validation rules were not checked because "
               "the object was invalid; correct the existing errors to complete validation")
_PORT_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
_REASON = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
_TYPE = (r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
         r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def admit_create(res: Resource, obj: Dict[str, Any]) -> Dict[str, Any]:
    """`obj` as the real server would store it from a POST (server-set fields are the store's)."""
    meta = obj["metadata"]
    for server_set in ("uid", "creationTimestamp", "generation", "deletionTimestamp", "managedFields"):
        meta.pop(server_set, None)
    if res is PODS:
        obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    return _admitted(res, obj)


def admit_update(res: Resource, old: Dict[str, Any], obj: Dict[str, Any]) -> Dict[str, Any]:
    """`obj` as the real server would store it from a PUT of `old`."""
    if res is PODS:
        obj.pop("status", None)
        if "status" in old:
            obj["status"] = old["status"]
    return _admitted(res, obj)


def admit_status(res: Resource, obj: Dict[str, Any]) -> None:
    """Refuse (422) a status the resource's schema does not allow; `obj` is the whole new object."""
    if res is CLUSTER_NETWORK_POLICIES:
        _refuse(res, obj, _condition_causes(obj.get("status")))


def _admitted(res: Resource, obj: Dict[str, Any]) -> Dict[str, Any]:
    name = obj["metadata"]["name"]
    causes: List[Cause] = []
    if res is NAMESPACES:
        if not _DNS_LABEL.match(name) or len(name) > 63:
            causes.append(bad_value("metadata.name", name, "a lowercase RFC 1123 label must consist of lower case "
                                    "alphanumeric characters or '-', and must start and end with an alphanumeric "
                                    "character (e.g. 'my-name',  or '123-abc', regex used for validation is "
                                    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"))
    elif not res.crd:
        causes += name_causes(name)
    if res is NETWORK_POLICIES:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            default_network_policy(spec)
            causes += network_policy_causes(spec)
    _refuse(res, obj, causes)
    return obj


def _refuse(res: Resource, obj: Dict[str, Any], causes: List[Cause]) -> None:
    if causes:
        raise invalid(res.group, res.kind, obj["metadata"]["name"], causes)


def default_network_policy(spec: Dict[str, Any]) -> None:
    for direction in ("ingress", "egress"):
        for _, rule in _objects(spec.get(direction)):
            for _, port in _objects(rule.get("ports")):
                if port.get("protocol") is None:
                    port["protocol"] = "TCP"
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]


def network_policy_causes(spec: Dict[str, Any]) -> List[Cause]:
    causes: List[Cause] = []
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in _objects(spec.get(direction)):
            path = f"spec.{direction}[{i}]"
            for j, port in _objects(rule.get("ports")):
                causes += _port_causes(port, f"{path}.ports[{j}]")
            for j, peer in _objects(rule.get(peers)):
                causes += _peer_causes(peer, f"{path}.{peers}[{j}]")
    types = spec.get("policyTypes") or []
    if len(types) > len(POLICY_TYPES):
        return causes + [bad_value("spec.policyTypes", types, "may not specify more than two policyTypes")]
    causes += [unsupported(f"spec.policyTypes[{i}]", t, POLICY_TYPES) for i, t in enumerate(types)
               if t not in POLICY_TYPES]
    return causes


def _objects(items: Any) -> List[Tuple[int, Dict[str, Any]]]:
    """The objects of a list, with their indices; what is not one the real server refuses while
    decoding the body (a 400 the emulator does not mimic), never a crash here."""
    return [(i, item) for i, item in enumerate(items if isinstance(items, list) else []) if isinstance(item, dict)]


def _port_causes(port: Dict[str, Any], path: str) -> List[Cause]:
    causes: List[Cause] = []
    if port.get("protocol") not in PROTOCOLS:
        causes.append(unsupported(f"{path}.protocol", port.get("protocol"), PROTOCOLS))
    number, end = port.get("port"), port.get("endPort")
    if number is None:
        if end is not None:
            causes.append(bad_value(f"{path}.endPort", end, "may not be specified when `port` is not specified"))
    elif isinstance(number, int):
        if not 1 <= number <= 65535:
            causes.append(bad_value(f"{path}.port", number, "must be between 1 and 65535, inclusive"))
        if end is not None:
            if end < number:
                causes.append(bad_value(f"{path}.endPort", number, "must be greater than or equal to `port`"))
            if not 1 <= end <= 65535:
                causes.append(bad_value(f"{path}.endPort", end, "must be between 1 and 65535, inclusive"))
    else:
        if end is not None:
            causes.append(bad_value(f"{path}.endPort", end, "may not be specified when `port` is non-numeric"))
        if not _port_name_ok(str(number)):
            causes.append(bad_value(f"{path}.port", number, "must contain only alpha-numeric characters "
                                    "(a-z, 0-9), and hyphens (-)"))
    return causes


def _port_name_ok(name: str) -> bool:
    return (0 < len(name) <= 15 and bool(_PORT_NAME.match(name)) and "--" not in name
            and any(c.isalpha() for c in name))


def _peer_causes(peer: Dict[str, Any], path: str) -> List[Cause]:
    given = [key for key in ("podSelector", "namespaceSelector", "ipBlock") if peer.get(key) is not None]
    if not given:
        return [("FieldValueRequired", path, "Required value: must specify a peer")]
    causes: List[Cause] = []
    block = peer.get("ipBlock")
    if isinstance(block, dict):
        causes += _block_causes(block, f"{path}.ipBlock")
        if len(given) > 1:
            causes.append(forbidden(path, "may not specify both ipBlock and another peer"))
    return causes


def _block_causes(block: Dict[str, Any], path: str) -> List[Cause]:
    cidr = block.get("cidr") or ""
    if not cidr:
        return [required(f"{path}.cidr")]
    network = _network(cidr)
    if network is None:
        return [_bad_cidr(f"{path}.cidr", cidr)]
    causes: List[Cause] = []
    for i, text in enumerate(block.get("except") or []):
        inner = _network(text)
        if inner is None:
            causes.append(_bad_cidr(f"{path}.except[{i}]", text))
        elif (inner.version != network.version or inner.network_address not in network
              or network.prefixlen >= inner.prefixlen):
            causes.append(bad_value(f"{path}.except[{i}]", text, "must be a strict subset of `cidr`"))
    return causes


def _network(text: str) -> "ipaddress.IPv4Network | ipaddress.IPv6Network | None":
    if "/" not in text:
        return None
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def _bad_cidr(path: str, value: str) -> Cause:
    return bad_value(path, value, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")


def _condition_causes(status: Any) -> List[Cause]:
    if not isinstance(status, dict):
        return []  # no status at all: the schema does not require one
    conditions = status.get("conditions")
    if conditions is None:
        return [required("status.conditions")]
    causes: List[Cause] = []
    seen = set()
    for i, condition in _objects(conditions):
        path = f"status.conditions[{i}]"
        for field in ("lastTransitionTime", "message", "reason", "status", "type"):
            if field not in condition:
                causes.append(required(f"{path}.{field}"))
        causes += _condition_value_causes(condition, path)
        if condition.get("type") in seen:
            causes.append(("FieldValueDuplicate", path, f'Duplicate value: {{"type":"{condition["type"]}"}}'))
        seen.add(condition.get("type"))
    if any(cause[0] in ("FieldValueRequired", "FieldValueNotSupported") for cause in causes):
        causes.append(CEL_SKIPPED)
    return causes


def _condition_value_causes(condition: Dict[str, Any], path: str) -> List[Cause]:
    """The schema's checks of one condition; their messages name the field from `status` down, as
    the status subresource's validation does."""
    causes: List[Cause] = []
    inner = path[len("status."):]
    kind, reason, when = condition.get("type"), condition.get("reason"), condition.get("lastTransitionTime")
    if isinstance(kind, str) and (len(kind) > 316 or not re.match(_TYPE, kind)):
        causes.append(bad_value(f"{path}.type", kind, f"{inner}.type in body should match '{_TYPE}'"))
    if "status" in condition and condition["status"] not in CONDITION_STATUSES:
        causes.append(unsupported(f"{path}.status", condition["status"], CONDITION_STATUSES))
    if isinstance(reason, str) and (not 1 <= len(reason) <= 1024 or not re.match(_REASON, reason)):
        causes.append(bad_value(f"{path}.reason", reason, f"{inner}.reason in body should match '{_REASON}'"))
    if len(str(condition.get("message", ""))) > 32768:
        causes.append(("FieldValueTooLong", f"{path}.message", "Too long: may not be more than 32768 bytes"))
    if isinstance(when, str) and not _date_time(when):
        causes.append(bad_value(f"{path}.lastTransitionTime", when,
                                f'{inner}.lastTransitionTime in body must be of type date-time: "{when}"'))
    generation = condition.get("observedGeneration")
    if generation is not None and (not isinstance(generation, int) or generation < 0):
        causes.append(bad_value(f"{path}.observedGeneration", generation,
                                f"{inner}.observedGeneration in body should be greater than or equal to 0"))
    return causes


def _date_time(text: str) -> bool:
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return "T" in text
