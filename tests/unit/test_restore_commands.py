"""A key's value as plain commands (`rdbspec.restore.commands`, issue 30), offline: each command
within the byte limit but for one element alone bigger than it, the elements in the value's
order; a string over the limit SET then APPENDed; scores that read back as the same doubles; a
hash's field TTLs as an HPEXPIREAT a TTL where the target has them, refused by name (or dropped)
where it has not; a stream's deleted entries that are still pending made, claimed, then deleted;
what no command makes refused by name; a value walked a chunk at a time. `rdbspec dump --format
resp` writes them between SELECTs, with the function libraries first and without the keys already
expired. The servers replaying them are tests/servers/test_resp.py's."""

from __future__ import annotations

import math
import random
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

import rdbspec
from rdbspec import cli
from rdbspec.errors import EXIT_CODES, UnwritableError
from rdbspec.net.resp import LONG_ARG, command, command_parts
from rdbspec.read.checksum import crc64
from rdbspec.read.dumpfile import KeyRecord
from rdbspec.restore.commands import Command, function_commands, key_commands
from rdbspec.server.versions import Server, parse_server
from rdbspec.write.convert import Losses
from rdbspec.write.stream import EditableConsumer, EditableGroup, EditableStream, Pending
from tests.support.resp import commands_in

TESTS = Path(__file__).resolve().parents[1]
REAL = TESTS / "corpus" / "real"
sys.path.insert(0, str(TESTS / "conformance"))

from golden import load_fixture  # noqa: E402

REDIS_70 = Server("redis", (7, 0))
VALKEY_91 = Server("valkey", (9, 1))


def keys_of(path: Path | str) -> Iterator[KeyRecord]:
    with rdbspec.open(path) as dump:
        yield from dump.keys()


def key_of(path: Path | str, name: bytes) -> KeyRecord:
    return next(record for record in keys_of(path) if record.key == name)


def commands_of(path: Path | str, name: bytes, max_bytes: int = 1 << 20, server: Server = REDIS_70,
                losses: Losses | None = None) -> list[Command]:
    return list(key_commands(key_of(path, name), max_bytes, server, losses))


def size(line: Command) -> int:
    return len(command(*line))


def elements(lines: list[Command], head: int) -> list[bytes]:
    return [arg for line in lines for arg in line[head:]]


@pytest.fixture(scope="module")
def values_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = random.Random(30)
    path = tmp_path_factory.mktemp("values") / "values.rdb"
    with rdbspec.Writer(path, 10) as w:
        w.select_db(0)
        w.list(b"list", [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 90))) for _ in range(2000)])
        w.set(b"set", [b"member:%d" % i for i in range(1500)])
        w.hash(b"hash", [(b"field:%d" % i, b"x" * rng.randrange(0, 200)) for i in range(3000)])
        w.zset(b"zset", [(b"m%d" % i, score) for i, score in enumerate(
            [math.inf, -math.inf, -0.0, 0.0, 0.1, 1 / 3, 1e300, -5e-324, 2.0 ** 53 + 2, 12.5, -7.0])])
        w.string(b"string", bytes(range(256)) * 40, expire_at_ms=4102444800000)
        w.string(b"empty", b"")
    return path


@pytest.mark.parametrize("max_bytes", [64, 300, 4096])
@pytest.mark.parametrize(("name", "head", "width"), [(b"list", 2, 1), (b"set", 2, 1), (b"hash", 2, 2),
                                                     (b"zset", 2, 2)])
def test_elements_fill_each_command_within_the_limit(values_dump: Path, name: bytes, head: int, width: int,
                                                     max_bytes: int) -> None:
    lines = commands_of(values_dump, name, max_bytes)
    verb = {b"list": b"RPUSH", b"set": b"SADD", b"hash": b"HSET", b"zset": b"ZADD"}[name]
    assert {line[0] for line in lines} == {verb} and {line[1] for line in lines} == {name}
    for line, after in zip(lines, lines[1:] + [None]):
        assert (len(line) - head) % width == 0
        assert size(line) <= max_bytes or len(line) == head + width  # one element bigger than the limit
        if after is not None:  # full: the next command's first element would not have fitted
            assert size(line + after[head:head + width]) > max_bytes
    record = key_of(values_dump, name)
    value = record.value
    if name == b"zset":
        assert elements(lines, head) == [x for member, score in value for x in (repr(score).encode(), member)]
    elif name == b"hash":
        assert elements(lines, head) == [x for pair in value for x in pair]
    else:
        assert elements(lines, head) == value


def test_scores_read_back_as_the_same_doubles(values_dump: Path) -> None:
    [line] = commands_of(values_dump, b"zset")
    scores = dict(zip(line[3::2], map(float, line[2::2])))
    for member, score in key_of(values_dump, b"zset").value:
        assert scores[member] == score and math.copysign(1, scores[member]) == math.copysign(1, score)
    texts = dict(zip(line[3::2], line[2::2]))
    assert (texts[b"m0"], texts[b"m1"], texts[b"m5"]) == (b"inf", b"-inf", b"0.3333333333333333")


@pytest.mark.parametrize("max_bytes", [1, 100, 1000, 9999, 20000])
def test_a_string_over_the_limit_is_set_then_appended(values_dump: Path, max_bytes: int) -> None:
    lines = commands_of(values_dump, b"string", max_bytes)
    value = bytes(range(256)) * 40
    *value_lines, expire = lines
    assert expire == [b"PEXPIREAT", b"string", b"4102444800000"]
    assert value_lines[0][:2] == [b"SET", b"string"] and all(line[:2] == [b"APPEND", b"string"]
                                                               for line in value_lines[1:])
    assert b"".join(line[2] for line in value_lines) == value
    assert all(size(line) <= max(max_bytes, size([line[0], line[1], b"x"])) for line in value_lines)
    assert len(value_lines) == 1 if max_bytes >= size([b"SET", b"string", value]) else len(value_lines) > 1
    assert commands_of(values_dump, b"empty", max_bytes) == [[b"SET", b"empty", b""]]


def test_field_ttls_are_set_a_ttl_at_a_time_where_the_target_has_them() -> None:
    dump = REAL / "redis-7.4.1" / "mixed_types.rdb"
    lines = commands_of(dump, b"hx:large", 200, VALKEY_91)
    ttls = {(line[2], field) for line in lines if line[0] == b"HPEXPIREAT" for field in line[5:]}
    assert ttls == {(b"4102444800013", b"f%d" % i) for i in range(0, 600, 60) if i != 60} | {
        (b"3372121406107", b"f1"), (b"4102444800013", b"f60")}
    for line in lines:
        if line[0] == b"HPEXPIREAT":
            assert line[3] == b"FIELDS" and int(line[4]) == len(line) - 5 and size(line) <= 200
    fields = elements([line for line in lines if line[0] == b"HSET"], 2)
    assert sorted(zip(fields[0::2], fields[1::2])) == sorted(key_of(dump, b"hx:large").value)
    assert [line[0] for line in commands_of(dump, b"hx:keyexp", server=parse_server("7.4"))] == [
        b"HSET", b"HPEXPIREAT", b"PEXPIREAT"]
    with pytest.raises(UnwritableError, match=r"redis-7\.0 cannot hold hash field TTLs \(Redis 7\.4\+ types 24 and "
                                              r"25, Valkey 9's type 22\) \(key b'hx:large' in db 0\)"):
        commands_of(dump, b"hx:large")
    losses = Losses("redis-7.0", allow_lossy=True)
    assert {line[0] for line in commands_of(dump, b"hx:large", losses=losses)} == {b"HSET"}
    assert losses.dropped == {"hash field TTLs (Redis 7.4+ types 24 and 25, Valkey 9's type 22)": 1}


def test_a_stream_with_deleted_entries_still_pending() -> None:
    """s:grp: 1700000005000-0 is deleted but pending for alice in g0; 1700000050000-0 deleted."""
    dump = REAL / "redis-7.0.15" / "stream_groups.rdb"
    lines = commands_of(dump, b"s:grp", 300)
    where = {}
    for at, line in enumerate(lines):
        for arg in line:
            where.setdefault((line[0], arg), at)
    made, claimed = where[b"XADD", b"1700000005000-0"], where[b"XCLAIM", b"1700000005000-0"]
    assert made < claimed < where[b"XDEL", b"1700000005000-0"] == where[b"XDEL", b"1700000050000-0"]
    assert lines[claimed][:5] == [b"XCLAIM", b"s:grp", b"g0", b"alice", b"0"]
    assert lines[claimed][-6:] == [b"TIME", b"1795321401671", b"RETRYCOUNT", b"2", b"FORCE", b"JUSTID"]
    assert lines[-1] == [b"XSETID", b"s:grp", b"1700000062000-0", b"ENTRIESADDED", b"63", b"MAXDELETEDID",
                         b"1700000050000-0"]
    creates = [line for line in lines if line[:2] == [b"XGROUP", b"CREATE"]]
    assert creates[0] == [b"XGROUP", b"CREATE", b"s:grp", b"g0", b"1700000018000-0", b"ENTRIESREAD", b"19"]
    assert [b"XGROUP", b"CREATE", b"s:grp", b"g_last", b"1700000061000-0"] in creates  # its counter unknown
    assert [b"XGROUP", b"CREATECONSUMER", b"s:grp", b"g0", b"idle_guy"] in lines
    stream = key_of(dump, b"s:grp").value
    assert sum(line[0] == b"XADD" for line in lines) == sum(1 for _ in stream.entries(include_deleted=True))
    claims = {(line[3], entry_id) for line in lines if line[0] == b"XCLAIM" for entry_id in line[5:-6]}
    assert claims == {(p.consumer, b"%d-%d" % p.id) for g in stream.groups for p in g.pending}
    assert all(size(line) <= 300 for line in lines if line[0] in (b"XCLAIM", b"XDEL"))


def test_a_stream_for_a_server_without_its_counters() -> None:
    dump = REAL / "redis-7.0.15" / "stream_groups.rdb"
    with pytest.raises(UnwritableError, match=r"redis-6\.2 cannot hold stream metadata \(entries_added, first and "
                                              r"max-deleted IDs: type 19\+\) \(key b's:grp' in db 0\)"):
        commands_of(dump, b"s:grp", server=parse_server("6.2"))
    losses = Losses("redis-6.2", allow_lossy=True)
    lines = commands_of(dump, b"s:grp", server=parse_server("6.2"), losses=losses)
    assert lines[-1] == [b"XSETID", b"s:grp", b"1700000062000-0"]
    assert not any(b"ENTRIESREAD" in line for line in lines)
    assert losses.dropped == {"stream metadata (entries_added, first and max-deleted IDs: type 19+)": 1,
                              "consumer group entries_read (type 19+)": 1}
    # what a loader computes for a type-15 stream is what a 7.0 server is given
    old = REAL / "redis-6.2.14" / "stream_groups.rdb"
    assert commands_of(old, b"s:grp")[-1] == [b"XSETID", b"s:grp", b"1700000062000-0", b"ENTRIESADDED", b"61"]
    assert commands_of(old, b"s:grp", server=parse_server("6.2"))[-1] == [b"XSETID", b"s:grp", b"1700000062000-0"]


def _stream_dump(path: Path, stream: EditableStream) -> Path:
    with rdbspec.Writer(path, 11) as w:
        w.select_db(0)
        w.stream(b"s", stream)
    return path


def test_an_empty_stream_is_made_by_its_first_group_or_by_one_made_and_destroyed(tmp_path: Path) -> None:
    bare = EditableStream(last_id=(5, 1), entries_added=3)
    assert commands_of(_stream_dump(tmp_path / "bare.rdb", bare), b"s") == [
        [b"XGROUP", b"CREATE", b"s", b"rdbspec-mkstream", b"0", b"MKSTREAM"],
        [b"XGROUP", b"DESTROY", b"s", b"rdbspec-mkstream"],
        [b"XSETID", b"s", b"5-1", b"ENTRIESADDED", b"3"]]
    grouped = EditableStream(last_id=(5, 1), entries_added=3)
    grouped.groups[b"g"] = EditableGroup(last_id=(5, 1), entries_read=3)
    grouped.groups[b"g"].consumers[b"c"] = EditableConsumer(seen_time=1, active_time=-1)
    assert commands_of(_stream_dump(tmp_path / "grouped.rdb", grouped), b"s") == [
        [b"XGROUP", b"CREATE", b"s", b"g", b"5-1", b"MKSTREAM", b"ENTRIESREAD", b"3"],
        [b"XGROUP", b"CREATECONSUMER", b"s", b"g", b"c"],
        [b"XSETID", b"s", b"5-1", b"ENTRIESADDED", b"3"]]


def test_pending_entries_of_no_consumer_are_refused(tmp_path: Path) -> None:
    stream = EditableStream()
    stream.append((1, 0), [(b"f", b"v")], 4096, 100)
    stream.groups[b"g"] = EditableGroup(last_id=(1, 0), entries_read=1)
    stream.groups[b"g"].pel[(1, 0)] = Pending(consumer=None, delivery_time=5, delivery_count=1)
    dump = _stream_dump(tmp_path / "orphan.rdb", stream)
    with pytest.raises(UnwritableError, match=r"stream pending entries of no consumer \(XCLAIM gives each one a "
                                              r"consumer\)"):
        commands_of(dump, b"s")
    lines = commands_of(dump, b"s", losses=Losses("redis-7.0", allow_lossy=True))
    assert not any(line[0] == b"XCLAIM" for line in lines)


def test_what_no_command_makes_is_refused_by_name(tmp_path: Path) -> None:
    module = rdbspec.parse(load_fixture("rdb_librdb_module").data)
    with pytest.raises(UnwritableError, match=r"cannot hold module values \(type 7: RESTORE alone loads one\) "
                                              r"\(key b'key1' in db 0\)"):
        list(key_commands(next(module.keys()), 1 << 20, REDIS_70))
    path = tmp_path / "path-hash.rdb"
    with rdbspec.Writer(path, 81, valkey=True) as w:
        w.select_db(0)
        w.path_hash(b"ph", {b"a": {b"f": b"v"}})
    with pytest.raises(UnwritableError, match=r"valkey-9\.1 cannot hold Valkey 9\.2 path-hash keys \(type 23\)"):
        commands_of(path, b"ph", server=VALKEY_91)
    losses = Losses("valkey-9.1", allow_lossy=True)
    assert commands_of(path, b"ph", server=VALKEY_91, losses=losses) == []
    assert losses.dropped == {"Valkey 9.2 path-hash keys (type 23)": 1}


def test_a_big_hash_is_walked_a_chunk_at_a_time(tmp_path: Path) -> None:
    """The commands of a hashtable hash of 200,000 fields take less than half the memory of its value."""
    path = tmp_path / "big.rdb"
    with rdbspec.Writer(path, 10) as w:
        w.select_db(0)
        w.hash(b"h", ((b"field:%d" % i, b"value-%d" % i) for i in range(200_000)))
    tracemalloc.start()
    try:
        fields = sum(len(line) - 2 for line in key_commands(key_of(path, b"h"), 4096, REDIS_70)) // 2
        _, walked = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        whole = key_of(path, b"h").value
        _, held = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert fields == len(whole) == 200_000
    assert walked < held / 2


def test_functions_are_loaded_where_the_server_has_them() -> None:
    with rdbspec.open(REAL / "redis-7.0.15" / "mixed_types.rdb") as dump:
        list(dump.keys())
        libraries = dump.functions
    [line] = function_commands(libraries, REDIS_70, replace=True)
    assert line[:3] == [b"FUNCTION", b"LOAD", b"REPLACE"] and line[3].startswith(b"#!lua name=")
    with pytest.raises(UnwritableError, match=r"redis-6\.2 cannot hold function libraries \(FUNCTION2: Redis 7\.0\+\)"):
        list(function_commands(libraries, parse_server("6.2")))


def _replies(data: bytes) -> list[Command]:
    return [line for line, _ in commands_in(data)]


def test_dump_format_resp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SELECT before each database's keys, the expired keys left out, --replace's DEL."""
    path = tmp_path / "dbs.rdb"
    with rdbspec.Writer(path, 10) as w:
        w.select_db(0)
        w.string(b"a", b"1")
        w.string(b"gone", b"x", expire_at_ms=1000)
        w.select_db(3)
        w.list(b"b", [b"x", b"y"], expire_at_ms=4102444800000)
    out = tmp_path / "dbs.resp"
    assert cli.main(["dump", str(path), "--format", "resp", "-o", str(out), "--replace"]) == EXIT_CODES["ok"]
    assert _replies(out.read_bytes()) == [
        [b"SELECT", b"0"], [b"DEL", b"a"], [b"SET", b"a", b"1"],
        [b"SELECT", b"3"], [b"DEL", b"b"], [b"RPUSH", b"b", b"x", b"y"], [b"PEXPIREAT", b"b", b"4102444800000"]]
    assert capsys.readouterr().err == "rdbspec dump: left out 1 keys already expired\n"


def test_dump_format_resp_refuses_by_name_and_leaves_no_output(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    dump = REAL / "redis-7.4.1" / "mixed_types.rdb"
    out = tmp_path / "out.resp"
    argv = ["dump", str(dump), "--format", "resp", "--as-version", "7.0", "-o", str(out)]
    assert cli.main(argv) == EXIT_CODES["unwritable"]
    assert not out.exists() and list(tmp_path.iterdir()) == []
    assert "redis-7.0 cannot hold hash field TTLs" in capsys.readouterr().err
    assert cli.main([*argv, "--allow-lossy"]) == EXIT_CODES["ok"]
    assert capsys.readouterr().err == ("rdbspec dump: dropped hash field TTLs (Redis 7.4+ types 24 and 25, "
                                       "Valkey 9's type 22): 5\n")
    lines = _replies(out.read_bytes())
    assert lines[0][:2] == [b"FUNCTION", b"LOAD"] and not any(line[0] == b"HPEXPIREAT" for line in lines)


def test_a_value_built_under_another_name_without_its_expiry(values_dump: Path) -> None:
    """What `rdbspec restore` sends of a key too big for one RESTORE: built under a name of its own
    (renamed over the key at its end), its expiry set by the restore."""
    lines = list(key_commands(key_of(values_dump, b"string"), 1000, REDIS_70, name=b"building", expiry=False))
    assert {line[1] for line in lines} == {b"building"} and lines[-1][0] == b"APPEND"


def test_dump_restore_payloads(tmp_path: Path) -> None:
    """Each key as RESTORE key ttl payload [REPLACE] [ABSTTL]: the value's bytes, the RDB version of
    the server's generation, the CRC-64 of both (redis src/cluster.c verifyDumpPayload)."""
    path = tmp_path / "keys.rdb"
    with rdbspec.Writer(path, 9) as w:
        w.select_db(2)
        w.list(b"l", [b"x", b"y"], expire_at_ms=4102444800000)
    out = tmp_path / "keys.resp"
    assert cli.main(["dump", str(path), "--format", "resp", "--restore-payloads", "--replace", "--as-version",
                     "valkey-9.1", "-o", str(out)]) == EXIT_CODES["ok"]
    select, restore = _replies(out.read_bytes())
    assert select == [b"SELECT", b"2"]
    assert restore[:3] == [b"RESTORE", b"l", b"4102444800000"] and restore[4:] == [b"REPLACE", b"ABSTTL"]
    payload = restore[3]
    assert payload[-10:-8] == (80).to_bytes(2, "little")  # the newest generation Valkey 9.1 loads: VALKEY080
    assert int.from_bytes(payload[-8:], "little") == crc64(payload[:-8])
    with rdbspec.open(path) as dump:
        assert payload[0] == next(dump.keys()).rdb_type


def test_command_parts_are_the_commands_bytes_its_long_arguments_not_copied() -> None:
    """A command built of a value's pieces (the plain commands of a key too large for RESTORE) is sent
    as parts: the same bytes as `command`'s, an argument of LONG_ARG bytes or more the very object."""
    long = b"x" * LONG_ARG
    for args in ([b"SET", b"k", b"v"], [b"APPEND", b"k", long], [b"X", long, b"z", long + b"y", 12, "t"]):
        parts = command_parts(*args)
        assert b"".join(parts) == command(*args)
        assert [part for part in parts if len(part) >= LONG_ARG] == [a for a in args if isinstance(a, bytes)
                                                                     and len(a) >= LONG_ARG]
        assert all(any(part is a for a in args) for part in parts if len(part) >= LONG_ARG)
