"""The bound on the `kubernetes` mode's pair rules, told to the operator (SPEC 14, 15).

The pair rules are the one part of the output that can grow faster than the NetworkPolicies
(docs/operations.md, *The pair rules*). Past `exact_pair_rules_bound` nothing is left out: every
pair is still written, so that the cluster stays exactly as closed as Kubernetes asks (leaving
pairs out would close flows Kubernetes allows, and a partial write would be silent drift). What
changes is that the operator hears of it: when the count crosses the bound upwards, one WARNING
log line and a `Warning` / `PairRulesBound` Event on each of the NetworkPolicies that contribute
most pairs (`NAMED` of them); nothing more while it stays above (one crossing, one warning, not an
Event per flush); an INFO line when it falls back. `status` is what the introspect pages and the
metrics read (`db.pair_rules`).

Fed by the status book after each flush with the translator's `PairRuleCounts`; the Events go
through the status publisher, which writes only while this instance leads (and re-says a standing
warning when a term begins).
"""
from __future__ import annotations

import heapq
import logging
from typing import Callable, List, Tuple

from kube_manager.observability.logging_setup import kv
from kube_manager.records.db import PairRulesStatus
from kube_manager.registry import NETWORK_POLICIES
from kube_manager.status.verdicts import TRANSLATE, WARNING, EventSpec
from kube_manager.translator.exact.pairs import PairRuleCounts

log = logging.getLogger(__name__)

PAIR_RULES_BOUND = "PairRulesBound"
NAMED = 5  # NetworkPolicies warned at a crossing: enough to find the culprits, few enough to read
PolicyId = Tuple[str, str, str]  # kind, namespace, name (as the publisher keys policies)
Warned = Tuple[PolicyId, EventSpec]


def bound_note(total: int, bound: int, pairs: int) -> str:
    return (f"the kubernetes policy semantics needs {total} pair rules, above exact_pair_rules_bound"
            f" {bound}; this NetworkPolicy is an end of {pairs} of the pairs. Every pair is still"
            f" written (nothing is left open or closed beyond what Kubernetes asks); narrow its peers"
            f" (name namespaces rather than choose them by label) or raise the bound")


class PairRulesBound:
    """See the module docstring. `warn` records one Event (the publisher's `policy_warned`)."""

    def __init__(self, bound: int, status: PairRulesStatus, warn: Callable[[PolicyId, EventSpec], None],
                 named: int = NAMED) -> None:
        """`status`: the record this keeps (`db.pair_rules`)."""
        self._bound = bound
        self._status = status
        self._warn = warn
        self._named = named
        self._standing: List[Warned] = []  # the warnings of the crossing in force
        status.bound = bound

    def counted(self, counts: PairRuleCounts) -> None:
        """The pair rules as of the flush just reported."""
        over = bool(self._bound) and counts.total > self._bound
        status = self._status
        was_over, top = status.over, status.top
        if over and not was_over:
            ranked = heapq.nsmallest(self._named, counts.by_policy.items(), key=lambda kv_: (-kv_[1], kv_[0]))
            top = tuple((ns, name, pairs) for (ns, name), pairs in ranked)
            self._standing = [((NETWORK_POLICIES.kind, ns, name), EventSpec(WARNING, PAIR_RULES_BOUND, TRANSLATE,
                                                                           bound_note(counts.total, self._bound, pairs)))
                              for ns, name, pairs in top]
            log.warning("pair rules above their bound: all still written", extra=kv(
                pair_rules=counts.total, bound=self._bound,
                top=", ".join(f"{ns}/{name}={pairs}" for ns, name, pairs in top)))
            for policy, spec in self._standing:
                self._warn(policy, spec)
        elif was_over and not over:
            self._standing, top = [], ()
            log.info("pair rules back within their bound", extra=kv(pair_rules=counts.total, bound=self._bound))
        status.total, status.over, status.top = counts.total, over, top

    def standing(self) -> List[Warned]:
        """The warnings of the crossing in force (a new term says them again)."""
        return list(self._standing)

