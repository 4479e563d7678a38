"""Measured figures live in docs/operations.md ("Measurements behind the code"), not in the code's
comments and docstrings, where they go stale unseen: a comment says why, the docs say how much."""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path
from typing import Iterator, Tuple

from tests.support.paths import REPO

PACKAGES = ("kube_manager", "vnc_client", "introspect", "simulators")
# A quantity with a unit of time or memory, a percentage, or a figure of the XLarge bench cluster.
FIGURE = re.compile(r"\d[\d,.]*\s?(ms|us|µs|MB|GB|KB|kB|MiB|GiB)\b|\d%|\bat XLarge\b")


def prose(source: str) -> Iterator[Tuple[int, str]]:
    """(line, text) of every comment and docstring of a module's source."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                for offset, line in enumerate(doc.splitlines()):
                    yield node.body[0].lineno + offset, line


def figures(path: Path) -> Iterator[str]:
    for line, text in prose(path.read_text(encoding="utf-8")):
        if FIGURE.search(text):
            yield f"{path.relative_to(REPO)}:{line}: {text.strip()}"


def test_no_measured_figure_in_a_comment_or_docstring():
    found = [hit for package in PACKAGES for path in sorted((REPO / package).rglob("*.py")) for hit in figures(path)]
    assert not found, "move these figures to docs/operations.md:\n" + "\n".join(found)


def test_the_scan_sees_comments_and_docstrings_only():
    source = ('"""Fast: 48 ms instead of 4 ms."""\nTIMEOUT_MS = 250  # was 3 GB at XLarge\n'
              'def f():\n    """40% less."""\n    return "12 ms in a string is data"\n')
    hits = [text for _line, text in prose(source) if FIGURE.search(text)]
    assert hits == ["# was 3 GB at XLarge", "Fast: 48 ms instead of 4 ms.", "40% less."]
