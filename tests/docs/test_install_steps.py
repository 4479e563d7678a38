"""The install steps of docs/operations.md work on a host with none of their directories, and put
every file the systemd unit's `Documentation=` names where it says (run under a scratch root, as
the unprivileged test user: ownership is left out)."""
from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path
from typing import List

from tests.support.paths import REPO

OPERATIONS = REPO / "docs" / "operations.md"
UNIT = REPO / "etc" / "contrail-kube-manager.service"


def install_lines() -> List[str]:
    text = OPERATIONS.read_text(encoding="utf-8")
    block = text[text.index("## Install"):text.index("## Configure")]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.startswith("install ")]


def run_under(root: Path, line: str) -> None:
    """`line` with its absolute destinations moved under `root` and without -o/-g."""
    words = shlex.split(line)
    kept: List[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in ("-o", "-g"):
            skip = True
        else:
            kept.append(str(root) + word if word.startswith("/") else word)
    sources = [w for w in kept if "*" in w]
    expanded = [str(p.relative_to(REPO)) for pattern in sources for p in sorted(REPO.glob(pattern))]
    kept = [w for w in kept if "*" not in w] + expanded
    subprocess.run(kept, cwd=REPO, check=True, capture_output=True, text=True)


def test_the_install_lines_work_where_no_directory_exists(tmp_path):
    lines = install_lines()
    assert len(lines) >= 3
    for line in lines:
        run_under(tmp_path, line)
    assert (tmp_path / "etc/contrail/contrail-kubernetes.conf").read_bytes() == \
        (REPO / "etc/contrail-kubernetes.conf").read_bytes()
    assert (tmp_path / "etc/systemd/system/contrail-kube-manager.service").is_file()


def test_what_the_unit_documents_is_installed(tmp_path):
    for line in install_lines():
        run_under(tmp_path, line)
    documents = re.findall(r"^Documentation=(.+)$", UNIT.read_text(encoding="utf-8"), re.M)
    assert documents
    for uri in " ".join(documents).split():
        assert uri.startswith("file://"), uri
        assert (tmp_path / uri[len("file:///"):]).is_file(), f"{uri} is not installed by the steps"
