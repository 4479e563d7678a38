"""Kubernetes label selectors: validation, evaluation and the normal form SPEC 2.1 hashes.

A selector is *simple* when it can be written as a conjunction of `key=value` tags (matchLabels,
and `In` with a single value); only those become plain tag endpoints. Every other selector is
evaluated here, by kube-manager, and stands in Contrail as one selector tag.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Dict, List, Mapping, Tuple

from .shapes import LABEL_SELECTOR, conform
from .validation import InvalidInput, check_labels, label_key_problem, label_value_problem

IN, NOT_IN, EXISTS, DOES_NOT_EXIST = "In", "NotIn", "Exists", "DoesNotExist"
OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)


@dataclass(frozen=True)
class Requirement:
    """One `matchExpressions` entry; `values` sorted for In/NotIn, empty otherwise."""

    key: str
    operator: str
    values: Tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == IN:
            return labels.get(self.key) in self.values
        if op == NOT_IN:
            return labels.get(self.key) not in self.values
        if op == EXISTS:
            return self.key in labels
        return self.key not in labels

    def normalised(self) -> Dict[str, Any]:
        body: Dict[str, Any] = {"key": self.key, "operator": self.operator}
        if self.operator in (IN, NOT_IN):
            body["values"] = list(self.values)
        return body


@dataclass(frozen=True)
class LabelSelector:
    """A validated selector; `match_labels` sorted by key, `expressions` in normal order."""

    match_labels: Tuple[Tuple[str, str], ...] = ()
    expressions: Tuple[Requirement, ...] = ()

    @cached_property
    def is_simple(self) -> bool:
        return all(r.operator == IN and len(r.values) == 1 for r in self.expressions)

    @cached_property
    def simple_labels(self) -> Tuple[Tuple[str, str], ...]:
        """The (key, value) conjunction of a simple selector, sorted and without duplicates."""
        pairs = set(self.match_labels)
        pairs.update((r.key, r.values[0]) for r in self.expressions)
        return tuple(sorted(pairs))

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for requirement in self.expressions:
            if not requirement.matches(labels):
                return False
        return True

    def normalised(self) -> Dict[str, Any]:
        """The selector as SPEC 2.1 hashes it: empty fields left out, expressions sorted."""
        body: Dict[str, Any] = {}
        if self.match_labels:
            body["matchLabels"] = dict(self.match_labels)
        if self.expressions:
            body["matchExpressions"] = [r.normalised() for r in self.expressions]
        return body


EVERYTHING = LabelSelector()


def _requirement(entry: Mapping[str, Any], path: str) -> Requirement:
    """One conformed `matchExpressions` entry."""
    key, operator, values = entry.get("key", ""), entry.get("operator", ""), entry.get("values", ())
    problem = label_key_problem(key)
    if problem:
        raise InvalidInput(f"{path}.key: {problem}")
    if operator not in OPERATORS:
        raise InvalidInput(f"{path}.operator: {operator!r} is not a valid selector operator"
                           f" (one of {', '.join(OPERATORS)})")
    if operator in (IN, NOT_IN):
        if not values:
            raise InvalidInput(f"{path}.values: must be given when the operator is {operator}")
    elif values:
        raise InvalidInput(f"{path}.values: may not be given when the operator is {operator}")
    for i, value in enumerate(values):
        problem = label_value_problem(value)
        if problem:
            raise InvalidInput(f"{path}.values[{i}]: {problem}")
    return Requirement(key, operator, tuple(sorted(values)))


def parse_selector(raw: Any, path: str) -> LabelSelector:
    """Validate a LabelSelector as the API server does; raises InvalidInput naming `path`."""
    body = conform(raw, LABEL_SELECTOR, path) if raw is not None else {}
    labels = check_labels(body.get("matchLabels", {}), f"{path}.matchLabels")
    requirements: List[Requirement] = [
        _requirement(entry, f"{path}.matchExpressions[{i}]")
        for i, entry in enumerate(body.get("matchExpressions", ()))
    ]
    requirements.sort(key=lambda r: (r.key, r.operator, r.values))
    return LabelSelector(tuple(sorted(labels.items())), tuple(requirements))
