"""`real_kube_admin`: the real control plane's administrator, as a parity `Target`. It builds on the
session's `real_kube` fixture (tools/control-plane); in a tree without it, the tests skip."""
from __future__ import annotations

import pytest

from tests.support.kube_parity import Target


@pytest.fixture(scope="session")
def real_kube_admin(request: pytest.FixtureRequest) -> Target:
    try:
        real = request.getfixturevalue("real_kube")
    except pytest.FixtureLookupError:
        pytest.skip("no real control plane: the real_kube fixture (tools/control-plane) is not in this tree")
    from tests.support.control_plane_support import compact_etcd  # type: ignore[import-not-found,unused-ignore]
    return Target("real", real.admin(), compact=lambda: compact_etcd(real))
