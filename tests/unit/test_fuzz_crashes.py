"""The crashes the coverage-guided fuzzing found (tests/fuzz/crashes/), each replayed with the target
that found it under each backend: the input now reads (and, for `write`, round-trips) or is
refused with an `RdbError` (`WriteError`, `UnwritableError`), and its cause is noted in the
directory's README."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz import targets
from tests.fuzz.run import CRASHES

FIXTURES = sorted(path for path in CRASHES.iterdir() if path.name != "README.md")


def noted() -> set[str]:
    """The files the README's table has a row for."""
    rows = (line.split("|") for line in (CRASHES / "README.md").read_text().splitlines() if line.startswith("| "))
    return {cells[1].strip() for cells in rows}


def test_every_crash_has_its_note() -> None:
    assert FIXTURES
    assert {path.name for path in FIXTURES} <= noted()


@pytest.mark.parametrize("path", FIXTURES, ids=lambda path: path.name)
def test_a_crash_found_is_fixed(path: Path, each_backend: str) -> None:
    target = targets.TARGETS[path.name.split("-", 1)[0]](targets.Scratch())
    target(path.read_bytes())
