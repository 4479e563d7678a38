"""REST client of the Contrail config API (contrail-api, port 8082).

One `requests` session (`VncSession`: the environment's proxy and CA bundle settings read once per
endpoint) with a connection pool sized to the daemon's concurrency, connect and read timeouts,
fail-over across the configured endpoints, retries of transient failures with capped exponential
backoff and full jitter, optional Keystone v3 auth with a single re-authentication on 401, and an
observer hook so the daemon can feed its metrics without this package importing it.

URLs and bodies follow the official library (vnc_api.py) exactly: `POST /<type>s` with
`{"<type>": body}`, `GET|PUT|DELETE /<type>/<uuid>`, list filters as `key==<json>` comma lists, and
the action URLs `/fqname-to-id`, `/id-to-fqname`, `/ref-update` and `/set-tag`.

Every call may raise the typed errors of `vnc_client.errors`. Retried calls are safe for the way
kube-manager writes: a create that reached the server before the connection died comes back as 409
(the reconciler reads, compares and updates), a repeated delete as 404 (success), and ref-update and
set-tag are idempotent on the server.
"""
from __future__ import annotations

import ipaddress
import json
import logging
import os
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union
from urllib.parse import quote, urlsplit

import requests
from requests.adapters import HTTPAdapter

from kvlog import kv

from . import jsoncodec
from .auth import KeystoneAuth, KeystoneCredentials, redact
from .errors import InvalidResponse, VncConnectionError, VncError, error_for_status
from .objects import VncObject
from .ratelimit import Jitter, full_jitter
from .retry import RETRYABLE_STATUSES, RetryPolicy
from .schema import ResourceType, resource_type
from .session import VncSession

log = logging.getLogger(__name__)

Body = Union[Mapping[str, Any], VncObject]
# A uuid (str) or an fq_name (list of str); reads, updates and deletes accept either.
Ident = Union[str, Sequence[str]]
# observer(method, path_template, status or None on connection error, seconds), once per HTTP attempt.
Observer = Callable[[str, str, Optional[int], float], None]
# write_gate(): called right before every attempt of a write; raises WriteRefused to stop it.
WriteGate = Callable[[], None]

DEFAULT_PORT = 8082
# Above this many ids in one list selector, list through POST /list-bulk-collection (as vnc_api does).
LIST_BULK_THRESHOLD = 25
LIST_BULK_PATH = "/list-bulk-collection"
_REF_OPERATIONS = ("ADD", "DELETE")
# POSTs that only read; every other POST, and every PUT and DELETE, is a write.
_READ_POSTS = frozenset({"/fqname-to-id", "/id-to-fqname", LIST_BULK_PATH})
USER_AGENT = "kube-manager-vnc-client"
# Transport failures worth another attempt (possibly on another endpoint): refused, reset, timed
# out, or a connection dropped in the middle of the answer.
_TRANSIENT_TRANSPORT_ERRORS = (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError)


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


def encode_filters(filters: Mapping[str, Any]) -> str:
    """`{"k": v, "k2": [a, b]}` as the API's `k==<json v>,k2==<json a>,k2==<json b>`."""
    terms = []
    for key, value in filters.items():
        for item in value if isinstance(value, list) else [value]:
            encoded = json.dumps(item)
            if "," in encoded or "," in key:
                # The server splits the whole parameter on commas; such a term would be mangled.
                raise ValueError(f"list filter {key}=={encoded} cannot contain a comma")
            terms.append(f"{key}=={encoded}")
    return ",".join(terms)


def _comma_list(value: Union[str, Sequence[str]]) -> str:
    return value if isinstance(value, str) else ",".join(value)


def _fq_str(fq_name: Any) -> str:
    """An fq_name for log lines; "-" when the call named the object by uuid only."""
    if isinstance(fq_name, (list, tuple)):
        return ":".join(str(p) for p in fq_name)
    return "-" if fq_name is None or isinstance(fq_name, str) else str(fq_name)


class VncClient:
    """A client of one Contrail config API cluster (one or more equivalent endpoints).

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

        self._session = VncSession()
        # One pool per endpoint (plus Keystone), each holding a keep-alive connection per greenlet.
        adapter = HTTPAdapter(pool_connections=len(self._endpoints) + 1, pool_maxsize=concurrency, max_retries=0)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        self._session.headers.update({"Accept": "application/json", "User-Agent": f"{USER_AGENT} {agent}".strip()})
        self._auth = KeystoneAuth(credentials, self._session, self._timeout, self._verify) if credentials else None

    # --- lifecycle and status ----------------------------------------------------------------

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> "VncClient":
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

    # --- CRUD --------------------------------------------------------------------------------

    def home(self) -> Dict[str, Any]:
        """`GET /`: the home page with its links; a cheap liveness probe of the API."""
        return self._expect_dict("GET", "/", self._call("GET", "/", "/"))

    def probe(self, timeout: float) -> bool:
        """`GET /` on the current endpoint, once, within `timeout` seconds per connect and per read,
        without retries or fail-over: whether the config API answers now (for `/readyz`). Raises
        `VncConnectionError` (no answer in time, refused) or the typed error of an error status."""
        url = self._endpoints[self._current] + "/"
        token, headers = self._auth_headers()
        try:
            response = self._session.request("GET", url, headers=headers, timeout=(timeout, timeout),
                                             verify=self._verify)
        except requests.Timeout:
            raise VncConnectionError(f"GET {url}: no answer within {timeout:g} s") from None
        except requests.RequestException as exc:
            raise VncConnectionError(f"GET {url}: {type(exc).__name__}: {exc}") from None
        if response.status_code >= 400:
            raise error_for_status("GET", url, response.status_code, redact(response.text, token))
        return True

    def create(self, obj_type: str, body: Body) -> Dict[str, Any]:
        """Create; returns the body sent merged with what the server returned (uuid, fq_name, ...)."""
        rt = _resource(obj_type)
        data = _body_dict(obj_type, body)
        path = f"/{rt.plural}"
        created = self._unwrap("POST", path, obj_type, self._call("POST", path, path, json_body={obj_type: data}))
        result = {**data, **created}
        log.debug("vnc write", extra=kv(op="create", type=obj_type, fq_name=_fq_str(result.get("fq_name")),
                                        uuid=result.get("uuid")))
        return result

    def read(
        self,
        obj_type: str,
        ident: Ident,
        *,
        fields: Optional[Sequence[str]] = None,
        exclude_back_refs: bool = False,
        exclude_children: bool = False,
    ) -> Dict[str, Any]:
        """Read one object by uuid or fq_name; `fields` limits the answer to those fields."""
        rt = _resource(obj_type)
        params: Dict[str, str] = {}
        if fields:
            params["fields"] = ",".join(fields)
        if exclude_back_refs:
            params["exclude_back_refs"] = "True"
        if exclude_children:
            params["exclude_children"] = "True"
        uuid = self._uuid_of(obj_type, ident)
        path = f"/{rt.name}/{quote(uuid, safe='')}"
        return self._unwrap("GET", path, obj_type, self._call("GET", path, f"/{rt.name}/{{uuid}}", params=params))

    def update(self, obj_type: str, ident: Ident, body: Body) -> Dict[str, Any]:
        """Partial update (PUT): only the fields in `body` change. Returns the server's answer
        (`{"uuid", "href"}`; `{}` when the body named nothing to change)."""
        rt = _resource(obj_type)
        data = _body_dict(obj_type, body)
        uuid = self._uuid_of(obj_type, ident)
        path = f"/{rt.name}/{quote(uuid, safe='')}"
        result = self._call("PUT", path, f"/{rt.name}/{{uuid}}", json_body={obj_type: data})
        log.debug("vnc write", extra=kv(op="update", type=obj_type, fq_name=_fq_str(data.get("fq_name") or ident),
                                        uuid=uuid, fields=",".join(sorted(data))))
        # The server answers an empty update (nothing to change) with an empty body.
        return {} if result is None else self._unwrap("PUT", path, obj_type, result)

    def delete(self, obj_type: str, ident: Ident) -> None:
        """Delete by uuid or fq_name. A missing object raises NotFound (the caller decides)."""
        rt = _resource(obj_type)
        uuid = self._uuid_of(obj_type, ident)
        path = f"/{rt.name}/{quote(uuid, safe='')}"
        self._call("DELETE", path, f"/{rt.name}/{{uuid}}")
        log.debug("vnc write", extra=kv(op="delete", type=obj_type, fq_name=_fq_str(ident), uuid=uuid))

    def list(
        self,
        obj_type: str,
        *,
        detail: bool = False,
        fields: Optional[Sequence[str]] = None,
        filters: Optional[Mapping[str, Any]] = None,
        parent_id: Union[str, Sequence[str], None] = None,
        parent_fq_name: Optional[Sequence[str]] = None,
        back_ref_id: Union[str, Sequence[str], None] = None,
        obj_uuids: Optional[Sequence[str]] = None,
    ) -> List[Dict[str, Any]]:
        """List objects of a type. Without `detail` each item is `{"uuid", "fq_name", "href"}` (plus
        `fields`); with `detail` each item is the full object (unwrapped). An empty id list given to
        `parent_id`, `back_ref_id` or `obj_uuids` matches nothing, as in the official library; a
        list of more than LIST_BULK_THRESHOLD ids goes in a POST body instead of the URL."""
        rt = _resource(obj_type)
        for ids in (parent_id, back_ref_id, obj_uuids):
            if ids is not None and not isinstance(ids, str) and len(ids) == 0:
                return []
        params: Dict[str, str] = {}
        if parent_fq_name:
            params["parent_fq_name_str"] = ":".join(parent_fq_name)
        if parent_id is not None:
            params["parent_id"] = _comma_list(parent_id)
        if back_ref_id is not None:
            params["back_ref_id"] = _comma_list(back_ref_id)
        if obj_uuids is not None:
            params["obj_uuids"] = _comma_list(obj_uuids)
        if fields:
            params["fields"] = ",".join(fields)
        if detail:
            params["detail"] = "True"
        if filters:
            params["filters"] = encode_filters(filters)
        path = f"/{rt.plural}"
        if any(len(ids) > LIST_BULK_THRESHOLD for ids in (parent_id, back_ref_id, obj_uuids)
               if ids is not None and not isinstance(ids, str)):
            # Long id lists would make an over-long URL; the API takes the same query as a POST body.
            body: Dict[str, Any] = {**params, "type": obj_type, "detail": detail}
            answer = self._action(LIST_BULK_PATH, body)
        else:
            answer = self._expect_dict("GET", path, self._call("GET", path, path, params=params))
        items = answer.get(rt.plural)
        if not isinstance(items, list):
            raise InvalidResponse(f"GET {path}: answer has no {rt.plural!r} list")
        if not detail:
            return items
        return [self._unwrap("GET", path, obj_type, item) for item in items]

    # --- actions -----------------------------------------------------------------------------

    def fqname_to_id(self, obj_type: str, fq_name: Sequence[str]) -> str:
        """The uuid of `obj_type` named `fq_name`; NotFound when there is none."""
        _resource(obj_type)
        answer = self._action("/fqname-to-id", {"type": obj_type, "fq_name": list(fq_name)})
        return self._field("/fqname-to-id", answer, "uuid")

    def id_to_fqname(self, uuid: str) -> Dict[str, Any]:
        """`{"type": <resource type>, "fq_name": [...]}` of a uuid; NotFound when unknown."""
        answer = self._action("/id-to-fqname", {"uuid": uuid})
        return {"type": self._field("/id-to-fqname", answer, "type"),
                "fq_name": self._field("/id-to-fqname", answer, "fq_name")}

    def ref_update(
        self,
        obj_type: str,
        uuid: str,
        ref_type: str,
        ref_uuid: Optional[str] = None,
        *,
        ref_fq_name: Optional[Sequence[str]] = None,
        operation: str = "ADD",
        attr: Optional[Mapping[str, Any]] = None,
    ) -> str:
        """Add or delete one ref of object `uuid` to a `ref_type` object (by uuid or fq_name).

        `ref_type` is the referred type ("firewall-rule"); the ref field name
        ("firewall_rule_refs") is accepted too, as by the official library. Returns the object uuid.
        """
        _resource(obj_type)
        if ref_type.endswith(("_refs", "-refs")):
            ref_type = ref_type[:-5].replace("_", "-")
        _resource(ref_type)
        if operation not in _REF_OPERATIONS:
            raise ValueError(f"ref_update operation must be ADD or DELETE, got {operation!r}")
        if ref_uuid is None and ref_fq_name is None:
            raise ValueError("ref_update needs ref_uuid or ref_fq_name")
        body: Dict[str, Any] = {"operation": operation, "type": obj_type, "uuid": uuid, "ref-type": ref_type}
        if ref_uuid is not None:
            body["ref-uuid"] = ref_uuid
        if ref_fq_name is not None:
            body["ref-fq-name"] = list(ref_fq_name)
        body["attr"] = dict(attr) if attr is not None else None
        answer = self._action("/ref-update", body)
        log.debug("vnc write", extra=kv(op=f"ref-{operation.lower()}", type=obj_type, uuid=uuid, ref_type=ref_type,
                                        ref=ref_uuid or _fq_str(ref_fq_name), attr=json.dumps(body["attr"])))
        return self._field("/ref-update", answer, "uuid")

    def set_tags(self, obj_type: str, obj_uuid: str, changes: Mapping[str, Optional[Mapping[str, Any]]]) -> None:
        """`POST /set-tag`: `changes` maps a tag type to `{"is_global", "value"}`, to
        `{"is_global", "add_values", "delete_values"}` for the multi-valued `label` type, or to None
        (remove every tag of that type from the object)."""
        _resource(obj_type)
        if not changes:
            raise ValueError("set_tags needs at least one tag type")
        reserved = {"obj_type", "obj_uuid"} & set(changes)
        if reserved:
            raise ValueError(f"{sorted(reserved)} is not a tag type")
        body: Dict[str, Any] = {"obj_type": obj_type, "obj_uuid": obj_uuid}
        body.update({tag_type: (dict(c) if c is not None else None) for tag_type, c in changes.items()})
        self._action("/set-tag", body)
        log.debug("vnc write", extra=kv(op="set-tag", type=obj_type, uuid=obj_uuid,
                                        tags=json.dumps(body, sort_keys=True, separators=(",", ":"))))

    def set_tag(self, obj_type: str, obj_uuid: str, tag_type: str, value: Optional[str], *,
                is_global: bool = True) -> None:
        """Set the single tag of `tag_type` on an object; `value=None` removes it."""
        change = None if value is None else {"is_global": is_global, "value": value}
        self.set_tags(obj_type, obj_uuid, {tag_type: change})

    def set_labels(self, obj_type: str, obj_uuid: str, *, add: Sequence[str] = (), delete: Sequence[str] = (),
                   is_global: bool = True) -> None:
        """Add and remove values of the multi-valued `label` tag type in one call."""
        self.set_tags(obj_type, obj_uuid, {
            "label": {"is_global": is_global, "add_values": list(add), "delete_values": list(delete)}})

    # --- plumbing ----------------------------------------------------------------------------

    def _uuid_of(self, obj_type: str, ident: Ident) -> str:
        if isinstance(ident, str):
            if not ident:
                raise ValueError("empty uuid")
            return ident
        return self.fqname_to_id(obj_type, ident)

    def _action(self, path: str, body: Dict[str, Any]) -> Dict[str, Any]:
        return self._expect_dict("POST", path, self._call("POST", path, path, json_body=body))

    @staticmethod
    def _expect_dict(method: str, path: str, answer: Any) -> Dict[str, Any]:
        if answer is None:
            return {}
        if not isinstance(answer, dict):
            raise InvalidResponse(f"{method} {path}: expected a JSON object, got {type(answer).__name__}")
        return answer

    def _unwrap(self, method: str, path: str, obj_type: str, answer: Any) -> Dict[str, Any]:
        inner = self._expect_dict(method, path, answer).get(obj_type)
        if not isinstance(inner, dict):
            raise InvalidResponse(f"{method} {path}: answer has no {obj_type!r} object")
        return inner

    @staticmethod
    def _field(path: str, answer: Dict[str, Any], name: str) -> Any:
        if name not in answer:
            raise InvalidResponse(f"POST {path}: answer has no {name!r}")
        return answer[name]

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
        while True:
            if gate is not None:
                gate()
            url = self._endpoints[index] + path
            token, headers = self._auth_headers()
            started = time.monotonic()
            try:
                response = self._session.request(method, url, params=params, json=json_body, headers=headers,
                                                 timeout=self._timeout, verify=self._verify)
            except _TRANSIENT_TRANSPORT_ERRORS as exc:
                self._observe(method, template, None, time.monotonic() - started)
                status: Optional[int] = None
                failure = f"{type(exc).__name__}: {exc}"
            except requests.RequestException as exc:  # a request that can never work (bad URL, ...)
                raise VncError(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
            else:
                status = response.status_code
                self._observe(method, template, status, time.monotonic() - started)
                if status not in RETRYABLE_STATUSES:
                    self._current = index
                    if status < 400:
                        return _decode(method, path, response)
                    if status == 401 and self._auth is not None and not reauthenticated:
                        reauthenticated = True
                        log.info("vnc token refused, re-authenticating", extra=kv(method=method, path=template))
                        self._auth.refresh(token)
                        continue
                    raise error_for_status(method, path, status, redact(response.text, token))
                failure = f"status {status}"
            failures += 1
            if failures >= self._retry.attempts:
                if status is None:
                    raise VncConnectionError(
                        f"{method} {path}: no VNC endpoint answered after {failures} attempts (last: {failure})")
                raise error_for_status(method, path, status, redact(response.text, token))
            log.warning("vnc request failed, will retry", extra=kv(
                method=method, path=template, endpoint=self._endpoints[index], failure=failure,
                attempt=f"{failures}/{self._retry.attempts}"))
            index = (index + 1) % n
            if failures % n == 0:
                self._sleep(delays.when(path))

    def _auth_headers(self) -> Tuple[Optional[str], Optional[Dict[str, str]]]:
        if self._auth is None:
            return None, None
        token = self._auth.token()
        return token, {"X-Auth-Token": token}

    def _observe(self, method: str, template: str, status: Optional[int], seconds: float) -> None:
        if self._observer is None:
            return
        try:
            self._observer(method, template, status, seconds)
        except Exception:  # a broken metrics hook must never break the API call
            log.exception("vnc observer failed", extra=kv(method=method, path=template))


def _resource(obj_type: str) -> ResourceType:
    try:
        return resource_type(obj_type)
    except KeyError:
        raise ValueError(f"unknown resource type {obj_type!r}") from None


def _body_dict(obj_type: str, body: Body) -> Dict[str, Any]:
    if isinstance(body, VncObject):
        if body.resource_type != obj_type:
            raise ValueError(f"a {body.resource_type} object cannot be sent as {obj_type}")
        return body.to_body()
    if isinstance(body, Mapping):
        return dict(body)
    raise ValueError(f"a {obj_type} body must be a dict or a typed object, got {type(body).__name__}")


def _decode(method: str, path: str, response: requests.Response) -> Any:
    if not response.content:
        return None
    try:
        return jsoncodec.loads(response.content)
    except ValueError:
        raise InvalidResponse(f"{method} {path}: status {response.status_code} with a body that is not JSON") from None
