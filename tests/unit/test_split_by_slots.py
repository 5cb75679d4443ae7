"""`rdbspec split` (issue 30) on dumps made here: each key in the file of the node serving its
slot, each slot's counts once before its first key though the keys come in no slot order, every
file's RESIZEDB counted again, the records before the databases in every file but the
replication ones; what does not fit (databases, slots no node serves, ranges that overlap) refused
by name before anything is written, and a failure leaving no file. The topology read from a
node (`rdbspec.restore.cluster`) against a server that answers canned replies on 127.0.0.1.
Live clusters loading the files: tests/servers/test_split.py."""

from __future__ import annotations

import os
import socket
import threading
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from rdbspec_generated import rdb as python_rdb
from rdbspec_generated.enums import RecordKind

import rdbspec
from rdbspec import cli, rewrite
from rdbspec.errors import EXIT_CODES, UnwritableError
from rdbspec.net.resp import Replies
from rdbspec.read.dumpfile import FunctionLibrary
from rdbspec.read.elements import text
from rdbspec.rewrite import split
from rdbspec.server.cluster import format_ranges, owners, parse_ranges
from rdbspec.server.versions import TARGETS
from rdbspec.write.layouts import key_hash_slot
from rdbspec.write.writer import Writer
from tests.support import dragonfly_dumps

THREE = [((0, 5460),), ((5461, 10922),), ((10923, 16383),)]
NODES = [split.Node(f"node-{n}.rdb", ranges) for n, ranges in enumerate(THREE)]
EXPIRE_MS = 4102444800000
REPLICATION = [(b"repl-stream-db", b"0"), (b"repl-id", b"8f" * 20), (b"repl-offset", b"4242")]
# keys of a few tags and untagged ones, in no slot order: the tags' slots come back again and again
KEYS = [b"{user:%d}:%d%s" % (i % 7, i, kind) for i in range(7 * 3) for kind in (b"a", b"b")][::-1] + \
       [b"plain:%d" % i for i in range(40)]


def _write(path: Path, version: int = 12, dbs: tuple[int, ...] = (0,), aux: list[tuple[bytes, bytes]] | None = None,
           valkey: bool = False) -> Path:
    """A dump of KEYS in each of `dbs` (every third key expiring), a function library, and AUX
    fields (`aux`, then the replication ones)."""
    with Writer(path, version, valkey=valkey) as out:
        for name, value in (aux or [(b"redis-ver", b"7.4.1")]) + REPLICATION:
            out.aux(name, value)
        if version >= 10:
            out.function(FunctionLibrary(b"#!lua name=lib\nredis.register_function('f', function() return 1 end)"))
        for db in dbs:
            out.select_db(db, len(KEYS), sum(1 for i, _ in enumerate(KEYS) if i % 3 == 0))
            for i, key in enumerate(KEYS):
                out.string(key, b"value of %s" % key, expire_at_ms=EXPIRE_MS + i if i % 3 == 0 else None)
    return path


def _records(path: Path) -> list[Any]:
    return python_rdb.Rdb.from_bytes(path.read_bytes()).records


def _keys(path: Path) -> list[tuple[int, bytes, int | None]]:
    with rdbspec.open(path) as dump:
        return [(record.db, record.key, record.expire_at_ms) for record in dump.keys()]


def _owner(key: bytes) -> int:
    return owners([node.ranges for node in NODES])[key_hash_slot(key)]


def test_each_key_goes_to_its_slots_node_with_each_slots_counts_once(tmp_path: Path) -> None:
    source = _write(tmp_path / "dump.rdb")
    found = split.split(source, tmp_path / "out", NODES)
    assert found.plan.read == len(KEYS) and sum(found.keys) == len(KEYS)
    expected = _keys(source)
    for index, node in enumerate(NODES):
        path = tmp_path / "out" / node.name
        kept = [key for key in expected if _owner(key[1]) == index]
        assert _keys(path) == kept and found.keys[index] == len(kept)  # the input's order, expiries kept
        records = _records(path)
        kinds = [record.kind for record in records]
        aux = [(text(r.body.key), text(r.body.value)) for r in records if r.kind == RecordKind.AUX]
        assert aux == [(b"redis-ver", b"7.4.1")]  # the replication fields left out
        assert kinds.count(RecordKind.FUNCTION2) == 1 and kinds.index(RecordKind.FUNCTION2) < kinds.index(
            RecordKind.SELECT_DB)
        [resize] = [r.body for r in records if r.kind == RecordKind.RESIZE_DB]
        assert (resize.db_size.value, resize.expires_size.value) == (len(kept), sum(e is not None for *_, e in kept))
        # SLOT_INFO (RDB 12): once a slot, before its first key, with its counts
        slots, seen = [], set()
        for record in records:
            if record.kind == RecordKind.SLOT_INFO:
                slots.append((record.body.slot_id.value, record.body.slot_size.value,
                              record.body.expires_slot_size.value))
            elif record.kind not in (RecordKind.AUX, RecordKind.FUNCTION2, RecordKind.SELECT_DB,
                                     RecordKind.RESIZE_DB, RecordKind.EXPIRE_TIME_MS, RecordKind.EOF):
                assert key_hash_slot(text(record.body.key)) in {s for s, _, _ in slots}
                seen.add(key_hash_slot(text(record.body.key)))
        counts = Counter(key_hash_slot(k) for _, k, _ in kept)
        expiring = Counter(key_hash_slot(k) for _, k, e in kept if e is not None)
        assert sorted(slots) == sorted((s, counts[s], expiring[s]) for s in counts) and seen == set(counts)


@pytest.mark.parametrize(("version", "aux", "valkey", "form"), [
    (11, [(b"valkey-ver", b"8.0.1")], False, 3),  # Valkey 8: slot-info of keys and expiries
    (80, [(b"valkey-ver", b"9.1.2")], True, 4),  # Valkey 9: and the keys with volatile items
    (11, [(b"redis-ver", b"7.2.4")], False, None),  # Redis 7.2 writes no counts
    (10, [(b"redis-ver", b"7.0.15")], False, None),
], ids=["valkey-8", "valkey-9", "redis-7.2", "redis-7.0"])
def test_the_slots_counts_take_the_output_servers_form(tmp_path: Path, version: int, aux: list, valkey: bool,
                                                       form: int | None) -> None:
    source = _write(tmp_path / "dump.rdb", version, aux=aux, valkey=valkey)
    split.split(source, tmp_path / "out", NODES)
    path = tmp_path / "out" / "node-2.rdb"
    with rdbspec.open(path) as dump:
        keys = [record.key for record in dump.keys()]
        fields = [value.split(b",") for name, value in dump.aux if name == b"slot-info"]
        assert dump.slot_info == []
    if form is None:
        assert fields == []
        return
    counts = Counter(key_hash_slot(k) for k in keys)
    assert {int(f[0]): [int(n) for n in f[1:]] for f in fields} == {
        slot: [counts[slot], sum(1 for k in keys if key_hash_slot(k) == slot and KEYS.index(k) % 3 == 0), 0][:form - 1]
        for slot in counts}
    assert len(fields) == len(counts)


def test_a_conversion_counts_the_slots_as_its_target_writes_them(tmp_path: Path) -> None:
    from rdbspec.write import convert

    source = _write(tmp_path / "dump.rdb", 11, aux=[(b"valkey-ver", b"8.0.1")])
    split.split(source, tmp_path / "12", NODES, converter=convert.Converter(12))
    split.split(source, tmp_path / "10", NODES, converter=convert.Converter(10))
    split.split(source, tmp_path / "valkey-9", NODES, converter=convert.Converter.for_target(TARGETS["valkey-9.1"]))
    with rdbspec.open(tmp_path / "12" / "node-0.rdb") as dump:
        keys = list(dump.keys())
        assert len(dump.slot_info) == len({key_hash_slot(k.key) for k in keys}) > 0
        assert [name for name, _ in dump.aux if name == b"slot-info"] == []
    with rdbspec.open(tmp_path / "10" / "node-0.rdb") as dump:
        assert len(list(dump.keys())) == len(keys) and dump.slot_info == []
        assert [name for name, _ in dump.aux if name == b"slot-info"] == []
    with rdbspec.open(tmp_path / "valkey-9" / "node-0.rdb") as dump:
        assert dump.header.magic == "VALKEY080" and len(list(dump.keys())) == len(keys)
        fields = [value.split(b",") for name, value in dump.aux if name == b"slot-info"]
        assert len(fields) == len(dump.slot_info) + len({key_hash_slot(k.key) for k in keys}) and len(fields[0]) == 4


def test_a_chosen_database_is_written_as_database_0(tmp_path: Path) -> None:
    source = _write(tmp_path / "dump.rdb", dbs=(0, 3))
    with pytest.raises(ValueError, match=rf"databases other than 0: 3 \({len(KEYS)} keys\); .* --db N"):
        split.split(source, tmp_path / "out", NODES)
    assert not (tmp_path / "out").exists()
    found = split.split(source, tmp_path / "out", NODES, db=3)
    assert found.db == 3 and sum(found.keys) == len(KEYS)
    for node in NODES:
        assert {db for db, _, _ in _keys(tmp_path / "out" / node.name)} == {0}


def test_keys_in_slots_no_node_serves_are_refused_by_name(tmp_path: Path) -> None:
    source = _write(tmp_path / "dump.rdb")
    gap = key_hash_slot(KEYS[3])
    partial = [split.Node("a.rdb", ((0, gap - 1),)), split.Node("b.rdb", ((gap + 1, 16383),))]
    missing = [key for key in KEYS if key_hash_slot(key) == gap]
    with pytest.raises(ValueError) as refused:
        split.split(source, tmp_path / "out", partial)
    assert str(refused.value) == (f"{len(missing)} keys are in slots that no node serves (1 slots, the first {gap}; "
                                  f"the first such key {missing[0]!r} is in slot {gap}): give every slot that holds "
                                  "keys to a node")
    assert not (tmp_path / "out").exists()


def test_a_dragonfly_set_is_split_for_a_target(tmp_path: Path) -> None:
    """A DFS set holds each database's keys in every shard: one read gathers the chosen one's."""
    from rdbspec.write import convert

    dragonfly_dumps.build(tmp_path / "df")
    source = tmp_path / "df" / "set"
    with pytest.raises(UnwritableError, match="give --target"):
        split.split(source, tmp_path / "out", NODES, db=0)
    found = split.split(source, tmp_path / "out", NODES, db=0, converter=convert.Converter(10, allow_lossy=True))
    whole = tmp_path / "whole.rdb"
    rewrite.rewrite(source, whole, rewrite.Selection(dbs=frozenset({0})), convert.Converter(10, allow_lossy=True))
    expected = _keys(whole)
    assert sum(found.keys) == len(expected) > 0
    assert sorted(k for node in NODES for k in _keys(tmp_path / "out" / node.name)) == sorted(expected)


def test_slot_ranges_are_read_and_checked() -> None:
    assert parse_ranges("0-5460") == [(0, 5460)]
    assert parse_ranges("0-100, 200-300,7") == [(0, 100), (200, 300), (7, 7)]
    assert format_ranges([(0, 100), (7, 7)]) == "0-100,7"
    for bad, why in [("0-16384", "past the last one"), ("5-4", "ends before it starts"), ("a-b", "not a slot range"),
                     ("", "not a slot range"), ("-5", "not a slot range"), ("1-2-3", "not a slot range")]:
        with pytest.raises(ValueError, match=why):
            parse_ranges(bad)
    with pytest.raises(ValueError, match=r"slot 100 of node 1's range 100-200 is also in node 0's \(0-100\)"):
        owners([[(0, 100)], [(100, 200)]])
    with pytest.raises(ValueError, match="its own other range"):
        owners([[(0, 100), (50, 60)]])
    served = owners([[(10, 20)], [(0, 9), (30, 30)]])
    assert (served[0], served[15], served[21], served[30]) == (1, 0, -1, 1)


def test_memory_stays_flat_whatever_the_number_of_keys(tmp_path: Path) -> None:
    """What Python allocates peaks at the same size for 4,000 keys and 40,000: the plan holds the
    slots' counts, the writers a span of the mapped input each."""
    peaks = []
    for count in (4_000, 4_000, 40_000):  # the first run warms up (imports, parsers' caches)
        path = tmp_path / f"{count}.rdb"
        with Writer(path, 11) as out:
            out.select_db(0, count, count // 3)
            for i in range(count):
                out.string(b"key:%d" % i, b"v%d" % i, expire_at_ms=EXPIRE_MS + i if i % 3 == 0 else None)
        tracemalloc.start()
        found = split.split(path, tmp_path / f"out-{len(peaks)}", NODES)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert sum(found.keys) == count
    assert peaks[2] < 1.5 * peaks[1], peaks


def test_a_failure_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The files are renamed once all are whole; when a rename fails, those renamed before go."""
    source = _write(tmp_path / "dump.rdb")
    out = tmp_path / "out"
    renamed: list[str] = []
    replace = os.replace

    def failing(src: str, dst: str) -> None:
        if renamed:
            raise OSError(28, "No space left on device", dst)
        renamed.append(dst)
        replace(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OSError, match="No space left"):
        split.split(source, out, NODES)
    assert renamed and sorted(os.listdir(out)) == []


def test_an_output_never_replaces_the_input(tmp_path: Path) -> None:
    source = _write(tmp_path / "node-1.rdb")
    data = source.read_bytes()
    with pytest.raises(ValueError, match="would replace the input"):
        split.split(source, tmp_path, NODES)
    assert source.read_bytes() == data and sorted(os.listdir(tmp_path)) == ["node-1.rdb"]


def test_the_command_line_says_what_it_wrote_and_ends_a_refusal_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = str(_write(tmp_path / "dump.rdb", dbs=(0, 1)))
    out = str(tmp_path / "out")
    ranges = ["--slots", "0-5460", "5461-10922", "--slots", "10923-16383"]
    assert cli.main(["split", source, "-o", out, *ranges]) == EXIT_CODES["usage"]
    assert capsys.readouterr().err.startswith("rdbspec split: the dump holds keys in databases other than 0: 1 (")
    assert cli.main(["split", source, "-o", out, "--slots", "0-5460", "5000-16383", "--db", "0"]) == EXIT_CODES["usage"]
    err = capsys.readouterr().err
    assert err == "rdbspec split: slot 5000 of node 1's range 5000-16383 is also in node 0's (0-5460)\n"
    assert not os.path.exists(out)
    assert cli.main(["split", source, "-o", out, *ranges, "--db", "1"]) == EXIT_CODES["ok"]
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith(f"rdbspec split: {out}/node-0.rdb: ") and lines[0].endswith(" keys (slots 0-5460)")
    assert lines[-1] == f"rdbspec split: wrote {len(KEYS)} of {2 * len(KEYS)} keys to 3 files in {out}"
    assert sorted(os.listdir(out)) == ["node-0.rdb", "node-1.rdb", "node-2.rdb"]
    with pytest.raises(SystemExit) as usage:
        cli.main(["split", source, "-o", out, "--slots", "0-16384"])
    assert usage.value.code == EXIT_CODES["usage"]
    assert "argument --slots: slot 16384 is past the last one, 16383" in capsys.readouterr().err


def test_a_cluster_not_reached_is_one_line_and_exit_6(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as unused:  # a port of 127.0.0.1 nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    source = str(_write(tmp_path / "dump.rdb"))
    url = f"redis://127.0.0.1:{port}"
    assert cli.main(["split", source, "-o", str(tmp_path / "out"), "--cluster", url]) == EXIT_CODES["io"]
    assert capsys.readouterr().err == f"rdbspec split: {url}: cannot connect: Connection refused\n"
    assert cli.main(["split", source, "-o", str(tmp_path / "out"), "--cluster", "http://x"]) == EXIT_CODES["usage"]
    assert capsys.readouterr().err.startswith("rdbspec split: not a server URL")
    assert not (tmp_path / "out").exists()


# -- the topology read from a node ------------------------------------------------------------

def _bulk(data: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(data), data)


def _master(host: bytes, port: int) -> bytes:
    return b"*3\r\n" + _bulk(host) + b":%d\r\n" % port + _bulk(b"f" * 40)


# CLUSTER SLOTS of four masters, one with two ranges, one with a replica, two known by no address:
# "" (a node that met no other) and "?" (cluster-preferred-endpoint-type with no value)
SLOTS_REPLY = (b"*5\r\n"
               b"*3\r\n:101\r\n:5460\r\n" + _master(b"10.0.0.1", 7000) +
               b"*4\r\n:10923\r\n:16383\r\n" + _master(b"", 7002) + _master(b"10.0.0.9", 7009) +
               b"*3\r\n:5461\r\n:10000\r\n" + _master(b"::1", 7001) +
               b"*3\r\n:10001\r\n:10922\r\n" + _master(b"?", 7003) +
               b"*3\r\n:0\r\n:100\r\n" + _master(b"10.0.0.1", 7000))
MASTERS = [("10.0.0.1:7000", [(0, 100), (101, 5460)]), ("[::1]:7001", [(5461, 10000)]),
           ("127.0.0.1:7003", [(10001, 10922)]), ("127.0.0.1:7002", [(10923, 16383)])]


class FakeNode:
    """A server on 127.0.0.1 answering the commands of one connection with `replies`, one each,
    keeping the commands it got."""

    def __init__(self, *replies: bytes) -> None:
        self.replies = replies
        self.got: list[Any] = []
        self.listening = socket.create_server(("127.0.0.1", 0))
        self.url = f"redis://127.0.0.1:{self.listening.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        connection, _ = self.listening.accept()
        with connection:
            requests = Replies(lambda: connection.recv(65536))
            for reply in self.replies:
                self.got.append(requests.next())
                connection.sendall(reply)

    def __enter__(self) -> FakeNode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.thread.join(5)
        self.listening.close()


def test_the_password_goes_to_the_node_and_a_refusal_is_its_reply(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    source = str(_write(tmp_path / "dump.rdb"))
    monkeypatch.setenv("REDISCLI_AUTH", "from-env")
    with FakeNode(b"+OK\r\n", SLOTS_REPLY) as node:
        assert cli.main(["split", source, "-o", str(tmp_path / "a"), "--cluster", node.url]) == EXIT_CODES["ok"]
    assert node.got == [[b"AUTH", b"from-env"], [b"CLUSTER", b"SLOTS"]]
    with FakeNode(b"-WRONGPASS invalid username-password pair or user is disabled.\r\n") as node:
        url = node.url.replace("//", "//bob:secret@")
        assert cli.main(["split", source, "-o", str(tmp_path / "b"), "--cluster", url]) == EXIT_CODES["refused"]
    assert node.got == [[b"AUTH", b"bob", b"secret"]]
    err = capsys.readouterr().err.splitlines()[-1]
    assert err == f"rdbspec split: {node.url.replace('//', '//bob@')} refused AUTH: WRONGPASS invalid " \
                  "username-password pair or user is disabled."
    monkeypatch.delenv("REDISCLI_AUTH")
    with FakeNode(b"-ERR This instance has cluster support disabled\r\n") as node:  # no SELECT of the /3 first
        assert cli.main(["split", source, "-o", str(tmp_path / "c"), "--cluster", node.url + "/3"]) == 8
    assert node.got == [[b"CLUSTER", b"SLOTS"]]
    assert capsys.readouterr().err.endswith("refused CLUSTER SLOTS: ERR This instance has cluster support disabled\n")
    assert not any((tmp_path / name).exists() for name in "bc")


def test_split_by_a_cluster_names_each_file_by_its_master(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _write(tmp_path / "dump.rdb")
    with FakeNode(SLOTS_REPLY) as node:
        assert cli.main(["split", str(source), "-o", str(tmp_path / "out"), "--cluster", node.url]) == 0
    assert sorted(os.listdir(tmp_path / "out")) == sorted(f"{a.rsplit(':', 1)[0]}-{a.rsplit(':', 1)[1]}.rdb"
                                                         for a, _ in MASTERS)
    assert "10.0.0.1-7000.rdb: " in capsys.readouterr().err
    by_slots = tmp_path / "by-slots"
    split.split(source, by_slots, [split.Node(f"{n}.rdb", tuple(r)) for n, (_, r) in enumerate(MASTERS)])
    assert (tmp_path / "out" / "[::1]-7001.rdb").read_bytes() == (by_slots / "1.rdb").read_bytes()
