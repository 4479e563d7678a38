"""ActualState: what a resync's listing leaves believed, and which keys it finds unsettled."""
from __future__ import annotations

import json
from typing import Any, Dict

from kube_manager.records.db import Database
from kube_manager.reconciler.actual import ActualState
from kube_manager.reconciler.compare import AsDesired
from kube_manager.reconciler.ownership import TypeListing
from kube_manager.translator.published import DesiredState
from tests.support.diff_support import rule, rule_body, tag


def _listed(body: Dict[str, Any], uuid: str, **changed: Any) -> Dict[str, Any]:
    """`body` as a listing answers it: decoded anew, with a uuid, without its parent_type."""
    answer = json.loads(json.dumps({**body, **changed, "uuid": uuid}))
    answer.pop("parent_type", None)
    return answer


def _resync(actual: ActualState, obj_type: str, owned: Dict[Any, Dict[str, Any]]) -> None:
    since = actual.begin_listing()
    actual.load(obj_type, [TypeListing(obj_type, owned=owned)], since)
    actual.loaded(since)


def test_referrers_follow_each_listing_whether_it_changed_what_a_rule_refers_to_or_not():
    """A listing that reads a rule as desired again leaves its referrers as they are; one that
    reads it drifted (other endpoint tags) moves them, and the next one as desired moves them back."""
    key = rule("r")
    desired = {**rule_body("app=web", "namespace=ns"), "fq_name": list(key[1]), "parent_type": "policy-management"}
    actual = ActualState(Database(), DesiredState({"firewall-rule": {key[1]: desired}}), {}, lambda _key: None)
    for _ in range(2):
        _resync(actual, "firewall-rule", {key[1]: _listed(desired, "u1")})
        assert isinstance(actual.get(key), AsDesired)
        assert actual.referrers(tag("app=web")) == [key] and actual.referrers(tag("namespace=ns")) == [key]
    drifted = {**desired["endpoint_1"], "tags": ["app=db", "namespace=ns"]}
    _resync(actual, "firewall-rule", {key[1]: _listed(desired, "u1", endpoint_1=drifted)})
    assert actual.referrers(tag("app=web")) == [] and actual.referrers(tag("app=db")) == [key]
    assert actual.referrers(tag("namespace=ns")) == [key]
    _resync(actual, "firewall-rule", {key[1]: _listed(desired, "u1")})
    assert actual.referrers(tag("app=db")) == [] and actual.referrers(tag("app=web")) == [key]
    _resync(actual, "firewall-rule", {})
    assert actual.referrers(tag("app=web")) == [] and actual.get(key) is None


def test_unsettled_names_the_drifted_the_missing_and_the_unwanted_but_not_what_reads_as_desired():
    bodies = {name: {**rule_body(f"app={name}"), "fq_name": list(rule(name)[1])} for name in ("same", "drift", "gone")}
    actual = ActualState(Database(), DesiredState({"firewall-rule": {rule(n)[1]: b for n, b in bodies.items()}}),
                         {}, lambda _key: None)
    _resync(actual, "firewall-rule", {
        rule("same")[1]: _listed(bodies["same"], "u1"),
        rule("drift")[1]: _listed(bodies["drift"], "u2", direction="<>"),
        rule("extra")[1]: {"uuid": "u3", "fq_name": list(rule("extra")[1])}})
    assert sorted(actual.unsettled()) == [rule("drift"), rule("extra"), rule("gone")]
