"""The native backend (generated/native/, Cython) against the Python one, the reference.

Every dump of the repository and the Dragonfly fixtures are read whole by both backends: every
record's fields, the lazily decoded values and stream nodes included, must be equal, and so must
an error (offset, spec path, message). Repeats of scalars are columns in the native backend
(`ScalarColumns`, `RaggedColumns`): their sequence protocol and bulk methods are checked against
the Python backend's lists. The golden fixtures run through both in test_golden.py.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
from rdbspec_generated import ParseError
from rdbspec_generated.native._columns import RaggedColumns, ScalarColumns

from rdbspec.read.elements import scalar

REPO = Path(__file__).resolve().parents[2]

from tests.support.dragonfly_dumps import build  # noqa: E402

DUMPS = sorted(p.relative_to(REPO) for p in [*REPO.glob("tests/**/*.rdb"), *REPO.glob("examples/*.rdb")])
BACKENDS = ("rdbspec_generated", "rdbspec_generated.native")


def fields(obj: Any) -> list[str]:
    """The spec's fields of a generated object: its slots, lazy ones by their property."""
    slots = [s for cls in type(obj).__mro__ for s in getattr(cls, "__slots__", ())]
    names = [s for s in slots if not s.startswith("_")]
    return names + [s[len("_lazy_"):] for s in slots if s.startswith("_lazy_")]


def plain(value: Any, depth: int = 0) -> Any:
    """A generated value as plain data (lists, dicts, ints, bytes), whatever the backend."""
    if isinstance(value, (list, ScalarColumns, RaggedColumns)) or type(value).__name__.endswith("Columns"):
        return [plain(v, depth + 1) for v in value]
    if type(value).__module__.startswith("rdbspec_generated."):
        return {type(value).__name__: {name: plain(getattr(value, name), depth + 1) for name in fields(value)}}
    return value


def read(package: str, data: bytes) -> Any:
    """The whole dump as plain data, or the error it ends with."""
    rdb = importlib.import_module(f"{package}.rdb")
    try:
        return plain(rdb.Rdb.from_bytes(data))
    except ParseError as err:
        return ("error", err.offset, err.spec_path, err.reason)


def compare(data: bytes) -> Any:
    python, native = (read(package, data) for package in BACKENDS)
    assert native == python
    return python


@pytest.mark.parametrize("dump", DUMPS, ids=str)
def test_dump_same_values(dump: Path) -> None:
    python = compare((REPO / dump).read_bytes())
    assert not isinstance(python, tuple), python  # the repository's dumps are all readable


def test_dragonfly_fixtures_same_values(tmp_path: Path) -> None:
    build(tmp_path)
    files = sorted(p for p in tmp_path.rglob("*") if p.suffix in (".rdb", ".dfs"))
    assert len(files) > 5
    results = [compare(p.read_bytes()) for p in files]
    # the corrupt variants are corrupt above the grammar (blobs, chunk order): both read them
    assert all(not isinstance(r, tuple) for r in results)


def test_truncated_dumps_same_errors() -> None:
    """Every cut of a stream dump (at a spread of lengths) fails the same way in both."""
    data = (REPO / "tests/corpus/real/redis-7.2.6/stream_groups.rdb").read_bytes()
    errors = [compare(data[:cut]) for cut in range(9, len(data), max(1, len(data) // 97))]
    assert all(isinstance(e, tuple) and e[0] == "error" for e in errors)


def stream_listpacks(package: str, data: bytes) -> list:
    """Every stream node's listpack of a dump, decoded by one backend."""
    rdb = importlib.import_module(f"{package}.rdb")
    found = []
    for record in rdb.Rdb.from_bytes(data).records:
        value = getattr(getattr(record, "body", None), "value", None)
        for node in getattr(value, "nodes", None) or []:
            blob = node.listpack
            found.append(blob.plain if blob.plain is not None else blob.lzf)
    return found


@pytest.mark.parametrize("dump", [d for d in DUMPS if "stream" in d.name], ids=str)
def test_stream_entry_columns(dump: Path) -> None:
    data = (REPO / dump).read_bytes()
    pairs = list(zip(*(stream_listpacks(package, data) for package in BACKENDS)))
    assert pairs
    for python, native in pairs:
        py, nat = python.entries, native.entries
        assert isinstance(nat.items, RaggedColumns) and isinstance(nat.flags, ScalarColumns)
        assert len(nat) == len(py) and len(nat.items) == len(py.items)
        for name in ("flags", "ms_diff", "seq_diff", "num_fields", "lp_count"):
            assert getattr(nat, name) == getattr(py, name)
            assert getattr(nat, name).values() == getattr(py, name)
        assert list(nat.items) == py.items
        flat = [v for row in py.items for v in row]
        assert nat.items.values.values() == flat
        assert nat.items.values.texts() == [scalar(v) for v in flat]
        assert list(nat.items.row_starts) == [0, *(sum(len(r) for r in py.items[:i + 1]) for i in range(len(py)))]
        master_ms = 2**64 - 3
        assert list(nat.ms_diff.wrapping_u64(master_ms)) == [(master_ms + d) % 2**64 for d in py.ms_diff]
        assert nat.flags.bits(1) == bytes(1 if f & 1 else 0 for f in py.flags)
        assert native.master.fields == python.master.fields
        assert nat[0].items == py[0].items and nat[-1].lp_count == py[-1].lp_count


def test_scalar_columns_sequence_protocol() -> None:
    """A listpack of every kind of entry: the columns equal the Python backend's list."""
    blob = bytes.fromhex(
        "1f000000" "0500"  # total_bytes 31, 5 entries
        "0501"  # 7-bit uint 5
        "83616263" "04"  # 6-bit string "abc"
        "c0fe" "02"  # 13-bit int: 0x0fe = 254
        "f1feff" "03"  # int16 -2
        "f4ffffffffffffff7f" "09"  # int64 max
        "ff"
    )
    py = importlib.import_module("rdbspec_generated.listpack").Listpack.from_bytes(blob).entries
    cols = importlib.import_module("rdbspec_generated.native.listpack").Listpack.from_bytes(blob).entries
    assert py == [5, b"abc", 254, -2, 2**63 - 1]
    assert isinstance(cols, ScalarColumns)
    assert cols == py and len(cols) == 5 and list(cols) == py and cols.values() == py
    assert [cols[i] for i in range(-5, 5)] == py + py
    assert cols[1:4] == py[1:4] and cols[::-2] == py[::-2]
    with pytest.raises(IndexError):
        cols[5]
    assert cols.texts() == [b"5", b"abc", b"254", b"-2", b"9223372036854775807"]
    assert cols.pairs() == [(b"5", b"abc"), (b"254", b"-2")]
    assert list(cols.kinds) == [0, 1, 0, 0, 0]
    assert list(cols.ints) == [5, 0, 254, -2, 2**63 - 1]
    assert (cols.starts[1], cols.lengths[1]) == (9, 3) and cols.buf[9:12] == b"abc"
    assert list(cols.wrapping_u64(2)) == [7, 2, 256, 0, 1 + 2**63]  # a bytes row counts as 0
    assert cols.bits(2) == bytes([0, 0, 1, 1, 1])


def test_columns_counts_checked_before_allocating() -> None:
    """An intset declaring more members than its bytes hold fails as in the Python backend."""
    blob = bytes.fromhex("02000000" "ffffff7f" "0100")
    errors = []
    for package in BACKENDS:
        with pytest.raises(ParseError) as err:
            importlib.import_module(f"{package}.intset").Intset.from_bytes(blob)
        errors.append((err.value.offset, err.value.spec_path, err.value.reason))
    assert errors[0] == errors[1]
    good = bytes.fromhex("02000000" "02000000" "feff" "0500")
    members = importlib.import_module("rdbspec_generated.native.intset").Intset.from_bytes(good).members
    assert isinstance(members, ScalarColumns) and members == [-2, 5]
