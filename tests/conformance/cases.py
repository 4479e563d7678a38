"""NetworkPolicy cases of the upstream netpol e2e suite (kubernetes test/e2e/network/netpol), on the
x/y/z cluster, each with the reachability upstream expects for its probe(s).

The expectations are written the upstream way: a default, then ordered overrides (later wins) on
(source, destination) patterns: "x/a" one pod, "x/*" a namespace, "out" the outside address, "*"
everything (pods and the outside address). They pin the Kubernetes reference model to upstream's
truth tables; the conformance test then checks Contrail's evaluation against that model on every
pair and probe.

Cases needing an update step upstream ("updated namespace", "updated pod") are given in their final
state through `namespace_labels` / `pod_labels`. Cases marked `cluster_wide` list flows that
Contrail allows although Kubernetes does not (SPEC section 6), which `explain` must mark.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence, Tuple

from tests.support.builders import policy
from tests.conformance.cluster import pod_ip

Probe = Tuple[int, str]
Override = Tuple[str, str, bool]

TCP80: Probe = (80, "TCP")
TCP81: Probe = (81, "TCP")
UDP80: Probe = (80, "UDP")
UDP81: Probe = (81, "UDP")
SCTP80: Probe = (80, "SCTP")
SCTP81: Probe = (81, "SCTP")
TCP82: Probe = (82, "TCP")
ALL_PROBES: Tuple[Probe, ...] = (TCP80, TCP81, TCP82, UDP80, UDP81, SCTP80, SCTP81)


@dataclass(frozen=True)
class Expectation:
    probes: Tuple[Probe, ...]
    default: bool
    overrides: Tuple[Override, ...] = ()

    def expected(self, src: str, dst: str) -> bool:
        result = self.default
        for src_pattern, dst_pattern, value in self.overrides:
            if _matches(src_pattern, src) and _matches(dst_pattern, dst):
                result = value
        return result


def _matches(pattern: str, end: str) -> bool:
    if pattern == "*":
        return True
    if pattern == "out" or end == "out":
        return pattern == end
    if pattern.endswith("/*"):
        return end.split("/")[0] == pattern[:-2]
    return pattern == end


@dataclass(frozen=True)
class Case:
    name: str  # the upstream test's title (or what it checks, for our additions)
    policies: Tuple[Dict[str, Any], ...]
    expectations: Tuple[Expectation, ...]
    namespace_labels: Dict[str, Dict[str, str]] = field(default_factory=dict)
    pod_labels: Dict[str, Dict[str, str]] = field(default_factory=dict)
    cluster_wide: Tuple[Tuple[str, str, Probe], ...] = ()


def expect(probes: Sequence[Probe], default: bool, *overrides: Override) -> Expectation:
    return Expectation(tuple(probes), default, tuple(overrides))


def labels(**values: str) -> Dict[str, Any]:
    return {"matchLabels": dict(values)}


def expression(key: str, operator: str, *values: str) -> Dict[str, Any]:
    item: Dict[str, Any] = {"key": key, "operator": operator}
    if values:
        item["values"] = list(values)
    return {"matchExpressions": [item]}


def ingress_policy(ns: str, name: str, selector: Dict[str, Any], rules: List[Dict[str, Any]],
                   types: Sequence[str] = ("Ingress",)) -> Dict[str, Any]:
    return policy(ns, name, {"podSelector": selector, "ingress": rules, "policyTypes": list(types)})


def egress_policy(ns: str, name: str, selector: Dict[str, Any],
                  rules: List[Dict[str, Any]]) -> Dict[str, Any]:
    return policy(ns, name, {"podSelector": selector, "egress": rules, "policyTypes": ["Egress"]})


POD_A = labels(pod="a")
NAME = "kubernetes.io/metadata.name"
NOT_X = expression(NAME, "NotIn", "x")


def _cases() -> List[Case]:
    ip = pod_ip
    return [
        Case("should support a 'default-deny-ingress' policy",
             (ingress_policy("x", "deny-ingress", {}, []),),
             (expect(ALL_PROBES, True, ("*", "x/*", False)),)),
        Case("should support a 'default-deny-all' policy",
             (policy("x", "deny-all", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}),),
             (expect(ALL_PROBES, True, ("*", "x/*", False), ("x/*", "*", False)),)),
        Case("should enforce policy to allow traffic from pods within server namespace based on "
             "PodSelector",
             (ingress_policy("x", "x-a-allows-x-b", POD_A, [{"from": [{"podSelector": labels(pod="b")}]}]),),
             (expect([TCP80, UDP81], True, ("*", "x/a", False), ("x/b", "x/a", True)),)),
        Case("should enforce policy to allow ingress traffic for a target",
             (ingress_policy("x", "deny-all", {}, []),
              ingress_policy("x", "allow-all-to-a", POD_A,
                             [{"from": [{"podSelector": {}, "namespaceSelector": {}}]}])),
             (expect([TCP80], True, ("*", "x/*", False), ("*", "x/a", True), ("out", "x/a", False)),)),
        Case("should enforce policy to allow ingress traffic from pods in all namespaces",
             (ingress_policy("x", "allow-from-another-ns", POD_A,
                             [{"from": [{"namespaceSelector": {"matchLabels": {}}}]}]),),
             (expect([TCP80], True, ("out", "x/a", False)),)),
        Case("should enforce policy to allow traffic only from a different namespace, based on "
             "NamespaceSelector",
             (ingress_policy("x", "allow-client-a-via-ns-selector", POD_A,
                             [{"from": [{"namespaceSelector": labels(**{NAME: "y"})}]}]),),
             (expect([TCP80], True, ("x/*", "x/a", False), ("z/*", "x/a", False),
                     ("out", "x/a", False)),)),
        Case("should enforce policy based on PodSelector with MatchExpressions",
             (ingress_policy("x", "x-a-allows-x-b", POD_A,
                             [{"from": [{"podSelector": expression("pod", "In", "b")}]}]),),
             (expect([TCP80], True, ("*", "x/a", False), ("x/b", "x/a", True)),)),
        Case("should enforce policy based on NamespaceSelector with MatchExpressions",
             (ingress_policy("x", "allow-ns-y-match-selector", POD_A,
                             [{"from": [{"namespaceSelector": expression(NAME, "In", "y")}]}]),),
             (expect([TCP80], True, ("x/*", "x/a", False), ("z/*", "x/a", False),
                     ("out", "x/a", False)),)),
        Case("should enforce policy based on PodSelector or NamespaceSelector",
             (ingress_policy("x", "allow-ns-y-match-selector", POD_A,
                             [{"from": [{"namespaceSelector": NOT_X},
                                        {"podSelector": labels(pod="b")}]}]),),
             (expect([TCP80], True, ("x/a", "x/a", False), ("x/c", "x/a", False),
                     ("out", "x/a", False)),)),
        Case("should enforce policy based on PodSelector and NamespaceSelector",
             (ingress_policy("x", "allow-ns-y-podselector-and-nsselector", POD_A,
                             [{"from": [{"namespaceSelector": NOT_X,
                                         "podSelector": labels(pod="b")}]}]),),
             (expect([TCP80], True, ("*", "x/a", False), ("y/b", "x/a", True),
                     ("z/b", "x/a", True)),)),
        Case("should enforce policy based on Multiple PodSelectors and NamespaceSelectors",
             (ingress_policy("x", "allow-ns-y-z-pod-b-c", POD_A,
                             [{"from": [{"namespaceSelector": NOT_X,
                                         "podSelector": expression("pod", "In", "b", "c")}]}]),),
             (expect([TCP80, SCTP81], True, ("*", "x/a", False), ("y/b", "x/a", True),
                     ("y/c", "x/a", True), ("z/b", "x/a", True), ("z/c", "x/a", True)),)),
        Case("should enforce policy based on any PodSelectors",
             (ingress_policy("x", "allow-ns-x-pod-b-c", POD_A,
                             [{"from": [{"podSelector": expression("pod", "In", "b")},
                                        {"podSelector": expression("pod", "In", "c")}]}]),),
             (expect([TCP80], True, ("*", "x/a", False), ("x/b", "x/a", True),
                     ("x/c", "x/a", True)),)),
        Case("should enforce policy to allow traffic only from a pod in a different namespace based "
             "on PodSelector and NamespaceSelector",
             (ingress_policy("x", "allow-ns-y-pod-a-via-namespace-pod-selector", POD_A,
                             [{"from": [{"namespaceSelector": labels(**{NAME: "y"}),
                                         "podSelector": POD_A}]}]),),
             (expect([TCP80, UDP80, SCTP80], True, ("*", "x/a", False), ("y/a", "x/a", True)),)),
        Case("should enforce policy based on Ports",
             (ingress_policy("x", "allow-ingress-on-port-81-ns-x", POD_A,
                             [{"from": [{"namespaceSelector": labels(ns="y")}],
                               "ports": [{"port": 81, "protocol": "TCP"}]}]),),
             (expect([TCP80], True, ("*", "x/a", False)),
              expect([TCP81], True, ("*", "x/a", False), ("y/*", "x/a", True)))),
        Case("should enforce multiple, stacked policies with overlapping podSelectors",
             (ingress_policy("x", "allow-ingress-port-81-ns-x", POD_A,
                             [{"from": [{"namespaceSelector": labels(ns="y")}],
                               "ports": [{"port": 81, "protocol": "TCP"}]}]),
              ingress_policy("x", "allow-ingress-port-80-ns-x", POD_A,
                             [{"from": [{"namespaceSelector": labels(ns="y")}],
                               "ports": [{"port": 80, "protocol": "TCP"}]}])),
             (expect([TCP80, TCP81], True, ("*", "x/a", False), ("y/*", "x/a", True)),
              expect([UDP80], True, ("*", "x/a", False)))),
        Case("should support allow-all policy",
             (ingress_policy("x", "allow-all", {}, [{}]),),
             (expect(ALL_PROBES, True),)),
        Case("should allow ingress access on one named port",
             (ingress_policy("x", "allow-all", {}, [{"ports": [{"port": "serve-81-tcp"}]}]),),
             (expect([TCP81], True),
              expect([TCP80, UDP81], True, ("*", "x/*", False)))),
        Case("should allow ingress access from namespace on one named port",
             (ingress_policy("x", "allow-all-80", {},
                             [{"from": [{"namespaceSelector": labels(ns="y")}],
                               "ports": [{"port": "serve-80-tcp"}]}]),),
             (expect([TCP80], True, ("*", "x/*", False), ("y/*", "x/*", True)),
              expect([TCP81], True, ("*", "x/*", False)))),
        Case("should allow egress access on one named port",
             (egress_policy("x", "allow-egress", {},
                            [{"ports": [{"port": "serve-80-tcp"}]},
                             {"ports": [{"port": 53, "protocol": "UDP"}]}]),),
             (expect([TCP80], True, ("x/*", "out", False)),
              expect([TCP81, UDP80], True, ("x/*", "*", False)))),
        Case("should allow ingress access from updated namespace",
             (ingress_policy("x", "allow-client-a-via-ns-selector", POD_A,
                             [{"from": [{"namespaceSelector": labels(ns2="updated")}]}]),),
             (expect([TCP80], True, ("*", "x/a", False), ("y/*", "x/a", True)),),
             namespace_labels={"y": {"ns": "y", "ns2": "updated"}}),
        Case("should allow ingress access from updated pod",
             (ingress_policy("x", "allow-client-a-via-pod-selector", POD_A,
                             [{"from": [{"podSelector": labels(pod="b", pod2="updated")}]}]),),
             (expect([TCP80], True, ("*", "x/a", False), ("x/b", "x/a", True)),),
             pod_labels={"x/b": {"pod": "b", "pod2": "updated"}}),
        Case("should deny ingress from pods on other namespaces",
             (ingress_policy("x", "deny-empty-policy", {}, [{"from": [{"podSelector": {}}]}]),),
             (expect([TCP80], True, ("y/*", "x/*", False), ("z/*", "x/*", False),
                     ("out", "x/*", False)),)),
        Case("should deny ingress access to updated pod",
             (ingress_policy("x", "deny-ingress-via-label-selector", labels(target="isolated"), []),),
             (expect([TCP80], True, ("*", "x/a", False)),),
             pod_labels={"x/a": {"pod": "a", "target": "isolated"}}),
        Case("should deny egress from pods based on PodSelector",
             (egress_policy("x", "deny-egress-pod-a", POD_A, []),),
             (expect([TCP80], True, ("x/a", "*", False)),)),
        Case("should deny egress from all pods in a namespace",
             (egress_policy("x", "deny-egress-ns-x", {}, []),),
             (expect([TCP80], True, ("x/*", "*", False)),)),
        Case("should work with Ingress, Egress specified together",
             (policy("x", "allow-client-a-via-pod-selector", {
                 "podSelector": POD_A, "policyTypes": ["Ingress", "Egress"],
                 "ingress": [{"from": [{"podSelector": labels(pod="b")}]}],
                 "egress": [{"ports": [{"port": 80, "protocol": "TCP"}]}]}),),
             (expect([TCP80], True, ("*", "x/a", False), ("x/b", "x/a", True)),
              expect([TCP81], True, ("*", "x/a", False), ("x/b", "x/a", True),
                     ("x/a", "*", False)))),
        Case("should support denying of egress traffic on the client side (even if the server "
             "explicitly allows this traffic)",
             (egress_policy("x", "allow-to-ns-y-pod-a", POD_A,
                            [{"to": [{"namespaceSelector": labels(ns="y")}]}]),
              ingress_policy("y", "allow-from-xa-on-ya-match-selector", POD_A,
                             [{"from": [{"namespaceSelector": labels(ns="x"), "podSelector": POD_A}]}]),
              ingress_policy("z", "allow-from-xa-on-za-match-selector", POD_A,
                             [{"from": [{"namespaceSelector": labels(ns="x"), "podSelector": POD_A}]}])),
             (expect([TCP80], True, ("x/a", "*", False), ("x/a", "y/*", True),
                     ("*", "y/a", False), ("x/a", "y/a", True), ("*", "z/a", False),
                     ("x/a", "z/a", False)),),
             cluster_wide=(("x/a", "z/a", TCP80), ("x/a", "z/a", UDP80))),
        Case("should enforce egress policy allowing traffic to a server in a different namespace "
             "based on PodSelector and NamespaceSelector",
             (egress_policy("x", "allow-to-ns-y-pod-a", POD_A,
                            [{"to": [{"namespaceSelector": labels(ns="y"), "podSelector": POD_A}]}]),),
             (expect([TCP80], True, ("x/a", "*", False), ("x/a", "y/a", True)),)),
        Case("should enforce ingress policy allowing any port traffic to a server on a specific "
             "protocol",
             (ingress_policy("x", "allow-ingress-any-port-tcp", POD_A,
                             [{"ports": [{"protocol": "TCP"}]}]),),
             (expect([TCP80, TCP81, TCP82], True),
              expect([UDP80, SCTP81], True, ("*", "x/a", False)))),
        Case("should enforce multiple ingress policies with ingress allow-all policy taking "
             "precedence",
             (ingress_policy("x", "allow-ingress-port-80", POD_A, [{"ports": [{"port": 80}]}]),
              ingress_policy("x", "allow-all", POD_A, [{}])),
             (expect([TCP80, TCP81], True),)),
        Case("should enforce multiple egress policies with egress allow-all policy taking "
             "precedence",
             (egress_policy("x", "allow-egress-port-80", POD_A, [{"ports": [{"port": 80}]}]),
              egress_policy("x", "allow-all", POD_A, [{}])),
             (expect([TCP80, TCP81, UDP81], True),)),
        Case("should allow egress access to server in CIDR block",
             (egress_policy("x", "allow-client-a-via-cidr-egress-rule", POD_A,
                            [{"to": [{"ipBlock": {"cidr": f"{ip('y', 'b')}/32"}}]}]),),
             (expect([TCP80], True, ("x/a", "*", False), ("x/a", "y/b", True)),)),
        Case("should enforce except clause while egress access to server in CIDR block",
             (egress_policy("x", "deny-client-a-via-except-cidr-egress-rule", POD_A,
                            [{"to": [{"ipBlock": {"cidr": f"{ip('x', 'a')}/4",
                                                  "except": [f"{ip('x', 'b')}/32"]}}]}]),),
             (expect([TCP80], True, ("x/a", "x/b", False), ("x/a", "out", False)),)),
        Case("should ensure an IP overlapping both IPBlock.CIDR and IPBlock.Except is allowed",
             (egress_policy("x", "deny-client-a-via-except-cidr-egress-rule", POD_A,
                            [{"to": [{"ipBlock": {"cidr": f"{ip('x', 'a')}/4",
                                                  "except": [f"{ip('x', 'b')}/32"]}}]}]),
              egress_policy("x", "allow-client-a-via-cidr-egress-rule", POD_A,
                            [{"to": [{"ipBlock": {"cidr": f"{ip('x', 'b')}/32"}}]}])),
             (expect([TCP80], True, ("x/a", "out", False)),)),
        Case("should enforce policies to check ingress and egress policies can be controlled "
             "independently based on PodSelector",
             (egress_policy("x", "deny-egress-to-b", POD_A, []),
              ingress_policy("x", "deny-ingress-to-a", POD_A, [])),
             (expect([TCP80], True, ("x/a", "*", False), ("*", "x/a", False)),)),
        Case("should not mistakenly treat 'protocol: SCTP' as 'protocol: TCP', even if the plugin "
             "doesn't support SCTP",
             (ingress_policy("x", "allow-only-sctp-ingress-on-port-81", POD_A,
                             [{"ports": [{"port": 81, "protocol": "SCTP"}]}]),),
             (expect([TCP81, SCTP80], True, ("*", "x/a", False)),
              expect([SCTP81], True))),
        Case("should not allow access by TCP when a policy specifies only UDP",
             (ingress_policy("x", "allow-only-udp-ingress-on-port-81", POD_A,
                             [{"ports": [{"port": 81, "protocol": "UDP"}]}]),),
             (expect([TCP81, UDP80], True, ("*", "x/a", False)),
              expect([UDP81], True))),
        Case("should enforce policy to allow traffic based on NamespaceSelector with MatchLabels "
             "using default ns label",
             (ingress_policy("x", "allow-client-a-via-ns-selector-for-default-ns-label", POD_A,
                             [{"from": [{"namespaceSelector": labels(**{NAME: "y"})}]}]),),
             (expect([TCP80], True, ("*", "x/a", False), ("y/*", "x/a", True)),)),
        Case("should enforce policy based on NamespaceSelector with MatchExpressions using default "
             "ns label",
             (egress_policy("x", "allow-ns-y-matchselector-for-default-ns-label", POD_A,
                            [{"to": [{"namespaceSelector": expression(NAME, "In", "y")}]}]),),
             (expect([TCP80], True, ("x/a", "*", False), ("x/a", "y/*", True)),)),
        Case("should enforce ingress policy allowing a port range (endPort)",
             (ingress_policy("x", "allow-ingress-80-81", POD_A,
                             [{"from": [{"namespaceSelector": labels(ns="y")}],
                               "ports": [{"port": 81, "endPort": 82, "protocol": "TCP"}]}]),),
             (expect([TCP80, UDP81], True, ("*", "x/a", False)),
              expect([TCP81, TCP82], True, ("*", "x/a", False), ("y/*", "x/a", True)))),
        Case("should enforce egress policy allowing a port range (endPort)",
             (egress_policy("x", "allow-egress-80-81-udp", POD_A,
                            [{"to": [{"podSelector": {}}],
                              "ports": [{"port": 80, "endPort": 81, "protocol": "UDP"}]}]),),
             (expect([UDP80, UDP81], True, ("x/a", "*", False), ("x/a", "x/*", True)),
              expect([TCP80], True, ("x/a", "*", False)))),
        Case("selectors with Exists and DoesNotExist",
             (ingress_policy("x", "exists-not-exists", POD_A,
                             [{"from": [{"namespaceSelector": expression("team", "Exists"),
                                         "podSelector": expression("canary", "DoesNotExist")}]}]),),
             (expect([TCP80], True, ("*", "x/a", False), ("z/*", "x/a", True),
                     ("z/b", "x/a", False)),),
             namespace_labels={"z": {"ns": "z", "team": ""}},
             pod_labels={"z/b": {"pod": "b", "canary": "true"}}),
        Case("own podSelector with NotIn and In with several values",
             (ingress_policy("x", "isolate-not-a", expression("pod", "NotIn", "a"),
                             [{"from": [{"podSelector": expression("pod", "In", "a", "c")}]}]),),
             (expect([TCP80, UDP81], True, ("*", "x/b", False), ("*", "x/c", False),
                     ("x/a", "x/b", True), ("x/c", "x/b", True), ("x/a", "x/c", True),
                     ("x/c", "x/c", True)),)),
        Case("egress named port to an ipBlock of pods",
             (egress_policy("x", "named-port-to-y", POD_A,
                            [{"to": [{"ipBlock": {"cidr": "10.244.2.0/24",
                                                  "except": [f"{ip('y', 'c')}/32"]}}],
                              "ports": [{"port": "serve-81-udp", "protocol": "UDP"}]}]),),
             (expect([UDP81], True, ("x/a", "*", False), ("x/a", "y/*", True),
                     ("x/a", "y/c", False)),
              expect([UDP80, TCP81], True, ("x/a", "*", False)))),
        Case("ingress from outside addresses only (ipBlock without pods)",
             (ingress_policy("x", "from-outside", {},
                             [{"from": [{"ipBlock": {"cidr": "192.0.2.0/24"}}]}]),),
             (expect([TCP80], True, ("*", "x/*", False), ("out", "x/*", True)),)),
        Case("ingress allow-all in one namespace, egress deny-all in another",
             (ingress_policy("z", "allow-all-ingress", {}, [{}]),
              egress_policy("x", "deny-all-egress", {}, [])),
             (expect(ALL_PROBES, True, ("x/*", "*", False)),),
             cluster_wide=(("x/a", "z/b", TCP80), ("x/c", "z/c", SCTP81))),
        Case("the wiki's 'egress allow all and ingress deny all' illustration",
             (policy("x", "egress-all-ingress-none", {
                 "podSelector": {}, "policyTypes": ["Ingress", "Egress"], "egress": [{}]}),),
             (expect(ALL_PROBES, True, ("*", "x/*", False)),),
             cluster_wide=(("x/a", "x/b", TCP80), ("x/b", "x/a", UDP81))),
    ]


CASES: Tuple[Case, ...] = tuple(_cases())
