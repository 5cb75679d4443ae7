"""Fixtures the unit tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rdbspec.read import parallel


@pytest.fixture
def pieces(monkeypatch: pytest.MonkeyPatch) -> list[parallel.Piece]:
    """The ranges the commands read in workers, in order (none when one process reads)."""
    read: list[parallel.Piece] = []
    real = parallel.ranges

    def counted(*args, **kwargs) -> Iterator[parallel.Done]:
        ranges = real(*args, **kwargs)
        try:
            for done in ranges:
                read.append(done.piece)
                yield done
        finally:
            ranges.close()

    monkeypatch.setattr(parallel, "ranges", counted)
    return read
