"""docs/architecture.md's tables of modules are the tree: every module they name exists, and every
module of the product, `vnc_client`, `introspect` and `simulators` is named (a module is written
`name.py`, a package `name/`, relative to the package its row names)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Set, Tuple

from tests.support.paths import REPO

ARCHITECTURE = REPO / "docs" / "architecture.md"
PACKAGES = ("kube_manager", "vnc_client", "introspect", "simulators")
# The sections whose tables map modules, with the package their bare names are relative to.
TABLES: Dict[str, str] = {"## The rooms": "", "### Inside the translator": "kube_manager/translator",
                          "## The simulators": ""}
MODULE = re.compile(r"^[\w/]+(\.py|/)$")


def table_rows() -> List[Tuple[str, str]]:
    """(row, the package its bare names are relative to) for every row of the mapping tables."""
    rows: List[Tuple[str, str]] = []
    base = None
    for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            base = TABLES.get(line.strip())
        elif base is not None and line.startswith("| ") and not line.startswith("| ---"):
            rows.append((line, base))
    return rows


def resolve(row: str, table_base: str) -> Tuple[Set[Path], List[str]]:
    """The files and packages a row names, and the names that exist nowhere."""
    found: Set[Path] = set()
    missing: List[str] = []
    base = REPO / table_base
    for token in re.findall(r"`([^`]+)`", row):
        if not MODULE.match(token):
            continue
        for candidate in (REPO / token, base / token, REPO / table_base / token):
            if candidate.exists():
                found.add(candidate)
                if "/" in token and (REPO / token).exists():
                    base = candidate if candidate.is_dir() else candidate.parent
                break
        else:
            missing.append(token)
    return found, missing


def product_modules() -> Set[Path]:
    return {path for package in PACKAGES for path in (REPO / package).rglob("*.py")
            if path.name not in ("__init__.py", "__main__.py")}


def test_the_tables_have_rows():
    assert len(table_rows()) >= 40


def test_every_module_the_tables_name_exists():
    stale = {token: row[:80] for row, base in table_rows() for token in resolve(row, base)[1]}
    assert not stale, f"docs/architecture.md names modules that do not exist: {stale}"


def test_every_module_is_in_the_tables():
    named: Set[Path] = set()
    for row, base in table_rows():
        named |= resolve(row, base)[0]
    missing = sorted(str(path.relative_to(REPO)) for path in product_modules() - named)
    assert not missing, f"modules docs/architecture.md's tables do not name: {missing}"


def test_a_stale_name_is_caught(tmp_path):
    """The check itself: a module that is gone is reported, a present one is not."""
    row = "| `kube_manager/translator/` | `cnp/render.py`, `cnp/chain.py`, `algebra.py` |"
    found, missing = resolve(row, "")
    assert missing == ["cnp/render.py", "algebra.py"]
    assert found == {REPO / "kube_manager/translator", REPO / "kube_manager/translator/cnp/chain.py"}


DOC_FILES = (REPO / "README.md", REPO / "DEVELOPMENT.md", *sorted((REPO / "docs").glob("*.md")))
REPO_PATH = re.compile(r"`((?:tests|kube_manager|vnc_client|introspect|simulators|bench|etc|examples|docs|\.ci)/[\w./-]*)`")
MADE_BY_CI = {".ci/venvs/"}  # created by .ci/run, git-ignored


def test_every_repository_path_the_docs_cite_exists():
    """A test file deleted or a module moved leaves no reference behind in the docs."""
    cited = {(doc.name, path) for doc in DOC_FILES for path in REPO_PATH.findall(doc.read_text(encoding="utf-8"))
             if "*" not in path and "<" not in path and path not in MADE_BY_CI}
    missing = sorted((doc, path) for doc, path in cited if not (REPO / path).exists())
    assert not missing, f"the docs cite paths that do not exist: {missing}"
