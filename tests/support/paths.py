"""Where the repository's files are, for the tests that read examples, docs or sources."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
