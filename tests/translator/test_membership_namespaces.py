"""Selector tags whose members depend on a namespace's labels follow a relabel of it, wherever the
tags are filed: a tier or pair end narrowed to networks (`exact/expressions.py`) can name a
namespace and a namespace label at once, and is then filed under that namespace, not with the
cluster-wide tags."""
from __future__ import annotations

import ipaddress

import pytest

from kube_manager.translator.exact.expressions import TaggedPodsInNetworks
from kube_manager.translator.index import ClusterIndex
from kube_manager.translator.membership import SelectorMembership
from kube_manager.translator.model import NamespaceInfo, PodInfo, SelectorDef

TEAM_X = ("namespace.team=x", ("namespace", "team", "x"))
NAMED_AND_LABELLED = SelectorDef(TaggedPodsInNetworks(
    (("namespace=a", None), TEAM_X), (ipaddress.ip_network("10.0.0.0/8"),), namespace="a"))
TAG = "label=k8s-sel-000000000000"


def namespace(team: str) -> NamespaceInfo:
    return NamespaceInfo("a", labels={"kubernetes.io/metadata.name": "a", "team": team})


@pytest.mark.parametrize("before, after, member", [("y", "x", True), ("x", "y", False)])
def test_a_relabel_moves_pods_in_and_out_of_a_tag_filed_under_their_namespace(before, after, member):
    index = ClusterIndex()
    index.put_namespace(namespace(before))
    index.put_pod(PodInfo("a", "web", "uid-web", {"app": "web"}, "10.0.1.10"))
    membership = SelectorMembership(index)
    assert membership.activate(TAG, NAMED_AND_LABELLED) == ({("a", "web")} if before == "x" else set())
    index.put_namespace(namespace(after))
    membership.namespace_changed("a")
    assert (TAG in membership.tags_of(("a", "web"))) is member
