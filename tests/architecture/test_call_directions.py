"""Calls flow one way (docs/architecture.md, "The one-way flow"), checked on every run.

watch event -> dispatcher -> handlers (Kubernetes records) -> translator -> status book and
reconciler; the reconciler's progress -> status book -> records. Nobody upstream is called back:
- the reconciler knows of the status book only its protocol, and nothing of the handlers;
- the handlers know nothing of the reconciler nor of the status book;
- the translator knows nothing of the status book; the status book nothing of the service, the
  watchers, the handlers or the reconciler;
- nothing in `kube/` knows the service;
- the writer and the pods' tagger never get the `Reconciler` (by import, by annotation, at run time);
- the watchers deliver to the event dispatcher itself, not to the daemon;
- the records' status parts, `db.errors` and a policy's state have one writer each, and a policy's
  state or errors change in one place, which tells the listeners.
"""
from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator, List, Tuple

import pytest

from kube_manager.reconciler.core import Reconciler
from kube_manager.reconciler.view import KeyView
from kube_manager.service.pipeline import build_pipeline
from tests.architecture.test_layout_contracts import ROOT, _offenders, _sources

STATUS_PROTOCOL = "kube_manager.status.protocol"
# The fields of the records' status parts (records/db.py: PolicyStatus, PodStatus).
STATUS_FIELDS = {"firewall_policy", "rules", "state", "errors", "write_errors", "tags", "tagging", "vmi_error"}


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_reconciler_knows_the_status_book_by_its_protocol_alone() -> None:
    found = _offenders(["kube_manager/reconciler"], ("kube_manager.status", "kube_manager.handlers"))
    assert found and all(line.endswith(STATUS_PROTOCOL) for line in found), found


def test_the_handlers_know_nothing_downstream_of_the_translator() -> None:
    assert _offenders(["kube_manager/handlers"], ("kube_manager.reconciler", "kube_manager.status",
                                                  "kube_manager.service")) == []


def test_the_status_book_and_the_translator_call_nobody_upstream() -> None:
    assert _offenders(["kube_manager/translator"], ("kube_manager.status",)) == []
    assert _offenders(["kube_manager/status"], ("kube_manager.service", "kube_manager.kube", "kube_manager.handlers",
                                                "kube_manager.reconciler")) == []


def test_nothing_in_kube_knows_the_service() -> None:
    assert _offenders(["kube_manager/kube"], ("kube_manager.service",)) == []


def _annotation_names(tree: ast.AST) -> Iterator[str]:
    """Every name used in an annotation (arguments, returns, fields) of a module."""
    annotations: List[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            annotations += [a.annotation for a in arguments if a.annotation is not None]
            annotations += [node.returns] if node.returns is not None else []
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
    for annotation in annotations:
        for inner in ast.walk(annotation):
            if isinstance(inner, ast.Name):
                yield inner.id
            elif isinstance(inner, ast.Constant) and isinstance(inner.value, str):
                yield from (n.id for n in ast.walk(ast.parse(inner.value, mode="eval")) if isinstance(n, ast.Name))


@pytest.mark.parametrize("module", ["writer.py", "pods.py", "pod_worker.py", "view.py", "resync.py"])
def test_the_key_handlers_never_name_the_reconciler(module: str) -> None:
    path = ROOT / "kube_manager" / "reconciler" / module
    tree = ast.parse(path.read_text())
    imports = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               and (node.module or "").split(".")[-1] == "core"]
    assert imports == [], f"{module} imports the reconciler's module"
    assert "Reconciler" not in set(_annotation_names(tree)), f"{module} takes a Reconciler"


def test_the_annotation_reader_sees_a_reconciler(tmp_path: Path) -> None:
    """The check above would catch a writer given its owner, even in a string annotation."""
    tree = ast.parse("class W:\n    view: 'Optional[Reconciler]'\n    def __init__(self, r: Reconciler) -> None: ...\n")
    assert list(_annotation_names(tree)).count("Reconciler") == 2


def _attributes(obj: Any) -> List[Any]:
    """`obj`'s attributes (bound methods: their object)."""
    return [getattr(value, "__self__", value) for value in vars(obj).values()]


def test_the_writer_and_the_tagger_get_a_view_never_their_owner() -> None:
    pipeline = build_pipeline()
    reconciler = pipeline.connect(SimpleNamespace())  # type: ignore[arg-type]  # no call is made
    for handler in (reconciler.objects, reconciler.pods.tagger):
        assert isinstance(handler._view, KeyView)
        given = _attributes(handler) + _attributes(handler._view)
        assert not any(isinstance(value, Reconciler) for value in given)


def test_the_watchers_deliver_to_the_dispatcher_not_to_the_daemon(monkeypatch: pytest.MonkeyPatch) -> None:
    from kube_manager.kube import client_factory, watcher
    from kube_manager.service.daemon import Daemon
    from kube_manager.settings import OperatorSettings
    delivered: List[Any] = []
    api = SimpleNamespace(close=lambda: None)
    monkeypatch.setattr(client_factory, "build_api_client",
                        lambda settings, url: (api, SimpleNamespace(url="http://kube", access=None)))
    monkeypatch.setattr(watcher, "make_watchers", lambda api, kinds, on_event, db, **kw: delivered.append(on_event) or [])
    daemon = Daemon(OperatorSettings())
    daemon._start_watchers(None)
    assert delivered == [daemon.pipeline.cache.on_event]


def _writes(path: Path) -> Iterator[Tuple[int, str]]:
    """Assignments to a status field through `.status` (`record.status.state = ...`) or to
    `db.errors`, with their line."""
    for node in ast.walk(ast.parse(path.read_text())):
        targets: List[ast.AST] = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = list(node.targets) if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            for element in (target.elts if isinstance(target, ast.Tuple) else [target]):
                if not isinstance(element, ast.Attribute):
                    continue
                owner = element.value
                owner_name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
                if (element.attr in STATUS_FIELDS and owner_name == "status") or (
                        element.attr == "errors" and owner_name in ("db", "_db")):
                    yield node.lineno, f"{owner_name}.{element.attr}"


def test_the_records_status_parts_and_errors_have_one_writer_the_status_book() -> None:
    writers = {_relative(path) for path in _sources("kube_manager", "introspect") if list(_writes(path))}
    assert writers == {"kube_manager/status/book.py", "kube_manager/status/policies.py"}


def _assigns_policy_state(function: ast.FunctionDef) -> bool:
    """Whether `function` assigns `<x>.status.state` or `<x>.status.errors` (or `status.state`)."""
    for node in ast.walk(function):
        for target in node.targets if isinstance(node, ast.Assign) else ():
            for element in (target.elts if isinstance(target, ast.Tuple) else [target]):
                owner = element.value if isinstance(element, ast.Attribute) else None
                if (isinstance(element, ast.Attribute) and element.attr in ("state", "errors")
                        and (getattr(owner, "attr", None) or getattr(owner, "id", None)) == "status"):
                    return True
    return False


def test_a_policy_state_or_errors_change_in_one_place_which_tells_the_listeners() -> None:
    calls, assigns = [], []
    for path in _sources("kube_manager", "introspect"):
        for function in (n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)):
            if any(isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "policy_status_changed"
                   for n in ast.walk(function)):
                calls.append((_relative(path), function.name))
            if _assigns_policy_state(function):
                assigns.append((_relative(path), function.name))
    assert calls == assigns == [("kube_manager/status/policies.py", "_settle")]
