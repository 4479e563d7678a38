"""ipBlock address groups (SPEC 3): canonical CIDRs, names, and except as CIDR subtraction."""
from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kube_manager.translator.cidr import parse_ip_block, subtract
from kube_manager.translator.validation import InvalidInput


def block(cidr, *excepts):
    raw = {"cidr": cidr}
    if excepts:
        raw["except"] = list(excepts)
    return parse_ip_block(raw, "ipBlock")


def test_host_bits_are_masked():
    assert str(block("10.0.1.1/4").cidr) == "0.0.0.0/4"
    assert block("10.0.1.1/4").address_group_name == "0.0.0.0/4"


def test_without_except_the_group_is_the_cidr():
    b = block("172.17.0.0/16")
    assert b.address_group_name == "172.17.0.0/16"
    assert [str(p) for p in b.prefixes] == ["172.17.0.0/16"]


def test_wiki_except_is_subtracted():
    b = block("172.17.0.0/16", "172.17.1.0/24")
    assert b.address_group_name == "172.17.0.0/16-except-172.17.1.0/24"
    assert [str(p) for p in b.prefixes] == [
        "172.17.0.0/24", "172.17.2.0/23", "172.17.4.0/22", "172.17.8.0/21", "172.17.16.0/20",
        "172.17.32.0/19", "172.17.64.0/18", "172.17.128.0/17"]


def test_excepts_are_canonical_deduplicated_and_ascending_in_the_name():
    b = block("10.0.0.0/8", "10.9.0.0/16", "10.1.0.1/16", "10.1.0.0/16", "10.0.0.0/9")
    assert b.address_group_name == "10.0.0.0/8-except-10.0.0.0/9-10.1.0.0/16-10.9.0.0/16"
    assert [str(p) for p in b.prefixes] == ["10.128.0.0/9"]


def test_excepts_covering_everything_leave_an_empty_list():
    assert block("10.0.0.0/24", "10.0.0.0/25", "10.0.0.128/25").prefixes == ()


def test_ipv6_names_replace_colons():
    b = block("2001:DB8::/32", "2001:db8:1::/48")
    assert b.address_group_name == "2001_db8__/32-except-2001_db8_1__/48"
    assert str(b.prefixes[0]) == "2001:db8::/48"
    assert len(b.prefixes) == 16


def test_contains_honours_excepts_and_families():
    b = block("10.0.0.0/16", "10.0.1.0/24")
    assert b.contains(ipaddress.ip_address("10.0.2.3"))
    assert not b.contains(ipaddress.ip_address("10.0.1.3"))
    assert not b.contains(ipaddress.ip_address("::1"))
    assert not b.contains(None)


def test_hash_input():
    assert block("10.0.0.1/16", "10.0.1.0/24", "10.0.1.0/24").hash_input() == {
        "ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.0.1.0/24"]}}


@pytest.mark.parametrize("raw, fragment", [
    ({"cidr": "10.0.0.0"}, "not a CIDR"),
    ({"cidr": "10.0.0.0/33"}, "not a valid CIDR"),
    ({"cidr": "10.0.0.0/255.255.0.0"}, "not a CIDR"),
    ({"cidr": "010.0.0.0/8"}, "not a valid CIDR"),
    ({"cidr": "fe80::1%eth0/64"}, "not a CIDR"),
    ({"cidr": ""}, "required"),
    ({}, "required"),
    ({"cidr": 10}, "expected a string"),
    ({"cidr": "10.0.0.0/16", "except": ["10.0.0.0/16"]}, "strict subset"),
    ({"cidr": "10.0.0.0/16", "except": ["10.1.0.0/24"]}, "strict subset"),
    ({"cidr": "10.0.0.0/16", "except": ["10.0.0.0/8"]}, "strict subset"),
    ({"cidr": "10.0.0.0/16", "except": ["::/64"]}, "strict subset"),
    ({"cidr": "10.0.0.0/16", "except": "10.0.1.0/24"}, "expected a list"),
    ({"cidr": "10.0.0.0/16", "exept": ["10.0.1.0/24"]}, "unknown field"),
])
def test_invalid_blocks_are_refused(raw, fragment):
    with pytest.raises(InvalidInput) as info:
        parse_ip_block(raw, "ipBlock")
    assert fragment in str(info.value)


def _expected_cover(cidr, excepts):
    """An independent oracle: interval arithmetic, then summarize_address_range per interval."""
    intervals = [(int(cidr.network_address), int(cidr.broadcast_address))]
    for e in excepts:
        lo, hi = int(e.network_address), int(e.broadcast_address)
        kept = []
        for a, b in intervals:
            if hi < a or lo > b:
                kept.append((a, b))
                continue
            if a < lo:
                kept.append((a, lo - 1))
            if hi < b:
                kept.append((hi + 1, b))
        intervals = kept
    make = ipaddress.IPv4Address if cidr.version == 4 else ipaddress.IPv6Address
    merged = []
    for a, b in sorted(intervals):
        if merged and merged[-1][1] + 1 == a:
            merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    return [n for a, b in merged for n in ipaddress.summarize_address_range(make(a), make(b))]


@st.composite
def cidr_and_excepts(draw):
    version = draw(st.sampled_from([4, 6]))
    bits = 32 if version == 4 else 128
    network = ipaddress.IPv4Network if version == 4 else ipaddress.IPv6Network
    prefix = draw(st.integers(0, bits - 2))
    base = draw(st.integers(0, 2 ** bits - 1))
    cidr = network((base, prefix), strict=False)
    excepts = []
    for _ in range(draw(st.integers(0, 5))):
        length = draw(st.integers(prefix + 1, min(bits, prefix + 12)))
        offset = draw(st.integers(0, 2 ** (bits - prefix) - 1))
        excepts.append(network((int(cidr.network_address) + offset, length), strict=False))
    return cidr, excepts


@settings(max_examples=300, deadline=None)
@given(cidr_and_excepts())
def test_subtraction_covers_exactly_cidr_minus_excepts_minimally_and_ascending(case):
    cidr, excepts = case
    raw = {"cidr": str(cidr), "except": [str(e) for e in excepts]}
    prefixes = list(parse_ip_block(raw, "b").prefixes)
    assert prefixes == _expected_cover(cidr, excepts)
    assert prefixes == sorted(prefixes, key=lambda n: int(n.network_address))
    assert list(ipaddress.collapse_addresses(prefixes)) == prefixes  # nothing left to merge


def test_subtract_of_nothing_is_the_cidr():
    net = ipaddress.ip_network("10.0.0.0/8")
    assert subtract(net, ()) == [net]
