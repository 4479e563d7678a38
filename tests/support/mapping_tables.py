"""docs/mapping.md's generated tables: each block between `<!-- translate: FILE... -->` and
`<!-- end translate -->` is `translate -f FILE... -o table` (under `cluster-wide`, the wiki's
semantics), headings moved two levels down. Checked by tests/translator/test_translator_docs.py,
regenerated with the other samples: `python3 -m tests.support.docsamples --write`."""
from __future__ import annotations

import re

from kube_manager.offline.manifests import load_manifests
from kube_manager.offline.render_table import render_table
from kube_manager.translator import translate
from tests.support.paths import REPO

MAPPING = REPO / "docs" / "mapping.md"
BLOCK_RE = re.compile(r"(<!-- translate: (?P<files>[^>]*?) -->\n)(?P<body>.*?)(<!-- end translate -->)", re.S)


def generated(files: str) -> str:
    """`contrail-kube-manager translate -f FILES -o table`, headings moved two levels down."""
    manifests = load_manifests([str(REPO / f) for f in files.split()])
    table = render_table(translate(manifests.objects, semantics="cluster-wide"))
    return re.sub(r"^#", "###", table, flags=re.M) + "\n"


def regenerate(text: str) -> str:
    return BLOCK_RE.sub(lambda m: m.group(1) + generated(m.group("files")) + m.group(4), text)


def rewrite_mapping() -> bool:
    """Regenerate the tables in docs/mapping.md; whether anything changed."""
    current = MAPPING.read_text(encoding="utf-8")
    fresh = regenerate(current)
    if fresh != current:
        MAPPING.write_text(fresh, encoding="utf-8")
    return fresh != current
