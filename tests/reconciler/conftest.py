"""The reconciler tests' fixture: `setup` makes reconcilers over the in-process config API
(tests/support/reconciler_support.py `Setup`), each stopped after the test."""
from __future__ import annotations

from typing import Any, Callable, Iterator, List

import pytest

from tests.support.reconciler_support import Setup


@pytest.fixture
def setup() -> Iterator[Callable[..., Setup]]:
    made: List[Setup] = []

    def make(**kwargs: Any) -> Setup:
        made.append(Setup(**kwargs))
        return made[-1]
    yield make
    for s in made:
        s.stop()
