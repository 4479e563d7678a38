"""HTTPS requests to the control plane's kube-apiserver as the admin (client certificate, the CA
verified), with the standard library only: `up` creates its few objects before anything else runs,
and a plain request says exactly what the server answered when one is refused."""
from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

Json = Dict[str, Any]


class ApiRequestError(RuntimeError):
    """The API server refused a request `up` needs (status and message in the text)."""


@dataclass
class AdminRequests:
    url: str
    ca_cert: Path
    client_cert: Path
    client_key: Path
    timeout: float = 10.0

    def __post_init__(self) -> None:
        self._context = ssl.create_default_context(cafile=str(self.ca_cert))
        self._context.load_cert_chain(str(self.client_cert), str(self.client_key))

    def call(self, method: str, path: str, body: Optional[Json] = None) -> Tuple[int, str]:
        """(status, text) of one request; no exception for an HTTP error status."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json",
                                                  "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, context=self._context, timeout=self.timeout) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as refused:
            return refused.code, refused.read().decode(errors="replace")

    def json(self, method: str, path: str, body: Optional[Json] = None) -> Json:
        """The JSON answer of a request that must succeed."""
        status, text = self.call(method, path, body)
        if status >= 300:
            raise ApiRequestError(f"{method} {path}: {status} {_message(text)}")
        answer: Json = json.loads(text)
        return answer


def _message(text: str) -> str:
    try:
        return str(json.loads(text).get("message", text))
    except ValueError:
        return text.strip()[:300]


def poll(what: str, check: Callable[[], Optional[str]], timeout: float,
         interval: float = 0.2) -> None:
    """Calls `check` until it returns None (done); its last answer says why not, on a timeout."""
    deadline = time.monotonic() + timeout
    while True:
        reason = check()
        if reason is None:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not within {timeout:.0f} s: {reason}")
        time.sleep(interval)
