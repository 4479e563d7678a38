"""docs/mapping.md shows the wiki's illustrations as `translate -o table` prints them today
(tests/support/mapping_tables.py: how the blocks are marked; regenerate them with the other
samples of the docs, `python3 -m tests.support.docsamples --write`)."""
from __future__ import annotations

from tests.support.docsamples import REGENERATE
from tests.support.mapping_tables import BLOCK_RE, MAPPING, regenerate


def test_the_documented_tables_are_what_translate_prints():
    text = MAPPING.read_text(encoding="utf-8")
    blocks = BLOCK_RE.findall(text)
    assert len(blocks) >= 6, "the six illustrations of the wiki"
    assert regenerate(text) == text, f"docs/mapping.md's tables are stale: {REGENERATE} docs/mapping.md"
