"""Introspect pages over a DB the real cache and translator filled from examples/demo: the explain
trace and banner, decoded selector tags, the pod page, policy rules with their deny rules, and the
uid filter. (introspect_support's hand-made DB has no translator behind it, so it cannot show
decoding.)"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

import pytest

from introspect.app import create_app
from introspect.explain import db_explainer
from introspect_support import call
from kube_manager.cache import KubeCache
from kube_manager.db import Database
from kube_manager.manifests import load_manifests
from kube_manager.translator import ClusterTranslator

DEMO = Path(__file__).resolve().parent.parent / "examples" / "demo"


@pytest.fixture(scope="module")
def db() -> Database:
    manifests = load_manifests([str(DEMO)])
    db = Database()
    cache = KubeCache(db, ClusterTranslator("k8s", "k8s"))
    for resource, objects in (("namespaces", manifests.namespaces), ("pods", manifests.pods),
                              ("networkpolicies", manifests.network_policies)):
        for obj in objects:
            cache.on_event(resource, "ADDED", obj)
        cache.on_event(resource, "LISTED", {"resourceVersion": "1"})
    return db


@pytest.fixture(scope="module")
def app(db):
    return create_app(db, explain=db_explainer(db, "k8s"))


def flat(text: str) -> str:
    return " ".join(text.split())


def get_json(app, url: str) -> Dict[str, Any]:
    reply = call(app, url + ("&" if "?" in url else "?") + "format=json")
    assert reply.status == 200, reply.text
    return reply.json()


def test_explain_page_shows_the_trace(app):
    html = flat(call(app, "/explain?from=shop/web-1&to=shop/api-2&port=9090&protocol=TCP").text)
    assert 'id="trace"' in html
    assert ('<a href="/Snh_NetworkPolicyDetail?namespace=shop&amp;name=api-from-web">'
            'shop/api-from-web</a>') in html
    assert 'port &#34;http&#34; is 9091 on shop/api-2, not 9090' in html
    data = get_json(app, "/explain?from=shop/web-1&to=shop/api-2&port=9090&protocol=TCP")
    (step,) = [s for s in data["trace"] if s["policy"] == "shop/api-from-web"]
    assert step["blocks"][0]["reason"] == 'port "http" is 9091 on shop/api-2, not 9090'


def test_explain_decodes_the_selector_tags_of_both_ends(app):
    data = get_json(app, "/explain?from=shop/web-1&to=shop/api-2&port=9090&protocol=TCP")
    named = [t for t in data["to"]["tags"] if t.startswith("label=k8s-sel-")]
    assert named and set(named) <= set(data["selectors"])
    texts = {data["selectors"][t]["text"] for t in named}
    assert 'pods app=api in namespace shop where port "http" (TCP) is 9091' in texts
    html = call(app, "/explain?from=shop/web-1&to=shop/api-2&port=9090&protocol=TCP").text
    assert "where port &#34;http&#34; (TCP) is 9091" in html


@pytest.mark.parametrize("flow, banner", [
    ("from=shop/web-1&to=shop/api-2&port=9090", "verdict-dropped"),  # both drop
    ("from=shop/web-1&to=shop/api-1&port=9090", "verdict-dropped"),  # Kubernetes drops
    ("from=monitoring/prometheus-0&to=shop/api-1&port=9100", "verdict-allowed"),  # both allow
])
def test_the_banner_follows_the_worse_verdict(app, flow, banner):
    html = call(app, f"/explain?{flow}&protocol=TCP").text
    assert f'class="verdict {banner}"' in html
