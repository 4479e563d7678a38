"""`real_kube_admin`: the real control plane's administrator, as a parity `Target`. It builds on the
session's `real_kube` fixture (tools/control-plane); in a tree without it, the tests skip. Its
`compact` waits until the server has forgotten the history compacted away, which takes up to the
control plane's --etcd-compaction-interval plus 15 s (a short interval keeps the tier quick)."""
from __future__ import annotations

import pytest

from tests.support.kube_parity import Target, forgotten

# seconds: two of kube-apiserver's default compaction intervals (5 min), its cache's poll, a margin
FORGET_TIMEOUT = 660.0


@pytest.fixture(scope="session")
def real_kube_admin(request: pytest.FixtureRequest) -> Target:
    try:
        real = request.getfixturevalue("real_kube")
    except pytest.FixtureLookupError:
        pytest.skip("no real control plane: the real_kube fixture (tools/control-plane) is not in this tree")
    target = Target("real", real.admin(), compact=lambda _path: None)
    target.compact = forgotten(target, FORGET_TIMEOUT)
    return target
