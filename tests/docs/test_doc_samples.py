"""Every sample of a command's output in README.md, DEVELOPMENT.md and docs/*.md is what the
command prints today (tests/support/docsamples.py says how samples are marked and regenerated:
`python3 -m tests.support.docsamples --write`)."""
from __future__ import annotations

import re
from typing import Iterator, List

import pytest

from tests.support.docsamples import DOCS, REGENERATE, Block, DemoDaemon, blocks, difference, run_block

SAMPLES: List[Block] = [block for path in DOCS for block in blocks(path)]
OFFLINE = [block for block in SAMPLES if block.checked and not block.daemon]
LIVE = [block for block in SAMPLES if block.daemon]


@pytest.fixture(scope="module")
def demo_daemon() -> Iterator[DemoDaemon]:
    with DemoDaemon() as daemon:
        yield daemon


def test_every_session_in_the_docs_is_checked_or_says_why_not():
    unmarked = [block.where for block in SAMPLES if not block.marker]
    assert not unmarked, f"mark these with <!-- sample --> or <!-- illustration: why -->: {unmarked}"
    assert len(OFFLINE) >= 7 and len(LIVE) >= 5  # the troubleshooting session, at least


@pytest.mark.parametrize("block", OFFLINE, ids=[block.where for block in OFFLINE])
def test_an_offline_sample_is_what_the_command_prints(block):
    problem = difference(block, run_block(block, None))
    assert not problem, problem


@pytest.mark.slow
@pytest.mark.parametrize("block", LIVE, ids=[block.where for block in LIVE])
def test_a_daemon_sample_is_what_the_demo_daemon_answers(block, demo_daemon):
    problem = difference(block, run_block(block, demo_daemon.address))
    assert not problem, problem


def test_a_stale_sample_fails_with_a_diff_and_the_command_that_regenerates_it():
    block = next(b for b in OFFLINE if "what-if" in b.text)
    stale = Block(block.path, block.marker, block.first, block.last,
                  block.text.replace("dropped -> ALLOWED", "allowed", 1))
    problem = difference(stale, run_block(block, None))
    assert "-shop/web-1" in problem and "+shop/web-1" in problem
    assert f"{REGENERATE} docs/troubleshooting.md" in problem


def test_only_the_ages_on_livez_are_normalised():
    block = next(b for b in LIVE if "livez" in b.text)
    older = re.sub(r"\d+\.\d s ago", "93.4 s ago", block.text)
    assert older != block.text and not difference(block, older)
    assert difference(block, block.text.replace("(limit 120 s)", "(limit 60 s)", 1))
    assert difference(block, block.text.replace("livez check passed", "livez check failed"))
