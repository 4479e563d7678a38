"""What one ClusterNetworkPolicy emitted, for the introspect page, its records and `errors`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Tuple

from ..bodies import FqName
from .model import KIND


@dataclass(frozen=True)
class CnpStatus:
    """`firewall_policy` the tier's block it lives in (None: rejected whole); `rules` and
    `deny_rules` the block rules that stand for some of its items."""

    firewall_policy: Optional[FqName]
    rules: Tuple[FqName, ...] = ()
    deny_rules: Tuple[FqName, ...] = ()
    errors: Tuple[str, ...] = ()


def status_errors(statuses: Mapping[str, CnpStatus]) -> List[Dict[str, str]]:
    """The tier's errors in the translator's error form (SPEC 8)."""
    return [{"kind": KIND, "namespace": "", "name": name, "reason": reason}
            for name, status in sorted(statuses.items()) for reason in status.errors]
