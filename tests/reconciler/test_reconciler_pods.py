"""The set-tag changes that bring a pod's VMI to its desired tags."""
from __future__ import annotations

from kube_manager.reconciler.pods import VmiIndex, apply_changes, tag_changes

OURS = {"application=k8s", "namespace=a", "namespace=b", "app=web", "app=db", "label=k8s-sel-1",
        "label=k8s-sel-2"}


def managed(tag: str) -> bool:
    return tag in OURS


def test_new_vmi_gets_every_tag_in_one_change_set():
    desired = {"application=k8s", "namespace=a", "app=web", "label=k8s-sel-1", "label=k8s-sel-2"}
    changes = tag_changes(set(), desired, managed)
    assert changes == {
        "application": {"is_global": True, "value": "k8s"},
        "namespace": {"is_global": True, "value": "a"},
        "app": {"is_global": True, "value": "web"},
        "label": {"is_global": True, "add_values": ["k8s-sel-1", "k8s-sel-2"], "delete_values": []},
    }
    assert apply_changes(set(), changes) == desired


def test_changed_label_value_replaces_and_gone_label_is_removed():
    current = {"application=k8s", "namespace=a", "app=web", "label=k8s-sel-1"}
    desired = {"application=k8s", "namespace=a", "label=k8s-sel-2"}
    changes = tag_changes(current, desired, managed)
    assert changes == {"app": None,
                       "label": {"is_global": True, "add_values": ["k8s-sel-2"], "delete_values": ["k8s-sel-1"]}}
    assert apply_changes(current, changes) == desired


def test_tags_that_are_not_ours_stay():
    current = {"application=k8s", "namespace=a", "site=lab", "label=operator"}
    desired = {"application=k8s", "namespace=a"}
    assert tag_changes(current, desired, managed) == {}


def test_in_sync_vmi_needs_nothing():
    tags = {"application=k8s", "namespace=a", "label=k8s-sel-1"}
    assert tag_changes(tags, set(tags), managed) == {}


def test_a_tag_that_cannot_be_created_yet_keeps_the_old_value():
    current = {"application=k8s", "namespace=a", "app=web"}
    desired = {"application=k8s", "namespace=a", "app=db"}
    assert tag_changes(current, desired, managed, skip={"app=db"}) == {}


def test_vmi_index_follows_listing_and_keeps_recent_writes():
    index = VmiIndex()
    index.put("vmi-1", "vm-1", {"namespace=a"})
    listing = [
        {"uuid": "vmi-1", "fq_name": ["d", "p", "one"], "virtual_machine_refs": [{"uuid": "vm-1", "to": ["vm-1"]}],
         "tag_refs": []},
        {"uuid": "vmi-2", "virtual_machine_refs": [{"uuid": "vm-2", "to": ["vm-2"]}],
         "tag_refs": [{"to": ["app=web"], "uuid": "t"}, {"to": ["d", "p", "app=x"], "uuid": "t2"}]},
    ]
    index.load([listing[:1], listing[1:]], kept={"vmi-1"}.__contains__)
    assert index.tags == {"vmi-1": {"namespace=a"}, "vmi-2": {"app=web"}}
    assert index.names["vmi-1"] == ""  # kept as we knew it: written since the listing began
    index.put("vmi-1", "vm-1", {"namespace=b"}, "d:p:one")
    index.put("vmi-1", "vm-1", set())
    assert index.names["vmi-1"] == "d:p:one"
    assert index.vmis_of("vm-2") == ["vmi-2"] and index.by_tag["app=web"] == {"vmi-2"}
    index.drop("vmi-2")
    assert index.vmis_of("vm-2") == [] and not index.by_tag["app=web"]


def test_vmi_index_shares_equal_tag_sets():
    """Memory (issue 12): VMIs carrying the same tags hold one set of them, not a decoded copy each."""
    index = VmiIndex()
    listing = [{"uuid": f"vmi-{i}", "virtual_machine_refs": [{"uuid": f"vm-{i}", "to": [f"vm-{i}"]}],
                "tag_refs": [{"to": ["application=k8s"]}, {"to": ["namespace=a"]}]}
               for i in range(3)]
    index.load([listing], kept=lambda _vmi: False)
    assert index.tags["vmi-0"] == {"application=k8s", "namespace=a"}
    assert index.tags["vmi-0"] is index.tags["vmi-1"] is index.tags["vmi-2"]
    index.put("vmi-1", "vm-1", {"application=k8s"})
    assert index.tags["vmi-1"] == {"application=k8s"} and index.tags["vmi-0"] == {"application=k8s", "namespace=a"}
    assert index.vmis_of("vm-1") == ["vmi-1"] and index.by_tag["namespace=a"] == {"vmi-0", "vmi-2"}
