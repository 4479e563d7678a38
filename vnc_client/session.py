"""The HTTP session of the config API client: requests' environment rules, read once per origin.

requests honours the environment on every request (`trust_env`): HTTP_PROXY/HTTPS_PROXY/NO_PROXY
and REQUESTS_CA_BUNDLE/CURL_CA_BUNDLE. Finding them walks the whole of `os.environ` twice per
request, a good part of what one config API request costs the client (docs/operations.md,
"Measurements behind the code"), for an answer that never changes: kube-manager does not change its own environment while it
runs. So the session keeps requests' rules but remembers their outcome per origin (scheme, host and
port) from the first request on. Turning the environment off instead (`trust_env = False`) would
silently ignore a proxy or CA bundle an operator set, which is why it stays on. (requests still
looks for ~/.netrc credentials per request; that costs only a few stat calls.)
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, MutableMapping, Optional, Tuple, Union
from urllib.parse import urlsplit

import requests

if TYPE_CHECKING:  # requests' stubs name the settings dict; it does not exist at run time
    from requests.sessions import _Settings

_Key = Tuple[str, str, Any, Any, Any]


class VncSession(requests.Session):
    """A `requests.Session` whose environment settings are looked up once per origin.

    Only requests without explicit `proxies` are cached (the client never passes any). The
    session's own `proxies`, `verify`, `stream` and `cert` are part of the cached result, so they
    must be set before the first request, as `VncClient` does.
    """

    def __init__(self) -> None:
        super().__init__()
        self._environment: Dict[_Key, _Settings] = {}

    def merge_environment_settings(self, url: Union[str, bytes, None], proxies: Optional[MutableMapping[str, str]],
                                   stream: Optional[bool], verify: Any, cert: Any) -> _Settings:
        if proxies or not self.trust_env or not isinstance(url, str):
            return super().merge_environment_settings(url, proxies, stream, verify, cert)
        parts = urlsplit(url)
        key = (parts.scheme, parts.netloc, stream, verify, cert)
        settings = self._environment.get(key)
        if settings is None:
            settings = super().merge_environment_settings(url, {}, stream, verify, cert)
            self._environment[key] = settings
        # requests may add to the proxies mapping of one request; never to the cached one.
        fresh = settings.copy()
        fresh["proxies"] = dict(settings["proxies"])
        return fresh
