"""Requests to the Kubernetes API by path, over the official client's `ApiClient`.

The daemon reads every answer of the Kubernetes API as raw JSON (lists, watch streams, the Lease),
so of the official client it needs the connection alone: the `ApiClient`'s configuration (host,
bearer token and its refresh hook) and its urllib3 pool (TLS verification with the configured CA,
client certificates, proxy, `retries = False`). The typed API classes (`CoreV1Api`,
`NetworkingV1Api`, ...) add nothing on that path but their import: in recent releases each validates
its arguments with pydantic and imports hundreds of model classes when first touched, which was
most of a restart's time before its first list (docs/operations.md, "A start that costs what it
must"). What this module builds stays within what every release the project accepts provides
(`configuration.host`, `auth_settings()`, `default_headers`, `rest_client.pool_manager`,
`ApiException(status, reason)`), so that it does not depend on one generation of the generated
client.

An answer outside 2xx raises `ApiException` with its status, reason and body, as the official client's
methods do with `_preload_content=False`; a failure to connect raises urllib3's exception.
"""
from __future__ import annotations

import json
from typing import Any, Dict, Iterable, Optional, Tuple, Union
from urllib.parse import urlencode

import urllib3
from kubernetes.client.exceptions import ApiException

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"

Timeout = Union[None, float, Tuple[float, float]]

# The official client's keyword arguments of a list or watch, and the query parameters they are.
_LIST_QUERY = {"limit": "limit", "_continue": "continue", "watch": "watch",
               "resource_version": "resourceVersion", "allow_watch_bookmarks": "allowWatchBookmarks",
               "timeout_seconds": "timeoutSeconds", "label_selector": "labelSelector",
               "field_selector": "fieldSelector"}


def _query_value(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _timeout(timeout: Timeout) -> Optional[urllib3.Timeout]:
    if timeout is None:
        return None
    if isinstance(timeout, tuple):
        return urllib3.Timeout(connect=timeout[0], read=timeout[1])
    return urllib3.Timeout(total=timeout)


def request(api_client: Any, method: str, path: str, *, query: Iterable[Tuple[str, Any]] = (),
            body: Any = None, content_type: str = JSON, timeout: Timeout = None) -> Any:
    """The urllib3 response (not read) of `method path?query` with `body` as JSON; ApiException for
    an answer outside 2xx."""
    configuration = api_client.configuration
    headers: Dict[str, str] = {"Accept": JSON, **api_client.default_headers}
    bearer = configuration.auth_settings().get("BearerToken")
    if bearer and bearer.get("value"):  # read per request: the refresh hook rotates the token
        headers[bearer["key"]] = bearer["value"]
    url = configuration.host.rstrip("/") + path
    pairs = [(name, _query_value(value)) for name, value in query if value is not None]
    if pairs:
        url += "?" + urlencode(pairs)
    encoded = None
    if body is not None:
        headers["Content-Type"] = content_type
        encoded = json.dumps(body)
    answer = api_client.rest_client.pool_manager.request(method, url, body=encoded, headers=headers,
                                                        timeout=_timeout(timeout), preload_content=False)
    if not 200 <= answer.status <= 299:
        failure = ApiException(status=answer.status, reason=answer.reason)
        try:
            failure.body = answer.data.decode("utf-8", errors="replace")
        finally:
            answer.release_conn()
        raise failure
    return answer


def collection_lister(path: str) -> Any:
    """The list-and-watch function of the collection at `path` (`/api/v1/pods`) for an ApiClient,
    called with the official client's keyword arguments (`limit`, `_continue`, `watch`,
    `resource_version`, `allow_watch_bookmarks`, `timeout_seconds`, `_request_timeout`,
    `_preload_content=False`): the watchers' `Lister`."""
    def lister(api_client: Any) -> Any:
        def list_or_watch(*, _preload_content: bool = False, _request_timeout: Timeout = None,
                          **params: Any) -> Any:
            assert not _preload_content, "the watchers read the answer themselves"
            query = [(_LIST_QUERY[name], value) for name, value in params.items()]
            return request(api_client, "GET", path, query=query, timeout=_request_timeout)
        return list_or_watch
    return lister
