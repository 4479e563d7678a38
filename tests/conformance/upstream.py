"""The upstream ClusterNetworkPolicy conformance tests, read from the data table cnp_probes.yaml.

Upstream (kubernetes-sigs/network-policy-api, conformance/tests/*.go at commit
0eec1b0e5fa92715b4c0f4c48d3c8d2913ed2159) runs each test against the base manifests plus the test's
own policies; its subtests run in order and each may change the live objects (swap two rules, set
a priority or an action, add a rule, relabel a namespace, delete a NetworkPolicy) before probing,
and the changes stay for the subtests after it. Here a test is its policies and its steps, a step
the changes and probes of one subtest in their upstream order, and a probe one `PokeServer` call:
client pod, server (a pod, or the host-networked pod's node address), protocol, port and whether
upstream expects the connection to succeed.

A probe may carry `spec13`: the reason SPEC section 13 prescribes another verdict than upstream's
(only `nodes` peers, which this version does not enforce and which fail closed). Such a probe is
expected to have the opposite verdict, and is counted apart in the figures.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

import yaml

from tests.conformance.cnp_manifests import MANIFESTS, TO_TWO_POD_IPS
from tests.conformance.houses import (NODE, DeleteNetworkPolicy, HouseCluster, PrependRule, SetAction,
                                SetNamespaceLabels, SetPriority, SetProtocols, Swap, named)

UPSTREAM_COMMIT = "0eec1b0e5fa92715b4c0f4c48d3c8d2913ed2159"
NODES_FAIL_CLOSED = ("SPEC 13: nodes peers are not enforced; the rule fails closed (an Accept "
                     "matches nothing, a Deny or Pass denies all egress of its subject)")

Change = Union[Swap, SetPriority, SetAction, SetProtocols, PrependRule, SetNamespaceLabels,
               DeleteNetworkPolicy]


@dataclass(frozen=True)
class P:
    """One upstream probe: `src` connects to `dst` on `protocol` `port`; upstream expects
    `expected`."""

    src: str
    dst: str
    protocol: str
    port: int
    expected: bool
    spec13: Optional[str] = None

    @property
    def ours(self) -> bool:
        """The verdict this project must reach: upstream's, unless SPEC 13 says otherwise."""
        return self.expected if self.spec13 is None else not self.expected

    def __str__(self) -> str:
        return f"{self.src} -> {self.dst} {self.protocol}/{self.port}"


@dataclass(frozen=True)
class Step:
    """One upstream subtest: its title and its changes and probes in order."""

    title: Optional[str]
    actions: Tuple[Union[Change, P], ...]


@dataclass(frozen=True)
class UpstreamTest:
    name: str  # upstream ShortName
    source: str  # conformance/tests/<file>
    manifest: str  # conformance/<base manifest> the policies are transcribed from
    policies: Tuple[Dict[str, Any], ...]
    steps: Tuple[Step, ...]

    def run(self) -> Iterator[Tuple[Step, P, HouseCluster, int]]:
        """Each probe with the cluster as it stands when upstream makes it (the same object,
        changed in place between probes: read it before asking for the next) and the number of
        changes made so far (the cluster's state: equal numbers, equal clusters)."""
        cluster = HouseCluster.with_policies(self.policies)
        changes = 0
        for step in self.steps:
            for action in step.actions:
                if isinstance(action, P):
                    yield step, action, cluster, changes
                else:
                    action.apply(cluster)
                    changes += 1

    @property
    def probes(self) -> Tuple[P, ...]:
        return tuple(a for step in self.steps for a in step.actions if isinstance(a, P))


TABLE = os.path.join(os.path.dirname(__file__), "cnp_probes.yaml")
_PROBE = re.compile(r"^(\S+) -> (\S+) (tcp|udp|sctp)/(\d+) (connects|blocked)( \(spec13 nodes\))?$")
_PREPENDED = {"allow-egress-to-specific-podIPs": TO_TWO_POD_IPS}
_CHANGES: Dict[str, Callable[..., Change]] = {
    "swap": lambda policy, direction, i, j: Swap(policy, direction, int(i), int(j)),
    "priority": lambda policy, value: SetPriority(policy, int(value)),
    "action": lambda policy, direction, i, action: SetAction(policy, direction, int(i), action),
    "named-port": lambda policy, direction, i, name: SetProtocols(policy, direction, int(i),
                                                                  (named(name),)),
    "prepend": lambda policy, direction, rule: PrependRule(policy, direction, _PREPENDED[rule]),
    "relabel": lambda house, labels: SetNamespaceLabels(house, _pairs(labels)),
    "delete-networkpolicy": lambda house, name: DeleteNetworkPolicy(house, name),
}


def _pairs(text: str) -> Tuple[Tuple[str, str], ...]:
    """`k=v,k2=v2` as ((k, v), (k2, v2))."""
    return tuple((key, value) for key, _, value in (pair.partition("=") for pair in text.split(",")))


def _action(text: str) -> Union[Change, P]:
    probe = _PROBE.match(text)
    if probe:
        src, dst, protocol, port, verdict, spec13 = probe.groups()
        return P(src, NODE if dst == "node" else dst, protocol, int(port), verdict == "connects",
                 NODES_FAIL_CLOSED if spec13 else None)
    verb, *words = text.split()
    return _CHANGES[verb](*words)


def load(path: str = TABLE) -> Tuple[UpstreamTest, ...]:
    with open(path) as stream:
        raw: List[Dict[str, Any]] = yaml.safe_load(stream)
    return tuple(UpstreamTest(entry["test"], entry["source"], entry["policies"],
                              MANIFESTS[entry["policies"]],
                              tuple(Step(step["title"], tuple(_action(a) for a in step["do"]))
                                    for step in entry["steps"]))
                 for entry in raw)
