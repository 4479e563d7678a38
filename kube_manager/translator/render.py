"""Rendering one validated NetworkPolicy into its Contrail objects (SPEC 2.1, 3, 4).

The output depends on the policy, on the name label it is rendered under (its own name, or the
collision-suffixed one), and, only for named ports, on the pods of its destinations, which the
caller supplies through `PodView`. Everything shared (tags, address groups) is reported rather
than owned, so the caller can reference-count it across policies.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Dict, Iterable, List, Mapping, Optional, Protocol, Sequence, Tuple

from .bodies import DENY, PASS, POLICY_MANAGEMENT, Body, BodyFactory, FqName, address_group_endpoint
from .cidr import IpBlock
from .model import UNBOUND, Block, ParsedPolicy, Peer, PodScope, PodSet, SelectorDef
from .named_ports import PodView, block_services, egress_destination
from .naming import INGRESS, MAX_NAME_LENGTH, deny_rule_name, hashed_sequence, policy_name, rule_prefix, \
    shorten
from .ports import ANY_SERVICE
from .scope_tags import ScopedLabel, ScopeTags, TagOrigin

ENDPOINT_CACHE_LIMIT = 65536
PLAN_CACHE_LIMIT = 16384
_NO_GROUPS: Mapping[FqName, IpBlock] = MappingProxyType({})  # shared by renderings without ipBlocks
# (endpoint body, the tags it references with their origins, the scope whose selectors' identities
# key it: held, so that those identities cannot be reused while the entry exists, its pod labels
# with the scope they select in); both as dicts, which a render merges into its own at C speed
_Endpoint = Tuple[Body, Mapping[str, TagOrigin], PodScope, Mapping[ScopedLabel, None]]


class EndpointSink(Protocol):
    """Where an endpoint reports the tags it references (a render's accumulators)."""

    tags: Dict[str, TagOrigin]
    scoped_labels: Dict[ScopedLabel, None]


@dataclass(slots=True)
class PolicyRendering:
    """Everything one NetworkPolicy contributes; fq_names are tuples, bodies are read-only."""

    policy: Tuple[FqName, Body]
    aps_sequence: str
    # Its pass rules in sequence order, as two tuples (fq_names, bodies) rather than a pair per
    # rule, which adds up on a large cluster.
    rules: Tuple[FqName, ...]
    rule_bodies: Tuple[Body, ...]
    deny_rules: List[Tuple[FqName, Body, str]]  # (fq_name, body, sequence in <cluster>-denyall)
    address_groups: Mapping[FqName, IpBlock]  # the blocks its address groups stand for
    tags: Dict[str, TagOrigin]  # label, namespace-label and selector tags its endpoints use
    scoped_labels: Tuple[ScopedLabel, ...]  # its pod labels, each with a scope an endpoint selects in
    destinations: Tuple[PodSet, ...]  # pod sets whose named ports it resolved
    names: Tuple[str, ...]  # policy name, then rule names, before shortening
    errors: Tuple[str, ...]


@dataclass(slots=True)
class _PeerPlan:
    """One peer of a block as every rendering of the block shares it."""

    peer: Optional[Peer]  # None: every peer (the block has no from/to)
    tail: str  # the rule name after `<cluster>-<ns>-<dir>-<np>-`, up to the service index
    group: Optional[Tuple[FqName, Body]]  # an ipBlock's address group and the endpoint naming it
    where: str  # the destination pods of an egress named port, for the error message


@dataclass(slots=True)
class _BlockPlan:
    """A block as every rendering of it shares it, whatever the namespace and name label."""

    block: Block  # held, so that the plan cache's key id(block) stays this block's
    services: Optional[Tuple[Tuple[str, Body], ...]]  # (index as text, body) when no port is named
    peers: Tuple[_PeerPlan, ...]


class _Work:
    """Accumulators of one render."""

    __slots__ = ("tags", "scoped_labels", "address_groups", "destinations", "errors", "names", "rules",
                 "rule_bodies")

    def __init__(self, policy: ParsedPolicy) -> None:
        self.tags: Dict[str, TagOrigin] = {}
        self.scoped_labels: Dict[ScopedLabel, None] = {}
        self.address_groups: Dict[FqName, IpBlock] = {}
        self.destinations: Dict[PodSet, None] = {}
        self.errors: Dict[str, None] = dict.fromkeys(policy.errors) if policy.errors else {}
        self.names: List[str] = []
        self.rules: List[FqName] = []
        self.rule_bodies: List[Body] = []


class PolicyRenderer:
    """Renders NetworkPolicies of one cluster. Holds only caches of pure functions."""

    def __init__(self, bodies: BodyFactory) -> None:
        self.bodies = bodies
        self.cluster = bodies.cluster_name
        self.tags = ScopeTags(self.cluster)  # the names of the tags its endpoints write
        self.application_tag = self.tags.application_tag
        # Endpoints by pod set, shared by every rule (of every policy) with that peer. Keyed by the
        # selectors' identities (parsed selectors are shared through the ParseCache); each entry
        # holds its selectors, so an identity cannot be reused while its entry exists.
        self._endpoints: Dict[Tuple[Optional[str], int, int], _Endpoint] = {}
        self._plans: Dict[int, _BlockPlan] = {}  # by id(block); blocks are shared by the ParseCache
        self._any_service = bodies.service(ANY_SERVICE)

    # --- endpoints ----------------------------------------------------------------------------

    def _selector_endpoint(self, definition: SelectorDef, work: _Work) -> Body:
        tag = self.tags.selector_tag(definition)
        work.tags[tag] = definition
        return {"tags": [tag]}

    def scope_endpoint(self, scope: PodScope, namespace: str, work: EndpointSink) -> Body:
        """The endpoint of a pod set of a policy of `namespace` (SPEC 2.1): its tags plus
        application=<cluster>, or one selector tag when a selector is not a plain conjunction of
        labels."""
        scope_namespace = namespace if scope.namespace == UNBOUND else scope.namespace
        key = (scope_namespace, id(scope.namespace_selector), id(scope.pod_selector))
        found = self._endpoints.get(key)
        if found is None:
            found = self._endpoint(scope, scope_namespace)
            if len(self._endpoints) >= ENDPOINT_CACHE_LIMIT:
                self._endpoints.clear()
            self._endpoints[key] = found
        work.tags.update(found[1])
        if found[3]:
            work.scoped_labels.update(found[3])
        return found[0]

    def _endpoint(self, scope: PodScope, namespace: Optional[str]) -> "_Endpoint":
        """The endpoint of `scope` with its UNBOUND namespace read as `namespace`."""
        tags, origins, scoped = self.tags.of_scope(scope, namespace)
        return {"tags": tags}, origins, scope, scoped

    # --- services -----------------------------------------------------------------------------

    def _services(self, block: Block, destination: PodSet, tag_destination: bool,
                  view: PodView, where: str, work: _Work) -> List[Tuple[Body, Optional[Body]]]:
        """The block's services (bodies) towards `destination`, named ports resolved there, each
        with the destination endpoint to use instead of the usual one (None: the usual one)."""
        work.destinations[destination] = None
        services, unresolved = block_services(block, destination, tag_destination, view)
        for index, port in unresolved:
            work.errors[f"spec.{block.direction}[{block.index}].ports[{index}]: named port "
                        f"{port.name!r} ({port.protocol}) resolves on no {where}; no rule is written"] = None
        return [(self.bodies.service(service), None if override is None else self._selector_endpoint(override, work))
                for service, override in services]

    # --- the policy ---------------------------------------------------------------------------

    def _plan(self, block: Block) -> _BlockPlan:
        """What every rendering of `block` shares, whatever the namespace and name label."""
        plan = self._plans.get(id(block))
        if plan is None:
            plan = _BlockPlan(block, self._fixed_services(block), tuple(self._peer_plans(block)))
            if len(self._plans) >= PLAN_CACHE_LIMIT:
                self._plans.clear()
            self._plans[id(block)] = plan
        return plan

    def _fixed_services(self, block: Block) -> Optional[Tuple[Tuple[str, Body], ...]]:
        if block.fixed_services is None:
            return None
        return tuple((str(s), self.bodies.service(service)) for s, service in enumerate(block.fixed_services))

    def _peer_plans(self, block: Block) -> Iterable[_PeerPlan]:
        b = block.index
        if block.peers is None:
            yield _PeerPlan(None, f"{b}-allow-all-", None, "pod of the cluster")
            return
        for p, peer in block.peers:
            if isinstance(peer, IpBlock):
                group = peer.address_group_name
                fq_name = (POLICY_MANAGEMENT, group if len(group) <= MAX_NAME_LENGTH else shorten(group))
                yield _PeerPlan(peer, f"{b}-ipBlock-{p}-cidr-{peer.cidr_name}-",
                                (fq_name, address_group_endpoint(fq_name[1])), f"cluster pod inside to[{p}]")
            else:
                kind = "namespaceSelector" if peer.pod_selector is None else "podSelector"
                yield _PeerPlan(peer, f"{b}-{kind}-{p}-", None, f"pod of to[{p}]")

    def _peer_endpoint(self, peer_plan: _PeerPlan, namespace: str, work: _Work) -> Body:
        """The endpoint of one peer of a block of a policy of `namespace`."""
        peer = peer_plan.peer
        if peer is None:
            return self.bodies.any_endpoint
        if peer_plan.group is not None:
            fq_name, endpoint = peer_plan.group
            work.address_groups[fq_name] = peer  # type: ignore[assignment]
            return endpoint
        return self.scope_endpoint(peer, namespace, work)  # type: ignore[arg-type]

    def _named_block_rules(self, policy: ParsedPolicy, plan: _BlockPlan, prefix: str, own: Body,
                           view: PodView, work: _Work) -> None:
        """The pass rules of a block naming ports; `prefix` is `<cluster>-<ns>-<dir>-<np>-`."""
        block = plan.block
        ingress = block.direction == INGRESS
        namespace = policy.namespace
        named: Sequence[Tuple[Body, Optional[Body]]] = ()
        if ingress:  # named ports resolve on the selected pods, the same for every peer
            selection = policy.selection
            assert selection is not None
            named = self._services(block, selection, True, view, "selected pod", work)
        for peer_plan in plan.peers:
            endpoint = self._peer_endpoint(peer_plan, namespace, work)
            peer_services = named if ingress else self._peer_services(block, peer_plan, namespace, view, work)
            self._named_port_rules(peer_services, prefix + peer_plan.tail, endpoint, own, ingress, work)

    def _peer_services(self, block: Block, peer_plan: _PeerPlan, namespace: str, view: PodView,
                       work: _Work) -> List[Tuple[Body, Optional[Body]]]:
        """Egress services towards one peer, its named ports resolved on its pods."""
        destination, tagged = egress_destination(peer_plan.peer, namespace)
        return self._services(block, destination, tagged, view, peer_plan.where, work)

    def _named_port_rules(self, services: Sequence[Tuple[Body, Optional[Body]]], stem: str, endpoint: Body,
                          own: Body, ingress: bool, work: _Work) -> None:
        """Rules of a block with named ports: a service may come with its own destination."""
        rule = self.bodies.rule
        for s, (service, override) in enumerate(services):
            name = f"{stem}{s}"
            work.names.append(name)
            fq_name = (POLICY_MANAGEMENT, name if len(name) <= MAX_NAME_LENGTH else shorten(name))
            if ingress:
                body = rule(fq_name, PASS, service, endpoint, override or own)
            else:
                body = rule(fq_name, PASS, service, own, override or endpoint)
            work.rules.append(fq_name)
            work.rule_bodies.append(body)

    def render(self, policy: ParsedPolicy, view: PodView, label: str) -> PolicyRendering:
        """Render a valid policy with `label` standing for its name in every object name."""
        spec = policy.spec
        namespace = policy.namespace
        assert spec.selection is not None, "a policy rejected whole renders nothing"
        work = _Work(policy)
        own = self.scope_endpoint(spec.selection, namespace, work)
        name = policy_name(self.cluster, namespace, label)
        work.names.append(name)
        # Blocks only exist for the directions of the policy's types (no comprehension: in 3.11
        # one is a function call, asked for every policy of a bulk load).
        prefixes = {}
        for direction in spec.directions:
            prefixes[direction] = rule_prefix(self.cluster, namespace, direction, label)
        plans = self._plans
        rule = self.bodies.rule
        rules, bodies, names = work.rules, work.rule_bodies, work.names
        for block in spec.blocks:
            plan = plans.get(id(block)) or self._plan(block)
            prefix = prefixes[block.direction]
            services = plan.services
            if services is None:
                self._named_block_rules(policy, plan, prefix, own, view, work)
            else:  # (in line: most blocks, asked for every policy of a bulk load)
                for peer_plan in plan.peers:
                    endpoint = self._peer_endpoint(peer_plan, namespace, work)
                    stem = prefix + peer_plan.tail
                    first, second = (endpoint, own) if block.direction == INGRESS else (own, endpoint)
                    for s, service in services:
                        rule_name = stem + s
                        names.append(rule_name)
                        fq_name = (POLICY_MANAGEMENT,
                                   rule_name if len(rule_name) <= MAX_NAME_LENGTH else shorten(rule_name))
                        rules.append(fq_name)
                        bodies.append(rule(fq_name, PASS, service, first, second))
        deny_rules: List[Tuple[FqName, Body, str]] = []
        anything, any_service = self.bodies.any_endpoint, self._any_service
        for direction, prefix in prefixes.items():
            deny_name = deny_rule_name(prefix)
            names.append(deny_name)
            fq_name = (POLICY_MANAGEMENT, deny_name if len(deny_name) <= MAX_NAME_LENGTH else shorten(deny_name))
            if direction == INGRESS:
                body = rule(fq_name, DENY, any_service, anything, own)
            else:
                body = rule(fq_name, DENY, any_service, own, anything)
            deny_rules.append((fq_name, body, hashed_sequence(fq_name[1])))
        fq_name = (POLICY_MANAGEMENT, name if len(name) <= MAX_NAME_LENGTH else shorten(name))
        body = self.bodies.network_policy(fq_name, work.rule_bodies, policy.namespace, policy.name, policy.uid,
                                          spec.spec_sha256)
        return PolicyRendering((fq_name, body), hashed_sequence(fq_name[1]), tuple(work.rules),
                               tuple(work.rule_bodies), deny_rules,
                               work.address_groups or _NO_GROUPS, work.tags, tuple(work.scoped_labels),
                               tuple(work.destinations),
                               tuple(work.names), tuple(work.errors))
