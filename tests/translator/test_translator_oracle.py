"""The schema oracle (schema_oracle.py) catches what the real config API refuses."""
from __future__ import annotations

import pytest

from kube_manager.translator import translate
from tests.support.schema_oracle import assert_translation_valid, schema_problems


RULE = {
    "fq_name": ["default-policy-management", "r"], "parent_type": "policy-management",
    "action_list": {"simple_action": "pass"},
    "service": {"protocol": "tcp", "src_ports": {"start_port": 0, "end_port": 65535},
                "dst_ports": {"start_port": 80, "end_port": 80}},
    "endpoint_1": {"any": True}, "direction": ">", "endpoint_2": {"tags": ["a=b"]},
    "match_tags": {"tag_list": []},
}


def test_a_good_rule_passes():
    assert schema_problems("firewall-rule", RULE) == []


@pytest.mark.parametrize("change, fragment", [
    ({"bogus": 1}, "bogus: not a field"),
    ({"direction": "->"}, "direction"),
    ({"action_list": {"simple_action": "allow"}}, "simple_action"),
    ({"endpoint_1": {"any": True, "tags": ["a=b"]}}, "exclusive"),
    ({"endpoint_1": {"anything": True}}, "anything"),
    ({"service": {"protocol": "tcp", "dst_ports": {"start_port": 0, "end_port": 70000}}}, "outside"),
    ({"service": {"protocol": "tcp", "dst_ports": {"start_port": "80", "end_port": 80}}}, "not integer"),
    ({"parent_type": "project-x"}, "parent_type"),
    ({"fq_name": ["default-policy-management", "a:b"]}, "':'"),
])
def test_the_oracle_catches_what_the_api_refuses(change, fragment):
    body = dict(RULE, **change)
    assert any(fragment in p for p in schema_problems("firewall-rule", body)), schema_problems(
        "firewall-rule", body)


def test_the_oracle_catches_missing_required_fields_and_bad_refs():
    body = {k: v for k, v in RULE.items() if k != "endpoint_2"}
    assert "endpoint_2: required" in schema_problems("firewall-rule", body)
    policy = {"fq_name": ["default-policy-management", "p"], "parent_type": "policy-management",
              "firewall_rule_refs": [{"to": ["default-policy-management", "r"], "attr": None}]}
    assert any("sequence" in p or "object" in p for p in schema_problems("firewall-policy", policy))
    tag = {"fq_name": ["a=b"], "tag_type_name": "a", "tag_value": "b", "parent_type": "domain"}
    assert any("parent_type" in p for p in schema_problems("tag", tag))


def test_an_empty_cluster_is_schema_valid():
    assert_translation_valid(translate({}).to_dict())
