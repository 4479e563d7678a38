"""Contrail tag names for Kubernetes labels (SPEC 2).

A Contrail tag is named `<type>=<value>`. The config API lower-cases tag types and reserves some of
them, while Kubernetes label keys are case-sensitive and may be anything from `app` to
`example.com/Some_Key`. `encode_key` maps every key to a distinct legal type, so that two labels
can never share a tag and a pod label can never impersonate an identity tag.
"""
from __future__ import annotations

import hashlib
import re

APPLICATION = "application"
NAMESPACE = "namespace"
LABEL = "label"
RESERVED_TAG_TYPES = frozenset({APPLICATION, NAMESPACE, LABEL, "tier", "deployment", "site"})
NAMESPACE_LABEL_PREFIX = "namespace."
LABEL_PREFIX = "label."
EMPTY_VALUE = "__empty__"
SLASH = "__slash__"
MAX_TYPE_LENGTH = 128
_TRUNCATED_LENGTH = 118

# Keys used verbatim (besides `/`): lower-case, no `--`, so they never meet the hashed forms.
_PLAIN_KEY_RE = re.compile(r"[a-z0-9](?:[-a-z0-9./]*[a-z0-9])?")


def sha1_hex(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def encode_key(key: str) -> str:
    """The tag type of pod label `key`: injective, lower-case, at most 134 characters.

    Plain keys keep their spelling (`/` as `__slash__`, as the original kube-manager wrote it);
    any other key is lower-cased and suffixed with `--<8 hex of sha1(key)>`, which only suffixed
    types contain. Over-long types are cut to 118 characters plus the same suffix. A result that
    is reserved or starts with `namespace.`/`label.` is prefixed with `label.`.
    """
    if _PLAIN_KEY_RE.fullmatch(key) and "--" not in key:
        tag_type = key.replace("/", SLASH)
        if len(tag_type) > MAX_TYPE_LENGTH:
            tag_type = f"{tag_type[:_TRUNCATED_LENGTH]}--{sha1_hex(key)[:8]}"
    else:
        digest = sha1_hex(key)[:8]
        tag_type = f"{key.lower().replace('/', SLASH)}--{digest}"
        if len(tag_type) > MAX_TYPE_LENGTH:
            tag_type = f"{tag_type[:_TRUNCATED_LENGTH]}--{digest}"
    if tag_type in RESERVED_TAG_TYPES or tag_type.startswith((NAMESPACE_LABEL_PREFIX, LABEL_PREFIX)):
        tag_type = LABEL_PREFIX + tag_type
    return tag_type


def encode_namespace_key(key: str) -> str:
    """The tag type of namespace label `key`: its own `namespace.` space (SPEC 2 **Fix**)."""
    return NAMESPACE_LABEL_PREFIX + encode_key(key)


def encode_value(value: str) -> str:
    """Tag values keep their spelling; the empty label value becomes `__empty__`.

    `__empty__` is not a valid label value (it must start with an alphanumeric), so this is
    injective too.
    """
    return value if value else EMPTY_VALUE


def tag_name(tag_type: str, value: str) -> str:
    return f"{tag_type}={value}"


def application_tag(cluster_name: str) -> str:
    return tag_name(APPLICATION, cluster_name)


def namespace_tag(namespace: str) -> str:
    return tag_name(NAMESPACE, namespace)


def selector_tag(cluster_name: str, digest: str) -> str:
    """The multi-valued `label` tag standing for one evaluated selector (SPEC 2.1)."""
    return tag_name(LABEL, f"{cluster_name}-sel-{digest}")


def split_tag(name: str) -> "tuple[str, str]":
    """(type, value) of a tag name; types never contain `=` so the first one splits."""
    tag_type, _, value = name.partition("=")
    return tag_type, value
