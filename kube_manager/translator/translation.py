"""The whole desired state of a cluster in SPEC 8's `translate` JSON form."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Tuple

Body = Dict[str, Any]


@dataclass(frozen=True)
class Translation:
    """Every object kube-manager wants in Contrail for one cluster, each list in SPEC 8's order:
    objects by fq_name, workloads by namespace and name, errors by kind, namespace and name."""

    cluster_name: str
    tags: Tuple[Body, ...]
    address_groups: Tuple[Body, ...]
    firewall_rules: Tuple[Body, ...]
    firewall_policies: Tuple[Body, ...]
    application_policy_set: Body
    workloads: Tuple[Body, ...]  # {"namespace", "name", "ip", "tags"}
    errors: Tuple[Dict[str, str], ...]  # {"kind", "namespace", "name", "reason"}
    # Selector tag -> the object it was hashed from (SPEC 2.1, 4), so explain can decode it; not
    # part of SPEC 8's JSON.
    selectors: Mapping[str, Any] = field(default_factory=dict, compare=False)
    # SPEC 17: the staged policies, translated and written nowhere: {"kind", "namespace", "name"}.
    staged: Tuple[Dict[str, str], ...] = ()

    def to_dict(self) -> Dict[str, Any]:
        """SPEC 8's JSON object. Bodies are shared with the translator: do not modify them."""
        return {
            "cluster_name": self.cluster_name,
            "tags": list(self.tags),
            "address_groups": list(self.address_groups),
            "firewall_rules": list(self.firewall_rules),
            "firewall_policies": list(self.firewall_policies),
            "application_policy_set": self.application_policy_set,
            "workloads": list(self.workloads),
            "errors": list(self.errors),
            # Only when some policy is staged: a cluster without any reads as it always did.
            **({"staged": list(self.staged)} if self.staged else {}),
        }
