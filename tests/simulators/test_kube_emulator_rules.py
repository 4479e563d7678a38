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
        yield Target("emulator", api_client_for_url(kube.url), compact=kube.store.compact)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_emulator_answers_as_the_real_server(emulator: Target, case: str) -> None:
    requests, expected = CASES[case]
    assert requests(emulator) == expected
