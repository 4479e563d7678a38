"""The emulated API server answers the shared request table (tests/support/kube_parity.py) as the real
kube-apiserver's sources say it must: Event, Lease, NetworkPolicy, pod, namespace and status
subresource rules, watches, lists and refusals. tests/realkube/test_emulator_parity.py sends the same
table to a real server."""
from __future__ import annotations

from typing import Iterator

import pytest

from kube_manager.kube.client_factory import api_client_for_url
from simulators.kube_api.runner import EmulatorRunner
from tests.support.kube_parity import CASES, Target


@pytest.fixture(scope="module")
def emulator() -> Iterator[Target]:
    # Without the namespace controller, as the bare control plane the parity tests run against.
    with EmulatorRunner(namespace_controller=False) as kube:
        yield Target("emulator", api_client_for_url(kube.url), compact=lambda _path: kube.store.compact())


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_emulator_answers_as_the_real_server(emulator: Target, case: str) -> None:
    requests, expected = CASES[case]
    assert requests(emulator) == expected


# Bodies of the wrong shape in the places admission reads: refused or stored, never a crash (500).
MISSHAPEN = [
    ("/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
     {"metadata": {"name": "np"}, "spec": {"podSelector": {}, "ingress": ["x", {"ports": [7], "from": [None]}]}}),
    ("/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
     {"metadata": {"name": "np2"}, "spec": {"podSelector": {}, "egress": [{"to": [{"ipBlock": "10.0.0.0/8"}]}]}}),
]


@pytest.mark.parametrize("path,body", MISSHAPEN)
def test_a_misshapen_body_is_no_server_error(emulator: Target, path: str, body: dict) -> None:
    ns = emulator.namespace("shape")
    code, _ = emulator.call("POST", path.format(ns=ns), body)
    assert code < 500
