"""The consumers fed from columns (issue 14): value decoders, stream entry columns and the JSON
Lines writer give the same values and bytes whether the generated objects hold plain lists
(Python backend) or columns (native backend: listpacks built here, read by both backends),
and orjson writes what json.dumps(ensure_ascii=False, separators=(",", ":")) writes."""

from __future__ import annotations

import json
import math
import tracemalloc
from array import array
from pathlib import Path
from types import SimpleNamespace

import pytest
from rdbspec_generated import listpack as python_listpack
from rdbspec_generated import stream as python_stream
from rdbspec_generated.native import listpack as native_listpack
from rdbspec_generated.native import stream as native_stream
from rdbspec_generated.native._columns import ScalarColumns as NativeColumns

import rdbspec  # noqa: E402
from rdbspec import jsonl
from rdbspec.read import streams
from rdbspec.read import values as values_module
from rdbspec.read.elements import pairs, texts, values
from rdbspec.read.streams import EntryColumns, EntryFields, NodeTable, Stream
from rdbspec.read.values import PACKERS, decode, packed
from tests.support import dragonfly_dumps as rdb_bytes  # noqa: E402


def ScalarColumns(items: list[int | bytes]) -> NativeColumns:  # noqa: N802 - stands where the class stood
    """The native backend's columns of a listpack holding `items`."""
    cols = native_listpack.Listpack.from_bytes(rdb_bytes.listpack(items)).entries
    assert isinstance(cols, NativeColumns)
    return cols

ITEMS: list[int | bytes] = [b"f1", 7, b"", -(1 << 63), (1 << 63) - 1, b"\xff\x00", 0, b"z"]


def test_elements_give_the_same_from_a_list_and_from_columns() -> None:
    cols = ScalarColumns(ITEMS)
    assert texts(ITEMS) == texts(cols) == [b"f1", b"7", b"", b"-9223372036854775808", b"9223372036854775807",
                                           b"\xff\x00", b"0", b"z"]
    assert pairs(ITEMS) == pairs(cols) == [(b"f1", b"7"), (b"", b"-9223372036854775808"),
                                           (b"9223372036854775807", b"\xff\x00"), (b"0", b"z")]
    assert pairs(ITEMS[:3]) == pairs(ScalarColumns(ITEMS[:3])) == [(b"f1", b"7")]  # an odd last entry is left out
    assert values(ITEMS) == values(cols) == ITEMS


def _blob(**container) -> SimpleNamespace:
    """An `rdb_blob` whose plain container has `container`'s attributes."""
    return SimpleNamespace(plain=SimpleNamespace(**container), lzf=None)


@pytest.mark.parametrize("kind, build", [
    (10, lambda e: _blob(entries=e)),                         # ziplist list
    (20, lambda e: _blob(entries=e)),                         # listpack set
    (11, lambda e: _blob(members=e)),                         # intset
    (13, lambda e: _blob(entries=e)),                         # ziplist hash
    (16, lambda e: _blob(entries=e)),                         # listpack hash
    (12, lambda e: _blob(entries=e)),                         # ziplist zset (scores read by strtod)
    (17, lambda e: _blob(entries=e)),                         # listpack zset
    (14, lambda e: SimpleNamespace(iter_nodes=lambda *part: iter([_blob(entries=e), _blob(entries=e)]))),  # quicklist
    (23, lambda e: SimpleNamespace(listpack=_blob(entries=e))),  # listpack hash with field TTLs
])
def test_value_decoders_give_the_same_from_lists_and_columns(kind: int, build) -> None:
    items: list[int | bytes] = [b"a", 5, b"2.5", 0, b"b", 1700000000000, b"\xc3\xa9", b"inf", 9]
    if kind == 11:
        items = [-3, 0, 1 << 40]
    from_list, from_columns = decode(kind, build(items), kind), decode(kind, build(ScalarColumns(items)), kind)
    assert from_list == from_columns
    assert from_list.value  # something was decoded
    if kind in PACKERS:  # what `rdbspec dump` writes from the entries is the list decode gives
        for entries in (items, ScalarColumns(items)):
            assert packed(kind, build(entries)).elements() == from_list.value


def _rows(flags: list[int], ms_diff: list[int], seq_diff: list[int], items: list[list]) -> SimpleNamespace:
    """A generated `stream_entry` columns object as the Python backend gives it (lists)."""
    return SimpleNamespace(flags=flags, ms_diff=ms_diff, seq_diff=seq_diff, items=items)


# entry 1: SAMEFIELDS; 2: deleted, own fields; 3: IDs wrap below the master (uint64 arithmetic);
# 4: SAMEFIELDS and deleted, with an int value; 5: no fields
ENTRY_ROWS = ([2, 1, 0, 3, 0], [0, 1, 5, 2, 3], [0, 1, -4, 0, 1 << 62],
              [[b"v1", b"v2"], [b"x", b"\xed\xa0\x80", b"q\"\\", 12], [b"\n\x01\x1f\x7f", b"\xf0\x9f\x98\x80"],
               [-(1 << 63), b"\xe2\x82"], []])
MASTER_ID = ((1 << 64) - 2, 3)
MASTER_FIELDS = [b"name", b"\xc0\x80"]


def _node_listpack() -> bytes:
    """ENTRY_ROWS as a node listpack (redis t_stream.c streamAppendItem's layout): the master
    entry (3 live, 2 deleted, MASTER_FIELDS), then each entry with its num_fields (when not
    SAMEFIELDS) and lp-count."""
    elements: list[int | bytes] = [3, 2, len(MASTER_FIELDS), *MASTER_FIELDS, 0]
    for flags, ms_diff, seq_diff, items in zip(*ENTRY_ROWS):
        if flags & 2:
            elements += [flags, ms_diff, seq_diff, *items, len(items) + 3]
        else:
            elements += [flags, ms_diff, seq_diff, len(items) // 2, *items, len(items) + 4]
    return rdb_bytes.listpack(elements)


def _columns(native: bool) -> EntryColumns:
    rows = (native_stream if native else python_stream).StreamListpack.from_bytes(_node_listpack()).entries
    assert isinstance(rows.items, list) != native  # lists from the Python backend, columns from the native one
    return EntryColumns.from_rows(rows, MASTER_ID, MASTER_FIELDS)


def test_entry_columns_are_the_same_from_lists_and_columns() -> None:
    python, native = _columns(native=False), _columns(native=True)
    for cols in (python, native):
        assert list(cols.ms) == [(1 << 64) - 2, (1 << 64) - 1, 3, 0, 1]
        assert list(cols.seq) == [3, 4, (1 << 64) - 1, 3, 3 + (1 << 62)]
        assert list(cols.deleted) == [0, 1, 0, 1, 0]
        assert list(cols.fields) == [
            [(b"name", b"v1"), (b"\xc0\x80", b"v2")],
            [(b"x", b"\xed\xa0\x80"), (b'q"\\', b"12")],
            [(b"\n\x01\x1f\x7f", b"\xf0\x9f\x98\x80")],
            [(b"name", b"-9223372036854775808"), (b"\xc0\x80", b"\xe2\x82")],
            [],
        ]
        assert cols.fields[-1] == [] and cols.fields[1:3] == list(cols.fields)[1:3]
        with pytest.raises(IndexError):
            cols.fields[5]
        assert [e.id for e in cols.entries()] == [((1 << 64) - 2, 3), (3, (1 << 64) - 1), (1, 3 + (1 << 62))]
        assert [e.deleted for e in cols.entries(include_deleted=True)] == [False, True, False, True, False]
    assert isinstance(python.fields, EntryFields)


def _reference(cols: EntryColumns, include_deleted: bool) -> bytes:
    """What the writer wrote before columns: json.dumps of each `entry_json`, joined by commas."""
    return ",".join(json.dumps(jsonl.entry_json(e), ensure_ascii=False, separators=(",", ":"))
                    for e in cols.entries(include_deleted)).encode()


@pytest.mark.parametrize("native", [False, True])
@pytest.mark.parametrize("include_deleted", [False, True])
def test_the_compiled_entry_encoder_writes_what_json_dumps_writes(native: bool, include_deleted: bool) -> None:
    from rdbspec.jsonl import _encode

    cols = _columns(native)
    fields = cols.fields
    got = _encode.encode_entries(cols.ms, cols.seq, cols.deleted, fields.samefields, fields.master_fields,
                                        fields.items, include_deleted)
    assert got == _reference(cols, include_deleted)
    assert b'{"hex":"eda080"}' in got or not include_deleted  # a surrogate is not UTF-8 for Python either


@pytest.mark.parametrize("native", [False, True])
@pytest.mark.parametrize("include_deleted", [False, True])
def test_the_python_entry_encoder_writes_what_json_dumps_writes(monkeypatch: pytest.MonkeyPatch, native: bool,
                                                                include_deleted: bool) -> None:
    monkeypatch.setattr(jsonl, "_encode", None)
    cols = _columns(native)
    assert jsonl.entries_json(cols, include_deleted) == _reference(cols, include_deleted)


def test_every_byte_string_is_written_as_json_dumps_writes_it() -> None:
    """Each of the 256 bytes alone, and the UTF-8 edges (overlong, surrogate, past U+10FFFF,
    truncated): one entry each, through the compiled encoder and orjson."""
    from rdbspec.jsonl import _encode

    samples = [bytes([b]) for b in range(256)] + [
        b"\xc2\x80", b"\xc1\xbf", b"\xe0\x9f\xbf", b"\xe0\xa0\x80", b"\xed\x9f\xbf", b"\xed\xa0\x80",
        b"\xef\xbf\xbf", b"\xf0\x8f\xbf\xbf", b"\xf0\x90\x80\x80", b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80",
        b"\xf5\x80\x80\x80", b"\xe2\x80", b"a\xe2\x80\xa8b", "\u2028\u2029\ufeff".encode()]
    rows = _rows([0] * len(samples), list(range(len(samples))), [0] * len(samples), [[s, s] for s in samples])
    cols = EntryColumns.from_rows(rows, (0, 0), [])
    expected = _reference(cols, False)
    assert _encode.encode_entries(cols.ms, cols.seq, cols.deleted, cols.fields.samefields, [],
                                         cols.fields.items, False) == expected
    assert jsonl.orjson.dumps([jsonl.entry_json(e) for e in cols.entries()])[1:-1] == expected


def test_dumps_writes_what_json_dumps_writes() -> None:
    floats = [1e-7, 1e16, 1e22, 0.1, 5e-324, -0.0, 1.7976931348623157e308, 123456.789, math.nan, math.inf]
    value = {"scores": [jsonl.number(f) for f in floats], "raw": [jsonl.Real(f) for f in floats],
             "text": "".join(map(chr, range(0x80))) + "\u2028é😀", "ints": [0, -(1 << 63), (1 << 64) - 1]}
    assert jsonl.dumps(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    beyond = {"big": 1 << 64, "f": jsonl.Real(1e-5)}  # orjson refuses ints beyond 64 bits: json writes them
    assert jsonl.dumps(beyond) == '{"big":18446744073709551616,"f":1e-05}'


def test_a_stream_keeps_flat_arrays_of_its_nodes() -> None:
    """Three nodes, written out of order: the stream holds their master IDs and listpack offsets
    in master ID order, no generated object, and decodes a node from its offset."""
    def node(master: tuple[int, int], n: int) -> tuple[bytes, bytes]:
        return rdb_bytes.stream_node([((master[0], master[1] + i), [(b"f", b"%d" % i)]) for i in range(n)])

    nodes = [node((5, 0), 2), node((1, 0), 1), node((3, 0), 3)]
    value = b"".join(rdb_bytes.stream_value(19, nodes, 6, (5, 1), (1, 0), (0, 0), 6, []))
    dump = b"REDIS0010" + b"\x13" + rdb_bytes.rdb_str(b"s") + value + b"\xff" + b"\0" * 8
    stream = next(rdbspec.parse(dump).keys()).value
    assert isinstance(stream, Stream) and isinstance(stream.nodes, NodeTable)
    assert [n.master_id for n in stream.nodes] == [(1, 0), (3, 0), (5, 0)]
    assert (stream.nodes.ms.typecode, stream.nodes.offsets.typecode) == ("Q", "q")
    assert [e.id for e in stream.entries()] == [(1, 0), (3, 0), (3, 1), (3, 2), (5, 0), (5, 1)]
    assert stream.nodes[-1].read().columns.fields[1] == [(b"f", b"1")]


def test_reading_a_stream_holds_one_node_object_at_a_time(each_backend: str) -> None:
    """The value's nodes are stepped over when it is read (spec `-rdbspec-lazy`) and taken one
    by one from `iter_nodes`: what reading a stream of 20,000 nodes allocates at its peak is the
    flat node arrays (24 bytes a node) and one node, not a list of node objects (450 bytes a node
    before)."""
    count = 20_000
    nodes = [rdb_bytes.stream_node([((i, 0), [(b"f", b"v")])]) for i in range(count)]
    value = b"".join(rdb_bytes.stream_value(19, nodes, count, (count - 1, 0), (0, 0), (0, 0), count, []))
    dump = b"REDIS0010" + b"\x13" + rdb_bytes.rdb_str(b"s") + value + b"\xff" + b"\0" * 8
    key = next(rdbspec.parse(dump).keys())
    tracemalloc.start()
    try:
        stream = key.value
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(stream.nodes) == count and stream.nodes[-1].master_id == (count - 1, 0)
    assert peak < 60 * count, f"{peak / count:.0f} bytes a node"


@pytest.mark.parametrize("native", [False, True])
def test_spark_entry_batches_hold_what_the_entries_hold(native: bool) -> None:
    from pyspark.sql.pandas.types import to_arrow_schema

    from rdbspec.spark.entries import entry_batch
    from rdbspec.spark.source import SCHEMAS

    cols = _columns(native)
    batch = entry_batch([cols, cols], True, to_arrow_schema(SCHEMAS["stream_entries"]), "f", 0, b"k")
    got = {name: batch.column(name).to_pylist() for name in ("id", "ms", "seq", "deleted", "fields")}
    entries = list(cols.entries(include_deleted=True)) * 2
    assert got == {"id": [f"{e.id[0]}-{e.id[1]}" for e in entries], "ms": [e.id[0] for e in entries],
                   "seq": [e.id[1] for e in entries], "deleted": [e.deleted for e in entries],
                   "fields": [[{"field": f, "value": v} for f, v in e.fields] for e in entries]}


# -- the real columns: a node listpack read by both backends -------------------------------------

NODE_ENTRIES = [((7, 1), [(b"name", b"v1"), (b"n", b"12")]), ((7, 2), [(b"x", b"\xed\xa0\x80"), (b'q"\\', b"-5")]),
                ((9, 0), [(b"name", b"\n\x01"), (b"n", b"\xf0\x9f\x98\x80")]), ((9, 3), [])]


@pytest.mark.parametrize("include_deleted", [False, True])
def test_a_node_read_by_both_backends_gives_the_same_entries_json_and_arrays(include_deleted: bool) -> None:
    from rdbspec_generated import stream as python_stream
    from rdbspec_generated.native import stream as native_stream
    from rdbspec_generated.native._columns import RaggedColumns

    from rdbspec.spark import _entry_buffers
    from rdbspec.spark.entries import python_entry_buffers

    master, lp = rdb_bytes.stream_node(NODE_ENTRIES, deleted=frozenset({(7, 2)}))
    got = []
    for module in (python_stream, native_stream):
        node = module.StreamListpack.from_bytes(lp)
        got.append(EntryColumns.from_rows(node.entries, (7, 1), texts(node.master.fields)))
    python, native = got
    assert isinstance(native.fields.items, RaggedColumns) and isinstance(python.fields.items, list)
    for cols in (python, native):
        assert [(e.id, e.fields, e.deleted) for e in cols.entries(include_deleted=True)] == [
            (sid, fields, sid == (7, 2)) for sid, fields in NODE_ENTRIES]
        assert jsonl.entries_json(cols, include_deleted) == _reference(cols, include_deleted)
        assert (_entry_buffers.entry_buffers([cols, python], include_deleted)
                == python_entry_buffers([python, python], include_deleted))
    ids = _entry_buffers.entry_buffers([native], include_deleted)[5]
    assert ids == b"".join(b"%d-%d" % sid for sid, _ in NODE_ENTRIES if include_deleted or sid != (7, 2))


@pytest.mark.parametrize("kind", [16, 17, 20, 23])
def test_value_decoders_give_the_same_from_both_backends_listpacks(kind: int) -> None:
    data = rdb_bytes.listpack([b"a", 5, b"2.5", b"b", 1700000000000, 0, b"\xc3\xa9", b"inf", -7])
    got = []
    for module in (python_listpack, native_listpack):
        blob = SimpleNamespace(plain=module.Listpack.from_bytes(data), lzf=None)
        got.append(decode(kind, SimpleNamespace(listpack=blob) if kind == 23 else blob, kind))
    assert isinstance(native_listpack.Listpack.from_bytes(data).entries, NativeColumns)
    assert got[0] == got[1] and got[0].value


# texts strtod reads otherwise than float(): prefixes, hexadecimal, underscores, NUL, spaces, words,
# past the 127 bytes the server copies, beyond the double range, and integers past 2^53
SCORE_TEXTS = [b"2.5", b"-1e3", b"0x10", b"0x1p-3", b"3.2x", b"abcd", b"", b" 2.5", b"\t-7", b"1_00", b"7\x0099",
               b"-InF", b"infinity", b"nan(x)", b"-nan", b"1e400", b"-1e400", b"4.9e-325", b"\x80\x81",
               b"1" + b"0" * 127, b"9" * 126 + b".5", b"0" * 200 + b"1", b"+.5e1", b"1e", b"0x", b"9007199254740993"]


def test_sorted_set_scores_from_columns_are_what_the_python_backend_reads() -> None:
    """`values.entry_scores`: C's strtod on the native columns (the server's own reading, redis
    src/t_zset.c zzlStrtod) gives the floats `values.score` gives from a list, texts and
    integers alike."""
    entries = [x for i, score in enumerate([*SCORE_TEXTS, 7, -(2**63), 2**53 + 1]) for x in (b"m%d" % i, score)]
    native = ScalarColumns(entries)
    assert [str(x) for x in values_module.entry_scores(native)] == \
        [str(values_module.score(x)) for x in entries[1::2]]
    assert [str(x) for x in values_module.entry_scores(entries)] == [str(values_module.score(x)) for x in entries[1::2]]
    odd = values_module.entry_scores(ScalarColumns(entries[:-1]))  # a member without its score: none read
    assert [str(x) for x in odd] == [str(x) for x in values_module.entry_scores(native)[:-1]]


@pytest.mark.parametrize("include_deleted", [False, True])
def test_stream_entries_batches_hold_every_entry_once_whatever_the_batch_size(tmp_path: Path,
                                                                              include_deleted: bool) -> None:
    """Two streams of 3 nodes (4, 1 and 3 entries, one deleted per node): the batches of 3 rows
    cut across nodes and streams, and together hold the entries of the library's walk."""
    from rdbspec.read.splits import Split
    from rdbspec.spark.source import ReadOptions, read_split

    def stream_record(key: bytes, base: int) -> bytes:
        ids = [[(base, i) for i in range(4)], [(base + 1, 0)], [(base + 2, i) for i in range(3)]]
        nodes = [rdb_bytes.stream_node([(sid, [(b"f", b"%d-%d" % sid)]) for sid in part], deleted=frozenset({part[-1]}))
                 for part in ids]
        value = b"".join(rdb_bytes.stream_value(19, nodes, 5, (base + 2, 2), (base, 0), (base + 2, 2), 8, []))
        return b"\x13" + rdb_bytes.rdb_str(key) + value

    path = tmp_path / "streams.rdb"
    path.write_bytes(b"REDIS0010" + stream_record(b"s1", 10) + stream_record(b"s2", 20) + b"\xff" + b"\0" * 8)
    opts = ReadOptions.parse({"table": "stream_entries", "batchSize": "3",
                              "includeDeleted": str(include_deleted).lower(), "verifyChecksum": "false"})
    batches = list(read_split(Split(str(path)), opts))
    rows = [row for batch in batches for row in batch.to_pylist()]
    with rdbspec.open(path, verify_checksum=False) as dump:
        expected = [(k.key, e) for k in dump.keys() for e in k.value.entries(include_deleted)]
    assert [(r["key"], r["id"], r["deleted"], [(f["field"], f["value"]) for f in r["fields"]]) for r in rows] == [
        (key, f"{e.id[0]}-{e.id[1]}", e.deleted, e.fields) for key, e in expected]
    assert len(expected) == (16 if include_deleted else 10) and max(b.num_rows for b in batches) <= 6


MAX64 = (1 << 64) - 1


@pytest.mark.parametrize("ms, seq, previous, ascending", [
    ([1, 1, 2], [0, 1, 0], None, True),
    ([1, 1], [1, 1], None, False),                       # the same ID twice
    ([2, 1], [0, 9], None, False),                       # ms goes back
    ([5], [0], (5, 0), False),                           # not above the previous node's last ID
    ([5], [1], (5, 0), True),
    ([MAX64], [0], (MAX64 - 1, MAX64), True),            # uint64 bounds, compared unsigned
    ([0], [0], (MAX64, 0), False),
    ([], [], (3, 3), True),
])
def test_stream_ids_ascend_the_same_in_c_and_as_tuples(monkeypatch: pytest.MonkeyPatch, ms: list[int],
                                                       seq: list[int], previous, ascending: bool) -> None:
    """streams.walk_nodes' order check (redis src/t_stream.c: IDs only grow): the compiled
    `_stream_ids.ascending` on uint64 arrays and the tuple comparison it stands for agree."""
    columns = (array("Q", ms), array("Q", seq))
    assert streams._stream_ids is not None  # built by make setup, as the rest of the native backend
    assert streams._ascending(*columns, previous) is ascending
    monkeypatch.setattr(streams, "_stream_ids", None)
    assert streams._ascending(*columns, previous) is ascending
