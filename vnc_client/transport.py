"""The HTTP side of the config API client: endpoints and fail-over, the pooled connections,
timeouts, Keystone auth, retries with backoff, the write gate and the observer hook.

One bounded keep-alive pool per endpoint (`wire.WirePool`: its proxy, CA bundle and TLS context
worked out once, when the client is made) sized to the daemon's concurrency, connect and read
timeouts, fail-over across the configured endpoints, retries of transient failures with capped
exponential backoff and full jitter, optional Keystone v3 auth with a single re-authentication on
401, and an observer hook so the daemon can feed its metrics without this package importing it.
What the requests mean (URLs and bodies of the API) is `client.VncClient`'s business, built on this.
"""
from __future__ import annotations

import ipaddress
import logging
import os
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar, Union
from urllib.parse import urlencode, urlsplit

from .logfields import kv

from . import jsoncodec
from .auth import KeystoneAuth, KeystoneCredentials, redact
from .errors import InvalidResponse, VncConnectionError, VncError, error_for_status
from .ratelimit import Jitter, full_jitter
from .retry import RETRYABLE_STATUSES, RetryPolicy
from .wire import Answer, WireFailure, WirePool, WireRefused

log = logging.getLogger(__name__)

_T = TypeVar("_T", bound="Transport")

# observer(method, path_template, status or None on connection error, seconds), once per HTTP attempt.
Observer = Callable[[str, str, Optional[int], float], None]
# write_gate(): called right before every attempt of a write; raises WriteRefused to stop it.
WriteGate = Callable[[], None]

DEFAULT_PORT = 8082
LIST_BULK_PATH = "/list-bulk-collection"
# POSTs that only read; every other POST, and every PUT and DELETE, is a write.
_READ_POSTS = frozenset({"/fqname-to-id", "/id-to-fqname", LIST_BULK_PATH})
USER_AGENT = "kube-manager-vnc-client"


def endpoint_url(endpoint: str, port: int, scheme: str) -> str:
    """The base URL for one configured endpoint: a host, `host:port`, an IPv6 address or a URL."""
    text = endpoint.strip()
    if not text:
        raise ValueError("empty VNC endpoint")
    if "://" in text:
        parts = urlsplit(text)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"VNC endpoint {endpoint!r} is not an http(s) URL")
        _port_of(parts, endpoint)
        return text.rstrip("/")
    try:
        if ipaddress.ip_address(text).version == 6:
            text = f"[{text}]"
    except ValueError:
        pass  # a host name or host:port
    parts = urlsplit(f"//{text}")
    if not parts.hostname or parts.path:
        raise ValueError(f"VNC endpoint {endpoint!r} is not a host or host:port")
    explicit_port = _port_of(parts, endpoint)
    return f"{scheme}://{text}" if explicit_port else f"{scheme}://{text}:{port}"


def _port_of(parts: Any, endpoint: str) -> Optional[int]:
    try:
        return parts.port
    except ValueError:
        raise ValueError(f"VNC endpoint {endpoint!r} has an invalid port") from None


class Transport:
    """Requests to one Contrail config API cluster (one or more equivalent endpoints).

    `endpoints` is a comma list or a sequence of hosts, `host:port` or URLs (`vnc_endpoint_ip`);
    `port` applies where none is given. `credentials` switches Keystone auth on. `sleep` and
    `jitter` are injectable so tests observe backoff without waiting. `write_gate` fences writes
    (leader election): it is called right before every attempt of every write, retries included, and
    its `WriteRefused` stops the call before anything is sent. `agent` is added to the User-Agent,
    so that a server can tell several kube-managers apart.
    """

    def __init__(
        self,
        endpoints: Union[str, Sequence[str]] = "127.0.0.1",
        port: int = DEFAULT_PORT,
        *,
        use_ssl: bool = False,
        verify: bool = True,
        ca_file: Optional[str] = None,
        credentials: Optional[KeystoneCredentials] = None,
        concurrency: int = 8,
        connect_timeout: float = 5.0,
        read_timeout: float = 30.0,
        retry: RetryPolicy = RetryPolicy(),
        sleep: Callable[[float], None] = time.sleep,
        jitter: Jitter = full_jitter,
        observer: Optional[Observer] = None,
        write_gate: Optional[WriteGate] = None,
        agent: str = "",
    ) -> None:
        hosts = endpoints.split(",") if isinstance(endpoints, str) else list(endpoints)
        scheme = "https" if use_ssl else "http"
        self._endpoints: List[str] = [endpoint_url(h, port, scheme) for h in hosts]
        if not self._endpoints:
            raise ValueError("at least one VNC endpoint is required")
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        if connect_timeout <= 0 or read_timeout <= 0:
            raise ValueError("timeouts must be positive")
        if ca_file is not None and not os.path.isfile(ca_file):
            raise ValueError(f"CA file {ca_file!r} does not exist")
        self._verify: Union[bool, str] = ca_file if (verify and ca_file) else verify
        self._timeout: Tuple[float, float] = (connect_timeout, read_timeout)
        self._retry = retry
        self._sleep = sleep
        self._jitter = jitter
        self._observer = observer
        self._write_gate = write_gate
        self._current = 0  # index of the endpoint that answered last; fail-over is sticky

        # One pool per endpoint, each holding a keep-alive connection per greenlet; every setting
        # the environment gives it is read here, once.
        self._pools: List[WirePool] = []
        self._bases: List[str] = []  # each endpoint's path prefix ("" or "/contrail")
        for url in self._endpoints:
            parts = urlsplit(url)
            self._pools.append(WirePool(f"{parts.scheme}://{parts.netloc}", concurrency, self._timeout, self._verify))
            self._bases.append(parts.path.rstrip("/"))
        self._probes: Dict[Tuple[int, float], WirePool] = {}
        self._headers = {"Accept": "application/json", "User-Agent": f"{USER_AGENT} {agent}".strip()}
        self._json_headers = {**self._headers, "Content-Type": "application/json"}
        self._auth = KeystoneAuth(credentials, self._timeout, self._verify, self._headers) if credentials else None

    # --- lifecycle and status ----------------------------------------------------------------

    def close(self) -> None:
        for pool in [*self._pools, *self._probes.values()]:
            pool.close()
        if self._auth is not None:
            self._auth.close()

    def __enter__(self: _T) -> _T:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def endpoints(self) -> List[str]:
        return list(self._endpoints)

    @property
    def current_endpoint(self) -> str:
        """The endpoint the next request goes to first (the one that answered last)."""
        return self._endpoints[self._current]

    # --- requests ----------------------------------------------------------------------------

    def probe(self, timeout: float) -> bool:
        """`GET /` on the current endpoint, once, within `timeout` seconds per connect and per read,
        without retries or fail-over: whether the config API answers now (for `/readyz`). Raises
        `VncConnectionError` (no answer in time, refused) or the typed error of an error status."""
        index = self._current
        pool = self._probes.get((index, timeout))
        if pool is None:
            pool = self._probes[(index, timeout)] = WirePool(self._pools[index].origin, 1, (timeout, timeout),
                                                             self._verify)
        url = self._endpoints[index] + "/"
        token, headers = self._auth_headers(None)
        try:
            answer = pool.request("GET", self._bases[index] + "/", None, headers)
        except WireFailure as exc:
            raise VncConnectionError(f"GET {url}: no answer within {timeout:g} s or refused ({exc})") from None
        except WireRefused as exc:
            raise VncConnectionError(f"GET {url}: {exc}") from None
        if answer.status >= 400:
            raise error_for_status("GET", url, answer.status, redact(answer.text, token))
        return True

    def _call(self, method: str, path: str, template: str, *, params: Optional[Dict[str, str]] = None,
              json_body: Any = None) -> Any:
        """One API call: fail-over, retries with backoff, a single re-authentication on 401.

        Each endpoint is tried in turn from the one that answered last; a sleep happens only once
        every endpoint has failed in the current round, so a dead first host costs no delay.
        """
        n = len(self._endpoints)
        index = self._current
        failures = 0
        delays = self._retry.limiter(self._jitter)  # one backoff per call: its rounds of attempts
        reauthenticated = False
        gate = self._write_gate if method != "GET" and path not in _READ_POSTS else None
        target = path + ("?" + urlencode(params) if params else "")
        body = None if json_body is None else jsoncodec.dumps(json_body)
        base_headers = self._headers if body is None else self._json_headers
        while True:
            if gate is not None:
                gate()
            token, headers = self._auth_headers(base_headers)
            started = time.monotonic()
            try:
                answer = self._pools[index].request(method, self._bases[index] + target, body, headers)
            except WireFailure as exc:
                self._observe(method, template, None, time.monotonic() - started)
                status: Optional[int] = None
                failure = str(exc)
            except WireRefused as exc:  # a request that can never work (bad URL, bad header, ...)
                raise VncError(f"{method} {path}: {exc}") from None
            else:
                status = answer.status
                self._observe(method, template, status, time.monotonic() - started)
                if status not in RETRYABLE_STATUSES:
                    self._current = index
                    if status < 400:
                        return _decode(method, path, answer)
                    if status == 401 and self._auth is not None and not reauthenticated:
                        reauthenticated = True
                        log.info("vnc token refused, re-authenticating", extra=kv(method=method, path=template))
                        self._auth.refresh(token)
                        continue
                    raise error_for_status(method, path, status, redact(answer.text, token))
                failure = f"status {status}"
            failures += 1
            if failures >= self._retry.attempts:
                if status is None:
                    raise VncConnectionError(
                        f"{method} {path}: no VNC endpoint answered after {failures} attempts (last: {failure})")
                raise error_for_status(method, path, status, redact(answer.text, token))
            log.warning("vnc request failed, will retry", extra=kv(
                method=method, path=template, endpoint=self._endpoints[index], failure=failure,
                attempt=f"{failures}/{self._retry.attempts}"))
            index = (index + 1) % n
            if failures % n == 0:
                self._sleep(delays.when(path))

    def _auth_headers(self, base: Optional[Dict[str, str]]) -> Tuple[Optional[str], Dict[str, str]]:
        headers = self._headers if base is None else base
        if self._auth is None:
            return None, headers
        token = self._auth.token()
        return token, {**headers, "X-Auth-Token": token}

    def _observe(self, method: str, template: str, status: Optional[int], seconds: float) -> None:
        if self._observer is None:
            return
        try:
            self._observer(method, template, status, seconds)
        except Exception:  # a broken metrics hook must never break the API call
            log.exception("vnc observer failed", extra=kv(method=method, path=template))


def _decode(method: str, path: str, answer: Answer) -> Any:
    if not answer.content:
        return None
    try:
        return jsoncodec.loads(answer.content)
    except ValueError:
        raise InvalidResponse(f"{method} {path}: status {answer.status} with a body that is not JSON") from None
