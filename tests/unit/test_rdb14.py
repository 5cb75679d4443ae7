"""RDB 14 (Redis 8.8) read: streams with NACK zones (type 27) and sparse arrays (type 28) from the
golden whole files and values (tests/golden/), with the values librdb's tests publish for the same
content (test/test_rdb_to_json.c, test/dumps/*.json), through the library, `dump`, `keys` and the
stream commands; and a REDIS0014 header over older types."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

import rdbspec
from rdbspec import SparseArray, cli
from rdbspec.errors import EXIT_CODES, IntegrityError
from rdbspec.jsonl import record_json
from rdbspec.stream_commands.commands import dump_context, dump_lookup, execute
from rdbspec.stream_commands.groups import xpending, xpending_summary
from tests.support.rdb14 import NOW, SENT, T, golden_file, golden_value, one_key_file, sid, with_header

pytestmark = pytest.mark.usefixtures("each_backend")

REDIS_12 = Path(__file__).resolve().parents[1] / "corpus" / "real" / "redis-7.4.1"


def run(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, bytes, str]:
    """`rdbspec ARGV -o FILE`: (exit code, what it wrote, stderr)."""
    out = tmp_path / "out.txt"
    code = cli.main([*argv, "-o", str(out)])
    return code, out.read_bytes() if out.exists() else b"", capsys.readouterr().err


def dump_lines(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    code, data, err = run(["dump", str(path)], tmp_path, capsys)
    assert (code, err) == (0, "")
    return [json.loads(line) for line in data.splitlines()]


# -- type 27: librdb's stream_v14_xnack ----------------------------------------------------------


def test_xnack_stream_reads_as_librdb_expects(tmp_path: Path) -> None:
    with rdbspec.open(golden_file("stream_rdb_t27_xnack", tmp_path)) as dump:
        assert dump.header.version == 14
        [key] = list(dump.keys())
        stream = key.value
        assert (key.key, key.type_name, key.rdb_type, key.encoding) == (b"mystream", "stream", 27, "listpacks")
        assert [(e.id, e.fields) for e in stream.entries()] == [
            ((T, 0), [(b"field1", b"value1")]), ((T + 2, 0), [(b"field2", b"value2")]),
            ((T + 4, 0), [(b"field3", b"value3")]), ((T + 5, 0), [(b"field4", b"value4")])]
        assert (stream.length, stream.entries_added, stream.first_id, stream.last_id, stream.max_deleted_entry_id) \
            == (4, 4, (T, 0), (T + 5, 0), (0, 0))
        [group] = stream.groups
        assert (group.name, group.last_delivered_id, group.entries_read) == (b"mygroup", (T + 5, 0), 4)
        assert [(p.id, p.consumer, p.delivery_time_ms, p.delivery_count) for p in group.pending] == [
            ((T, 0), b"consumer1", SENT, 1), ((T + 2, 0), None, 0, 1), ((T + 4, 0), None, 0, 1),
            ((T + 5, 0), b"consumer1", SENT, 1)]
        [consumer] = group.consumers
        assert (consumer.name, consumer.seen_time_ms, consumer.active_time_ms, list(consumer.pending)) \
            == (b"consumer1", SENT, SENT, [(T, 0), (T + 5, 0)])
        assert list(group.nacked) == [(T + 2, 0), (T + 4, 0)]  # librdb's "nacked", in file order
        assert stream.idmp is not None and (stream.idmp.duration_s, stream.idmp.producers) == (100, [])
        assert dump.warnings == []  # a NACKed entry pending for no consumer is no finding


def test_xnack_stream_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [line] = dump_lines(golden_file("stream_rdb_t27_xnack", tmp_path), tmp_path, capsys)
    [group] = line["value"]["groups"]
    assert group["nacked"] == [sid(T + 2), sid(T + 4)]
    assert [(p["id"], p["consumer"]) for p in group["pending"]] == [
        (sid(T), "consumer1"), (sid(T + 2), None), (sid(T + 4), None), (sid(T + 5), "consumer1")]
    older = dump_lines(REDIS_12 / "stream_groups.rdb", tmp_path, capsys)
    assert all("nacked" not in g for r in older for g in r["value"]["groups"])  # no NACK zone before type 27


def test_empty_nack_zones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.rdb"
    path.write_bytes(one_key_file(27, b"s", golden_value("stream_value_t27_empty_nack")))
    [line] = dump_lines(path, tmp_path, capsys)
    assert [(g["name"], g["nacked"]) for g in line["value"]["groups"]] == [("g1", []), ("g2", [])]


@pytest.mark.parametrize(("name", "reason"), [
    ("stream_rdb_t27_nack_not_in_pel", f"NACKed entry {sid(T + 3)} is not in the group PEL"),
    ("stream_rdb_t27_nack_owned", f"NACKed entry {sid(T + 5)} is pending for consumer b'consumer1'"),
])
def test_nack_zone_refusals(name: str, reason: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What rdbLoadObject refuses ("Stream NACK zone entry not found in group global PEL", "... has
    a consumer assigned"): an integrity error naming the key, exit 5."""
    path = golden_file(name, tmp_path)
    with rdbspec.open(path) as dump, pytest.raises(IntegrityError, match=reason) as err:
        _ = next(dump.keys()).value
    assert err.value.key == b"mystream"
    code, _, stderr = run(["dump", str(path)], tmp_path, capsys)
    assert code == EXIT_CODES["integrity"] == 5
    assert reason in stderr and stderr.count("\n") == 1


def test_consumer_entry_with_an_empty_group_pel(tmp_path: Path) -> None:
    """A consumer's PEL entry when the group PEL is empty ("Consumer entry not found in group global
    PEL"): an integrity error with either backend's chunks (the Python parsers' lists once went to
    the compiled resolver, which takes only columns: an internal error)."""
    group = (b"\x01g" + b"\x00\x00" + b"\x00" + b"\x00"  # name g, last ID 0-0, entries_read 0, empty PEL
             + b"\x01" + b"\x01c" + bytes(16) + b"\x01" + struct.pack(">QQ", 5, 0)  # consumer c owning 5-0
             + b"\x00")  # an empty NACK zone
    value = b"\x00" * 9 + b"\x01" + group + b"\x40\x64\x40\x64\x00\x00\x00"
    path = tmp_path / "c.rdb"
    path.write_bytes(one_key_file(27, b"s", value))
    with rdbspec.open(path) as dump, pytest.raises(IntegrityError, match="pending entry 5-0 is not in the group PEL"):
        _ = next(dump.keys()).value


def test_unowned_entry_outside_the_nack_zone_warns(tmp_path: Path) -> None:
    """An entry pending for no consumer and not in the zone is what only deep sanitization refuses."""
    data = bytearray(golden_value("stream_rdb_t27_xnack"))
    zone = data.index(bytes([2]) + struct.pack(">QQ", T + 2, 0), 380)  # the zone's count, then its first ID
    data[zone:zone + 33] = bytes([1]) + struct.pack(">QQ", T + 4, 0) + bytes(16)
    path = tmp_path / "one.rdb"
    path.write_bytes(with_header(bytes(data[:9]), bytes(data[:zone + 17]) + bytes(data[zone + 33:])))
    with rdbspec.open(path) as dump:
        [group] = next(dump.keys()).value.groups
        assert list(group.nacked) == [(T + 4, 0)]
        assert len(dump.warnings) == 1


def test_xinfo_and_xpending(tmp_path: Path) -> None:
    path = golden_file("stream_rdb_t27_xnack", tmp_path)
    with rdbspec.open(path) as dump:
        ctx = dump_context(dump, dump_lookup(dump, 0, [b"mystream"], NOW), NOW)
        full = execute(ctx, ["XINFO", "STREAM", "mystream", "FULL"])
        [group] = full["groups"]
        assert group["nacked-count"] == 2 and group["pel-count"] == 4
        assert list(group)[-1] == "nacked-count"  # after the consumers, as Redis 8.8's documentation lists it
        assert [row[1] for row in group["pending"]] == [b"consumer1", None, None, b"consumer1"]
    with rdbspec.open(path) as dump:
        [g] = next(dump.keys()).value.groups
    summary = xpending_summary(g)
    assert (summary.count, summary.consumers) == (4, [(b"consumer1", 2)])  # NACKed entries under no consumer
    rows = xpending(g, now_ms=NOW)
    assert [(r.id, r.consumer, r.delivery_count) for r in rows] == [
        ((T, 0), b"consumer1", 1), ((T + 2, 0), None, 1), ((T + 4, 0), None, 1), ((T + 5, 0), b"consumer1", 1)]


def test_xinfo_of_an_older_generation_has_no_nacked_count(tmp_path: Path) -> None:
    with rdbspec.open(golden_file("stream_rdb_t27_xnack", tmp_path)) as dump:
        ctx = dump_context(dump, dump_lookup(dump, 0, [b"mystream"], NOW), NOW, as_version=(8, 6))
        [group] = execute(ctx, ["XINFO", "STREAM", "mystream", "FULL"])["groups"]
        assert "nacked-count" not in group


# -- type 28: librdb's array_v14_* ---------------------------------------------------------------

LIBRDB_ARRAYS = {  # fixture: (insert_idx, [(index, value)]) as librdb's expected JSON gives them
    "array_v14_mixed_types": (None, [(0, "this_is_a_long_sds_string_value_long_enough"), (1, "42"), (2, "1.5"),
                                     (3, "abc")]),
    "array_v14_with_insert_idx": ("49", [(1000000, "first"), (1000100, "mid"), (1001000, "third")]),
    "array_v14_insert_idx_boundary": ("18446744073709551614", [(0, "a"), (1, "b")]),
    "array_v14_insert_idx_none": (None, [(0, "x"), (1, "y"), (2, "z")]),
}


def librdb_text(value: bytes | int | float) -> str:
    """librdb's rendering of an element (INT by ll2string, FLOAT by d2string: 1.5 as "1.5")."""
    return value.decode() if isinstance(value, bytes) else repr(value) if isinstance(value, float) else str(value)


@pytest.mark.parametrize("name", sorted(LIBRDB_ARRAYS))
def test_arrays_read_as_librdb_expects(name: str, tmp_path: Path) -> None:
    path = tmp_path / "a.rdb"
    path.write_bytes(one_key_file(28, b"arr", golden_value(name)))
    insert_idx, elements = LIBRDB_ARRAYS[name]
    with rdbspec.open(path) as dump:
        [key] = list(dump.keys())
        value = key.value
        assert isinstance(value, SparseArray)
        assert (key.type_name, key.rdb_type, key.count_elements()) == ("array", 28, len(elements))
        assert (None if value.insert_idx is None else str(value.insert_idx)) == insert_idx
        assert [(i, librdb_text(v)) for i, v in value.elements] == elements


def test_array_basic_whole_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """librdb's array_v14_basic: a0..a99 at 0..99, no insert index."""
    path = golden_file("rdb_redis14_array_basic", tmp_path)
    [line] = dump_lines(path, tmp_path, capsys)
    assert line["type"] == "array" and line["rdb_type"] == 28
    assert line["value"] == {"insert_idx": None, "elements": [[i, f"a{i}"] for i in range(100)]}
    code, data, err = run(["keys", str(path), "--memory"], tmp_path, capsys)
    assert (code, err) == (0, "")
    [row] = [json.loads(line) for line in data.splitlines()]
    assert (row["type"], row["elements"], row["memory"]) == ("array", 100, None)  # memory not derived


def test_array_json_keeps_each_tag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "a.rdb"
    path.write_bytes(one_key_file(28, b"arr", golden_value("array_smallstr_int_encoded")))
    [line] = dump_lines(path, tmp_path, capsys)
    assert line["value"] == {"insert_idx": None,
                             "elements": [[5, "42"], [6, "9999999"], [7, -0.0], [8, -(1 << 63)]]}


def test_array_repeated_and_unordered_indexes_warn(tmp_path: Path) -> None:
    """The loader sets each element in turn (a repeated index keeps the later value) and checks no
    order: the array as the server holds it, with a warning each."""
    value = b"\x03\x00" + b"\x05\x03\x01a" + b"\x02\x03\x01b" + b"\x05\x03\x01c"
    path = tmp_path / "a.rdb"
    path.write_bytes(one_key_file(28, b"arr", value))
    with rdbspec.open(path) as dump:
        assert next(dump.keys()).value.elements == [(2, b"b"), (5, b"c")]
        assert len(dump.warnings) == 1


# -- a REDIS0014 header over older types ---------------------------------------------------------


@pytest.mark.parametrize("name", ["mixed_types", "stream_groups", "stream_basic"])
def test_rdb14_header_reads_as_its_rdb12_twin(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Redis gates no type by the header's version: a REDIS0014 file of older types is its RDB 12
    twin, key for key, value for value, in every command's output."""
    twin = REDIS_12 / f"{name}.rdb"
    assert twin.read_bytes()[:9] == b"REDIS0012"
    path = tmp_path / f"{name}14.rdb"
    path.write_bytes(with_header(b"REDIS0014", twin.read_bytes()))
    for command in (["dump"], ["dump", "--include-deleted"], ["keys", "--memory"]):
        older = run([command[0], str(twin), *command[1:]], tmp_path, capsys)
        newer = run([command[0], str(path), *command[1:]], tmp_path, capsys)
        assert newer == older and older[0] == 0
    with rdbspec.open(twin) as a, rdbspec.open(path) as b:
        assert (a.header.version, b.header.version) == (12, 14)
        assert [record_json(k, include_deleted=True) for k in a.keys()] == [record_json(k, include_deleted=True)
                                                                            for k in b.keys()]
