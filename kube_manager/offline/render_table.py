"""`translate -o table`: the translation as the Contrail wiki's tables, in Markdown.

The wiki explains the mapping with one table per object kind (Tags, Address Groups, Firewall
Rules, Firewall Policy); operators compare against those, so the same columns are printed here.
Markdown pipe tables, padded, read well in a terminal and paste into documents unchanged
(docs/mapping.md is generated this way). Rules and policies are listed in evaluation order: the
application policy set's sequence, then each policy's rule sequence.

A cell never grows with the cluster: the `<cluster>-denyall` policy holds one deny rule per isolated
direction of every NetworkPolicy, and listing them all in one cell made a table mostly of padding
on a large cluster. A policy with more than RULES_LISTED rules (or too long a list of them) shows
their count and first and last names (the Firewall Rules table lists them all, in the same order);
other lists (prefixes, a pod's tags, an endpoint's tags) stop after LISTED items or CELL_WIDTH
characters with the number left out, since a Markdown row cannot wrap and its widest cell pads
every row of its table (`-o json` has everything). A name is never cut, nor an error's reason.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence

from kube_manager.translator import Translation

Body = Mapping[str, Any]

LISTED = 32
RULES_LISTED = 10
# A cell of names (prefixes, tags, rules) stops at this many characters, so that one long list does
# not pad every row of its table to its width; an error's reason is always shown whole.
CELL_WIDTH = 120


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    cells = [[str(c).replace("|", "\\|").replace("\n", " ") for c in row] for row in rows]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        return "| " + " | ".join(v.ljust(w) for v, w in zip(values, widths)) + " |"

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(row) for row in cells])


def endpoint_text(endpoint: Body) -> str:
    if endpoint.get("any"):
        return "any"
    if "address_group" in endpoint:
        return "Address Group: " + endpoint["address_group"].split(":", 1)[-1]
    return bounded(endpoint.get("tags", ()), " && ", limit=len(endpoint.get("tags", ())))


def service_text(service: Body) -> str:
    protocol = service["protocol"]
    if protocol == "any":
        return "any"
    start, end = service["dst_ports"]["start_port"], service["dst_ports"]["end_port"]
    if (start, end) == (0, 65535):
        return f"{protocol}:any"
    return f"{protocol}:{start}" if start == end else f"{protocol}:{start}-{end}"


def bounded(items: Sequence[str], separator: str = ", ", limit: int = LISTED, width: int = CELL_WIDTH) -> str:
    """`items` joined by `separator`, as many as fit in `width` characters (at most `limit`, at
    least one), then how many were left out."""
    shown: List[str] = []
    length = 0
    for index, item in enumerate(items):
        left_after = len(items) - index - 1
        tail = len(f"{separator}... ({left_after} more)") if left_after else 0
        grown = length + (len(separator) if shown else 0) + len(item)
        if shown and (len(shown) == limit or grown + tail > width):
            break
        shown.append(item)
        length = grown
    if len(shown) == len(items):
        return separator.join(items)
    return separator.join(shown) + f"{separator}... ({len(items) - len(shown)} more)"


def listing(items: Sequence[str], limit: int = LISTED) -> str:
    """`items` joined by commas, at most `limit` of them and CELL_WIDTH characters, then how many
    were left out."""
    return bounded(items, ", ", limit)


def rule_names(names: Sequence[str]) -> str:
    """A policy's rules: all of them when they fit, else their count, first and last (or first
    only, when two names are already too long); the Firewall Rules table lists them all, in order."""
    joined = ", ".join(names)
    if len(names) <= RULES_LISTED and len(joined) <= CELL_WIDTH:
        return joined
    both = f"{len(names)} rules: {names[0]} ... {names[-1]}"
    return both if len(both) <= CELL_WIDTH else f"{len(names)} rules: {names[0]} ..."


def _section(title: str, headers: Sequence[str], rows: List[List[str]]) -> str:
    return f"## {title}\n\n" + (markdown_table(headers, rows) if rows else "None") + "\n"


def render_table(translation: Translation) -> str:
    aps = translation.application_policy_set
    policies: Dict[tuple, Body] = {tuple(p["fq_name"]): p for p in translation.firewall_policies}
    rules: Dict[tuple, Body] = {tuple(r["fq_name"]): r for r in translation.firewall_rules}
    tag_rows = [[t["tag_type_name"], t["tag_value"]] for t in translation.tags]
    group_rows = [[g["fq_name"][-1], listing([f"{s['ip_prefix']}/{s['ip_prefix_len']}"
                                               for s in g["address_group_prefix"]["subnet"]]) or "(empty)"]
                  for g in translation.address_groups]
    rule_rows: List[List[str]] = []
    policy_rows: List[List[str]] = []
    for policy_ref in aps["firewall_policy_refs"]:
        policy = policies[tuple(policy_ref["to"])]
        names = []
        for rule_ref in policy["firewall_rule_refs"]:
            rule = rules[tuple(rule_ref["to"])]
            names.append(rule["fq_name"][-1])
            rule_rows.append([rule["fq_name"][-1], rule["action_list"]["simple_action"],
                              service_text(rule["service"]), endpoint_text(rule["endpoint_1"]),
                              rule["direction"], endpoint_text(rule["endpoint_2"]),
                              bounded(rule["match_tags"]["tag_list"], " && ")])
        policy_rows.append([policy_ref["attr"]["sequence"], policy["fq_name"][-1], rule_names(names)])
    workload_rows = [[w["namespace"], w["name"], w["ip"] or "", listing(w["tags"])]
                     for w in translation.workloads]
    error_rows = [[e["kind"], e["namespace"], e["name"], e["reason"]] for e in translation.errors]
    application = ", ".join(ref["to"][-1] for ref in aps["tag_refs"])
    # SPEC 17: only when some policy is staged, as in the JSON form.
    staged = [_section("Staged policies (translated, nothing written)", ["Kind", "Namespace", "Name"],
                       [[p["kind"], p["namespace"], p["name"]] for p in translation.staged])] if translation.staged else []
    return "\n".join([
        f"# Cluster {translation.cluster_name}\n",
        _section("Tags", ["Key", "Value"], tag_rows),
        _section("Address Groups", ["Name", "Prefix"], group_rows),
        _section("Firewall Rules", ["Rule Name", "Action", "Services", "Endpoint1", "Dir", "Endpoint2",
                                    "Match Tags"], rule_rows),
        _section(f"Firewall Policies (application policy set {aps['fq_name'][-1]}, {application})",
                 ["Sequence", "Name", "Rules"], policy_rows),
        _section("Workloads", ["Namespace", "Pod", "IP", "Tags"], workload_rows),
        _section("Errors", ["Kind", "Namespace", "Name", "Reason"], error_rows),
        *staged,
    ])
