"""The slice of the Contrail config schema that kube-manager uses.

One table shared by the REST client (URLs, serialisation) and the embedded server (parents, refs,
children), so the two can never disagree about what the real API accepts.
Contrail pluralises by appending "s" ("firewall-policys"), and so do we.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple


@dataclass(frozen=True)
class ResourceType:
    """What the config API knows about one resource type."""

    name: str  # "firewall-rule"
    parent_types: Tuple[str, ...]  # allowed parent types; "config-root" means global (no parent)
    ref_types: Dict[str, str] = field(default_factory=dict)  # ref field -> referred type

    @property
    def plural(self) -> str:
        return self.name + "s"

    @property
    def field_name(self) -> str:
        """The underscore form used in ref and back-ref field names ("firewall_rule")."""
        return self.name.replace("-", "_")

    def ref_field(self, target_type: str) -> Optional[str]:
        for ref_field, ref_type in self.ref_types.items():
            if ref_type == target_type:
                return ref_field
        return None


def _rt(name: str, parents: Tuple[str, ...], *ref_targets: str) -> ResourceType:
    refs = {t.replace("-", "_") + "_refs": t for t in ref_targets}
    # Every object of these types can carry tags (set-tag), as on the real server.
    refs.setdefault("tag_refs", "tag")
    return ResourceType(name, parents, refs)


RESOURCE_TYPES: Dict[str, ResourceType] = {
    rt.name: rt
    for rt in (
        _rt("domain", ("config-root",)),
        _rt("project", ("domain",)),
        _rt("policy-management", ("config-root", "project")),
        _rt("tag-type", ("config-root",)),
        _rt("tag", ("config-root", "project"), "tag-type"),
        _rt("address-group", ("policy-management", "project")),
        _rt("service-group", ("policy-management", "project")),
        _rt("firewall-rule", ("policy-management", "project"),
            "service-group", "address-group", "virtual-network"),
        _rt("firewall-policy", ("policy-management", "project"), "firewall-rule"),
        _rt("application-policy-set", ("policy-management", "project"), "firewall-policy"),
        _rt("virtual-network", ("project",)),
        _rt("virtual-machine", ("config-root",)),
        _rt("virtual-machine-interface", ("project", "virtual-machine"),
            "virtual-network", "virtual-machine"),
    )
}

# Refs whose attr is a FirewallSequence ({"sequence": "..."}); all others carry attr null.
SEQUENCED_REFS = {("firewall-policy", "firewall_rule_refs"), ("application-policy-set", "firewall_policy_refs")}

DEFAULT_DOMAIN = ["default-domain"]
DEFAULT_PROJECT = ["default-domain", "default-project"]
DEFAULT_POLICY_MANAGEMENT = ["default-policy-management"]


def resource_type(name: str) -> ResourceType:
    try:
        return RESOURCE_TYPES[name]
    except KeyError:
        raise KeyError(f"unknown resource type {name!r}") from None


def type_for_plural(plural: str) -> Optional[ResourceType]:
    for rt in RESOURCE_TYPES.values():
        if rt.plural == plural:
            return rt
    return None
