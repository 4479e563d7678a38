"""bodies.FIELDS: the fields of each type's bodies, which a resync reads back before anything is
translated, are exactly those the translator writes."""
from __future__ import annotations

import os
from collections import defaultdict
from typing import Dict, Set

from kube_manager.offline.manifests import load_manifests
from kube_manager.translator import translate
from kube_manager.translator.bodies import FIELDS
from tests.support.paths import EXAMPLES

EXAMPLES = str(EXAMPLES)


def test_every_body_the_translator_makes_has_the_fields_of_its_type():
    manifests = load_manifests([EXAMPLES])
    assert manifests.objects["NetworkPolicy"] and manifests.objects["ClusterNetworkPolicy"]
    translation = translate(manifests.objects)
    seen: Dict[str, Set[str]] = defaultdict(set)
    bodies = {"tag": translation.tags, "address-group": translation.address_groups,
              "firewall-rule": translation.firewall_rules, "firewall-policy": translation.firewall_policies,
              "application-policy-set": (translation.application_policy_set,)}
    for obj_type, objects in bodies.items():
        for body in objects:
            assert set(body) <= FIELDS[obj_type], (obj_type, body.get("fq_name"))
            seen[obj_type].update(body)
    assert seen == FIELDS  # none listed that no body carries
