"""One behaviour, two servers: the shared request table (tests/support/kube_parity.py) sent to the
emulated API server and to a real kube-apiserver (apiserver and etcd only, as tools/control-plane
starts them: no namespace controller, so the emulator runs without its own), each answer compared
in the terms the daemon reads. Fault injection is the emulator's alone and is not part of it. The
case of an expired continue token waits for the server's own etcd compaction: start the control
plane with a short --etcd-compaction-interval (10 s: about 15 s of waiting) to keep it quick."""
from __future__ import annotations

from typing import Iterator

import pytest

from kube_manager.kube.client_factory import api_client_for_url
from simulators.kube_api.runner import EmulatorRunner
from tests.support.kube_parity import CASES, Target

pytestmark = [pytest.mark.realkube, pytest.mark.slow]


@pytest.fixture(scope="module")
def emulator() -> Iterator[Target]:
    with EmulatorRunner(namespace_controller=False) as kube:
        yield Target("emulator", api_client_for_url(kube.url), compact=lambda _path: kube.store.compact())


@pytest.mark.parametrize("case", sorted(CASES))
def test_both_servers_answer_alike(real_kube_admin: Target, emulator: Target, case: str) -> None:
    requests, expected = CASES[case]
    real = requests(real_kube_admin)
    assert requests(emulator) == real
    assert real == expected  # what the sources say: a difference here is a reading to correct
