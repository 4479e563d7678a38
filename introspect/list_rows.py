"""The rows of the list pages (`lists`): one builder per page, each reading one `Snapshot`."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from kube_manager.records.db import ConnectionStatus
from introspect import contrail as c
from introspect.contrail import paced
from introspect.decoded import describe_endpoint, selector_of, selector_text, selectors_of, with_phrase
from introspect.listing import FIREWALL_POLICIES_PATH, TAGS_PATH, Row, Snapshot, href

NETWORK_POLICY_KIND = "NetworkPolicy"


# ---- Kubernetes lists ------------------------------------------------------------------------

def policy_errors(snapshot: Snapshot) -> Dict[Tuple[str, str], List[str]]:
    """(namespace, name) -> reasons from the translation errors of each NetworkPolicy."""
    found: Dict[Tuple[str, str], List[str]] = {}
    for error in snapshot.db.errors:
        if error.get("kind") == NETWORK_POLICY_KIND:
            found.setdefault((error.get("namespace", ""), error.get("name", "")), []).append(
                str(error.get("reason", "")))
    return found


def network_policy_rows(snapshot: Snapshot) -> List[Row]:
    translation_errors = policy_errors(snapshot)
    rows = []
    for key, record in paced(sorted(snapshot.db.network_policies.items())):
        # The record's own errors (sync failures) and the translator's, each reason once.
        errors = list(dict.fromkeys(list(record.errors) + translation_errors.get(key, [])
                                    + [snapshot.redactor.text(e) for e in record.write_errors]))
        fp_name = record.firewall_policy[-1] if record.firewall_policy else ""
        rows.append({
            "uid": record.uid, "namespace": record.namespace, "name": record.name,
            "spec": record.spec, "firewall_policy": list(record.firewall_policy),
            "rules": list(record.rules), "state": record.state, "errors": errors,
            "firewall_policy_name": fp_name, "rule_count": len(record.rules),
            "sequence": snapshot.contrail.policy_sequence(fp_name),
        })
    return rows


def pod_rows(snapshot: Snapshot) -> List[Row]:
    return [{
        "uid": pod.uid, "namespace": pod.namespace, "name": pod.name, "ip": pod.ip,
        "tags": list(pod.tags), "vmi_state": pod.vmi_state,
        "vmi_error": snapshot.redactor.text(pod.vmi_error),
        "labels": [f"{k}={v}" for k, v in sorted(pod.labels.items())],
        "tag_links": [(with_phrase(selectors_of(snapshot.db, [tag]), tag), href(TAGS_PATH, name=tag))
                      for tag in pod.tags],
    } for _key, pod in paced(sorted(snapshot.db.pods.items()))]


def namespace_rows(snapshot: Snapshot) -> List[Row]:
    pods: Dict[str, int] = {}
    policies: Dict[str, int] = {}
    for namespace, _name in snapshot.db.pods:
        pods[namespace] = pods.get(namespace, 0) + 1
    for namespace, _name in snapshot.db.network_policies:
        policies[namespace] = policies.get(namespace, 0) + 1
    return [{
        "uid": ns.uid, "name": ns.name, "labels": dict(sorted(ns.labels.items())),
        "pods": pods.get(ns.name, 0), "network_policies": policies.get(ns.name, 0),
        "label_list": [f"{k}={v}" for k, v in sorted(ns.labels.items())],
    } for _name, ns in sorted(snapshot.db.namespaces.items())]


# ---- Contrail lists --------------------------------------------------------------------------

def _object_fields(obj: c.ContrailObject) -> Row:
    return {"name": obj.name, "fq_name": list(obj.fq_name), "uuid": obj.uuid, "state": obj.state}


def tag_rows(snapshot: Snapshot) -> List[Row]:
    view = snapshot.contrail
    rows = []
    for tag in paced(view.objects(c.TAG)):
        body = tag.body
        tag_type, _, tag_value = tag.name.partition("=")
        pods = view.pods_by_tag.get(tag.name, [])
        rows.append({**_object_fields(tag),
                     "type": body.get("tag_type_name", tag_type),
                     "value": body.get("tag_value", tag_value),
                     "tag_id": (tag.actual or {}).get("tag_id") or snapshot.tag_ids.get(tag.name, ""),
                     "selector": selector_of(snapshot.db, tag.name),
                     "selector_text": selector_text(snapshot.db, tag.name),
                     "pods": pods, "rules": view.rules_by_tag.get(tag.name, []),
                     "pod_count": len(pods), "rule_count": len(view.rules_by_tag.get(tag.name, []))})
    return rows


def address_group_rows(snapshot: Snapshot) -> List[Row]:
    view = snapshot.contrail
    return [{**_object_fields(group), "prefixes": c.prefixes(group.body),
             "rules": view.rules_by_address_group.get(group.name, []),
             "rule_count": len(view.rules_by_address_group.get(group.name, []))}
            for group in paced(view.objects(c.ADDRESS_GROUP))]


def firewall_policy_rows(snapshot: Snapshot) -> List[Row]:
    view = snapshot.contrail
    rows = []
    for policy in paced(view.ordered_policies):
        rules = [name for name, _seq in policy.refs("firewall_rule_refs")]
        namespace, np_name = policy.annotation("namespace"), policy.annotation("name")
        rows.append({**_object_fields(policy), "namespace": namespace or None,
                     "network_policy": f"{namespace}/{np_name}" if np_name else None,
                     "sequence": view.policy_sequence(policy.name), "rules": rules,
                     "rule_count": len(rules)})
    return rows


def firewall_rule_rows(snapshot: Snapshot) -> List[Row]:
    return [rule_row(snapshot, rule, membership)
            for rule, membership in paced(snapshot.contrail.ordered_rules())]


def rule_row(snapshot: Snapshot, rule: c.ContrailObject, membership: Optional[c.Membership]) -> Row:
    """A rule's JSON fields and what the filters need; `describe_rule` adds the display text."""
    body = rule.body
    ep1, ep2 = body.get("endpoint_1"), body.get("endpoint_2")
    groups = [g for g in (c.endpoint_address_group(ep1), c.endpoint_address_group(ep2)) if g]
    return {
        **_object_fields(rule),
        "namespace": snapshot.rule_namespaces.get(rule.name) or None,
        "policy": membership.policy if membership else None,
        "policy_sequence": membership.policy_sequence if membership else None,
        "sequence": membership.sequence if membership else None,
        "endpoint_1": ep1, "direction": body.get("direction", ""), "endpoint_2": ep2,
        "service": body.get("service"), "action": c.describe_action(body),
        "tags": sorted(set(c.endpoint_tags(ep1)) | set(c.endpoint_tags(ep2))),
        "address_groups": groups,
        "selectors": selectors_of(snapshot.db, c.endpoint_tags(ep1) + c.endpoint_tags(ep2)),
    }


def describe_rule(row: Row) -> Row:
    """The wiki-notation columns of a rule row, computed only for the rows a page shows."""
    order = [s for s in (row["policy_sequence"], row["sequence"]) if s]
    return {**row, "source": describe_endpoint(row["selectors"], row["endpoint_1"]),
            "destination": describe_endpoint(row["selectors"], row["endpoint_2"]),
            "service_text": c.describe_service(row["service"]), "order": " / ".join(order)}


def aps_rows(snapshot: Snapshot) -> List[Row]:
    rows = []
    for aps in snapshot.contrail.objects(c.APS):
        policies = aps.refs("firewall_policy_refs")
        rows.append({**_object_fields(aps),
                     "tags": [name for name, _seq in aps.refs("tag_refs")],
                     "firewall_policies": [{"name": n, "sequence": s} for n, s in policies],
                     "policy_links": [(f"{s}  {n}", href(FIREWALL_POLICIES_PATH, name=n))
                                      for n, s in policies]})
    return rows


def connection_row(snapshot: Snapshot, status: ConnectionStatus) -> Row:
    text = snapshot.redactor.text
    return {"name": status.name, "url": text(status.url), "connected": status.connected,
            "last_event_at": status.last_event_at, "last_error": text(status.last_error),
            "last_error_at": status.last_error_at, "reconnects": status.reconnects,
            "resource_version": status.resource_version,
            "initial_list_done": status.initial_list_done, "served": not status.absent}


def kube_connection_rows(snapshot: Snapshot) -> List[Row]:
    return [connection_row(snapshot, status)
            for _name, status in sorted(snapshot.db.kube_connections.items())]


def vnc_connection_rows(snapshot: Snapshot) -> List[Row]:
    return [connection_row(snapshot, snapshot.db.vnc_connection)]
