"""NetworkPolicy ports (SPEC 4 services, SPEC 11 validation) and the naming helpers (SPEC 4, 5)."""
from __future__ import annotations

import hashlib

import pytest

from kube_manager.translator.naming import (collision_label, hashed_sequence, rule_sequence, sequence_sort_key,
                                            shorten)
from kube_manager.translator.ports import PortSpec, parse_port
from kube_manager.translator.validation import InvalidInput


@pytest.mark.parametrize("raw, service", [
    ({}, ("tcp", 0, 65535)),
    (None, ("tcp", 0, 65535)),
    ({"protocol": None, "port": 80}, ("tcp", 80, 80)),
    ({"protocol": "UDP", "port": 53}, ("udp", 53, 53)),
    ({"protocol": "SCTP"}, ("sctp", 0, 65535)),
    ({"port": 8000, "endPort": 8080}, ("tcp", 8000, 8080)),
    ({"port": 8000, "endPort": 8000}, ("tcp", 8000, 8000)),
])
def test_numbered_ports_map_to_one_service(raw, service):
    assert parse_port(raw, "p").service() == service


def test_named_ports_keep_name_and_kubernetes_protocol():
    assert parse_port({"port": "http"}, "p") == PortSpec("TCP", name="http")
    assert parse_port({"port": "dns-udp", "protocol": "UDP"}, "p") == PortSpec("UDP", name="dns-udp")


@pytest.mark.parametrize("raw, fragment", [
    ({"protocol": "tcp", "port": 80}, "unsupported protocol"),
    ({"protocol": "ICMP"}, "unsupported protocol"),
    ({"port": 0}, "between 1 and 65535"),
    ({"port": 65536}, "between 1 and 65535"),
    ({"port": True}, "expected an integer or a string, got bool"),
    ({"port": 80.0}, "expected an integer or a string, got float"),
    ({"port": "80"}, "at least one letter"),
    ({"port": "HTTP"}, "lower-case"),
    ({"port": "a--b"}, "'--'"),
    ({"port": "-http"}, "'-'"),
    ({"port": "abcdefghijklmnop"}, "1-15"),
    ({"port": 90, "endPort": 80}, "below port"),
    ({"port": 90, "endPort": 70000}, "between 1 and 65535"),
    ({"port": "http", "endPort": 80}, "named port"),
    ({"endPort": 80}, "without port"),
    ({"port": 80, "protocl": "UDP"}, "unknown field"),
    ([80], "expected an object"),
])
def test_invalid_ports_are_refused(raw, fragment):
    with pytest.raises(InvalidInput) as info:
        parse_port(raw, "p")
    assert fragment in str(info.value)


def test_shortening_keeps_246_characters_and_a_hash():
    assert shorten("x" * 255) == "x" * 255
    long = "y" * 300
    short = shorten(long)
    assert len(short) == 255
    assert short == "y" * 246 + "-" + hashlib.sha1(long.encode()).hexdigest()[:8]


def test_collision_label_and_sequences():
    assert collision_label("a", "b-c") == "b-c-" + hashlib.sha1(b"a/b-c").hexdigest()[:8]
    assert rule_sequence(0) == "00000.0"
    assert rule_sequence(123) == "00123.0"
    name = "k8s-default-web"
    assert hashed_sequence(name) == "1." + str(int(hashlib.sha1(name.encode()).hexdigest(), 16))[:12]
    assert len(hashed_sequence(name)) == 14


def test_sequence_order_is_numeric():
    ordered = ["00002.0", "00010.0", "100000.0"]
    assert sorted(reversed(ordered), key=lambda sequence: sequence_sort_key(sequence, "")) == ordered
    assert sorted(["3.0", "1.999999999999", "2.0", "1.000000000001"],
                  key=lambda sequence: sequence_sort_key(sequence, "")) == [
        "1.000000000001", "1.999999999999", "2.0", "3.0"]
