"""The upstream netpol e2e topology, built with the one builder per kind (tests/support/builders.py).

Upstream (kubernetes test/e2e/network/netpol) runs namespaces x, y, z labelled `ns=<name>`, each with
pods a, b, c labelled `pod=<name>`, every pod serving ports 80 and 81 on TCP, UDP and SCTP through
containers whose ports are named `serve-<port>-<proto>`. We build the same topology as plain
manifests, with fixed pod IPs so ipBlock cases can name them.
"""
from __future__ import annotations

from typing import Any, Dict, List, Sequence

from tests.support.builders import namespace, pod, policy
from kube_manager.offline.manifests import Manifests

NAMESPACES = ("x", "y", "z")
POD_NAMES = ("a", "b", "c")
PORTS = (80, 81)
PROTOCOLS = ("TCP", "UDP", "SCTP")
OUTSIDE_IP = "192.0.2.10"  # TEST-NET-1: an address outside the cluster


# The test clusters are the loader's own record, so explain sees exactly what `-f` would give it.
ManifestSet = Manifests


def pod_ip(ns: str, name: str) -> str:
    """x/a is 10.244.1.10, y/b 10.244.2.11, and so on."""
    return f"10.244.{NAMESPACES.index(ns) + 1}.{10 + POD_NAMES.index(name)}"


def serve_ports() -> List[tuple]:
    return [(f"serve-{port}-{protocol.lower()}", port, protocol)
            for port in PORTS for protocol in PROTOCOLS]


def xyz_cluster(policies: Sequence[Dict[str, Any]] = ()) -> ManifestSet:
    """The upstream topology plus `policies`."""
    return Manifests({"Namespace": [namespace(ns, ns=ns) for ns in NAMESPACES],
                      "Pod": [pod(ns, name, pod_ip(ns, name), {"pod": name}, serve_ports())
              for ns in NAMESPACES for name in POD_NAMES], "NetworkPolicy": list(policies)})


def wiki_example_policies() -> List[Dict[str, Any]]:
    """The seed's cluster-wide example: y/a may send to x/a (p1), x/a may receive only from x/b (p2)."""
    return [
        policy("y", "p1", {"podSelector": {"matchLabels": {"pod": "a"}}, "policyTypes": ["Egress"],
                           "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"ns": "x"}},
                                               "podSelector": {"matchLabels": {"pod": "a"}}}]}]}),
        policy("x", "p2", {"podSelector": {"matchLabels": {"pod": "a"}},
                           "ingress": [{"from": [{"podSelector": {"matchLabels": {"pod": "b"}}}]}]}),
    ]


def all_pods() -> List[str]:
    return [f"{ns}/{name}" for ns in NAMESPACES for name in POD_NAMES]
