"""No text the repository ships holds a merge's conflict markers.

A marker left in a Markdown table renders as text and passes every other check (the docs tests
compare command samples, not tables), so a half-resolved merge could land unseen.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[2]
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".conf", ".toml", ".cfg", ".html", ".txt", ".json", ".mod",
                 ".service", ".ini", ".sh"}
SKIPPED_DIRS = {".git", "venvs", "artifacts", "build", "node_modules", ".mypy_cache", "__pycache__", ".venv"}
MARKER = re.compile(r"^(<{7} |>{7} |={7}$)", re.M)


def shipped_text_files(root: Path = ROOT) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info")]
        for name in files:
            path = Path(folder, name)
            if path.suffix in TEXT_SUFFIXES or path.parent.name == ".ci":
                yield path


def markers_in(path: Path) -> list:
    text = path.read_text(encoding="utf-8", errors="replace")
    return [text.count("\n", 0, m.start()) + 1 for m in MARKER.finditer(text)]


def test_no_shipped_file_holds_a_conflict_marker():
    found = {str(p.relative_to(ROOT)): lines for p in shipped_text_files() if (lines := markers_in(p))}
    assert found == {}


def test_the_check_sees_a_half_resolved_table(tmp_path):
    doc = tmp_path / "docs" / "map.md"
    doc.parent.mkdir()
    doc.write_text("| a | b |\n<<<<<<< HEAD\n| x | 1 |\n=======\n| x | 2 |\n>>>>>>> branch\n")
    assert [markers_in(p) for p in shipped_text_files(tmp_path)] == [[2, 4, 6]]
