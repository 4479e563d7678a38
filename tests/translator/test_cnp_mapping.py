"""SPEC 13's mapping of ClusterNetworkPolicies: the tier layout and sequences in the APS, the names,
what a Deny with a Pass before it becomes, port and network subtraction, fail-closed handling of
what cannot be enforced or is invalid, and the upstream conformance policy on the official schema."""
from __future__ import annotations

import copy
import hashlib
import ipaddress
import os
import subprocess
import sys

import pytest

from tests.support.builders import pod
from tests.support.cnp_support import cluster, cnp
from kube_manager.offline.manifests import load_manifests
from kube_manager.translator import ClusterTranslator, translate
from kube_manager.translator.decode import describe
from kube_manager.translator.cnp.render import OTHER_PROTOCOLS
from tests.support.schema_oracle import assert_translation_valid, policies_by_name, rules
from tests.support.paths import REPO

ROOT = str(REPO)
HOUSE_A = {"namespaces": {"matchLabels": {"house": "a"}}}
FROM_B = [{"namespaces": {"matchLabels": {"house": "b"}}}]
EVERYONE = [{"namespaces": {}}]


def _run(*policies, network_policies=()):
    namespaces, pods = cluster()
    result = translate(namespaces, pods, list(network_policies), cluster_network_policies=list(policies)).to_dict()
    assert_translation_valid(result)
    return result


def _aps(result):
    return [(ref["attr"]["sequence"], ref["to"][-1]) for ref in result["application_policy_set"]["firewall_policy_refs"]]


def test_tiers_take_their_places_in_the_aps_around_the_network_policy_tier():
    result = _run(cnp("guard", "Admin", 7, HOUSE_A, ingress=[{"action": "Deny", "from": FROM_B}]),
                  cnp("floor", "Baseline", 1000, HOUSE_A, ingress=[{"action": "Accept", "from": EVERYONE}]),
                  network_policies=[{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                                     "metadata": {"name": "np", "namespace": "ns-a"}, "spec": {"podSelector": {}}}])
    order = [name for _, name in _aps(result)]
    assert order == ["k8s--admin-deny", "k8s--cnp-guard", "k8s-ns-a-np", "k8s-denyall", "k8s--baseline-deny",
                     "k8s--cnp-floor", "k8s-allowall"]
    sequences = dict((name, sequence) for sequence, name in _aps(result))
    digits = str(int.from_bytes(hashlib.sha1(b"k8s--cnp-guard").digest(), "big"))[:8]
    assert sequences["k8s--admin-deny"] == "0.1" and sequences["k8s--cnp-guard"] == "0.20007" + digits
    assert sequences["k8s--baseline-deny"] == "2.1" and sequences["k8s--cnp-floor"].startswith("2.21000")
    assert all(name.startswith("k8s--") for name in rules(result) if "cnp" in name)
    guard = policies_by_name(result)["k8s--cnp-guard"]
    assert guard["firewall_rule_refs"] == []  # its only rule is a Deny: in k8s--admin-deny
    marks = {p["key"]: p["value"] for p in guard["annotations"]["key_value_pair"]}
    assert marks["name"] == "guard" and marks["k8s_uuid"] == "uid-guard" and marks["namespace"] == ""


def test_no_tier_objects_without_cluster_network_policies():
    for directory in ("demo", "wiki"):
        manifests = load_manifests([os.path.join(ROOT, "examples", directory)])
        assert not manifests.cluster_network_policies
        result = translate(manifests.namespaces, manifests.pods, manifests.network_policies).to_dict()
        assert not [name for _, name in _aps(result) if "--" in name]


def test_a_deny_after_a_pass_leaves_the_passed_traffic_to_the_next_tiers():
    result = _run(cnp("p", "Admin", 1, HOUSE_A, ingress=[{"action": "Pass", "from": FROM_B},
                                                        {"action": "Deny", "from": EVERYONE}]))
    (deny,) = [r for name, r in rules(result).items() if name.startswith("k8s--cnp-p-ingress-1")]
    assert deny["action_list"]["simple_action"] == "deny"
    (tag,) = deny["endpoint_1"]["tags"]
    assert tag.startswith("label=k8s-sel-")  # every pod but house b's: a selector tag
    carriers = {(w["namespace"], w["name"]) for w in result["workloads"] if tag in w["tags"]}
    assert carriers == {("ns-a", "web"), ("ns-a", "db"), ("ns-c", "web"), ("ns-c", "db")}


def test_a_deny_after_an_accept_on_some_ports_keeps_every_other_port_and_protocol():
    result = _run(cnp("p", "Admin", 1, HOUSE_A, ingress=[
        {"action": "Accept", "from": FROM_B, "protocols": [{"tcp": {"destinationPort": {"range": {"start": 80, "end": 90}}}}]},
        {"action": "Deny", "from": FROM_B}]))
    denied = [r["service"] for name, r in sorted(rules(result).items()) if name.startswith("k8s--cnp-p-ingress-1")]
    ranges = {(s["protocol"], s["dst_ports"]["start_port"], s["dst_ports"]["end_port"]) for s in denied}
    assert {("tcp", 0, 79), ("tcp", 91, 65535), ("udp", 0, 65535), ("sctp", 0, 65535)} <= ranges
    assert {int(p) for p, _, _ in ranges if p.isdigit()} == set(OTHER_PROTOCOLS)  # ICMP and the rest
    assert len(denied) == 4 + 253


def test_networks_are_subtracted_as_cidrs_and_pods_taken_out_by_their_ips():
    result = _run(cnp("p", "Admin", 1, HOUSE_A, egress=[
        {"action": "Accept", "to": [{"networks": ["10.0.0.0/9"]}]},
        {"action": "Pass", "to": [{"namespaces": {"matchLabels": {"house": "c"}}}]},
        {"action": "Deny", "to": [{"networks": ["10.0.0.0/8"]}]}]))
    (deny,) = [r for name, r in rules(result).items() if name.startswith("k8s--cnp-p-egress-2")]
    group_name = deny["endpoint_2"]["address_group"].split(":")[-1]
    assert group_name.startswith("k8s--admin-net-")
    (group,) = [g for g in result["address_groups"] if g["fq_name"][-1] == group_name]
    prefixes = {(s["ip_prefix"], s["ip_prefix_len"]) for s in group["address_group_prefix"]["subnet"]}
    assert prefixes == {("10.128.0.0", 9)}  # house c's pods are inside 10.0.0.0/9 already


def test_cnp_names_cannot_meet_network_policy_names():
    # A NetworkPolicy "admin-deny" in namespace "k8s-" is impossible (namespaces end alphanumeric);
    # one named "deny" in namespace "admin" gives k8s-admin-deny, not k8s--admin-deny.
    result = _run(cnp("x", "Admin", 1, HOUSE_A, ingress=[{"action": "Deny", "from": FROM_B}]),
                  network_policies=[{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                                     "metadata": {"name": "deny", "namespace": "admin"}, "spec": {"podSelector": {}}}])
    names = [name for _, name in _aps(result)]
    assert "k8s-admin-deny" in names and "k8s--admin-deny" in names


@pytest.mark.parametrize("peer", [{"nodes": {}}, {"domainNames": ["example.com"]}, {}, {"networks": ["10.0.0.0/33"]},
                                  {"namespaces": {}, "networks": ["10.0.0.0/8"]}, {"bogus": {}}])
def test_an_unenforceable_or_invalid_peer_fails_closed(peer):
    accept = _run(cnp("p", "Admin", 1, HOUSE_A, egress=[{"action": "Accept", "to": [peer]}]))
    assert not [n for n in rules(accept) if n.startswith("k8s--cnp-p")], "an Accept matches nothing"
    assert "fails closed" in accept["errors"][0]["reason"] and accept["errors"][0]["kind"] == "ClusterNetworkPolicy"
    for action in ("Deny", "Pass"):
        denied = _run(cnp("p", "Admin", 1, HOUSE_A, egress=[{"action": action, "to": [peer]}]))
        (rule,) = [r for n, r in rules(denied).items() if n.startswith("k8s--cnp-p")]
        assert rule["action_list"]["simple_action"] == "deny"
        assert rule["endpoint_2"] == {"any": True} and rule["service"]["protocol"] == "any"
        assert "application=k8s" in rule["endpoint_1"]["tags"]  # still only the subject's traffic


@pytest.mark.parametrize("spec_change, reason", [
    ({"tier": "Middle"}, "spec.tier"), ({"priority": 1001}, "spec.priority"), ({"priority": "1"}, "spec.priority"),
    ({"subject": {}}, "spec.subject"), ({"subject": {"namespaces": {}, "pods": {"podSelector": {}}}}, "spec.subject")])
def test_a_policy_without_a_readable_tier_priority_or_subject_is_rejected_whole(spec_change, reason):
    manifest = cnp("p", "Admin", 1, HOUSE_A, ingress=[{"action": "Deny", "from": FROM_B}])
    manifest["spec"].update(spec_change)
    result = _run(manifest)
    assert not [n for _, n in _aps(result) if "--" in n]
    (error,) = result["errors"]
    assert error["name"] == "p" and reason in error["reason"] and "rejected whole" in error["reason"]


def test_status_names_what_each_policy_emitted():
    translator = ClusterTranslator()
    namespaces, pods = cluster()
    for manifest in namespaces:
        translator.upsert_namespace(manifest)
    for manifest in pods:
        translator.upsert_pod(manifest)
    translator.set_cluster_network_policy(cnp("p", "Admin", 1, HOUSE_A, ingress=[
        {"action": "Accept", "from": FROM_B, "protocols": [{"destinationNamedPort": "nope"}]},
        {"action": "Deny", "from": FROM_B}]))
    translator.flush()
    status = translator.cluster_network_policy_status("p")
    assert status is not None and status.firewall_policy == ("default-policy-management", "k8s--cnp-p")
    assert status.rules == () and status.deny_rules == (("default-policy-management", "k8s--cnp-p-ingress-1-0-0-0"),)
    assert "named port 'nope' resolves on no destination pod" in status.errors[0]
    assert translator.cluster_network_policy_status("unknown") is None
    translator.set_cluster_network_policy({"kind": "ClusterNetworkPolicy", "metadata": {"name": "Bad_Name"}})
    translator.flush()
    assert [e["name"] for e in translator.errors()] == ["Bad_Name", "p"]


def test_translate_command_reads_cluster_network_policies_and_the_upstream_combined_case():
    out = subprocess.run([sys.executable, "-m", "kube_manager", "translate", "-f", os.path.join(ROOT, "examples", "cnp"),
                          "-o", "json"], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert '"k8s--admin-deny"' in out and '"k8s--cnp-gress-rules"' in out and '"k8s--baseline-deny"' in out
    manifests = load_manifests([os.path.join(ROOT, "examples", "cnp")])
    result = translate(manifests.namespaces, manifests.pods, manifests.network_policies,
                       cluster_network_policies=manifests.cluster_network_policies).to_dict()
    assert_translation_valid(result)
    assert result["errors"] == []


def test_a_piece_selector_tag_decodes_to_a_sentence():
    namespaces, pods = cluster()
    translation = translate(namespaces, pods, [], cluster_network_policies=[cnp("p", "Admin", 1, HOUSE_A, ingress=[
        {"action": "Pass", "from": FROM_B, "protocols": [{"destinationNamedPort": "web"}]},
        {"action": "Deny", "from": EVERYONE}])])
    phrases = sorted(describe(selector) for selector in translation.selectors.values())
    assert phrases == ['pods in every namespace and not pods in namespaces house=b',
                       'pods in namespaces house=a and not pods where port "web" (TCP) is 8080 and not pods where'
                       ' port "web" (TCP) is 80',
                       'pods where port "web" (TCP) is 80 and pods in namespaces house=a',
                       'pods where port "web" (TCP) is 8080 and pods in namespaces house=a']


def test_a_rule_whose_pieces_would_flood_the_config_api_fails_closed():
    # Seven Pass rules overlapping the Deny and each other in subject, peer and ports: about 3^7
    # pieces of several services each, over the 4,096-rule cap.
    passes = [cnp(f"pass-{i}", "Admin", 1, {"pods": {"namespaceSelector": {}, "podSelector": {"matchLabels": {f"s{i}": "y"}}}},
                  ingress=[{"action": "Pass", "from": [{"pods": {"namespaceSelector": {}, "podSelector": {"matchLabels": {f"p{i}": "y"}}}}],
                            "protocols": [{"tcp": {"destinationPort": {"number": 1000 + i}}}]}]) for i in range(7)]
    accept = cnp("accept", "Admin", 2, {"namespaces": {}}, ingress=[{"action": "Accept", "from": EVERYONE}])
    deny = cnp("deny", "Admin", 2, {"namespaces": {}}, ingress=[{"action": "Deny", "from": EVERYONE}])
    result = _run(*passes, accept, deny)
    (denied,) = [r for n, r in rules(result).items() if n.startswith("k8s--cnp-deny")]
    assert denied["endpoint_1"] == denied["endpoint_2"] == {"tags": ["application=k8s"]}
    assert denied["service"]["protocol"] == "any"  # enforced whole: also on what the Passes hand on
    assert not [n for n in rules(result) if n.startswith("k8s--cnp-accept")]  # matches nothing
    reasons = {e["name"]: e["reason"] for e in result["errors"]}
    assert "over 4096 firewall rules" in reasons["deny"] and "matches nothing" in reasons["accept"]


def test_the_embedded_config_api_takes_every_object_of_the_example_in_write_order():
    from simulators.vnc_api.api import ConfigApi

    manifests = load_manifests([os.path.join(ROOT, "examples", "cnp")])
    result = translate(manifests.namespaces, manifests.pods, manifests.network_policies,
                       cluster_network_policies=manifests.cluster_network_policies).to_dict()
    api = ConfigApi()
    for key, obj_type in (("tags", "tag"), ("address_groups", "address-group"), ("firewall_rules", "firewall-rule"),
                          ("firewall_policies", "firewall-policy")):
        for body in result[key]:
            api.create(obj_type, copy.deepcopy(body))
    api.create("application-policy-set", copy.deepcopy(result["application_policy_set"]))
    protocols = {rule["service"]["protocol"] for rule in result["firewall_rules"]}
    assert {"any", "tcp", "udp", "sctp", "1", "255"} <= protocols  # ICMP (1) among the other protocols


def test_pods_a_rule_took_out_of_a_network_leave_their_ips_but_a_host_network_pod_its_nodes_ip_stays():
    namespaces, pods = cluster()
    node = pod("ns-c", "agent", "10.0.3.99", {"app": "agent"})
    node["spec"]["hostNetwork"] = True
    result = translate(namespaces, pods + [node], [], cluster_network_policies=[cnp("p", "Admin", 1, HOUSE_A, egress=[
        {"action": "Pass", "to": [{"namespaces": {"matchLabels": {"house": "c"}}}]},
        {"action": "Deny", "to": [{"networks": ["10.0.3.0/24"]}]}])]).to_dict()
    (deny,) = [r for n, r in rules(result).items() if n.startswith("k8s--cnp-p-egress-1")]
    (group,) = [g for g in result["address_groups"] if g["fq_name"][-1] == deny["endpoint_2"]["address_group"].split(":")[-1]]
    covered = [ipaddress.ip_network(f"{s['ip_prefix']}/{s['ip_prefix_len']}") for s in group["address_group_prefix"]["subnet"]]
    inside = lambda ip: any(ipaddress.ip_address(ip) in net for net in covered)  # noqa: E731
    assert not inside("10.0.3.10") and not inside("10.0.3.11")  # house c's pods: passed on
    assert inside("10.0.3.99") and inside("10.0.3.1")  # the node's IP and any other address: denied
