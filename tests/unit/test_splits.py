"""Splitting a dump into byte ranges (rdbspec.read.splits) and reading them one by one gives
exactly the rows of reading the file whole, for every table of the Spark source."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

import rdbspec  # noqa: E402
from rdbspec.read import splits
from rdbspec.read.splits import Split, plan
from rdbspec.read.values import STREAM_KINDS
from rdbspec.spark.source import (
    CUTTINGS,
    STREAM_PARTS,
    STREAM_TABLES,
    TABLES,
    CorruptFileError,
    ReadOptions,
    plan_splits,
    read_split,
)
from tests.support import split_dump  # noqa: E402

REAL = Path(__file__).parents[1] / "corpus" / "real"
SPLIT_TABLES = [t for t in TABLES if t not in ("files", "aux")]


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    return split_dump.build(tmp_path_factory.mktemp("splits") / "big.rdb")


def _parts(table: str) -> int:
    """What the source cuts a big value of the table into (`plan_splits`)."""
    return STREAM_PARTS if table == "stream_entries" else 0


def _rows(splits: list[Split], table: str, **options: str) -> list[dict]:
    opts = ReadOptions.parse({"table": table, **options})
    return [row for s in splits for batch in read_split(s, opts) for row in batch.to_pylist()]


def _assert_contiguous(splits: list[Split]) -> None:
    assert splits[0].start is None and splits[-1].end is None
    ranges = list(dict.fromkeys((s.start, s.end) for s in splits))  # node splits share their key's range
    for (_, end), (start, _) in zip(ranges, ranges[1:]):
        assert end == start
    for start, end in ranges:  # a stream key's node splits: distinct nodes, in file order
        nodes = [s.part for s in splits if (s.start, s.end) == (start, end) and s.part is not None]
        assert all(a[0] < b[0] for a, b in zip(nodes, nodes[1:]))


@pytest.mark.parametrize("split_size", [2_000, 64_000, 700_000])
@pytest.mark.parametrize("table", SPLIT_TABLES)
def test_split_read_equals_whole_read(dump: Path, table: str, split_size: int) -> None:
    splits = plan(str(dump), split_size, parts=_parts(table))
    assert len(splits) > 1
    _assert_contiguous(splits)
    whole = _rows([Split(str(dump))], table, includeDeleted="true")
    assert whole  # every table has rows in this dump
    assert _rows(splits, table, includeDeleted="true") == whole


def test_a_big_stream_is_cut_into_node_ranges(dump: Path) -> None:
    splits = plan(str(dump), 64_000, parts=STREAM_PARTS)
    with rdbspec.open(dump) as whole:
        record = next(k for k in whole.keys() if k.key == b"big:stream")
        end, nodes = record.offset + record.size, len(record.value.nodes)
    node_splits = [s for s in splits if s.part is not None and s.end == end]
    assert len(node_splits) >= 4  # the 30,000-entry stream is over 64 kB several times
    assert sum(s.part[2] for s in node_splits) == nodes
    assert [s.part[1] for s in node_splits] == [0, *itertools.accumulate(s.part[2] for s in node_splits[:-1])]
    entries = _rows(node_splits, "stream_entries")
    assert {bytes(r["key"]) for r in entries} == {b"big:stream"}
    assert len(entries) == split_dump.STREAM_ENTRIES - len(range(5, split_dump.STREAM_ENTRIES, 97))
    assert not any(s.part for s in plan(str(dump), 64_000, parts=0))  # other tables read it whole


@pytest.mark.parametrize("table", STREAM_TABLES)
def test_stream_tables_leave_out_the_splits_without_a_stream(dump: Path, table: str, tmp_path: Path) -> None:
    """The left-out splits hold no row of the table; the last split (EOF, checksum) is kept."""
    parts = _parts(table)
    every, kept = plan(str(dump), 2_000, parts=parts), plan(str(dump), 2_000, parts, streams_only=True)
    assert kept == plan_splits([str(dump)], ReadOptions.parse({"table": table, "splitSize": "2000"}))
    left_out = [s for s in every if s not in kept]
    assert len(left_out) > 10 and set(kept) < set(every) and kept[-1] == every[-1]
    assert _rows(left_out, table, includeDeleted="true") == []
    assert _rows(kept, table, includeDeleted="true") == _rows([Split(str(dump))], table, includeDeleted="true")
    assert plan_splits([str(dump)], ReadOptions.parse({"table": "keys", "splitSize": "2000"})) == plan(str(dump), 2_000)
    cut = tmp_path / "cut.rdb"  # a problem near the end is still met, by the last split
    cut.write_bytes(dump.read_bytes()[:-5_000])
    strict = ReadOptions.parse({"table": table})
    with pytest.raises(CorruptFileError) as unsplit_error:
        list(read_split(Split(str(cut)), strict))
    with pytest.raises(CorruptFileError) as split_error:
        for s in plan(str(cut), 2_000, parts, streams_only=True):
            list(read_split(s, strict))
    assert str(split_error.value) == str(unsplit_error.value)


def test_filters_apply_in_every_split(dump: Path) -> None:
    splits = plan(str(dump), 16_000)
    for options in ({"db": "2"}, {"types": "hash,stream"}, {"keyPattern": "tail:1*"}):
        whole = _rows([Split(str(dump))], "keys", **options)
        assert whole and _rows(splits, "keys", **options) == whole


@pytest.mark.parametrize("path", sorted(REAL.glob("*/*.rdb")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_dumps_split_every_few_records(path: Path) -> None:
    for table in ("keys", "stream_entries", "stream_pending"):
        splits = plan(str(path), 300, parts=_parts(table))
        _assert_contiguous(splits)
        assert _rows(splits, table, includeDeleted="true") == _rows([Split(str(path))], table, includeDeleted="true")


def test_a_file_at_most_split_size_is_one_split(dump: Path) -> None:
    assert plan(str(dump), dump.stat().st_size) == [Split(str(dump))]


def test_a_corrupt_file_is_planned_up_to_the_problem(dump: Path, tmp_path: Path) -> None:
    data = dump.read_bytes()
    cut = tmp_path / "cut.rdb"
    cut.write_bytes(data[:len(data) - 5_000])  # inside the last database's keys
    splits = plan(str(cut), 64_000)
    assert len(splits) > 1 and splits[-1].end is None
    whole = ReadOptions.parse({"table": "keys", "ignoreCorruptFiles": "true"})
    expected = [r for b in read_split(Split(str(cut)), whole, warn=lambda m: None) for r in b.to_pylist()]
    got = [r for s in splits for b in read_split(s, whole, warn=lambda m: None) for r in b.to_pylist()]
    assert got == expected and len(got) > 100
    strict = ReadOptions.parse({"table": "keys"})
    with pytest.raises(CorruptFileError) as unsplit_error:
        list(read_split(Split(str(cut)), strict))
    # the cut lands wherever the server put the keys: a truncation, or a count past the end
    assert re.match(rf"{re.escape(str(cut))}: (TruncatedError|ParseError) at byte \d+: ", str(unsplit_error.value))
    with pytest.raises(CorruptFileError) as split_error:
        for s in splits:
            list(read_split(s, strict))
    assert str(split_error.value) == str(unsplit_error.value)


def test_a_file_is_planned_once_until_it_is_written_anew(dump: Path, tmp_path: Path) -> None:
    path = tmp_path / "planned.rdb"
    data = dump.read_bytes()
    path.write_bytes(data)
    first = plan(str(path), 64_000, parts=STREAM_PARTS)
    before = splits._planned.cache_info()
    assert plan(str(path), 64_000, parts=STREAM_PARTS) == first  # the same query again: no second pass
    assert splits._planned.cache_info().hits == before.hits + 1
    assert plan(str(path), 64_000) != first  # other parameters: planned for them
    half = tmp_path / "half.rdb"
    half.write_bytes(data[:len(data) // 2])
    half.replace(path)  # as the server writes a dump: a new file renamed over the old one
    before = splits._planned.cache_info()
    again = plan(str(path), 64_000, parts=STREAM_PARTS)
    assert splits._planned.cache_info().misses == before.misses + 1
    assert again != first and all((s.start or 0) < len(data) // 2 for s in again)


@pytest.mark.parametrize("cut_off", [0, 5_000], ids=["whole", "truncated"])
def test_one_pass_plans_a_file_for_every_table(dump: Path, tmp_path: Path, cut_off: int) -> None:
    """The source plans a file for every table that cuts it in one pass, which the reads of the
    other tables find kept; each table's plan is the one it gets alone (a truncated file too:
    the problem ends every plan at the same record)."""
    path = tmp_path / "every.rdb"
    data = dump.read_bytes()
    path.write_bytes(data[:len(data) - cut_off])
    alone = {table: plan(str(path), 2_000, cutting.parts, cutting.streams_only) for table, cutting in CUTTINGS.items()}
    assert len(set(map(tuple, alone.values()))) == 3  # keys; the stream tables; stream_entries, in parts
    before = splits._planned.cache_info()
    together = {table: plan_splits([str(path)], ReadOptions.parse({"table": table, "splitSize": "2000"}))
                for table in CUTTINGS}
    after = splits._planned.cache_info()
    assert (after.misses - before.misses, after.hits - before.hits) == (1, len(CUTTINGS) - 1)
    assert together == alone


def test_keys_of_some_kinds_are_those_of_every_key_with_that_kind(dump: Path) -> None:
    """What the stream tables read: records of other kinds are read (and checked) but make no KeyRecord."""
    def seen(record: rdbspec.KeyRecord) -> tuple:
        return record.db, record.key, record.offset, record.size, record.expire_at_ms, record.idle, record.freq

    with rdbspec.open(dump) as every, rdbspec.open(dump) as some:
        expected = [seen(r) for r in every.keys() if r.value_kind in STREAM_KINDS]
        got = [seen(r) for r in some.keys(kinds=STREAM_KINDS)]
        assert some.checksum_status == every.checksum_status == "ok"
    assert len(expected) > 1 and got == expected
