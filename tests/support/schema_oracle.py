"""The official Contrail schema as an oracle for every body the translator produces.

`contrail-api-client` (test-only) carries the generated schema: each resource class lists its
properties and refs with their xsd types, and each xsd type its fields, array-ness, enums and
ranges. `schema_problems` walks a body against that schema and reports anything the real config
API would not know; `from_dict` must also accept it. The translator tests import
`assert_schema_valid`, `assert_translation_valid`, `run` and the accessors below; the oracle's own
tests are in test_translator_oracle.py, the manifest builders in builders.py.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, Iterable, List, Mapping, Tuple

from vnc_api.gen import resource_client, resource_common, resource_xsd

from kube_manager.translator import translate

CLASS_NAMES = {
    "tag": "Tag",
    "address-group": "AddressGroup",
    "firewall-rule": "FirewallRule",
    "firewall-policy": "FirewallPolicy",
    "application-policy-set": "ApplicationPolicySet",
}
SCALARS = {"string": str, "integer": int, "boolean": bool}
IDENTITY_FIELDS = {"fq_name", "parent_type"}


def _scalar_problems(type_name: str, value: Any, restriction_type: Any, restrictions: Any,
                     path: str) -> List[str]:
    expected = SCALARS.get(type_name)
    if expected is None:
        return [f"{path}: unknown scalar type {type_name}"]
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        return [f"{path}: {value!r} is not {type_name}"]
    if restriction_type == "enum" and restrictions and value not in restrictions:
        return [f"{path}: {value!r} not one of {restrictions}"]
    if restriction_type == "range" and restrictions and not restrictions[0] <= value <= restrictions[1]:
        return [f"{path}: {value!r} outside {restrictions}"]
    return []


def _struct_problems(type_name: str, value: Any, path: str) -> List[str]:
    cls = getattr(resource_xsd, type_name, None)
    if cls is None:
        return [f"{path}: unknown xsd type {type_name}"]
    if not isinstance(value, dict):
        return [f"{path}: expected an object for {type_name}, got {value!r}"]
    problems = [f"{path}.{k}: not a field of {type_name}" for k in value if k not in cls.attr_fields]
    exclusive = [k for k in value if cls.attr_field_type_vals.get(k, {}).get("required") == "exclusive"]
    if len(exclusive) > 1:
        problems.append(f"{path}: more than one exclusive field {exclusive}")
    for field_name, info in cls.attr_field_type_vals.items():
        if field_name not in value:
            if info["required"] == "true":
                problems.append(f"{path}.{field_name}: required by {type_name}")
            continue
        items = value[field_name]
        if info["is_array"]:
            if not isinstance(items, list):
                problems.append(f"{path}.{field_name}: expected a list")
                continue
        else:
            items = [items]
        for i, item in enumerate(items):
            item_path = f"{path}.{field_name}[{i}]" if info["is_array"] else f"{path}.{field_name}"
            if info["is_complex"]:
                problems += _struct_problems(info["attr_type"], item, item_path)
            else:
                problems += _scalar_problems(info["attr_type"], item, info["restriction_type"],
                                             info["restrictions"], item_path)
    return problems


def _ref_problems(cls: type, field_name: str, refs: Any, path: str) -> List[str]:
    if not isinstance(refs, list):
        return [f"{path}: expected a list of refs"]
    attr_type = cls.ref_field_types[field_name][1]
    problems: List[str] = []
    for i, ref in enumerate(refs):
        ref_path = f"{path}[{i}]"
        if not isinstance(ref, dict) or set(ref) - {"to", "attr", "uuid"} or "to" not in ref:
            problems.append(f"{ref_path}: a ref is {{to, attr}}, got {ref!r}")
            continue
        if not isinstance(ref["to"], list) or not all(isinstance(p, str) and p for p in ref["to"]):
            problems.append(f"{ref_path}.to: not an fq_name")
        if attr_type == "None":
            if ref.get("attr") is not None:
                problems.append(f"{ref_path}.attr: must be null for {field_name}")
        else:
            problems += _struct_problems(attr_type, ref.get("attr"), f"{ref_path}.attr")
    return problems


def schema_problems(resource_type: str, body: Mapping[str, Any]) -> List[str]:
    """Everything in `body` the official schema of `resource_type` does not allow."""
    cls = getattr(resource_common, CLASS_NAMES[resource_type])
    problems = [f"{k}: not a field of {resource_type}" for k in body
                if k not in cls.prop_fields | cls.ref_fields | IDENTITY_FIELDS]
    fq_name = body.get("fq_name")
    if not isinstance(fq_name, list) or not fq_name or not all(isinstance(p, str) and p for p in fq_name):
        problems.append(f"fq_name: {fq_name!r} is not a list of names")
    elif any(":" in part for part in fq_name):
        problems.append(f"fq_name: {fq_name!r} contains ':', which the config API forbids")
    elif any(len(part) > 255 for part in fq_name):
        problems.append("fq_name: a name is longer than 255 characters")
    parent_type = body.get("parent_type")
    if parent_type is None:
        if "config-root" not in cls.parent_types:
            problems.append(f"parent_type: {resource_type} needs a parent")
    elif parent_type not in cls.parent_types:
        problems.append(f"parent_type: {parent_type!r} not one of {cls.parent_types}")
    for field_name, info in cls.prop_field_types.items():
        if field_name not in body:
            if info["required"] == "required" and "C" in info["operations"]:
                problems.append(f"{field_name}: required")
            continue
        if "C" not in info["operations"]:
            problems.append(f"{field_name}: not writable by a client")
        if info["is_complex"]:
            problems += _struct_problems(info["xsd_type"], body[field_name], field_name)
        else:
            problems += _scalar_problems(info["xsd_type"], body[field_name], info["restriction_type"],
                                         info["restrictions"], field_name)
    for field_name in cls.ref_fields & set(body):
        problems += _ref_problems(cls, field_name, body[field_name], field_name)
    return problems


def assert_schema_valid(resource_type: str, body: Mapping[str, Any]) -> None:
    problems = schema_problems(resource_type, body)
    assert not problems, f"{resource_type} {body.get('fq_name')}: {problems}"
    # from_dict converts ref attrs in place: give it a copy.
    obj = getattr(resource_client, CLASS_NAMES[resource_type]).from_dict(**copy.deepcopy(dict(body)))
    assert obj.get_fq_name() == body["fq_name"]


def assert_translation_valid(result: Dict[str, Any]) -> None:
    """Every object of a `Translation.to_dict()` passes the oracle."""
    for key, resource_type in (("tags", "tag"), ("address_groups", "address-group"),
                               ("firewall_rules", "firewall-rule"), ("firewall_policies", "firewall-policy")):
        for body in result[key]:
            assert_schema_valid(resource_type, body)
    assert_schema_valid("application-policy-set", result["application_policy_set"])


def run(namespaces: Iterable = (), pods: Iterable = (), policies: Iterable = (),
        cluster: str = "k8s", semantics: str = "cluster-wide") -> Dict[str, Any]:
    """Translate and check every object against the official schema. By default under
    `cluster-wide` semantics, which write sections 2-5 alone (`kubernetes` adds its own blocks)."""
    result = translate({"Namespace": list(namespaces),
                        "Pod": list(pods),
                        "NetworkPolicy": list(policies)}, cluster_name=cluster, semantics=semantics).to_dict()
    assert_translation_valid(result)
    return result


def rules(result: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    return {r["fq_name"][-1]: r for r in result["firewall_rules"]}


def policies_by_name(result: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    return {p["fq_name"][-1]: p for p in result["firewall_policies"]}


def rule_refs(result: Dict[str, Any], policy_name: str) -> List[Tuple[str, str]]:
    """(rule name, sequence) of a firewall policy, in ref order."""
    return [(r["to"][-1], r["attr"]["sequence"])
            for r in policies_by_name(result)[policy_name]["firewall_rule_refs"]]


def workload_tags(result: Dict[str, Any]) -> Dict[Tuple[str, str], List[str]]:
    return {(w["namespace"], w["name"]): w["tags"] for w in result["workloads"]}


def tag_names(result: Dict[str, Any]) -> List[str]:
    return [t["fq_name"][0] for t in result["tags"]]
