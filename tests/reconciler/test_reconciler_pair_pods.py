"""Make before break for the pair rules that follow pods (SPEC 14): a pair rule is written only
while current pods realise its ends, so a pod arriving, relabelled or deleted writes or drops pair
rules along with its own tags. At no moment in between does the config API let through a flow
that neither the cluster before nor the one after allows, nor drop one both allow (a pod arriving
may be closed until its pair lands, as Kubernetes is before it programs the pod: its flows are
in `after` only).

One reconciler worker, so the order of writes is the work queue's; before every request the test
evaluates what the config API enforces for every pair of pods (`enforced_flows`)."""
from __future__ import annotations

from typing import Any, Dict, List, Sequence

import pytest

from tests.reconciler.test_reconciler_tiers import ONE_WORKER, assert_between, change_and_watch
from tests.support.builders import HTTP_8080, namespace, pod, policy
from tests.support.reconciler_support import Setup

# `client` pods may reach `web` on TCP 8080, which admits them: both ends isolated, so only a pair
# rule lets the flow through, and it is written only while some pod is `app=client`.
CLIENT_OUT = policy("a", "client-out", {"podSelector": {"matchLabels": {"app": "client"}}, "policyTypes": ["Egress"],
                                        "egress": [{"to": [{"podSelector": {"matchLabels": {"app": "web"}}}],
                                                    "ports": [{"port": 8080}]}]})
WEB_IN = policy("a", "web-in", {"podSelector": {"matchLabels": {"app": "web"}}, "ingress": [
    {"from": [{"podSelector": {"matchLabels": {"app": "client"}}}], "ports": [{"port": 8080}]}]})


def labelled(name: str, app: str, n: int) -> Dict[str, Any]:
    return pod("a", name, f"10.0.0.{n}", app=app, ports=HTTP_8080)


WEB, OTHER, CLIENT = labelled("web", "web", 1), labelled("other", "other", 2), labelled("client", "client", 3)
FLOW = ("tcp", 8080)


def pair_rules(s: Setup) -> List[str]:
    names = [rule["fq_name"][-1] for rule in s.cluster.translation()["firewall_rules"]]
    return [name for name in names if "--pair-" in name]


@pytest.mark.parametrize("pods, change, removed, watched, opened", [
    ((WEB, OTHER), [labelled("other", "client", 2)], (), (WEB, OTHER), True),  # relabelled into the pair
    ((WEB, CLIENT), [labelled("client", "other", 3)], (), (WEB, CLIENT), False),  # relabelled out of it
    ((WEB, OTHER), [CLIENT], (), (WEB, OTHER, CLIENT), True),  # a new pod arrives after the policies
    ((WEB, OTHER, CLIENT), [], (CLIENT,), (WEB, OTHER), False),  # the only client goes
], ids=["relabelled-in", "relabelled-out", "arrives", "deleted"])
def test_a_pod_bringing_or_taking_its_pair_is_make_before_break(setup, pods: Sequence[Dict[str, Any]],
                                                               change: List[Dict[str, Any]], removed: Sequence,
                                                               watched: Sequence[Dict[str, Any]], opened: bool):
    s = setup(settings=ONE_WORKER, manifests=(namespace("a"), *pods, CLIENT_OUT, WEB_IN)).start()
    for manifest in change:
        if s.api.api.lookup("virtual-machine", [manifest["metadata"]["name"]]) is None:
            s.api.add_pod_vmi(manifest["metadata"]["uid"], manifest["metadata"]["name"])  # the CNI ran
    had = len(pair_rules(s))
    before, after, seen = change_and_watch(s, *change, pods=watched, removed=removed)
    assert (had, len(pair_rules(s))) == ((0, 1) if opened else (1, 0))
    mover = (change or list(removed))[0]["metadata"]["name"]
    assert ((mover, "web") + FLOW in after) == opened
    assert_between(before, after, seen, requests=2)  # a pair rule dropped: its ref, then the rule
