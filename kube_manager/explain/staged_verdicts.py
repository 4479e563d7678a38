"""One flow's verdict as enforced now, beside its verdict with the staged policies enforced (SPEC 17).

`explain --staged` (offline) and the `/explain?staged=1` page ask both questions of one cluster:
the manifests as they are (a staged policy is neither translated into objects nor part of the
Kubernetes model), and the same manifests with every staged policy's annotation removed. Each side
is a whole `Explainer`, so each answer carries its own trace and deciding rule.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence

from kube_manager.explain.explainer import KUBERNETES, Explainer
from kube_manager.explain.text import render
from kube_manager.translator.batch import translate
from kube_manager.translator.staged_policies import promoted, staged_keys


@dataclass(frozen=True)
class _Objects:
    """Manifests by kind, as `Explainer` reads them."""

    objects: Mapping[str, Sequence[Mapping[str, Any]]]


def _explainer(objects: Mapping[str, Any], cluster_name: str, semantics: str) -> Explainer:
    translation = translate(objects, cluster_name=cluster_name, semantics=semantics)
    return Explainer(translation.to_dict(), _Objects(objects), cluster_name, translation.selectors, semantics)


class StagedExplainer:
    """Both sides over one cluster's manifests by kind; `explain` answers for both."""

    def __init__(self, objects: Mapping[str, Any], cluster_name: str = "k8s", semantics: str = KUBERNETES) -> None:
        self.staged = [{"kind": kind, "namespace": namespace, "name": name}
                       for kind, namespace, name in staged_keys(objects)]
        self.now = _explainer(objects, cluster_name, semantics)
        self.with_staged = _explainer(promoted(objects), cluster_name, semantics)

    def explain(self, source: Any, destination: Any, port: Any, protocol: Any) -> Dict[str, Any]:
        """{"enforced": the answer as enforced now, "with_staged": the answer with the staged
        policies enforced, "staged_policies": which they are, "changes": whether the verdict
        differs}. ExplainError (a ValueError) on bad input, as `Explainer.explain`."""
        now = self.now.explain(source, destination, port, protocol)
        staged = self.with_staged.explain(source, destination, port, protocol)
        return {"staged_policies": self.staged, "enforced": now, "with_staged": staged,
                "changes": now["allowed"] != staged["allowed"]}


def render_both(result: Mapping[str, Any]) -> str:
    """`explain --staged -o text`: the two answers, each under its heading."""
    names: List[str] = [f"{p['kind']} {'/'.join(filter(None, (p['namespace'], p['name'])))}"
                        for p in result["staged_policies"]]
    verdict = "changes the verdict" if result["changes"] else "leaves the verdict as it is"
    head = (f"staged: {', '.join(names)}; enforcing them {verdict}\n" if names
            else "no policy is staged: both answers are the same\n")
    return (head + "\n== as enforced now ==\n" + render(result["enforced"])
            + "\n== with the staged policies enforced ==\n" + render(result["with_staged"]))
