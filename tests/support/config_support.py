"""Loading settings as `contrail-kube-manager` does, for the configuration tests."""
from __future__ import annotations

import argparse
import textwrap
from pathlib import Path
from typing import List

from kube_manager.settings import OperatorSettings, add_arguments, load_settings


def write(tmp_path: Path, text: str, name: str = "kube.conf") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def cli_parser() -> argparse.ArgumentParser:
    """The shape kube_manager.cli.main builds: run options on the top level AND on the `run` subparser."""
    parser = argparse.ArgumentParser(prog="contrail-kube-manager")
    sub = parser.add_subparsers(dest="command")
    add_arguments(sub.add_parser("run"))
    sub.add_parser("translate")
    add_arguments(parser)
    return parser


def load(argv: List[str]) -> OperatorSettings:
    return load_settings(cli_parser().parse_args(argv))
