"""ref-update on long ref lists: the same answers as a PUT of the whole field, and work that does not
grow with the list (an application policy set refers to every firewall policy of the cluster).

The work is counted, not timed: the stored ref field is swapped for a dict that counts every pass
over it, and the store's back-reference index counts the refs it (un)indexes."""
from __future__ import annotations

from typing import Any, Dict, Iterator, List

import pytest

from simulators.vnc_api.api import ConfigApi
from simulators.vnc_api.errors import ApiError
from simulators.vnc_api.store import Store

PM = ["default-policy-management"]
PROJECT = ["default-domain", "default-project"]


class CountingDict(dict):
    """A stored ref field that counts the passes made over it (lookups by key are free)."""

    passes = 0

    def __iter__(self) -> Iterator[Any]:
        CountingDict.passes += 1
        return super().__iter__()

    def keys(self):  # type: ignore[override]
        CountingDict.passes += 1
        return super().keys()

    def values(self):  # type: ignore[override]
        CountingDict.passes += 1
        return super().values()

    def items(self):  # type: ignore[override]
        CountingDict.passes += 1
        return super().items()


class CountingStore(Store):
    """Counts the refs the back-reference index is told about."""

    def __init__(self) -> None:
        super().__init__()
        self.indexed = 0

    def _index_refs(self, uuid: str, ref_field: str, refs: Any) -> None:
        refs = list(refs)
        self.indexed += len(refs)
        super()._index_refs(uuid, ref_field, refs)

    def _unindex_refs(self, uuid: str, ref_field: str, refs: Any) -> None:
        refs = list(refs)
        self.indexed += len(refs)
        super()._unindex_refs(uuid, ref_field, refs)


def policy_set(api: ConfigApi, policies: int) -> "tuple[str, List[str]]":
    aps = api.create("application-policy-set", {"fq_name": PM + ["k8s"], "parent_type": "policy-management"})
    uuids = [api.create("firewall-policy", {"fq_name": PM + [f"fp-{i}"], "parent_type": "policy-management"})["uuid"]
             for i in range(policies)]
    api.update("application-policy-set", aps["uuid"], {"firewall_policy_refs": [
        {"uuid": u, "to": PM + [f"fp-{i}"], "attr": {"sequence": f"1.{i:012d}"}} for i, u in enumerate(uuids)]})
    return aps["uuid"], uuids


def ref_update(api: ConfigApi, aps: str, operation: str, attr: Any = None, **target: Any) -> None:
    api.ref_update({"type": "application-policy-set", "uuid": aps, "ref-type": "firewall-policy",
                    "operation": operation, "attr": attr, **target})


def sequences(api: ConfigApi, aps: str) -> Dict[str, str]:
    read = api.read("application-policy-set", aps)
    return {r["to"][-1]: r["attr"]["sequence"] for r in read.get("firewall_policy_refs", [])}


@pytest.mark.parametrize("policies", [10, 400])
def test_one_ref_update_does_one_refs_worth_of_work_however_long_the_list(policies):
    store = CountingStore()
    api = ConfigApi(store)
    aps, _uuids = policy_set(api, policies)
    extra = api.create("firewall-policy", {"fq_name": PM + ["extra"], "parent_type": "policy-management"})["uuid"]
    obj = store.get(aps)
    obj.refs["firewall_policy_refs"] = CountingDict(obj.refs["firewall_policy_refs"])
    CountingDict.passes, store.indexed = 0, 0

    ref_update(api, aps, "ADD", {"sequence": "1.5"}, **{"ref-uuid": extra})
    ref_update(api, aps, "ADD", {"sequence": "1.6"}, **{"ref-fq-name": PM + ["extra"]})  # attr changed
    ref_update(api, aps, "ADD", {"sequence": "1.6"}, **{"ref-uuid": extra})  # unchanged
    ref_update(api, aps, "DELETE", **{"ref-fq-name": PM + ["extra"]})
    ref_update(api, aps, "DELETE", **{"ref-uuid": extra})  # already gone

    assert CountingDict.passes == 0
    assert store.indexed == 3  # the add, the replacement, the removal: one ref each


def test_ref_update_gives_what_a_put_of_the_whole_field_gives():
    api = ConfigApi()
    aps, uuids = policy_set(api, 5)
    extra = api.create("firewall-policy", {"fq_name": PM + ["extra"], "parent_type": "policy-management"})["uuid"]
    before = sequences(api, aps)

    ref_update(api, aps, "ADD", {"sequence": "1.5"}, **{"ref-uuid": extra})
    assert sequences(api, aps) == {**before, "extra": "1.5"}
    assert [r["uuid"] for r in api.read("application-policy-set", aps)["firewall_policy_refs"]] == sorted(
        uuids + [extra])
    revision = api.store.revision
    ref_update(api, aps, "ADD", {"sequence": "1.5"}, **{"ref-uuid": extra})
    assert api.store.revision == revision  # the same ref again writes nothing
    ref_update(api, aps, "ADD", {"sequence": "1.7"}, **{"ref-uuid": extra})
    assert sequences(api, aps)["extra"] == "1.7"
    assert [s for s, _f, r in api.store.referrers(extra)][0].uuid == aps
    ref_update(api, aps, "DELETE", **{"ref-uuid": extra})
    assert sequences(api, aps) == before and api.store.referrers(extra) == []
    api.delete("firewall-policy", extra)  # no back-ref left behind

    for uuid in uuids:
        ref_update(api, aps, "DELETE", **{"ref-uuid": uuid})
    assert "firewall_policy_refs" not in api.read("application-policy-set", aps)


def test_ref_update_still_runs_the_type_checks_on_the_new_ref():
    api = ConfigApi()
    aps, _uuids = policy_set(api, 3)
    scoped = api.create("firewall-policy", {"fq_name": PROJECT + ["scoped"], "parent_type": "project"})
    with pytest.raises(ApiError) as refused:
        ref_update(api, aps, "ADD", {"sequence": "1.5"}, **{"ref-uuid": scoped["uuid"]})
    assert refused.value.status == 400 and "cannot reference a scoped" in str(refused.value)
    assert "scoped" not in sequences(api, aps)

    tag = api.create("tag", {"fq_name": ["app=x"], "tag_type_name": "app", "tag_value": "x"})
    tag_type = api.store.uuid_for("tag-type", ["app"])
    with pytest.raises(ApiError) as refused:
        api.ref_update({"type": "tag", "uuid": tag["uuid"], "ref-type": "tag-type", "operation": "DELETE",
                        "ref-uuid": tag_type})
    assert refused.value.status == 400 and "Tag-type reference cannot be updated" in str(refused.value)
