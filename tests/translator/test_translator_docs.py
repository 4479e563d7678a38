"""docs/mapping.md shows the wiki's illustrations as `translate -o table` prints them today.

Each generated block in the document sits between `<!-- translate: FILE... -->` and
`<!-- end translate -->`; this test re-runs the translation and compares. After a deliberate change,
regenerate with `python tests/translator/test_translator_docs.py --update`.
"""
from __future__ import annotations

import os
import re
import sys

from kube_manager.offline.manifests import load_manifests
from kube_manager.offline.render_table import render_table
from kube_manager.translator import translate
from tests.support.paths import REPO

ROOT = str(REPO)
DOC = os.path.join(ROOT, "docs", "mapping.md")
BLOCK_RE = re.compile(r"(<!-- translate: (?P<files>[^>]*?) -->\n)(?P<body>.*?)(<!-- end translate -->)", re.S)


def generated(files: str) -> str:
    """`contrail-kube-manager translate -f FILES -o table`, headings moved two levels down."""
    manifests = load_manifests([os.path.join(ROOT, f) for f in files.split()])
    table = render_table(translate(manifests.objects, semantics="cluster-wide"))
    return re.sub(r"^#", "###", table, flags=re.M) + "\n"


def regenerate(text: str) -> str:
    return BLOCK_RE.sub(lambda m: m.group(1) + generated(m.group("files")) + m.group(4), text)


def test_the_documented_tables_are_what_translate_prints():
    with open(DOC, encoding="utf-8") as stream:
        text = stream.read()
    blocks = BLOCK_RE.findall(text)
    assert len(blocks) >= 6, "the six illustrations of the wiki"
    assert regenerate(text) == text, "docs/mapping.md is stale: python tests/translator/test_translator_docs.py --update"


if __name__ == "__main__" and sys.argv[1:] == ["--update"]:
    with open(DOC, encoding="utf-8") as stream:
        current = stream.read()
    with open(DOC, "w", encoding="utf-8") as stream:
        stream.write(regenerate(current))
