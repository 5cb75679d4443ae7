"""Offline stream commands: the real corpus's XINFO STREAM FULL / XRANGE / XPENDING replies, ID
parsing, ranges, lag rules and renderings."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import rdbspec
from rdbspec import cli
from rdbspec.errors import ChecksumError
from rdbspec.read.streams import Consumer, ConsumerGroup, EntryColumns, NodeEntries, PendingEntry, Stream, StreamNode
from rdbspec.server.numbers import MASK64, string2ull
from rdbspec.server.streams import (
    MAX_ID,
    VALKEY_9,
    CommandError,
    decr_id,
    group_lag,
    incr_id,
    parse_id,
    parse_interval,
    parse_range,
)
from rdbspec.stream_commands.commands import Context, dump_lookup, execute
from rdbspec.stream_commands.groups import xpending
from rdbspec.stream_commands.ranges import xrange, xread, xrevrange
from rdbspec.stream_commands.reply import render_json, render_text, repr_bytes, to_resp2
from rdbspec.stream_commands.xinfo import xinfo_stream
from tests.support.expected import from_s  # noqa: E402

TESTS = Path(__file__).resolve().parents[1]
DUMPS = sorted((TESTS / "corpus" / "real").glob("*/stream_*.rdb"))
INVALID = "ERR Invalid stream ID specified as stream command argument"


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def run_cli(argv: list[str], tmp_path: Path) -> tuple[int, Any]:
    out = tmp_path / "out.json"
    code = cli.main([*argv, "-o", str(out)])
    text = out.read_text(encoding="utf-8")
    return code, json.loads(text) if text else None


def _streams(expected: dict) -> list[dict]:
    return [r for records in expected["databases"].values() for r in records if r["type"] == "stream"]


def _arg(value: Any) -> str:
    return os.fsdecode(from_s(value))


# -- the corpus --------------------------------------------------------------------------------


def test_corpus_has_stream_dumps() -> None:
    assert len(DUMPS) >= 14


@pytest.mark.parametrize("path", DUMPS, ids=_id)
def test_corpus_replies(path: Path, tmp_path: Path) -> None:
    expected = json.loads(path.with_name(path.stem + ".expected.json").read_text(encoding="utf-8"))
    now = str(expected["captured_at_ms"])
    for record in _streams(expected):
        key, db = _arg(record["key"]), str(record["db"])
        value = record["value"]

        code, full = run_cli(["xinfo", "stream", str(path), key, "--full", "--count", "0", "--json", "--db", db],
                             tmp_path)
        want = dict(value["xinfo_stream_full"])
        assert want.pop("radix-tree-nodes") >= 1  # documented omission
        assert code == 0 and full == want, key

        code, entries = run_cli(["xrange", str(path), key, "-", "+", "--json", "--db", db], tmp_path)
        assert code == 0 and entries == value["xrange"], key

        for group in value["xpending"]:
            at = _xpending_time(group, want["groups"], int(now))
            code, rows = run_cli(["xpending", str(path), key, _arg(group["group"]), "-", "+", "1000000",
                                  "--now", str(at), "--json", "--db", db], tmp_path)
            assert code == 0 and rows == group["pending"], (key, group["group"])


def _xpending_time(xpending: dict, groups: list[dict], captured_at_ms: int) -> int:
    """When the server ran XPENDING: captured_at_ms is the TIME taken before the keys were read,
    a few ms earlier, so the instant is recovered from the rows (delivery time + idle, the same
    for every row not clamped at 0) and checked to be close after captured_at_ms."""
    group = next(g for g in groups if g["name"] == xpending["group"])
    delivered = {row[0]: row[2] for row in group["pending"]}
    instants = {delivered[row[0]] + row[2] for row in xpending["pending"] if row[2] > 0}
    assert len(instants) <= 1, instants
    at = instants.pop() if instants else captured_at_ms
    assert 0 <= at - captured_at_ms < 2000
    return at


@pytest.mark.parametrize("path", DUMPS[:1], ids=_id)
def test_cli_errors_exit_1(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["xinfo", "stream", str(path), "no-such-key"]) == 1
    assert "ERR no such key" in capsys.readouterr().err
    assert cli.main(["xrange", str(path), "s:basic", "x", "+"]) == 1
    assert INVALID in capsys.readouterr().err
    assert cli.main(["xpending", str(path), "s:basic", "nogroup"]) == 1
    assert "NOGROUP No such key 's:basic' or consumer group 'nogroup'" in capsys.readouterr().err
    code, reply = run_cli(["xrange", str(path), "no-such-key", "-", "+", "--json"], tmp_path)
    assert code == 0 and reply == []


# -- ID parsing --------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "value"), [
    (b"0", 0), (b"7", 7), (b"007", 7), (b" 7", 7), (b"\t+7", 7), (b"-0", 0),
    (b"18446744073709551615", MASK64), (b"18446744073709551616", None), (b"-1", None),
    (b"-9223372036854775809", (1 << 64) - 9223372036854775809), (b"", None), (b" ", None),
    (b"7 ", None), (b"0x10", None), (b"+", None), (b"1e3", None), ("٣".encode(), None),
])
def test_string2ull(text: bytes, value: int | None) -> None:
    assert string2ull(text) == value


@pytest.mark.parametrize(("text", "missing", "value"), [
    ("-", 0, (0, 0)), ("+", 0, MAX_ID), ("5", 0, (5, 0)), ("5", MASK64, (5, MASK64)),
    ("5-3", MASK64, (5, 3)), ("5--0", 0, (5, 0)), (" 5- 3", 0, (5, 3)), (b"5\x00junk", 9, (5, 9)),
])
def test_parse_id(text: str | bytes, missing: int, value: tuple[int, int]) -> None:
    assert parse_id(text, missing) == value


@pytest.mark.parametrize("text", ["", "-5", "5-", "5-x", "5-3-1", "x", "5-*", "1" * 128, "--", "5--1"])
def test_parse_id_invalid(text: str) -> None:
    with pytest.raises(CommandError, match="^" + INVALID + "$"):
        parse_id(text)


def test_intervals() -> None:
    assert parse_interval("(5-1", 0) == ((5, 1), True)
    with pytest.raises(CommandError, match=INVALID):
        parse_interval("(", 0)
    with pytest.raises(CommandError, match=INVALID):
        parse_interval("(-", 0)
    assert parse_range("(5", "(7") == ((5, 1), (7, MASK64 - 1))  # incomplete end: 7-max, then -1
    assert parse_range("-", "+") == ((0, 0), MAX_ID)
    with pytest.raises(CommandError, match="^ERR invalid start ID for the interval$"):
        parse_range(f"({MASK64}-{MASK64}", "+")
    with pytest.raises(CommandError, match="^ERR invalid end ID for the interval$"):
        parse_range("-", "(0-0")
    with pytest.raises(CommandError, match="start"):  # the start is checked first
        parse_range(f"({MASK64}-{MASK64}", "x")
    assert incr_id((1, MASK64)) == (2, 0) and decr_id((2, 0)) == (1, MASK64)
    assert incr_id(MAX_ID) is None and decr_id((0, 0)) is None


# -- ranges and groups on a built stream ---------------------------------------------------------


def _stream(ids: list[tuple[int, int]], deleted: set[tuple[int, int]] = frozenset(), *, type_code: int = 21,
            entries_added: int | None = None, max_deleted: tuple[int, int] | None = None) -> Stream:
    live = [i for i in ids if i not in deleted]
    stream = Stream(type_code, len(live), ids[-1] if ids else (0, 0), live[0] if live else (0, 0),
                    max_deleted if max_deleted is not None else (max(deleted) if deleted else (0, 0)),
                    entries_added if entries_added is not None else len(ids))
    if type_code == 15:
        stream.first_id = stream.max_deleted_entry_id = stream.entries_added = None
    cols = EntryColumns([ms for ms, _ in ids], [seq for _, seq in ids], [i in deleted for i in ids],
                        [[(b"f", f"{ms}-{seq}".encode())] for ms, seq in ids])
    stream.nodes.append(StreamNode.of(ids[0] if ids else (0, 0), NodeEntries(len(live), len(ids) - len(live), cols)))
    return stream


def _multi_node_stream(per_node: int, ids: list[tuple[int, int]], deleted: set[tuple[int, int]]) -> Stream:
    """`ids` in nodes of `per_node` entries, each node keyed by its first ID."""
    stream = _stream(ids, deleted)
    stream.nodes = []
    for i in range(0, len(ids), per_node):
        part = ids[i:i + per_node]
        cols = EntryColumns([ms for ms, _ in part], [seq for _, seq in part], [x in deleted for x in part],
                            [[(b"f", f"{ms}-{seq}".encode())] for ms, seq in part])
        live = sum(1 for x in part if x not in deleted)
        stream.nodes.append(StreamNode.of(part[0], NodeEntries(live, len(part) - live, cols)))
    return stream


def test_ranges_across_nodes_decode_only_what_they_need() -> None:
    ids = [(ms, seq) for ms in range(10, 40) for seq in range(3)]
    deleted = {ids[i] for i in (0, 1, 2, 30, 31, 32, 33, 89)}  # a whole first node, a node's edges, the last
    stream = _multi_node_stream(10, ids, deleted)
    live = [i for i in ids if i not in deleted]
    for start, end in [("-", "+"), ("10", "10"), ("12-2", "13"), ("19", "21-1"), ("(20-0", "(30"), ("39", "+"),
                       ("0", "9"), ("41", "+")]:
        low, high = parse_range(start, end)
        expected = [i for i in live if low <= i <= high]
        assert _ids(xrange(stream, start, end)) == expected, (start, end)
        assert _ids(xrevrange(stream, end, start)) == expected[::-1], (start, end)
        assert _ids(xrange(stream, start, end, count=4)) == expected[:4]
        assert _ids(xrevrange(stream, end, start, count=4)) == expected[::-1][:4]
    read: list[tuple[int, int]] = []
    stream.nodes = [StreamNode(n.master_id, lambda n=n: read.append(n.master_id) or n.read()) for n in stream.nodes]
    assert _ids(xrange(stream, "25", "26")) == [(25, 0), (25, 1), (25, 2), (26, 0), (26, 1), (26, 2)]
    assert read == [(23, 1), (26, 2)]  # the two nodes that can hold 25-0..26-max, of nine


IDS = [(1, 0), (1, 1), (2, 0), (5, 0), (5, 7), (9, 0)]


def _ids(entries: list) -> list[tuple[int, int]]:
    return [e.id for e in entries]


def test_ranges() -> None:
    stream = _stream(IDS, {(2, 0)})
    assert _ids(xrange(stream)) == [(1, 0), (1, 1), (5, 0), (5, 7), (9, 0)]
    assert _ids(xrange(stream, "1", "1")) == [(1, 0), (1, 1)]
    assert _ids(xrange(stream, "(1-0", "(5-7")) == [(1, 1), (5, 0)]
    assert _ids(xrange(stream, "(1", "5")) == [(1, 1), (5, 0), (5, 7)]  # (1 is 1-0 excluded
    assert _ids(xrange(stream, "2", "2")) == []  # deleted
    assert _ids(xrange(stream, "9", "1")) == []
    assert _ids(xrange(stream, "-", "+", count=2)) == [(1, 0), (1, 1)]
    assert _ids(xrevrange(stream, "+", "-", count=2)) == [(9, 0), (5, 7)]
    assert _ids(xrevrange(stream, "5", "(1-1")) == [(5, 7), (5, 0)]
    assert xrange(stream, count=0) == []


def test_xread() -> None:
    stream = _stream(IDS, {(9, 0)})
    assert [(i, _ids(e)) for i, e in xread([(stream, "5-0"), (None, "0"), (stream, "0")], count=1)] == \
        [(0, [(5, 7)]), (2, [(1, 0)])]
    assert xread([(stream, "5-7")]) == []  # only a deleted entry after it
    assert xread([(stream, "$")]) == []
    with pytest.raises(CommandError, match=INVALID):
        xread([(stream, "-")])


def test_xread_plus_redis_7_4_and_valkey_9() -> None:
    """``+``: Redis 7.4 serves the last live entry; Valkey 9 (xreadCommand) the entries after
    last_id - 1, so nothing once the last entry is deleted or XSETID moved past it (as 9.1.2 did
    in test_stream_commands_server)."""
    stream = _stream(IDS, {(9, 0)})
    assert [(i, _ids(e)) for i, e in xread([(stream, "+")], version=(7, 4))] == [(0, [(5, 7)])]
    assert xread([(stream, "+")], version=VALKEY_9, valkey=True) == []
    whole = _stream(IDS)
    assert [(i, _ids(e)) for i, e in xread([(whole, "+")], version=VALKEY_9, valkey=True)] == [(0, [(9, 0)])]
    assert xread([(_stream([]), "+")], version=VALKEY_9, valkey=True) == []  # last ID 0-0 (MKSTREAM)
    with pytest.raises(CommandError, match=INVALID):
        xread([(stream, "+")], version=(7, 2))


def test_commands_follow_the_server() -> None:
    stream = _stream(IDS)
    ctx = Context({b"s": stream}.get, 0)
    assert execute(ctx, ["XRANGE", "s", "-", "+", "COUNT", "0"]) is None
    assert execute(ctx, ["XRANGE", "nokey", "-", "+", "COUNT", "0"]) == []
    assert len(execute(ctx, ["XRANGE", "s", "-", "+", "COUNT", "-3", "count", "2"])) == 2
    with pytest.raises(CommandError, match="^ERR syntax error$"):
        execute(ctx, ["XRANGE", "s", "-", "+", "COUNT"])
    with pytest.raises(CommandError, match="not an integer"):
        execute(ctx, ["XRANGE", "s", "-", "+", "COUNT", "x"])
    assert execute(ctx, ["XREAD", "STREAMS", "s", "9"]) is None
    with pytest.raises(CommandError, match="Unbalanced"):
        execute(ctx, ["XREAD", "STREAMS", "s"])
    with pytest.raises(CommandError, match="^ERR no such key$"):
        execute(ctx, ["XINFO", "STREAM", "nokey"])
    with pytest.raises(CommandError, match="^ERR syntax error$"):
        execute(ctx, ["XPENDING", "s", "g", "IDLE", "5", "-", "+"])


def _group(last: tuple[int, int], entries_read: int | None, pending: list[tuple[int, int]] = ()) -> ConsumerGroup:
    rows = [PendingEntry(i, b"c", 1000 * n, n + 1) for n, i in enumerate(pending)]
    return ConsumerGroup(b"g", last, entries_read, rows, [Consumer(b"c", 5000, 6000, list(pending))])


def test_xpending_rows() -> None:
    group = _group((9, 0), 6, [(1, 0), (2, 0), (5, 0)])  # delivered at 0, 1000, 2000
    rows = xpending(group, "-", "+", 10, now_ms=2500)
    assert [(r.id, r.idle_ms, r.delivery_count) for r in rows] == [((1, 0), 2500, 1), ((2, 0), 1500, 2),
                                                                    ((5, 0), 500, 3)]
    assert [r.id for r in xpending(group, "-", "+", 10, idle=1000, now_ms=2500)] == [(1, 0), (2, 0)]
    assert [r.id for r in xpending(group, "(1-0", "+", 1, now_ms=2500)] == [(2, 0)]
    assert xpending(group, "-", "+", 10, consumer="nobody", now_ms=0) == []
    assert xpending(group, "-", "+", 10, now_ms=0)[2].idle_ms == 0  # future delivery: clamped


# the lag rules checked against Debian's redis 7.0.15 (scenarios A, B, C of the module tests)
@pytest.mark.parametrize(("ids", "deleted", "last", "read", "version", "lag"), [
    ([(1, 1), (2, 1)], {(1, 1), (2, 1)}, (1, 1), None, (7, 0), 0),            # emptied stream
    ([(1, 1), (2, 1), (3, 1)], {(1, 1)}, (0, 0), 0, (7, 0), 3),               # tombstone before first
    ([(1, 1), (2, 1), (3, 1)], {(1, 1), (2, 1)}, (1, 1), None, (7, 0), 1),
    ([(1, 1), (2, 1), (3, 1)], {(2, 1)}, (1, 1), 1, (7, 0), None),            # tombstone ahead
    ([(1, 1), (2, 1), (3, 1)], set(), (1, 1), 1, (7, 0), 2),
    ([(1, 1), (2, 1), (3, 1)], {(2, 1)}, (3, 1), None, (7, 0), 0),            # at the last ID
    ([(1, 1), (2, 1), (3, 1)], {(1, 1), (2, 1)}, (1, 1), None, (7, 4), 1),    # 7.4: behind the first
])
def test_lag(ids: list, deleted: set, last: tuple[int, int], read: int | None, version: tuple[int, int],
             lag: int | None) -> None:
    stream = _stream(ids, deleted)
    assert group_lag(stream, _group(last, read), version) == lag


# Valkey 9.1.2's answers for the streams of test_stream_commands_server._lag_streams: the 7.4
# tombstone rules without 7.4's shortcuts for a group behind the first entry
@pytest.mark.parametrize(("deleted", "last", "valkey_lag", "redis_7_4_lag"), [
    ({(1, 1)}, (0, 0), 3, 3),                  # lag:head: estimated (4 added - 1 before the first)
    ({(1, 1), (2, 1)}, (1, 1), None, 2),       # lag:behind: before the last tombstone, unknown
    ({(3, 1)}, (2, 1), None, None),            # lag:ahead
])
def test_lag_valkey_9(deleted: set, last: tuple[int, int], valkey_lag: int | None,
                      redis_7_4_lag: int | None) -> None:
    stream = _stream([(1, 1), (2, 1), (3, 1), (4, 1)], deleted)
    assert group_lag(stream, _group(last, 0), VALKEY_9, valkey=True) == valkey_lag
    assert group_lag(stream, _group(last, 0), (7, 4)) == redis_7_4_lag


def test_type_15_as_7_0() -> None:
    stream = _stream(IDS, {(1, 0)}, type_code=15)
    stream.groups.append(_group((1, 1), None))
    stream.groups[0].consumers[0].active_time_ms = None  # not stored before type 21
    info = xinfo_stream(stream, full=True, version=(7, 0))
    assert info["entries-added"] == 5 and info["max-deleted-entry-id"] == "0-0"
    assert info["recorded-first-entry-id"] == "1-1"
    assert info["groups"][0]["entries-read"] == 1 and info["groups"][0]["lag"] == 4
    assert "entries-added" not in xinfo_stream(stream)  # 6.2 shape by default
    consumer = xinfo_stream(stream, full=True, version=(7, 2))["groups"][0]["consumers"][0]
    assert consumer["active-time"] == consumer["seen-time"] == 5000


# -- renderings --------------------------------------------------------------------------------


def test_renderings() -> None:
    stream = _stream([(1, 0)])
    stream.nodes[0].read().columns.fields[0] = [(b"na\xffme", "ü".encode())]
    entries = xrange(stream)
    assert to_resp2(entries) == [[b"1-0", [b"na\xffme", "ü".encode()]]]
    assert json.loads(render_json(entries)) == [{"id": "1-0", "fields": [[{"hex": "6e61ff6d65"}, "ü"]]}]
    assert render_text(entries) == '1) 1) "1-0"\n   2) 1) "na\\xffme"\n      2) "\\xc3\\xbc"\n'
    assert render_text([]) == "(empty array)\n" and render_text(None) == "(nil)\n"
    assert render_text(list(range(10))).splitlines()[0] == " 1) (integer) 0"
    assert repr_bytes(b'a"\\\n\x07') == '"a\\"\\\\\\n\\a"'


# -- the command line: checksum, command words ---------------------------------------------------

GROUPS = TESTS / "corpus" / "real" / "redis-7.0.15" / "stream_groups.rdb"  # s:grp2, then s:grp
GROUP_OF = {"s:grp": "g0", "s:grp2": "grupo-ü"}
NOW = "1800000000000"


def _commands(path: Path, key: str) -> list[list[str]]:
    group = GROUP_OF[key]
    return [["xrange", str(path), key, "-", "+"], ["xrevrange", str(path), key, "+", "-"],
            ["xread", str(path), key, "0"], ["xpending", str(path), key, group],
            ["xpending", str(path), key, group, "-", "+", "10"], ["xinfo", "stream", str(path), key, "--full"],
            ["xinfo", "groups", str(path), key], ["xinfo", "consumers", str(path), key, group]]


def _altered(tmp_path: Path) -> Path:
    """The dump with one byte of an entry of s:grp (the last key) changed: it still parses."""
    data = bytearray(GROUPS.read_bytes())
    data[data.index(b"event-0-payload")] = ord("E")
    path = tmp_path / "altered.rdb"
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("key", ["s:grp", "s:grp2"])
def test_stream_commands_verify_the_checksum(key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A changed byte, in the key read or in one after it: the line and exit code of `dump`,
    and no reply; --no-verify-checksum answers from the bytes as they are."""
    path = _altered(tmp_path)
    assert cli.main(["dump", str(path)]) == 4
    line = capsys.readouterr().err
    assert "checksum mismatch" in line and len(line.splitlines()) == 1
    for argv in _commands(path, key):
        assert cli.main([*argv, "--now", NOW]) == 4, argv
        assert capsys.readouterr() == ("", line), argv
        assert cli.main([*argv, "--now", NOW, "--no-verify-checksum"]) == 0, argv
        assert capsys.readouterr().out
    cli.main(["xrange", str(path), key, "-", "+", "--no-verify-checksum"])
    assert ('"Event-0-payload' in capsys.readouterr().out) == (key == "s:grp")


def test_checksum_verified_from_the_trailer(tmp_path: Path) -> None:
    """A good trailer (or 0, "not computed") is verified without reading the keys after the one
    wanted; a wrong one fails as reading the whole dump does."""
    zeroed = tmp_path / "zeroed.rdb"
    zeroed.write_bytes(GROUPS.read_bytes()[:-8] + bytes(8))
    for path in (GROUPS, zeroed):
        with rdbspec.open(path) as dump:
            found = dump_lookup(dump, 0, [b"s:grp2"], 0)
            assert isinstance(found(b"s:grp2"), Stream) and dump.checksum_status == "not read"
            assert dump.last_key == b"s:grp2"
    with rdbspec.open(_altered(tmp_path)) as dump, pytest.raises(ChecksumError):
        dump_lookup(dump, 0, [b"s:grp2"], 0)


@pytest.mark.parametrize(("any_case", "lower_case"), [
    (["XINFO", "STREAM", "{f}", "s:grp"], ["xinfo", "stream", "{f}", "s:grp"]),
    (["xinfo", "Stream", "{f}", "s:grp", "full", "COUNT", "2"],
     ["xinfo", "stream", "{f}", "s:grp", "--full", "--count", "2"]),
    (["Xinfo", "GROUPS", "{f}", "s:grp"], ["xinfo", "groups", "{f}", "s:grp"]),
    (["xinfo", "CONSUMERS", "{f}", "s:grp", "g0"], ["xinfo", "consumers", "{f}", "s:grp", "g0"]),
    (["XRANGE", "{f}", "s:grp", "-", "+", "count", "3"], ["xrange", "{f}", "s:grp", "-", "+", "--count", "3"]),
    (["xrevrange", "{f}", "s:grp", "+", "-", "COUNT", "3"], ["xrevrange", "{f}", "s:grp", "+", "-", "--count", "3"]),
    (["xread", "{f}", "count", "2", "Streams", "s:grp", "s:grp2", "0", "0"],
     ["xread", "{f}", "s:grp", "0", "s:grp2", "0", "--count", "2"]),
    (["XPENDING", "{f}", "s:grp", "g0", "idle", "0", "-", "+", "10"],
     ["xpending", "{f}", "s:grp", "g0", "-", "+", "10", "--idle", "0"]),
])
def test_command_words_in_any_case(any_case: list[str], lower_case: list[str], tmp_path: Path) -> None:
    """The server reads its command words in any case; so do the subcommands and the words after
    them (the server's own syntax, beside the --options)."""
    def reply(argv: list[str]) -> Any:
        code, out = run_cli([str(GROUPS) if a == "{f}" else a for a in argv] + ["--now", NOW, "--json"], tmp_path)
        assert code == 0
        return out

    expected = reply(lower_case)
    assert expected and reply(any_case) == expected
