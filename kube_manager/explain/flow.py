"""How Contrail decides a flow under the cluster's application policy set (SPEC section 6).

Input is the translator's JSON object (SPEC section 8): the APS, its firewall policies, their rules,
the address groups, and the `workloads` with each pod's IP and tags. The evaluation is the vRouter's
for one APS: policies by sequence (ties by name), rules by sequence (ties by name), and the first rule
whose `endpoint_1` matches the source, `endpoint_2` the destination and whose service matches
decides. A tag endpoint matches a workload carrying all its tags, an address group matches an IP in
one of its prefixes, `any` matches everything. A flow where neither end carries
`application=<cluster>` is not under the APS and is allowed; a flow under it that no rule matches is
dropped (the APS is a whitelist).

The rules are compiled (flow_rules.py) and filed (flow_index.py's `RuleIndex`) once, and a query only
looks at the rules filed under the keys its two ends carry. The introspect page keeps one
`RuleIndex` over the live DB and brings it up to date after a change (`ContrailEvaluator.over`);
the other callers build one from a translation.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from .flow_index import ANY_KEY, FiledRule, IndexKey, OrientedRules, RuleIndex, RuleSource
from .flow_rules import (FLOW_PROTOCOLS, NumericProtocol, RuleEndpoint, RuleEntry, Workload, in_prefix,
                         ip_or_none)


@dataclass(frozen=True)
class Decision:
    """The outcome of one evaluation. `rule`/`policy` name the deciding objects (None when the flow
    is not under the APS or no rule matched)."""

    allowed: bool
    under_aps: bool
    rule: Optional[str] = None
    rule_fq_name: Optional[Tuple[str, ...]] = None
    policy: Optional[str] = None
    action: Optional[str] = None
    logged: bool = False  # the deciding rule logs its matches (`action_list.log`, SPEC 15)



def _by_fq_name(objects: Optional[Iterable[Mapping[str, Any]]]) -> Dict[Tuple[str, ...], Mapping[str, Any]]:
    return {tuple(o.get("fq_name") or ()): o for o in objects or ()}


def _tag_value(tags: FrozenSet[str], tag_type: str) -> Optional[str]:
    prefix = tag_type + "="
    return next((t for t in tags if t.startswith(prefix)), None)


def translation_workloads(translation: Mapping[str, Any]) -> Dict[Tuple[str, str], Workload]:
    """The translation's workloads by (namespace, name)."""
    return {(str(raw.get("namespace")), str(raw.get("name"))): Workload(ip_or_none(raw.get("ip")),
                                                                         frozenset(raw.get("tags") or ()))
            for raw in translation.get("workloads") or ()}


def translation_source(translation: Mapping[str, Any]) -> RuleSource:
    """What a `RuleIndex` reads of a translation (the SPEC section 8 JSON object)."""
    return RuleSource(
        translation.get("application_policy_set") or None,
        _by_fq_name(translation.get("firewall_policies")),
        _by_fq_name(translation.get("firewall_rules")),
        _by_fq_name(translation.get("address_groups")),
        lambda: [w.tags for w in translation_workloads(translation).values()])


class ContrailEvaluator:
    """Evaluates flows against one translation (the SPEC section 8 JSON object), or against a
    `RuleIndex` its owner keeps up to date (`over`)."""

    def __init__(self, translation: Mapping[str, Any], cluster_name: Optional[str] = None,
                 rules: Optional[OrientedRules] = None) -> None:
        """`rules`: the entries another evaluator compiled, reused for the bodies it shares."""
        index = RuleIndex(rules)
        index.update(translation_source(translation))
        self._use(index, cluster_name or translation.get("cluster_name") or "k8s", translation_workloads(translation))

    @classmethod
    def over(cls, index: RuleIndex, cluster_name: str,
             workloads: Mapping[Tuple[str, str], Workload]) -> "ContrailEvaluator":
        """An evaluator reading `index` and `workloads` as they are when asked (the caller updates
        the index, never while a question is under way)."""
        evaluator = cls.__new__(cls)
        evaluator._use(index, cluster_name, workloads)
        return evaluator

    def _use(self, index: RuleIndex, cluster_name: str, workloads: Mapping[Tuple[str, str], Workload]) -> None:
        self.index = index
        self.cluster_name = cluster_name
        self.application_tag = f"application={cluster_name}"
        self.workloads = workloads

    # ---- querying --------------------------------------------------------------------------

    def _keys(self, workload: Workload) -> List[IndexKey]:
        """The index keys a workload has: any, each of its tags, each prefix shape of its IP."""
        keys: List[IndexKey] = [ANY_KEY] + [("tag", t) for t in workload.tags]
        ip = workload.ip
        if ip is not None:
            address = int(ip)
            keys.extend(("prefix", version, host_bits, address >> host_bits << host_bits)
                        for version, host_bits in self.index.shapes if version == ip.version)
        return keys

    def _candidates(self, src: Workload, dst: Workload) -> List[FiledRule]:
        by_ends = self.index.by_ends
        rows = [row for row in map(by_ends.get, self._keys(src)) if row]
        found: Set[FiledRule] = set()
        for key in self._keys(dst) if rows else ():
            for row in rows:
                filed = row.get(key)
                if filed:
                    found |= filed
        return list(found)

    def _endpoint_matches(self, endpoint: RuleEndpoint, workload: Workload) -> bool:
        if endpoint.kind == "any":
            return True
        if endpoint.kind == "tags":
            return endpoint.tags <= workload.tags
        if endpoint.kind == "group":
            ip = workload.ip
            return ip is not None and any(in_prefix(ip, p) for p in self.index.groups.get(endpoint.group, ()))
        return False

    def _pair_matches(self, entry: RuleEntry, src: Workload, dst: Workload) -> bool:
        if not (self._endpoint_matches(entry.source, src)
                and self._endpoint_matches(entry.destination, dst)):
            return False
        for tag_type in entry.match_tags:
            value = _tag_value(src.tags, tag_type)
            if value is None or value != _tag_value(dst.tags, tag_type):
                return False
        return True

    def under_aps(self, src: Workload, dst: Workload) -> bool:
        """A flow where neither end carries application=<cluster> is not under the APS."""
        return self.application_tag in src.tags or self.application_tag in dst.tags

    def pair_rules(self, src: Workload, dst: Workload) -> List[RuleEntry]:
        """The rules whose endpoints (and match tags) match src -> dst, in evaluation order: what
        decides every port of this pair (`decide`), so the what-if asks for them once per pair."""
        matching = [filed for filed in self._candidates(src, dst) if self._pair_matches(filed.entry, src, dst)]
        return [filed.entry for filed in sorted(matching, key=self.index.rank)]

    @staticmethod
    def decide(rules: Sequence[RuleEntry], port: int, protocol: str,
               src_port: Optional[int] = None) -> Decision:
        """The first of a pair's `rules` whose service matches decides; none matching drops."""
        for entry in rules:
            if entry.service.matches(port, protocol, src_port):
                return Decision(allowed=entry.action == "pass", under_aps=True, rule=entry.rule,
                                rule_fq_name=entry.rule_fq_name, policy=entry.policy,
                                action=entry.action, logged=entry.logged)
        return Decision(allowed=False, under_aps=True)

    def evaluate(self, src: Workload, dst: Workload, port: int, protocol: str,
                 src_port: Optional[int] = None) -> Decision:
        """Decide the flow src -> dst to `protocol` (tcp/udp/sctp) `port`; `src_port` None is an
        unknown ephemeral port, matched only by rules open to every source port."""
        if not self.under_aps(src, dst):
            return Decision(allowed=True, under_aps=False)
        return self.decide(self.pair_rules(src, dst), port, protocol, src_port)

    def workload(self, namespace: str, name: str) -> Optional[Workload]:
        return self.workloads.get((namespace, name))

    def network_policy_order(self, network_policy: str) -> Tuple[Any, ...]:
        """A sort key of a NetworkPolicy ("ns/name") in the APS evaluation order."""
        return self.index.network_policy_rank(network_policy)


__all__ = ["FLOW_PROTOCOLS", "ContrailEvaluator", "Decision", "NumericProtocol", "OrientedRules", "Workload",
           "translation_source"]
