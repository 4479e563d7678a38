"""The reconciler knows the cluster's own objects (the APS, `<cluster>-denyall`, the ordered blocks)
by the names the translator gives them: asked of the translator's naming, never spelt again, so
that renaming one in the translator cannot leave the reconciler's make-before-break guarding
an object nobody writes."""
from __future__ import annotations

import pytest

from kube_manager.offline.manifests import load_manifests
from kube_manager.reconciler.gates import Gates
from kube_manager.translator import ClusterTranslator
from kube_manager.translator.bodies import APPLICATION_POLICY_SET, FIREWALL_POLICY
from kube_manager.translator.semantics import SEMANTICS, isolates_always
from tests.support.paths import EXAMPLES


@pytest.mark.parametrize("cluster", ["k8s", "blue.2"])
@pytest.mark.parametrize("semantics", SEMANTICS)
def test_the_gates_guard_the_objects_the_translator_emits(cluster: str, semantics: str) -> None:
    translator = ClusterTranslator(cluster, semantics=semantics)
    manifests = load_manifests([str(EXAMPLES / "cnp")], warn=lambda line: None)
    for kind in translator.kinds():
        for manifest in manifests.objects[kind]:
            translator.upsert(kind, manifest)
    translator.flush()
    desired = translator.desired()
    gates = Gates(cluster, translator.published())
    assert list(desired[APPLICATION_POLICY_SET]) == [gates.aps_key[1]]
    assert gates.denyall_key[1] in desired[FIREWALL_POLICY]
    blocks = {fq_name for fq_name in desired[FIREWALL_POLICY] if fq_name[-1].startswith(f"{cluster}--")}
    # The example has both tiers, so every block exists; the isolation blocks only in the exact mode.
    isolation = {gates.tiers.isolation[1], gates.tiers.isolation_deny[1]}
    expected = {key[1] for key in gates.tiers.policies} - (set() if isolates_always(semantics) else isolation)
    assert blocks == expected
