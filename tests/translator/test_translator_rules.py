"""SPEC sections 1 to 5, rule by rule, on translate()'s JSON form (every object schema-checked)."""
from __future__ import annotations

import hashlib
import json

import pytest

from tests.support.builders import namespace, pod, policy
from tests.support.schema_oracle import policies_by_name, rule_refs, rules, run, tag_names, workload_tags

PM = "default-policy-management"


def canonical(x):
    return json.dumps(x, sort_keys=True, separators=(",", ":"))


def sel_tag(hash_input, cluster="k8s"):
    return f"label={cluster}-sel-" + hashlib.sha1(canonical(hash_input).encode()).hexdigest()[:12]


def seq1(name):
    return "1." + str(int(hashlib.sha1(name.encode()).hexdigest(), 16))[:12]


def marks(body):
    return {kv["key"]: kv["value"] for kv in body["annotations"]["key_value_pair"]}


def ingress_from(peers, ports=None, own=None):
    block = {"from": peers}
    if ports is not None:
        block["ports"] = ports
    return {"podSelector": own or {}, "ingress": [block]}


def only_rule(result, prefix):
    matching = [r for n, r in rules(result).items() if n.startswith(prefix)]
    assert len(matching) == 1, sorted(rules(result))
    return matching[0]


# --- SPEC 1 and 5: scope, ownership marks, cluster objects, sequences -----------------------------

def test_cluster_objects_of_an_empty_cluster():
    result = run()
    assert tag_names(result) == ["application=k8s"]
    assert sorted(rules(result)) == ["k8s-allowall-egress", "k8s-allowall-ingress"]
    allow = rules(result)
    assert allow["k8s-allowall-ingress"]["endpoint_1"] == {"any": True}
    assert allow["k8s-allowall-ingress"]["endpoint_2"] == {"tags": ["application=k8s"]}
    assert allow["k8s-allowall-egress"]["endpoint_1"] == {"tags": ["application=k8s"]}
    assert allow["k8s-allowall-egress"]["endpoint_2"] == {"any": True}
    assert {r["action_list"]["simple_action"] for r in allow.values()} == {"pass"}
    assert rule_refs(result, "k8s-allowall") == [("k8s-allowall-ingress", "00000.0"),
                                                 ("k8s-allowall-egress", "00001.0")]
    assert rule_refs(result, "k8s-denyall") == []
    aps = result["application_policy_set"]
    assert aps["fq_name"] == [PM, "k8s"] and aps["parent_type"] == "policy-management"
    assert aps["tag_refs"] == [{"to": ["application=k8s"], "attr": None}]
    assert [(r["to"][-1], r["attr"]["sequence"]) for r in aps["firewall_policy_refs"]] == [
        ("k8s-denyall", "2.0"), ("k8s-allowall", "3.0")]


def test_every_object_is_global_and_marked_with_owner_cluster_and_kind():
    spec = ingress_from([{"ipBlock": {"cidr": "10.0.0.0/8"}}])
    result = run(policies=[policy("web", "p", spec, uid="u-1")], cluster="blue")
    kinds = {"tags": "tag", "address_groups": "address-group", "firewall_rules": "firewall-rule",
             "firewall_policies": "firewall-policy"}
    for key, kind in kinds.items():
        for body in result[key]:
            assert {k: v for k, v in marks(body).items() if k in ("owner", "cluster", "kind")} == {
                "owner": "k8s", "cluster": "blue", "kind": kind}
            if kind == "tag":
                assert "parent_type" not in body and len(body["fq_name"]) == 1
            else:
                assert body["parent_type"] == "policy-management" and body["fq_name"][0] == PM
    assert marks(result["application_policy_set"])["kind"] == "application-policy-set"


def test_firewall_policy_marks_name_the_network_policy():
    spec = {"podSelector": {"matchLabels": {"a": "b"}}, "ingress": [{}]}
    result = run(policies=[policy("web", "p", spec, uid="1234")])
    assert marks(policies_by_name(result)["k8s-web-p"]) == {
        "cluster": "k8s", "k8s_uuid": "1234", "kind": "firewall-policy", "name": "p", "namespace": "web",
        "owner": "k8s", "spec_sha256": hashlib.sha256(canonical(spec).encode()).hexdigest()}
    assert marks(policies_by_name(run(policies=[policy("web", "p", spec, uid=None)]))["k8s-web-p"])["k8s_uuid"] == ""


def test_owner_is_configurable():
    from kube_manager.translator import translate
    result = translate({}, cluster_name="c1", owner="team-a").to_dict()
    assert {marks(b)["owner"] for b in result["firewall_rules"]} == {"team-a"}


def test_aps_and_denyall_sequences_are_derived_from_names():
    result = run(policies=[policy("a", "p1", {"podSelector": {}}),
                           policy("b", "p2", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})])
    refs = [(r["to"][-1], r["attr"]["sequence"]) for r in result["application_policy_set"]["firewall_policy_refs"]]
    expected = sorted([("k8s-a-p1", seq1("k8s-a-p1")), ("k8s-b-p2", seq1("k8s-b-p2"))], key=lambda x: (x[1], x[0]))
    assert refs == expected + [("k8s-denyall", "2.0"), ("k8s-allowall", "3.0")]
    deny = ["k8s-a-ingress-p1-denyall", "k8s-b-ingress-p2-denyall", "k8s-b-egress-p2-denyall"]
    assert rule_refs(result, "k8s-denyall") == sorted(((n, seq1(n)) for n in deny), key=lambda x: (x[1], x[0]))


# --- SPEC 2: tags ----------------------------------------------------------------------------------

def test_identity_tags_for_every_namespace_including_implicit_ones():
    result = run(namespaces=[namespace("explicit")], pods=[pod("from-pod", "p")],
                 policies=[policy("from-policy", "np", {"podSelector": {}})])
    assert tag_names(result) == ["application=k8s", "namespace=explicit", "namespace=from-pod",
                                 "namespace=from-policy"]
    assert workload_tags(result) == {("from-pod", "p"): ["application=k8s", "namespace=from-pod"]}


def test_only_referenced_labels_become_tags():
    pods = [pod("ns", "a", labels={"role": "db", "pod-template-hash": "abc"}),
            pod("ns", "b", labels={"role": "web"})]
    result = run(pods=pods, policies=[policy("ns", "p", {"podSelector": {"matchLabels": {"role": "db"}}})])
    assert "role=db" in tag_names(result)
    assert not any(t.startswith(("pod-template-hash", "role=web")) for t in tag_names(result))
    assert workload_tags(result) == {("ns", "a"): ["application=k8s", "namespace=ns", "role=db"],
                                     ("ns", "b"): ["application=k8s", "namespace=ns"]}


def test_a_pod_label_tag_goes_only_on_pods_an_endpoint_naming_it_can_select():
    """SPEC 2: a policy of namespace `a` naming app=cache tags a's cache pods, not b's."""
    pods = [pod("a", "cache", labels={"app": "cache"}), pod("b", "cache", labels={"app": "cache"})]
    result = run([namespace("a"), namespace("b")], pods,
                 [policy("a", "p", {"podSelector": {"matchLabels": {"app": "cache"}}})])
    assert workload_tags(result) == {("a", "cache"): ["app=cache", "application=k8s", "namespace=a"],
                                     ("b", "cache"): ["application=k8s", "namespace=b"]}
    peer = ingress_from([{"podSelector": {"matchLabels": {"app": "cache"}}}])  # a peer in its own namespace
    result = run([namespace("a"), namespace("b")], pods, [policy("b", "p", peer)])
    assert "app=cache" in workload_tags(result)[("b", "cache")]
    assert "app=cache" not in workload_tags(result)[("a", "cache")]


@pytest.mark.parametrize("namespace_selector, tagged", [
    ({"matchLabels": {"team": "x"}}, {"x1", "x2"}),
    ({"matchLabels": {"team": "x", "env": "prod"}}, {"x1"}),
    ({}, {"x1", "x2", "y"}),
])
def test_a_namespace_selector_peer_tags_the_pod_label_in_the_namespaces_it_selects(namespace_selector, tagged):
    namespaces = [namespace("x1", team="x", env="prod"), namespace("x2", team="x"), namespace("y", team="y")]
    pods = [pod(ns, "cache", labels={"app": "cache"}) for ns in ("x1", "x2", "y")]
    spec = ingress_from([{"namespaceSelector": namespace_selector, "podSelector": {"matchLabels": {"app": "cache"}}}])
    result = run(namespaces, pods, [policy("other", "p", spec)])
    assert {ns for (ns, _name), tags in workload_tags(result).items() if "app=cache" in tags} == tagged


def test_namespace_labels_get_their_own_types_and_only_when_referenced():
    namespaces = [namespace("prod", project="x", env="prod"), namespace("dev", project="y")]
    pods = [pod("prod", "a", labels={"project": "pod-level"}), pod("dev", "b")]
    spec = ingress_from([{"namespaceSelector": {"matchLabels": {"project": "x"}}}])
    result = run(namespaces, pods, [policy("prod", "p", spec)])
    assert workload_tags(result)[("prod", "a")] == ["application=k8s", "namespace.project=x", "namespace=prod"]
    assert workload_tags(result)[("dev", "b")] == ["application=k8s", "namespace=dev"]
    assert "namespace.env=prod" not in tag_names(result)


def test_every_namespace_has_the_metadata_name_label():
    spec = ingress_from([{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "implicit"}}}])
    result = run(pods=[pod("implicit", "a")], policies=[policy("web", "p", spec)])
    assert "namespace.kubernetes.io__slash__metadata.name=implicit" in workload_tags(result)[("implicit", "a")]


def test_empty_values_upper_case_and_reserved_keys():
    labels = {"flag": "", "Team": "Blue", "application": "evil"}
    spec = {"podSelector": {"matchLabels": labels}}
    result = run(pods=[pod("ns", "a", labels=labels)], policies=[policy("ns", "p", spec)])
    team = "team--" + hashlib.sha1(b"Team").hexdigest()[:8] + "=Blue"
    tags = workload_tags(result)[("ns", "a")]
    assert tags == sorted(["application=k8s", "namespace=ns", "flag=__empty__", team, "label.application=evil"])
    deny = rules(result)["k8s-ns-ingress-p-denyall"]
    assert deny["endpoint_2"] == {"tags": tags}


# --- SPEC 2.1: endpoints and selector tags ---------------------------------------------------------

APP = "application=k8s"


@pytest.mark.parametrize("peer, kind, tags", [
    ({"podSelector": {"matchLabels": {"r": "f"}}}, "podSelector", [APP, "namespace=n", "r=f"]),
    ({"podSelector": {}}, "podSelector", [APP, "namespace=n"]),
    ({"namespaceSelector": {"matchLabels": {"t": "x"}}}, "namespaceSelector", [APP, "namespace.t=x"]),
    ({"namespaceSelector": {}}, "namespaceSelector", [APP]),
    ({"namespaceSelector": {"matchLabels": {"t": "x"}}, "podSelector": {"matchLabels": {"r": "f"}}},
     "podSelector", [APP, "namespace.t=x", "r=f"]),
    ({"namespaceSelector": {}, "podSelector": {}}, "podSelector", [APP]),
    ({"podSelector": {"matchExpressions": [{"key": "r", "operator": "In", "values": ["f"]}]}},
     "podSelector", [APP, "namespace=n", "r=f"]),
])
def test_endpoint_table(peer, kind, tags):
    result = run(policies=[policy("n", "p", ingress_from([peer], own={"matchLabels": {"o": "1"}}))])
    rule = rules(result)[f"k8s-n-ingress-p-0-{kind}-0-0"]
    assert rule["endpoint_1"] == {"tags": tags}
    assert rule["endpoint_2"] == {"tags": [APP, "namespace=n", "o=1"]}
    assert rule["service"]["protocol"] == "any"


def test_complex_peer_selectors_become_one_selector_tag_held_by_exactly_the_matching_pods():
    namespaces = [namespace("a", team="x", env="prod"), namespace("b", team="y"), namespace("c", team="x", env="dev")]
    pods = [pod("a", "p1", labels={"app": "web"}), pod("a", "p2", labels={"app": "db"}),
            pod("b", "p3", labels={"app": "web"}), pod("c", "p4", labels={"app": "web"})]
    ns_selector = {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]},
                                        {"key": "team", "operator": "Exists"}]}
    peer = {"namespaceSelector": ns_selector, "podSelector": {"matchLabels": {"app": "web"}}}
    result = run(namespaces, pods, [policy("a", "p", ingress_from([peer]))])
    tag = sel_tag([{"namespaceSelector": {"matchExpressions": [
        {"key": "env", "operator": "NotIn", "values": ["dev"]}, {"key": "team", "operator": "Exists"}]}},
        {"matchLabels": {"app": "web"}}])
    assert rules(result)["k8s-a-ingress-p-0-podSelector-0-0"]["endpoint_1"] == {"tags": [tag]}
    holders = sorted(k for k, tags in workload_tags(result).items() if tag in tags)
    assert holders == [("a", "p1"), ("b", "p3")]


@pytest.mark.parametrize("expression, holders", [
    ({"key": "tier", "operator": "In", "values": ["b", "a"]}, ["p-a", "p-b"]),
    ({"key": "tier", "operator": "NotIn", "values": ["a"]}, ["p-b", "p-c", "p-none"]),
    ({"key": "tier", "operator": "Exists"}, ["p-a", "p-b", "p-c"]),
    ({"key": "tier", "operator": "DoesNotExist"}, ["p-none"]),
])
def test_own_pod_selector_with_expressions_selects_exactly_matching_pods(expression, holders):
    pods = [pod("n", f"p-{t}", labels={"tier": t}) for t in "abc"] + [pod("n", "p-none"), pod("m", "p-a", labels={"tier": "a"})]
    spec = {"podSelector": {"matchExpressions": [expression]}}
    result = run(pods=pods, policies=[policy("n", "p", spec)])
    normal = dict(expression)
    if "values" in normal:
        normal["values"] = sorted(normal["values"])
    tag = sel_tag([{"namespace": "n"}, {"matchExpressions": [normal]}])
    assert rules(result)["k8s-n-ingress-p-denyall"]["endpoint_2"] == {"tags": [tag]}
    assert sorted(k[1] for k, tags in workload_tags(result).items() if tag in tags and k[0] == "n") == holders
    assert tag not in workload_tags(result)[("m", "p-a")]


def test_selector_tags_are_scoped_to_the_cluster_name():
    spec = {"podSelector": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}
    result = run(policies=[policy("n", "p", spec)], cluster="blue")
    assert sel_tag([{"namespace": "n"}, {"matchExpressions": [{"key": "a", "operator": "Exists"}]}],
                   "blue") in tag_names(result)


# --- SPEC 3: address groups ------------------------------------------------------------------------

def test_address_groups_are_shared_and_ipv6_names_use_underscores():
    spec = ingress_from([{"ipBlock": {"cidr": "2001:db8::/32", "except": ["2001:db8:1::/48"]}}])
    result = run(policies=[policy("a", "p", spec), policy("b", "q", spec)])
    assert [g["fq_name"][-1] for g in result["address_groups"]] == ["2001_db8__/32-except-2001_db8_1__/48"]
    rule = rules(result)["k8s-a-ingress-p-0-ipBlock-0-cidr-2001_db8__/32-0"]
    assert rule["endpoint_1"] == {"address_group": f"{PM}:2001_db8__/32-except-2001_db8_1__/48"}


# --- SPEC 4: rules ---------------------------------------------------------------------------------

def test_rule_names_services_and_sequences():
    spec = {
        "podSelector": {"matchLabels": {"app": "db"}},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [
            {"from": [{"podSelector": {}}, {"namespaceSelector": {}}],
             "ports": [{"port": 80}, {"protocol": "UDP", "port": 53, "endPort": 54}, {"protocol": "SCTP"}]},
            {"ports": [{"port": 443}]},
        ],
        "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}, {}],
    }
    result = run(policies=[policy("ns", "np", spec)])
    refs = rule_refs(result, "k8s-ns-np")
    names = [name for name, _ in refs]
    assert names == [
        "k8s-ns-ingress-np-0-podSelector-0-0", "k8s-ns-ingress-np-0-podSelector-0-1",
        "k8s-ns-ingress-np-0-podSelector-0-2",
        "k8s-ns-ingress-np-0-namespaceSelector-1-0", "k8s-ns-ingress-np-0-namespaceSelector-1-1",
        "k8s-ns-ingress-np-0-namespaceSelector-1-2",
        "k8s-ns-ingress-np-1-allow-all-0",
        "k8s-ns-egress-np-0-ipBlock-0-cidr-10.0.0.0/8-0",
        "k8s-ns-egress-np-1-allow-all-0",
    ]
    assert [s for _, s in refs] == ["%05d.0" % i for i in range(9)]
    by_name = rules(result)
    services = [by_name[n]["service"] for n in names[:3]]
    assert [(s["protocol"], s["dst_ports"]["start_port"], s["dst_ports"]["end_port"]) for s in services] == [
        ("tcp", 80, 80), ("udp", 53, 54), ("sctp", 0, 65535)]
    assert all(s["src_ports"] == {"start_port": 0, "end_port": 65535} for s in services)
    assert by_name["k8s-ns-ingress-np-1-allow-all-0"]["endpoint_1"] == {"any": True}
    assert by_name["k8s-ns-egress-np-1-allow-all-0"]["endpoint_2"] == {"any": True}
    assert by_name["k8s-ns-egress-np-1-allow-all-0"]["service"]["protocol"] == "any"
    assert all(r["direction"] == ">" and r["match_tags"] == {"tag_list": []} for r in by_name.values())


@pytest.mark.parametrize("spec, directions", [
    ({"podSelector": {}, "ingress": [{}]}, ["ingress"]),
    ({"podSelector": {}, "egress": [{}]}, ["ingress", "egress"]),
    ({"podSelector": {}, "egress": []}, ["ingress"]),
    ({"podSelector": {}, "policyTypes": ["Egress"], "ingress": [{}], "egress": [{}]}, ["egress"]),
    ({"podSelector": {}, "policyTypes": ["Egress", "Ingress"]}, ["ingress", "egress"]),
])
def test_policy_types_default_as_the_api_server_and_unlisted_blocks_are_ignored(spec, directions):
    result = run(policies=[policy("n", "p", spec)])
    denied = [name for name, _ in rule_refs(result, "k8s-denyall")]
    assert sorted(denied) == sorted(f"k8s-n-{d}-p-denyall" for d in directions)
    passing = [name for name, _ in rule_refs(result, "k8s-n-p")]
    assert all(any(f"-{d}-" in name for d in directions) for name in passing)
    if "policyTypes" in spec and "ingress" not in directions:
        assert not any("-ingress-" in name for name in passing)


NAMED = [("http", 8080, "TCP"), ("dns", 53, "UDP")]


def test_named_port_resolving_to_one_number_everywhere_keeps_the_usual_endpoint():
    pods = [pod("n", "a", labels={"app": "web"}, ports=NAMED), pod("n", "b", labels={"app": "web"}, ports=NAMED)]
    spec = ingress_from([{"podSelector": {}}], [{"port": "http"}, {"port": "dns", "protocol": "UDP"}],
                        own={"matchLabels": {"app": "web"}})
    result = run(pods=pods, policies=[policy("n", "p", spec)])
    by_name = rules(result)
    assert by_name["k8s-n-ingress-p-0-podSelector-0-0"]["service"]["dst_ports"] == {"start_port": 8080, "end_port": 8080}
    assert by_name["k8s-n-ingress-p-0-podSelector-0-0"]["endpoint_2"] == {"tags": ["app=web", APP, "namespace=n"]}
    assert by_name["k8s-n-ingress-p-0-podSelector-0-1"]["service"]["protocol"] == "udp"
    assert result["errors"] == []


def test_named_port_with_several_numbers_gets_one_selector_tag_per_number():
    pods = [pod("n", "a", ports=[("http", 8080, "TCP")]), pod("n", "b", ports=[("http", 9090, "TCP")]),
            pod("n", "c", ports=[("http", 8080, "UDP")])]
    spec = ingress_from([{"podSelector": {}}], [{"port": 80}, {"port": "http"}])
    result = run(pods=pods, policies=[policy("n", "p", spec)])
    by_name = rules(result)
    assert [n for n, _ in rule_refs(result, "k8s-n-p")] == [f"k8s-n-ingress-p-0-podSelector-0-{s}" for s in range(3)]
    tags = {}
    for s, number in ((1, 8080), (2, 9090)):
        rule = by_name[f"k8s-n-ingress-p-0-podSelector-0-{s}"]
        assert rule["service"]["dst_ports"] == {"start_port": number, "end_port": number}
        tags[number] = sel_tag([[{"namespace": "n"}, {}], "http", "TCP", number])
        assert rule["endpoint_2"] == {"tags": [tags[number]]}
    held = workload_tags(result)
    assert tags[8080] in held[("n", "a")] and tags[9090] not in held[("n", "a")]
    assert tags[9090] in held[("n", "b")]
    assert not set(tags.values()) & set(held[("n", "c")])


def test_named_port_resolved_on_only_some_destination_pods_uses_a_selector_tag():
    pods = [pod("n", "a", ports=[("metrics", 9100, "TCP")]), pod("n", "b")]
    result = run(pods=pods, policies=[policy("n", "p", ingress_from([{"podSelector": {}}], [{"port": "metrics"}]))])
    tag = sel_tag([[{"namespace": "n"}, {}], "metrics", "TCP", 9100])
    assert rules(result)["k8s-n-ingress-p-0-podSelector-0-0"]["endpoint_2"] == {"tags": [tag]}
    assert tag in workload_tags(result)[("n", "a")] and tag not in workload_tags(result)[("n", "b")]


def test_unresolved_named_port_yields_no_rule_and_an_error():
    spec = ingress_from([{"podSelector": {}}], [{"port": "http"}, {"port": 443}])
    result = run(pods=[pod("n", "a", ports=[("http", 80, "UDP")])], policies=[policy("n", "p", spec)])
    assert [n for n, _ in rule_refs(result, "k8s-n-p")] == ["k8s-n-ingress-p-0-podSelector-0-0"]
    assert rules(result)["k8s-n-ingress-p-0-podSelector-0-0"]["service"]["dst_ports"]["start_port"] == 443
    assert [(e["kind"], e["namespace"], e["name"]) for e in result["errors"]] == [("NetworkPolicy", "n", "p")]
    assert "named port 'http' (TCP)" in result["errors"][0]["reason"]


def test_egress_named_ports_resolve_on_the_peer_pods():
    pods = [pod("n", "client", labels={"app": "client"}), pod("m", "srv", labels={"app": "srv"}, ports=NAMED)]
    spec = {"podSelector": {"matchLabels": {"app": "client"}}, "policyTypes": ["Egress"],
            "egress": [{"to": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": "srv"}}}],
                        "ports": [{"port": "http"}]}]}
    result = run(pods=pods, policies=[policy("n", "p", spec)])
    rule = rules(result)["k8s-n-egress-p-0-podSelector-0-0"]
    assert rule["endpoint_2"] == {"tags": ["app=srv", APP]}
    assert rule["service"]["dst_ports"]["start_port"] == 8080


def test_egress_named_port_to_an_ip_block_uses_the_pods_inside_the_block_only():
    pods = [pod("n", "in", ip="10.0.0.5", ports=NAMED), pod("n", "excepted", ip="10.0.1.5", ports=NAMED),
            pod("n", "out", ip="192.168.0.1", ports=NAMED), pod("n", "no-ip", ports=NAMED)]
    block = {"cidr": "10.0.0.0/16", "except": ["10.0.1.0/24"]}
    spec = {"podSelector": {}, "policyTypes": ["Egress"],
            "egress": [{"to": [{"ipBlock": block}], "ports": [{"port": "http"}]}]}
    result = run(pods=pods, policies=[policy("n", "p", spec)])
    tag = sel_tag([{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.0.1.0/24"]}}, "http", "TCP", 8080])
    rule = rules(result)["k8s-n-egress-p-0-ipBlock-0-cidr-10.0.0.0/16-0"]
    assert rule["endpoint_2"] == {"tags": [tag]}
    assert [k[1] for k, tags in workload_tags(result).items() if tag in tags] == ["in"]


def test_egress_named_port_without_peers_resolves_on_every_pod_of_the_cluster():
    pods = [pod("n", "a", ports=NAMED), pod("m", "b", ports=NAMED)]
    spec = {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"ports": [{"port": "http"}]}]}
    result = run(pods=pods, policies=[policy("n", "p", spec)])
    tag = sel_tag([[{"namespaceSelector": {}}, None], "http", "TCP", 8080])
    assert rules(result)["k8s-n-egress-p-0-allow-all-0"]["endpoint_2"] == {"tags": [tag]}
    assert all(tag in tags for tags in workload_tags(result).values())


def test_long_names_are_shortened_to_255_characters():
    name = "p" * 250
    spec = ingress_from([{"ipBlock": {"cidr": "10.0.0.0/8", "except": [f"10.{i}.0.0/16" for i in range(1, 30)]}}])
    result = run(policies=[policy("ns", name, spec)])
    for key in ("firewall_rules", "firewall_policies", "address_groups"):
        for body in result[key]:
            assert len(body["fq_name"][-1]) <= 255
    full = f"k8s-ns-ingress-{name}-0-ipBlock-0-cidr-10.0.0.0/8-0"
    short = full[:246] + "-" + hashlib.sha1(full.encode()).hexdigest()[:8]
    assert short in rules(result)
    group = only_rule(result, short)["endpoint_1"]["address_group"].split(":", 1)[1]
    assert len(group) == 255 and group.startswith("10.0.0.0/8-except-10.1.0.0/16-10.2.0.0/16")


def test_colliding_names_get_a_hash_suffix_in_all_their_names():
    spec = {"podSelector": {}, "ingress": [{}]}
    result = run(policies=[policy("a-b", "c", spec), policy("a", "b-c", spec), policy("x", "y", spec)])
    suffix_1 = "c-" + hashlib.sha1(b"a-b/c").hexdigest()[:8]
    suffix_2 = "b-c-" + hashlib.sha1(b"a/b-c").hexdigest()[:8]
    names = set(policies_by_name(result))
    assert {f"k8s-a-b-{suffix_1}", f"k8s-a-{suffix_2}", "k8s-x-y"} <= names
    assert {f"k8s-a-b-ingress-{suffix_1}-0-allow-all-0", f"k8s-a-ingress-{suffix_2}-0-allow-all-0",
            f"k8s-a-b-ingress-{suffix_1}-denyall", "k8s-x-ingress-y-0-allow-all-0"} <= set(rules(result))


def test_a_rule_name_collision_alone_also_suffixes_both():
    # ns "a-ingress-b" + np "c" and ns "a" + np "b-ingress-c" produce the same rule names but
    # different policy names.
    spec = {"podSelector": {}, "ingress": [{}]}
    result = run(policies=[policy("a-ingress-b", "c", spec), policy("a", "b-ingress-c", spec)])
    assert "k8s-a-ingress-b-ingress-c-0-allow-all-0" not in rules(result)
    assert len([n for n in rules(result) if n.endswith("-0-allow-all-0")]) == 2
    assert "k8s-a-ingress-b-c" not in policies_by_name(result)
