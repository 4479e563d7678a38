"""The layout's contracts, checked on every run (docs/architecture.md states them for people).

- `vnc_client` is a library: it imports nothing of `kube_manager`, `introspect` or `simulators`, not
  even lazily inside a function, so it can be used (and tested) without the application.
- `kube_manager.plumbing` knows nothing of the rest of the project.
- Data flows one way (watch -> records -> translator -> reconciler): the reconciler imports nothing
  of the watchers, handlers, dispatcher or pipeline, and they and the translator nothing of it.
- The exact mode (`translator/exact/`) builds its items from the translator's model, not from the
  bodies the NetworkPolicy renderer writes: nothing of it imports `translator/render.py`.
- The simulators are loaded only by the commands and daemon branches that use them: importing every
  product module leaves them unloaded, so `run` against a real cluster never imports an emulator.
- The import graph of the product and of the simulators (lazy imports and imports for type hints
  included) has no cycle.
- No two product classes share a name; no product, simulator or tool module is over 450 lines; at
  most six modules lie loose at the top of `kube_manager/`; beside `kube_manager/`, `vnc_client/` and
  `introspect/` there are two packages, the simulators and the developer tools (`tools/`: not
  installed, so nothing of the product or the simulators imports them).
"""
from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

import kube_manager
import vnc_client

ROOT = Path(vnc_client.__file__).resolve().parent.parent
PRODUCT = ("kube_manager", "vnc_client", "introspect")
SIMULATORS = "simulators"
TOOLS = "tools"
MAX_LINES = 450
RENDERER = "kube_manager.translator.render"


def _imported_names(path: Path) -> Iterator[Tuple[int, str]]:
    """Every absolute module name imported anywhere in a file, with its line."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources(*packages: str) -> List[Path]:
    return sorted(path for package in packages for path in (ROOT / package).rglob("*.py"))


def _graph_imports(path: Path, known: Set[str], typing_too: bool = False) -> Set[str]:
    """The project modules a file imports, at load time or lazily inside a function (and under
    TYPE_CHECKING with `typing_too`), relative imports resolved; `from package import module`
    counts the module."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: Set[str] = set()

    def visit(node: ast.AST) -> None:
        if not typing_too and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)
    visit(ast.parse(path.read_text()))
    return {m for m in found if m in known and m != name}


def _cycles(packages: Tuple[str, ...], typing_too: bool = False) -> List[List[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    paths = _sources(*packages)
    known = {_module_name(p) for p in paths}
    graph: Dict[str, Set[str]] = {_module_name(p): _graph_imports(p, known, typing_too) for p in paths}
    # A package's __init__ importing its own submodules is how packages export: not a cycle.
    for module, targets in graph.items():
        graph[module] = {t for t in targets if not (module == t.rpartition(".")[0] and
                                                     (ROOT / module.replace(".", "/") / "__init__.py").exists())}
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return found


def _product_modules() -> List[str]:
    """Every module of the product packages except __main__."""
    import introspect
    names = []
    for package in (kube_manager, introspect, vnc_client):
        names.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not info.name.endswith("__main__"):
                names.append(info.name)
    return names


def _offenders(folders: List[str], forbidden: Tuple[str, ...]) -> List[str]:
    """Where the files of `folders` (or single files) import a module under one of `forbidden`."""
    files = [path for folder in folders
             for path in ([ROOT / folder] if folder.endswith(".py") else sorted((ROOT / folder).rglob("*.py")))]
    assert files
    return [f"{path.relative_to(ROOT)}:{line} imports {name}"
            for path in files for line, name in _imported_names(path)
            if any(name == f or name.startswith(f + ".") for f in forbidden)]


def test_vnc_client_imports_nothing_from_the_application() -> None:
    assert _offenders(["vnc_client"], ("kube_manager", "introspect", SIMULATORS)) == []


def test_the_product_and_the_simulators_import_no_tool() -> None:
    assert _offenders(list(PRODUCT + (SIMULATORS,)), (TOOLS,)) == []


def test_plumbing_knows_nothing_of_the_rest() -> None:
    others = ("introspect", "vnc_client", SIMULATORS) + tuple(
        f"kube_manager.{p.name}" for p in (ROOT / "kube_manager").iterdir()
        if p.is_dir() and p.name not in ("plumbing", "__pycache__"))
    assert _offenders(["kube_manager/plumbing"], others) == []


def test_the_client_and_the_application_log_fields_under_one_attribute() -> None:
    from kube_manager.plumbing import kvlog
    from vnc_client import logfields
    assert logfields.FIELDS_ATTR == kvlog.FIELDS_ATTR
    assert logfields.kv(a=1) == kvlog.kv(a=1)


def test_data_flows_one_way_between_the_records_the_translator_and_the_reconciler() -> None:
    """watch -> records -> translator -> reconciler: the reconciler imports nothing of the watchers,
    the kind handlers, the event dispatcher or the pipeline (it reads the translator's published
    state and pushes sync states through a protocol), and none of those imports the reconciler."""
    upstream = ("kube_manager.kube", "kube_manager.handlers", "kube_manager.service")
    assert _offenders(["kube_manager/reconciler"], upstream) == []
    assert _offenders(["kube_manager/kube", "kube_manager/handlers", "kube_manager/service/dispatcher.py"],
                      ("kube_manager.reconciler",)) == []
    assert _offenders(["kube_manager/translator"], upstream + ("kube_manager.reconciler",)) == []


def test_status_flows_downstream_from_the_records() -> None:
    """SPEC 15's status is told what the records hold: nothing upstream of the status book imports
    kube_manager/status (the reconciler knows its protocol alone: test_call_directions), and
    Kubernetes hears of it (publisher, outbox, recorder, verdicts) from the book alone, through its
    `PolicyObserver` protocol: neither the book nor anything upstream imports that side."""
    upstream = ["kube_manager/kube", "kube_manager/handlers", "kube_manager/records", "kube_manager/translator"]
    assert _offenders(upstream, ("kube_manager.status",)) == []
    telling = tuple(f"kube_manager.status.{name}" for name in ("publisher", "outbox", "recorder", "verdicts"))
    book = ["kube_manager/status/book.py", "kube_manager/status/policies.py", "kube_manager/status/protocol.py"]
    assert _offenders(upstream + book + ["kube_manager/reconciler", "kube_manager/service/dispatcher.py"],
                      telling) == []


def test_the_exact_mode_imports_nothing_of_the_renderer() -> None:
    """Not even for a type: what the renderer writes is the other mode's output, and a change of
    its form must not change what the exact mode writes (`test_exact_reads_the_model.py`)."""
    known = {_module_name(path) for path in _sources("kube_manager")}
    exact = sorted((ROOT / "kube_manager" / "translator" / "exact").glob("*.py"))
    assert len(exact) > 5
    assert [str(path.relative_to(ROOT)) for path in exact
            if RENDERER in _graph_imports(path, known, typing_too=True)] == []


def test_the_exact_mode_check_sees_a_relative_import(tmp_path: Path, monkeypatch: "object") -> None:
    package = tmp_path / "kube_manager" / "translator" / "exact"
    package.mkdir(parents=True)
    source = package / "m.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..render import PolicyRendering\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)  # type: ignore[attr-defined]
    assert RENDERER in _graph_imports(source, {RENDERER}, typing_too=True)


def test_the_rule_checker_sees_a_lazy_import(tmp_path: Path) -> None:
    """The checks above would catch an import hidden in a function body."""
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from kube_manager.settings import OperatorSettings\n    import introspect.app\n")
    assert [name for _line, name in _imported_names(source)] == ["kube_manager.settings", "introspect.app"]


def test_importing_every_product_module_loads_no_simulator() -> None:
    modules = _product_modules()
    assert "kube_manager.service.daemon" in modules and "kube_manager.cli.main" in modules
    code = ("import importlib, sys\n"
            f"for name in {modules!r}: importlib.import_module(name)\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] == {SIMULATORS!r}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert proc.stdout.strip() == "[]"


def test_the_import_graph_has_no_cycle() -> None:
    """Imports for type hints count: a cycle of types is a cycle of knowledge all the same."""
    assert _cycles(PRODUCT, typing_too=True) == []
    assert _cycles((SIMULATORS,), typing_too=True) == []


def test_the_cycle_finder_finds_a_cycle(tmp_path: Path, monkeypatch: "object") -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import x\n")
    (package / "b.py").write_text("from pkg import a\nx = 1\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)  # type: ignore[attr-defined]
    assert _cycles(("pkg",)) == [["pkg.a", "pkg.b"]]


def test_the_cycle_finder_finds_a_cycle_through_type_hints(tmp_path: Path, monkeypatch: "object") -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "api.py").write_text("from .hooks import Hooks\n")
    (package / "hooks.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                      "    from .api import Api\nclass Hooks: ...\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)  # type: ignore[attr-defined]
    assert _cycles(("pkg",)) == []
    assert _cycles(("pkg",), typing_too=True) == [["pkg.api", "pkg.hooks"]]


def test_no_two_product_classes_share_a_name() -> None:
    where: Dict[str, List[str]] = defaultdict(list)
    for path in _sources(*PRODUCT):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where[node.name].append(_module_name(path))
    assert {name: modules for name, modules in where.items() if len(modules) > 1} == {}


def test_no_module_is_over_the_line_limit() -> None:
    long = {str(p.relative_to(ROOT)): n for p in _sources(*PRODUCT, SIMULATORS, TOOLS)
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_the_top_level_is_the_map() -> None:
    loose = sorted(p.name for p in (ROOT / "kube_manager").glob("*.py"))
    assert len(loose) <= 6, loose
    packages = sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").exists() and p.name != "tests")
    assert packages == sorted(PRODUCT + (SIMULATORS, TOOLS))
