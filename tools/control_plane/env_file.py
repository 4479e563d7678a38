"""DIR/env: what `up` started and where, as shell-style KEY=VALUE lines (`. DIR/env` in a shell;
`read_env` in Python). `down` and `status` work from it alone."""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Dict

ENV_NAME = "env"


def write_env(folder: Path, values: Dict[str, str]) -> Path:
    path = folder / ENV_NAME
    lines = [f"{key}={shlex.quote(value)}" for key, value in values.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read_env(folder: Path) -> Dict[str, str]:
    """The values `write_env` wrote; an empty dict when `up` never got that far."""
    path = folder / ENV_NAME
    if not path.is_file():
        return {}
    values: Dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if "=" in line and not line.startswith("#"):
            key, quoted = line.split("=", 1)
            parts = shlex.split(quoted)
            values[key] = parts[0] if parts else ""
    return values
