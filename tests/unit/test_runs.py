"""Sorted runs on disk (`rdbspec.report.runs`): what `prefixes` sums and ranks through past the
prefixes it holds in memory."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from rdbspec.report import runs


def _rows(count: int, seed: int) -> list[tuple[bytes, int, int]]:
    rng = random.Random(seed)
    return [(b"k%d" % rng.randrange(count), rng.randrange(3), rng.randrange(-10**12, 10**12)) for _ in range(count)]


@pytest.mark.parametrize("count, chunk", [(0, 5), (4, 5), (5, 5), (6, 5), (20_001, 1_000)])
def test_sorted_rows_in_chunks(tmp_path: Path, count: int, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Any number of rows, sorted `chunk` at a time: in memory when they fit in one (no file), else
    through runs, which are removed once merged."""
    rows = _rows(count, count)
    made = []
    original = runs.write_run

    def counted(rows, directory):
        made.append(original(rows, directory))
        return made[-1]

    monkeypatch.setattr(runs, "write_run", counted)
    assert list(runs.sorted_rows(rows, str(tmp_path), chunk)) == sorted(rows)
    assert len(made) == (0 if count <= chunk else -(-count // chunk))
    assert list(tmp_path.iterdir()) == []


def test_a_run_reads_back_in_batches(tmp_path: Path) -> None:
    """Rows over several batches come back as written, bytes and integers of any size among them."""
    rows = [(b"\x00" * (i % 7), i, -(2**70) + i, (i, i * 3)) for i in range(runs.BATCH * 2 + 3)]
    path = runs.write_run(rows, str(tmp_path))
    assert Path(path).stat().st_size > 0
    assert list(runs.read_run(path)) == rows
    assert not Path(path).exists()


@pytest.mark.parametrize("fan_in", [2, 3, 128])
def test_merged_runs_combine_equal_rows(tmp_path: Path, fan_in: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs of (name, level, sum), no name and level twice in one, merged a few at a time: one row
    for each name and level, its sums added."""
    monkeypatch.setattr(runs, "FAN_IN", fan_in)
    expected: dict[tuple[bytes, int], int] = {}
    paths = []
    for seed in range(9):
        summed: dict[tuple[bytes, int], int] = {}
        for name, level, value in _rows(300, seed):
            summed[name, level] = summed.get((name, level), 0) + value
            expected[name, level] = expected.get((name, level), 0) + value
        paths.append(runs.write_run(sorted((*k, v) for k, v in summed.items()), str(tmp_path)))
    rows = list(runs.merged(paths, str(tmp_path), 2, lambda a, b: (a[0], a[1], a[2] + b[2])))
    assert rows == sorted((*k, v) for k, v in expected.items())
    assert list(tmp_path.iterdir()) == []
