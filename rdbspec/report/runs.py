"""Sorted runs on disk: what a summary too big for memory (`prefixes.PrefixSums`) is sorted and
summed through, as sort(1) does with a file bigger than its buffer.

A run is a file of rows (tuples of bytes and integers) in sorted order, written in batches of
`BATCH` rows with `marshal` (the process that writes a run, or one forked from the same program, is
the one that reads it). Reading a run gives its rows back one batch in memory at a time and
removes the file once it is read. `sorted_rows` sorts rows of any number in `chunk` rows of
memory: each chunk sorted and written as a run, then the runs merged. `merged` merges sorted runs
into one order, rows whose first `width` items are equal combined; more than `FAN_IN` runs are
merged a group at a time first, so that no more files than that are open at once. Rows are
compared as tuples (no key function: sorting and merging stay in C)."""

from __future__ import annotations

import heapq
import itertools
import marshal
import os
import struct
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import Any

BATCH = 8192  # rows a marshal record holds: what a run being read keeps in memory
FAN_IN = 128  # runs merged at once
_SIZE = struct.Struct("<Q")  # a batch's size before it (marshal.load of a file reads it a few bytes at a time)

Row = tuple[Any, ...]


def write_run(rows: Iterable[Row], directory: str) -> str:
    """The rows, in the order given (sorted by the caller), as a run in `directory`; its path."""
    fd, path = tempfile.mkstemp(prefix="run-", dir=directory)
    with open(fd, "wb") as out:
        rows = iter(rows)
        while batch := list(itertools.islice(rows, BATCH)):
            data = marshal.dumps(batch)
            out.write(_SIZE.pack(len(data)))
            out.write(data)
    return path


def read_run(path: str) -> Iterator[Row]:
    """The rows of a run, in order; the file is removed once they are all read."""
    with open(path, "rb") as run:
        while size := run.read(_SIZE.size):
            yield from marshal.loads(run.read(_SIZE.unpack(size)[0]))
    os.unlink(path)


def sorted_rows(rows: Iterable[Row], directory: str, chunk: int) -> Iterator[Row]:
    """`rows` in their natural order, holding at most `chunk` of them in memory to sort (and a
    batch of each run while they are merged)."""
    rows = iter(rows)
    runs: list[str] = []
    batch = list(itertools.islice(rows, chunk))
    while batch:
        batch.sort()
        following = list(itertools.islice(rows, chunk)) if len(batch) == chunk else []
        if not runs and not following:  # all of them fitted: no file
            yield from batch
            return
        runs.append(write_run(batch, directory))
        batch = following
    yield from heapq.merge(*(read_run(path) for path in runs))


def merged(paths: list[str], directory: str, width: int, combine: Callable[[Row, Row], Row]) -> Iterator[Row]:
    """The rows of the sorted runs at `paths` in one order, the rows whose first `width` items
    are equal (none are within one run) made one by `combine`."""
    paths = list(paths)
    while len(paths) > FAN_IN:
        group, paths = paths[:FAN_IN], paths[FAN_IN:]
        paths.append(write_run(_combined(group, width, combine), directory))
    return _combined(paths, width, combine)


def _combined(paths: list[str], width: int, combine: Callable[[Row, Row], Row]) -> Iterator[Row]:
    held: Row | None = None
    for row in heapq.merge(*(read_run(path) for path in paths)):
        if held is None:
            held = row
        elif row[:width] == held[:width]:
            held = combine(held, row)
        else:
            yield held
            held = row
    if held is not None:
        yield held
