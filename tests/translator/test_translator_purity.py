"""The translator is pure: no network clients, no I/O, no mutable module state (SPEC, issue 2)."""
from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import subprocess
import sys


import kube_manager.explain as explain_package
import kube_manager.translator as package
from kube_manager.translator import ClusterTranslator, translate
from tests.support.builders import namespace, pod, policy

FORBIDDEN = ("gevent", "requests", "kubernetes", "vnc_client", "urllib3", "socket", "kube_manager.records.db")
# The modules of the translation itself (the explain package's are tested by their own suites).
OWN_MODULES = ("bodies", "canonical", "changes", "cidr", "cluster", "encoding", "index", "inputs", "parsecache",
               "membership", "model", "naming", "policy", "ports", "render", "rejections", "selectors", "sequenced",
               "shapes", "translation", "validation",
               "cnp.chain", "cnp.model", "cnp.parse", "cnp.source", "cnp.status",
               "exact.emit", "exact.expressions", "exact.isolation", "exact.items", "exact.pairs", "exact.product",
               "exact.source", "exact.tiers")


def test_importing_the_translator_or_explain_pulls_in_no_client_or_io_module():
    modules = [m.name for pkg in (package, explain_package)
               for m in pkgutil.walk_packages(pkg.__path__, f"{pkg.__name__}.")]
    assert "kube_manager.translator.exact.product" in modules
    code = ("import sys, importlib\n"
            f"for name in {modules!r}: importlib.import_module(name)\n"
            f"print([m for m in {FORBIDDEN!r} if m in sys.modules])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


def test_no_mutable_module_state_and_no_io():
    for name in OWN_MODULES:
        module = importlib.import_module(f"kube_manager.translator.{name}")
        source = inspect.getsource(module)
        for token in ("open(", "import os", "import sys", "subprocess", "print(", "time.time", "random"):
            assert token not in source, f"{name} uses {token}"
        for attr, value in vars(module).items():
            if attr.startswith("__"):
                continue
            assert not isinstance(value, (dict, list, set, bytearray)), f"{name}.{attr} is mutable module state"


def _cluster():
    return {"Namespace": [namespace("a", team="x")],
            "Pod": [pod("a", "p", ip="10.0.0.1", labels={"app": "web"}, ports=[("http", 80, "TCP")])],
            "NetworkPolicy": [policy("a", "np", {"podSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
                                "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "x"}}}],
                                             "ports": [{"port": "http"}]}]})]}


def test_translations_do_not_influence_each_other_and_inputs_are_not_modified():
    inputs = _cluster()
    snapshot = json.dumps(inputs, sort_keys=True)
    first = json.dumps(translate(inputs).to_dict())
    other = ClusterTranslator("other")
    for manifest in inputs["NetworkPolicy"]:
        other.upsert("NetworkPolicy", manifest)
    other.flush()
    assert json.dumps(translate(inputs).to_dict()) == first
    assert json.dumps(inputs, sort_keys=True) == snapshot
