"""The staged policies (SPEC 17): `/Snh_StagedPolicyList` and `/explain?staged=1`.

The list shows each staged policy (a NetworkPolicy or ClusterNetworkPolicy whose record is
`staged`) with what the last staged run found (`db.staged`, the staged runner's): the flows it
would open and close among the current pods, and the Contrail objects it would add, change or
remove, their rules' endpoints decoded as on the other pages. `/explain?staged=1` answers one flow
twice, as enforced now and with the staged policies enforced, from the records' manifests,
translated afresh for each question in a forked child (`plumbing/forked.py`).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Tuple

from kube_manager.explain.staged_verdicts import StagedExplainer
from kube_manager.plumbing.forked import in_child
from kube_manager.records.db import STAGED, Database, PolicyRecord
from introspect import contrail as c
from introspect.decoded import describe_endpoint
from introspect.explain import db_manifests

STAGED_PATH = "/Snh_StagedPolicyList"
EXPLAIN_TIMEOUT = 300.0  # seconds: two translations of a large cluster
NICE = 19  # the question's child gives the CPU to the daemon first
Render = Callable[..., Any]


def staged_rows(db: Database) -> List[Dict[str, Any]]:
    """Each staged policy, NetworkPolicies by namespace and name, then ClusterNetworkPolicies."""
    records: List[Tuple[str, PolicyRecord]] = [("NetworkPolicy", r) for _, r in sorted(db.network_policies.items())]
    records += [("ClusterNetworkPolicy", r) for _, r in sorted(db.cluster_network_policies.items())]
    rows = []
    for kind, record in records:
        if record.state != STAGED:
            continue
        run = db.staged.get((kind, record.namespace, record.name))
        report = run.report if run is not None else {}
        rows.append({"kind": kind, "namespace": record.namespace, "name": record.name,
                     "generation": record.generation, "errors": list(record.errors),
                     "computing": run is None or run.computing or run.generation != record.generation,
                     "computed_at": run.computed_at if run is not None else None,
                     "run_seconds": run.seconds if run is not None else None,
                     "flows": report})
    return rows


def object_rows(report: Mapping[str, Any]) -> List[Dict[str, str]]:
    """The would-be objects of one report, for people: what happens to each, and a rule's
    endpoints with their selector tags decoded."""
    selectors = {tag: found["selector"] for tag, found in (report.get("selectors") or {}).items()}
    objects = report.get("objects") or {}
    rows = []
    for change in ("added", "changed"):
        for entry in objects.get(change) or ():
            body = entry["body"]
            text = ""
            if entry["type"] == "firewall_rules":
                text = (f"{c.describe_action(body)} {c.describe_service(body.get('service'))}: "
                        f"{describe_endpoint(selectors, body.get('endpoint_1'))} {body.get('direction', '')} "
                        f"{describe_endpoint(selectors, body.get('endpoint_2'))}")
            rows.append({"change": change, "type": entry["type"], "name": ":".join(body["fq_name"]), "text": text})
    for entry in objects.get("removed") or ():
        rows.append({"change": "removed", "type": entry["type"], "name": ":".join(entry["fq_name"]), "text": ""})
    return rows


class StagedPages:
    """The two pages over one DB; `render(template, status, **context)` is the pages' renderer."""

    def __init__(self, db: Database, semantics: str, render: Render) -> None:
        self._db = db
        self._semantics = semantics
        self._render = render

    def listing(self, wants_json: bool) -> Any:
        rows = staged_rows(self._db)
        if wants_json:
            return {"staged_policies": rows}
        for row in rows:
            row["objects"] = object_rows(row["flows"])
        return self._render("staged.html", 200, title="Staged policies", rows=rows)

    def explain(self, source: str, destination: str, port: str, protocol: str) -> Mapping[str, Any]:
        """Both answers for one flow; ValueError on bad input. Both sides are translated from the
        records, in a forked child (seconds on a large cluster, which the daemon's loop must not
        wait for)."""
        db, semantics = self._db, self._semantics

        def answer() -> Dict[str, Any]:
            try:
                return {"result": StagedExplainer(db_manifests(db).objects, _cluster_name(db), semantics).explain(
                    source, destination, port, protocol)}
            except ValueError as exc:  # bad input: the page's 400
                return {"invalid": str(exc)}

        answered = in_child(answer, EXPLAIN_TIMEOUT, NICE)
        if "invalid" in answered:
            raise ValueError(answered["invalid"])
        result: Mapping[str, Any] = answered["result"]
        return result


def _cluster_name(db: Database) -> str:
    """The cluster's name, which its application policy set bears."""
    apses = db.desired.get("application-policy-set") or {}
    return next((fq_name[-1] for fq_name in apses), None) or "k8s"
