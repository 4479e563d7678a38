"""Keeping secrets off the introspect pages.

The pages show the configuration and free text that came from the outside (connection URLs, error
messages of the API server or the config API). Either can carry a password or a token: a URL with
user info, an exception quoting an `X-Auth-Token` header. Everything configuration-like goes through
`Redactor.config` and every free text through `Redactor.text`, which also blanks the exact secret
values found in the configuration, wherever they appear.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, List, Mapping, Optional

MASK = "***"

# Keys whose values are secrets in any section; every key of the AUTH section is secret too.
SECRET_KEY = re.compile(r"pass|token|secret|credential|auth|cookie|private|api_?key", re.IGNORECASE)
SECRET_SECTIONS = frozenset({"auth"})

_URL_USERINFO = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)[^/\s@]+@", re.IGNORECASE)
_SECRET_ASSIGNMENT = re.compile(
    r"(?P<key>authorization|x-auth-token|x-subject-token|password|passwd|token|secret|api_?key)"
    r"(?P<sep>[\"']?\s*[:=]\s*[\"']?)(?P<scheme>(?:bearer|basic)\s+)?[^\s\"',;&})\]]+",
    re.IGNORECASE,
)
# Secret values shorter than this are not searched for in free text: they would mask ordinary words.
MIN_SECRET_LENGTH = 4


class Redactor:
    """Redacts one configuration and any free text against the secrets that configuration holds."""

    def __init__(self, config: Optional[Any] = None) -> None:
        mapping = _as_mapping(config) if config is not None else {}
        secrets = _secret_values(mapping)
        if config is not None and hasattr(config, "public_view") and hasattr(config, "secrets"):
            # kube_manager.settings.OperatorSettings knows its own secrets and its page-safe view; the key
            # patterns above still apply to that view, as a second line of defence.
            secrets += [str(s) for s in config.secrets()]
            mapping = config.public_view()
        self._view = _map_leaves(mapping, False, _masked_leaf) if config is not None else None
        # Longest first, so a secret containing another one is masked whole.
        self._secrets: List[str] = sorted(
            {s for s in secrets if len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True)

    @property
    def config_view(self) -> Optional[Mapping[str, Any]]:
        """The configuration with every secret value replaced by `***` (None when not given)."""
        return self._view

    def text(self, value: Optional[str]) -> str:
        """`value` without URL user info, credentials in `key=value` form or any configured secret."""
        if not value:
            return ""
        text = _URL_USERINFO.sub(lambda m: m.group("scheme") + MASK + "@", str(value))
        text = _SECRET_ASSIGNMENT.sub(
            lambda m: m.group("key") + m.group("sep") + (m.group("scheme") or "") + MASK, text)
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return text


def _as_mapping(config: Any) -> Mapping[str, Any]:
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return dataclasses.asdict(config)
    if isinstance(config, Mapping):
        return config
    raise TypeError(f"config must be a mapping or a dataclass, not {type(config).__name__}")


def _is_secret(key: Any, inherited: bool) -> bool:
    return inherited or bool(SECRET_KEY.search(str(key))) or str(key).lower() in SECRET_SECTIONS


def _map_leaves(value: Any, secret: bool, leaf: Callable[[Any, bool], Any]) -> Any:
    """Rebuild `value` with `leaf(item, is_secret)` applied to every non-container item."""
    if isinstance(value, Mapping):
        return {str(key): _map_leaves(item, _is_secret(key, secret), leaf) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_map_leaves(item, secret, leaf) for item in value]
    return leaf(value, secret)


def _masked_leaf(value: Any, secret: bool) -> Any:
    if secret:
        return MASK if value not in (None, "") else value
    if isinstance(value, str):
        return _URL_USERINFO.sub(lambda m: m.group("scheme") + MASK + "@", value)
    return value


def _secret_values(config: Mapping[str, Any]) -> List[str]:
    found: List[str] = []
    _map_leaves(config, False, lambda value, secret: found.append(str(value))
                if secret and value not in (None, "") else None)
    return found
