"""Input with nothing in it is said, not silently translated to an empty cluster: one `warning:`
line on stderr per empty file or manifest-less directory, and the command goes on with what it
read (exit status 0, as for any other skipped document)."""
from __future__ import annotations

import pytest

from kube_manager.cli.main import main
from tests.support.paths import EXAMPLES

EMPTY_FILES = {"empty.yaml": "", "blank.yaml": "\n\n", "separators.yaml": "---\n---\n", "comment.yml": "# nothing yet\n"}


@pytest.mark.parametrize("name", sorted(EMPTY_FILES))
def test_an_empty_file_is_one_warning_and_exit_status_0(tmp_path, capsys, name):
    path = tmp_path / name
    path.write_text(EMPTY_FILES[name])
    assert main(["translate", "-f", str(path), "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert err == f"warning: {path}: empty (no document in it); nothing read from it\n"
    assert '"workloads": []' in out


def test_a_directory_with_no_manifest_is_one_warning(tmp_path, capsys):
    (tmp_path / "README.txt").write_text("policies go here\n")
    assert main(["translate", "-f", str(tmp_path), "-o", "table"]) == 0
    err = capsys.readouterr().err
    assert err == (f"warning: {tmp_path}: no manifest file (*.yaml, *.yml, *.json) in this directory; "
                   f"nothing read from it\n")


def test_empty_input_beside_real_input_warns_and_translates_the_rest(tmp_path, capsys):
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert main(["translate", "-f", str(EXAMPLES / "demo"), str(empty), "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert f"warning: {empty}: empty" in err and "k8s-shop-api-from-web" in out


def test_a_file_with_a_document_is_not_called_empty(tmp_path, capsys):
    path = tmp_path / "ns.yaml"
    path.write_text("---\napiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n---\n")
    assert main(["translate", "-f", str(path)]) == 0
    assert "empty" not in capsys.readouterr().err


def test_an_empty_change_for_what_if_is_said_too(tmp_path, capsys):
    change = tmp_path / "change.yaml"
    change.write_text("")
    assert main(["what-if", "-f", str(EXAMPLES / "demo"), "--change", str(change)]) == 0
    assert f"warning: {change}: empty (no document in it)" in capsys.readouterr().err
