"""The name rules of the real API server (apimachinery's `util/validation`) the emulator applies:
object names as DNS-1123 subdomains, qualified names (`example.com/Name`)."""
from __future__ import annotations

import re
from typing import List

from simulators.kube_api.errors import Cause, bad_value

SUBDOMAIN_MAX = 253
QUALIFIED_MAX = 63
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_QUALIFIED_FMT = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED = re.compile(rf"^{_QUALIFIED_FMT}$")
_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                  "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
                  rf"for validation is '{_LABEL}(\.{_LABEL})*')")
_QUALIFIED_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                  "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                  f"validation is '{_QUALIFIED_FMT}')")


def name_causes(name: str, path: str = "metadata.name") -> List[Cause]:
    """An object name that is no DNS-1123 subdomain (most kinds' rule)."""
    if len(name) > SUBDOMAIN_MAX:
        return [bad_value(path, name, f"must be no more than {SUBDOMAIN_MAX} characters")]
    if not _SUBDOMAIN.match(name):
        return [bad_value(path, name, _SUBDOMAIN_MSG)]
    return []


def qualified_name_causes(path: str, value: str) -> List[Cause]:
    """A qualified name: an optional DNS subdomain prefix and '/', then a name part of at most 63
    characters. Empty is left to the caller (which says Required)."""
    if not value:
        return []
    prefix, slash, name = value.rpartition("/")
    if slash and (not prefix or not _SUBDOMAIN.match(prefix) or len(prefix) > SUBDOMAIN_MAX):
        return [bad_value(path, value, "prefix part " + _SUBDOMAIN_MSG)]
    if not name or len(name) > QUALIFIED_MAX or not _QUALIFIED.match(name):
        return [bad_value(path, value, "name part " + _QUALIFIED_MSG)]
    return []

