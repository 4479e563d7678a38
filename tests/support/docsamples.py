"""The samples of command output in README.md, DEVELOPMENT.md and docs/*.md, run and compared.

A fenced block whose lines start with `$ ` shows a session: each `$ ` line (with its `\\`
continuation lines) is a command, the lines after it its output (stdout and stderr, as a terminal
shows them). The HTML comment on the line before the fence says what to do with it:

- `<!-- sample -->`: run the commands in bash from the repository's root, `contrail-kube-manager`
  being this tree's `python -m kube_manager` (and `python3` the Python running the tests), and
  compare;
- `<!-- sample: daemon -->`: the same, with a daemon running on the demo
  (`run --demo examples/demo`); `curl` on `127.0.0.1:8108` reaches its introspect server;
- `<!-- illustration: WHY -->`: not run (say why: a tool the project does not ship, a real
  cluster); a `$ ` block with none of these comments is an error.

The tables of docs/mapping.md between `<!-- translate: FILE... -->` and `<!-- end translate -->`
are `translate -o table` output too (tests/support/mapping_tables.py); `--write` regenerates them.

What legitimately varies from run to run is normalised on both sides by `NORMALISE`, and nothing
else. Regenerate the samples after a change of output (then read the diff: it is the change an
operator sees):

    python3 -m tests.support.docsamples --write            # every file
    python3 -m tests.support.docsamples --write docs/troubleshooting.md
    python3 -m tests.support.docsamples                    # compare only, print the diffs
"""
from __future__ import annotations

import argparse
import difflib
import os
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from tests.support.mapping_tables import MAPPING, rewrite_mapping
from tests.support.paths import REPO
from tests.support.waiting import wait_until

DOCS: Tuple[Path, ...] = (REPO / "README.md", REPO / "DEVELOPMENT.md", *sorted((REPO / "docs").glob("*.md")))
REGENERATE = "python3 -m tests.support.docsamples --write"
DOC_PORT = "127.0.0.1:8108"
MARKER = re.compile(r"^<!-- (sample|sample: daemon|illustration: .+) -->$")
FENCE = "```"

# (pattern, replacement): the only parts of an output allowed to differ between runs.
NORMALISE: Tuple[Tuple[re.Pattern[str], str], ...] = (
    # /livez: the age of the last heartbeat or watch event
    (re.compile(r"\b\d+\.\d s ago \(limit"), "N s ago (limit"),
)


@dataclass
class Block:
    """One fenced session in a markdown file: `first`/`last` are the line indices of its content."""
    path: Path
    marker: str
    first: int
    last: int
    text: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.first}"

    @property
    def daemon(self) -> bool:
        return self.marker == "sample: daemon"

    @property
    def checked(self) -> bool:
        return self.marker.startswith("sample")


def blocks(path: Path) -> Iterator[Block]:
    """The `$ ` sessions of one file, each with the marker before its fence ('' when none)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    index = 0
    while index < len(lines):
        if lines[index].startswith(FENCE):
            end = index + 1
            while end < len(lines) and not lines[end].startswith(FENCE):
                end += 1
            content = lines[index + 1:end]
            if content and content[0].startswith("$ "):
                above = lines[index - 1] if index else ""
                match = MARKER.match(above)
                yield Block(path, match.group(1) if match else "", index + 1, end, "\n".join(content) + "\n")
            index = end + 1
        else:
            index += 1


def commands(text: str) -> List[str]:
    """The commands of a session: each `$ ` line joined with its `\\` continuation lines."""
    found: List[str] = []
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        if lines[index].startswith("$ "):
            command = [lines[index]]
            while command[-1].endswith("\\") and index + 1 < len(lines):
                index += 1
                command.append(lines[index])
            found.append("\n".join(command))
        index += 1
    return found


def _script(session: List[str]) -> str:
    """A bash script printing each command as the sample shows it, then what it prints; `$?` is the
    status of the previous command, as at a prompt."""
    out = ['contrail-kube-manager() { "$DOCS_PYTHON" -m kube_manager "$@"; }',
           'python3() { "$DOCS_PYTHON" "$@"; }',
           'curl() { local a=() x; for x in "$@"; do a+=("${x//' + DOC_PORT + '/$DOCS_ADDRESS}"); done; '
           'command curl "${a[@]}"; }',
           "__rc=0"]
    for command in session:
        out.append("printf '%s\\n' " + _quote(command))
        out.append(f"(exit $__rc); {{ {command[2:]}\n}} 2>&1; __rc=$?")
    return "\n".join(out) + "\n"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def run_block(block: Block, address: Optional[str]) -> str:
    """What the commands of `block` print today."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", COLUMNS="100",
               DOCS_PYTHON=sys.executable, DOCS_ADDRESS=address or DOC_PORT)
    proc = subprocess.run(["bash", "-c", _script(commands(block.text))], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    return proc.stdout + proc.stderr


def normalise(text: str) -> str:
    for pattern, replacement in NORMALISE:
        text = pattern.sub(replacement, text)
    return text


def difference(block: Block, actual: str) -> str:
    """'' when the sample shows what the commands print; else a diff and how to regenerate."""
    if normalise(block.text) == normalise(actual):
        return ""
    diff = difflib.unified_diff(block.text.splitlines(), actual.splitlines(),
                                f"{block.where} (the sample)", "what the commands print", lineterm="")
    return ("\n".join(diff) + f"\nIf the new output is right, regenerate the sample: "
            f"{REGENERATE} {block.path.relative_to(REPO)}")


@dataclass
class DemoDaemon:
    """`contrail-kube-manager run --demo examples/demo` on a free port, converged before use."""
    address: str = ""
    proc: Optional["subprocess.Popen[bytes]"] = None
    log: List[str] = field(default_factory=list)

    def __enter__(self) -> "DemoDaemon":
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.address = f"127.0.0.1:{port}"
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kube_manager", "run", "--demo", "examples/demo",
             "--http-server-ip", "127.0.0.1", "--http-server-port", str(port)],
            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._wait_converged()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        self.proc.terminate()
        self.proc.wait(timeout=20)

    def _get(self, path: str) -> str:
        with urllib.request.urlopen(f"http://{self.address}{path}", timeout=5) as answer:
            return str(answer.read().decode())

    def _settled(self) -> str:
        """The gauges that say the daemon is done, or '' while it is not (or not answering yet)."""
        assert self.proc is not None and self.proc.poll() is None, "the demo daemon stopped"
        try:
            metrics = self._get("/metrics")
        except (OSError, urllib.error.URLError):
            return ""
        settled = [line for line in metrics.splitlines()
                   if line.startswith(("kube_manager_work_queue_depth", "kube_manager_pods{",
                                       "kube_manager_network_policies{", "kube_manager_owned_objects{"))]
        busy = [line for line in settled if ("pending" in line or "retrying" in line) and not line.endswith(" 0.0")]
        done = "kube_manager_work_queue_depth 0.0" in settled and not busy and any(
            line.startswith("kube_manager_pods{") for line in settled)
        return "\n".join(settled) if done else ""

    def _wait_converged(self) -> None:
        """Every pod tagged, every policy written, the queue empty, and the same at two polls."""
        seen: List[str] = [""]

        def stable() -> bool:
            now = self._settled()
            same = bool(now) and now == seen[0]
            seen[0] = now
            return same
        wait_until(stable, "the demo daemon to converge", timeout=60)


def check(paths: Sequence[Path], write: bool) -> List[str]:
    """Run every sample of `paths`; the problems found (with `write`, the samples are rewritten)."""
    problems: List[str] = []
    found = {path: list(blocks(path)) for path in paths}
    for path, items in found.items():
        problems += [f"{block.where}: a `$ ` session with no <!-- sample --> or <!-- illustration: why -->"
                     " comment on the line before it" for block in items if not block.marker]
    daemon: Optional[DemoDaemon] = None
    outputs: Dict[int, str] = {}
    try:
        for path, items in found.items():
            for block in items:
                if not block.checked:
                    continue
                if block.daemon and daemon is None:
                    daemon = DemoDaemon().__enter__()
                outputs[id(block)] = run_block(block, daemon.address if block.daemon else None)
    finally:
        if daemon is not None:
            daemon.__exit__(None, None, None)
    for path, items in found.items():
        stale = [(block, outputs[id(block)]) for block in items
                 if block.checked and difference(block, outputs[id(block)])]
        if write and stale:
            _rewrite(path, stale)
            print(f"rewrote {len(stale)} sample(s) in {path.relative_to(REPO)}")
        elif stale:
            problems += [difference(block, actual) for block, actual in stale]
    return problems


def _rewrite(path: Path, stale: List[Tuple[Block, str]]) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    for block, actual in sorted(stale, key=lambda item: -item[0].first):
        lines[block.first:block.last] = actual.rstrip("\n").split("\n")
    path.write_text("\n".join(lines), encoding="utf-8")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tests.support.docsamples", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", type=Path, help="markdown files (default: all of them)")
    parser.add_argument("--write", action="store_true", help="rewrite the samples that differ")
    args = parser.parse_args(argv)
    paths = [path.resolve() for path in args.files] or list(DOCS)
    problems = check(paths, args.write)
    if args.write and MAPPING in paths and rewrite_mapping():
        print("rewrote the generated tables of docs/mapping.md")
    for problem in problems:
        print(problem, end="\n\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
