"""A NetworkPolicy's objects and errors as tests read them, through `ClusterTranslator.status_of`."""
from __future__ import annotations

from typing import Optional, Tuple

from kube_manager.translator import ClusterTranslator, PolicyObjects


def policy_objects(translator: ClusterTranslator, namespace: str, name: str) -> Optional[PolicyObjects]:
    """The objects of one NetworkPolicy; None when it is unknown or rejected whole."""
    status = translator.status_of("NetworkPolicy", namespace, name)
    return status if isinstance(status, PolicyObjects) else None


def policy_errors(translator: ClusterTranslator, namespace: str, name: str) -> Tuple[str, ...]:
    """Its errors (its rejection's reason when rejected whole); () when unknown."""
    status = translator.status_of("NetworkPolicy", namespace, name)
    return status.errors if status is not None else ()
