"""A refused connection to the API server said once, naming the setting (kube/access.py)."""
from __future__ import annotations

import json
import logging
from typing import Optional

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from kube_manager.kube.access import AccessExplainer, AccessSources, refused_access

SOURCES = AccessSources("kubeconfig /k (certificate-authority)", "kubeconfig /k (user)")
FORBIDDEN = ('pods is forbidden: User "system:serviceaccount:kube-system:contrail-kube-manager" '
             'cannot list resource "pods" in API group "" at the cluster scope')


def api_error(status: int, reason: str, message: str) -> ApiException:
    error = ApiException(status=status, reason=reason)
    error.body = json.dumps({"kind": "Status", "code": status, "message": message})
    return error


def wrong_ca() -> Exception:
    return urllib3.exceptions.MaxRetryError(None, "/api/v1/pods", urllib3.exceptions.SSLError(
        "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer "
        "certificate (_ssl.c:1006)"))


@pytest.mark.parametrize("error, expected", [
    (api_error(401, "Unauthorized", "Unauthorized"),
     "kubeconfig /k (user): the API server refused the identity (401 Unauthorized: Unauthorized)"),
    (api_error(403, "Forbidden", FORBIDDEN),
     f"kubeconfig /k (user): the API server forbids the request (403 Forbidden: {FORBIDDEN})"),
    (wrong_ca(), "kubeconfig /k (certificate-authority): the API server's certificate does not "
                 "verify against this CA (unable to get local issuer certificate)"),
    (api_error(500, "Internal Server Error", "etcd"), None),
    (urllib3.exceptions.ProtocolError("Connection reset by peer"), None),
])
def test_only_what_a_setting_fixes_is_explained(error: Exception, expected: Optional[str]) -> None:
    assert refused_access(error, SOURCES) == expected


def test_each_line_is_logged_once_however_many_watchers_meet_it(caplog: pytest.LogCaptureFixture) -> None:
    explainer = AccessExplainer(SOURCES)
    with caplog.at_level(logging.INFO, logger="kube_manager.kube.access"):
        lines = {explainer.explain(wrong_ca()) for _ in range(4)}
        explainer.explain(api_error(401, "Unauthorized", "Unauthorized"))
    assert len(lines) == 1 and None not in lines
    assert [r.levelname for r in caplog.records] == ["ERROR", "ERROR"]
