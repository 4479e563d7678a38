"""Import rules between the packages (issue 9): who may import whom.

- `vnc_client` is a library: it imports nothing from `kube_manager` or `introspect`, not even lazily
  inside a function, so it can be used (and tested) without the application.
- `kvlog` (the structured log fields every layer uses) imports nothing of the project at all.
- Data flows one way (watch -> records -> translator -> reconciler): the reconciler imports nothing
  of the watchers, handlers, dispatcher or pipeline, and they and the translator nothing of it.
- The simulators (`kube_manager.sim`) are loaded only by the commands and daemon branches that use
  them: importing every product module leaves them unloaded, so `run` against a real cluster never
  imports an emulator.
"""
from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator, List, Tuple

import kube_manager
import vnc_client

ROOT = Path(vnc_client.__file__).resolve().parent.parent


def _imported_names(path: Path) -> Iterator[Tuple[int, str]]:
    """Every absolute module name imported anywhere in a file, with its line."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


def _product_modules() -> List[str]:
    """Every module of kube_manager, introspect and vnc_client except the simulators and __main__."""
    import introspect
    names = []
    for package in (kube_manager, introspect, vnc_client):
        names.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.startswith("kube_manager.sim") or info.name.endswith("__main__"):
                continue
            names.append(info.name)
    return names


def test_vnc_client_imports_nothing_from_the_application() -> None:
    files = sorted((ROOT / "vnc_client").rglob("*.py"))
    assert files, "vnc_client has no sources?"
    offenders = [f"{path.relative_to(ROOT)}:{line} imports {name}"
                 for path in files for line, name in _imported_names(path)
                 if name.split(".")[0] in ("kube_manager", "introspect")]
    assert offenders == []


def test_kvlog_stands_alone() -> None:
    files = sorted((ROOT / "kvlog").rglob("*.py"))
    assert files
    offenders = [f"{path.relative_to(ROOT)}:{line} imports {name}"
                 for path in files for line, name in _imported_names(path)
                 if name.split(".")[0] in ("kube_manager", "introspect", "vnc_client")]
    assert offenders == []


def _offenders(folders: List[str], forbidden: Tuple[str, ...]) -> List[str]:
    """Where the files of `folders` (or single files) import a module under one of `forbidden`."""
    files = [path for folder in folders
             for path in ([ROOT / folder] if folder.endswith(".py") else sorted((ROOT / folder).rglob("*.py")))]
    assert files
    return [f"{path.relative_to(ROOT)}:{line} imports {name}"
            for path in files for line, name in _imported_names(path)
            if any(name == f or name.startswith(f + ".") for f in forbidden)]


def test_data_flows_one_way_between_the_records_the_translator_and_the_reconciler() -> None:
    """watch -> records -> translator -> reconciler: the reconciler imports nothing of the watchers,
    the kind handlers, the event dispatcher or the pipeline (it reads the translator's published
    state and pushes sync states through a protocol), and none of those imports the reconciler."""
    upstream = ("kube_manager.kube", "kube_manager.handlers", "kube_manager.cache", "kube_manager.pipeline")
    assert _offenders(["kube_manager/reconciler"], upstream) == []
    assert _offenders(["kube_manager/kube", "kube_manager/handlers", "kube_manager/cache.py"],
                      ("kube_manager.reconciler",)) == []
    assert _offenders(["kube_manager/translator"], upstream + ("kube_manager.reconciler",)) == []


def test_the_rule_checker_sees_a_lazy_import(tmp_path: Path) -> None:
    """The check above would catch an import hidden in a function body."""
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from kube_manager.settings import OperatorSettings\n    import introspect.app\n")
    assert [name for _line, name in _imported_names(source)] == ["kube_manager.settings", "introspect.app"]


def test_importing_every_product_module_loads_no_simulator() -> None:
    modules = _product_modules()
    assert "kube_manager.daemon" in modules and "kube_manager.cli" in modules
    code = ("import importlib, sys\n"
            f"for name in {modules!r}: importlib.import_module(name)\n"
            "print(sorted(m for m in sys.modules if m.startswith('kube_manager.sim')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert proc.stdout.strip() == "[]"
