"""Keystone v3 password authentication for the config API client.

The token lives only here and in the X-Auth-Token header of outgoing requests; neither it nor the
password ever reaches a log line, an exception message or a repr. Concurrent greenlets that all hit
a 401 with the same expired token trigger a single Keystone round trip (`refresh(stale)`).
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple, Union
from urllib.parse import urlsplit

from .logfields import kv

from . import jsoncodec
from .errors import InvalidResponse, VncConnectionError, error_for_status
from .wire import WireFailure, WirePool, WireRefused

log = logging.getLogger(__name__)

_TOKENS_PATH = "/auth/tokens"


@dataclass(frozen=True)
class KeystoneCredentials:
    """What `[AUTH]` in contrail-kubernetes.conf gives: where Keystone is and who we are.

    `auth_token_url` may be the full tokens URL as Contrail configures it
    (`http://ks:35357/v3/auth/tokens`) or the v3 base (`http://ks:5000/v3`); `/auth/tokens` is
    appended when missing.
    """

    auth_token_url: str
    user: str
    password: str = field(repr=False)
    tenant: str
    domain: str = "Default"

    def __post_init__(self) -> None:
        parts = urlsplit(self.auth_token_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"auth_token_url must be an http(s) URL, got {self.auth_token_url!r}")
        if not self.user:
            raise ValueError("auth_user must not be empty when auth_token_url is set")

    @property
    def tokens_url(self) -> str:
        url = self.auth_token_url.rstrip("/")
        return url if url.endswith(_TOKENS_PATH) else url + _TOKENS_PATH

    def request_body(self) -> Dict[str, Any]:
        """The v3 password-method body, scoped to the tenant's project."""
        return {
            "auth": {
                "identity": {
                    "methods": ["password"],
                    "password": {
                        "user": {"name": self.user, "domain": {"name": self.domain}, "password": self.password}
                    },
                },
                "scope": {"project": {"name": self.tenant, "domain": {"name": self.domain}}},
            }
        }


def redact(text: str, *secrets: Optional[str]) -> str:
    """`text` with every non-empty secret replaced, for bodies a server might echo back."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


class KeystoneAuth:
    """Obtains and caches a Keystone token; used by VncClient through `token()` and `refresh()`."""

    def __init__(
        self,
        credentials: KeystoneCredentials,
        timeout: Tuple[float, float],
        verify: Union[bool, str] = True,
        headers: Optional[Dict[str, str]] = None,
    ) -> None:
        self._credentials = credentials
        parts = urlsplit(credentials.tokens_url)
        # One connection: authentications are one at a time (the lock below).
        self._pool = WirePool(f"{parts.scheme}://{parts.netloc}", 1, timeout, verify)
        self._target = parts.path + (f"?{parts.query}" if parts.query else "")
        self._headers = {**(headers or {}), "Content-Type": "application/json"}
        self._token: Optional[str] = None
        self._lock = threading.Lock()  # a gevent lock once the daemon has monkey-patched

    def close(self) -> None:
        self._pool.close()

    def token(self) -> str:
        """The cached token, authenticating first if there is none yet."""
        with self._lock:
            if self._token is None:
                self._token = self._authenticate()
            return self._token

    def refresh(self, stale: Optional[str]) -> str:
        """A fresh token after `stale` was refused; authenticates only if nobody else already did."""
        with self._lock:
            if self._token is None or self._token == stale:
                self._token = self._authenticate()
            return self._token

    def _authenticate(self) -> str:
        creds = self._credentials
        url = creds.tokens_url
        try:
            response = self._pool.request("POST", self._target, jsoncodec.dumps(creds.request_body()), self._headers)
        except (WireFailure, WireRefused):
            raise VncConnectionError(f"cannot reach Keystone at {url}") from None
        if response.status not in (200, 201):
            body = redact(response.text, creds.password)
            error = error_for_status("POST", urlsplit(url).path, response.status, body)
            log.warning("keystone authentication failed", extra=kv(url=url, user=creds.user,
                                                                  status=response.status))
            raise error
        token = response.headers.get("X-Subject-Token")
        if not token:
            raise InvalidResponse(f"Keystone at {url} answered {response.status} without X-Subject-Token")
        log.info("keystone authentication succeeded", extra=kv(url=url, user=creds.user, tenant=creds.tenant))
        return token

