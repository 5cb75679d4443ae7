"""The dumps other projects publish (redis-rdb-tools' and librdb's test suites), read from
../shared/corpus/peers and never copied into this repository. Only `make test-peers` runs
these (marker ``peers``; `make test` deselects it); without ../shared they fail saying so.
What they check is covered for `make test` by the project's own dumps: `test_legacy_dumps.py`,
`test_corpus.py`, `test_real_servers.py` and the golden fixtures."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from test_corpus import _id, dump_records  # noqa: E402

import rdbspec
from tests.support.rdbtools_values import assert_rdbtools_agrees  # noqa: E402

pytestmark = pytest.mark.peers

REPO = Path(__file__).resolve().parents[2]
PEERS = REPO.parent / "shared" / "corpus" / "peers"
LIBRDB = PEERS / "librdb"
RDBTOOLS = PEERS / "rdbtools"
GOOD_CHECKSUM = {"ok", "disabled (0)", "absent (RDB < 5)"}


def test_peer_dumps_are_there() -> None:
    assert PEERS.is_dir(), f"{PEERS} is absent: the peers' published dumps live outside the repository"
    assert len(PEER_FILES) >= 40 and len(RDBTOOLS_FILES) >= 28


# -- peers -------------------------------------------------------------------------------------


def _peer_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.rdb")) if directory.is_dir() else []


PEER_FILES = _peer_files(LIBRDB) + _peer_files(RDBTOOLS)


def read_all(path: Path) -> tuple[rdbspec.Dump, list[tuple[rdbspec.KeyRecord, Any]]]:
    with rdbspec.open(path) as dump:
        out = [(record, record.value) for record in dump.keys()]
        _ = [record.field_expire_at_ms for record, _v in out]
    return dump, out


@pytest.mark.parametrize("path", PEER_FILES, ids=_id)
def test_peer_dump_parses_to_the_end(path: Path) -> None:
    dump, records = read_all(path)
    assert dump.checksum_status in GOOD_CHECKSUM
    assert dump.end_offset is not None


@pytest.mark.parametrize("path", PEER_FILES, ids=_id)
def test_peer_dump_through_cli(path: Path, tmp_path: Path) -> None:
    """`rdbspec dump` writes one JSON object per key and exits 0 on every peer dump."""
    dump, records = read_all(path)
    got = dump_records(path, tmp_path)
    assert len(got) == len(records)
    for line in got:
        json.dumps(line)


def _peer(name: str) -> dict[int, dict[bytes, rdbspec.KeyRecord]]:
    path = RDBTOOLS / f"{name}.rdb"
    assert path.is_file(), f"{path} is absent"
    _dump, records = read_all(path)
    dbs: dict[int, dict[bytes, rdbspec.KeyRecord]] = {}
    for record, _value in records:
        dbs.setdefault(record.db, {})[record.key] = record
    return dbs


def test_rdbtools_empty_database() -> None:
    assert _peer("empty_database") == {}


def test_rdbtools_multiple_databases() -> None:
    dbs = _peer("multiple_databases")
    assert sorted(dbs) == [0, 2]
    assert dbs[0][b"key_in_zeroth_database"].value == b"zero"
    assert dbs[2][b"key_in_second_database"].value == b"second"


def test_rdbtools_keys_with_expiry() -> None:
    rec = _peer("keys_with_expiry")[0][b"expires_ms_precision"]
    assert rec.expire_at_ms == 1671963072573  # 2022-12-25 10:11:12.573 UTC
    assert rec.value == b"2022-12-25 10:11:12.573 UTC"


def test_rdbtools_integer_keys() -> None:
    db = _peer("integer_keys")[0]
    assert {k: r.value for k, r in db.items()} == {
        b"125": b"Positive 8 bit integer",
        str(0xABAB).encode(): b"Positive 16 bit integer",
        str(0x0AEDD325).encode(): b"Positive 32 bit integer",
        b"-123": b"Negative 8 bit integer",
        str(-0x7325).encode(): b"Negative 16 bit integer",
        str(-0x0AEDD325).encode(): b"Negative 32 bit integer",
    }


def test_rdbtools_compressed_string_key() -> None:
    db = _peer("easily_compressible_string_key")[0]
    assert db[b"a" * 200].value == b"Key that redis should compress easily"


@pytest.mark.parametrize("name", ["intset_16", "intset_32", "intset_64"])
def test_rdbtools_intsets(name: str) -> None:
    base = {"intset_16": 0x7FFE, "intset_32": 0x7FFEFFFE, "intset_64": 0x7FFEFFFEFFFEFFFE}[name]
    rec = _peer(name)[0][name.encode()]
    assert rec.encoding == "intset" and rec.rdb_type == 11
    assert sorted(int(m) for m in rec.value) == [base - 2, base - 1, base]


@pytest.mark.parametrize("name", ["zipmap_that_compresses_easily", "hash_as_ziplist"])
def test_rdbtools_zipmap_compresses_easily(name: str) -> None:
    rec = _peer(name)[0][b"zipmap_compresses_easily"]
    # exactly the three pairs: no end-marker pseudo entry
    assert rec.value == [(b"a", b"aa"), (b"aa", b"aaaa"), (b"aaaaa", b"aaaaaaaaaaaaaa")]


def test_rdbtools_zipmap_that_doesnt_compress() -> None:
    rec = _peer("zipmap_that_doesnt_compress")[0][b"zimap_doesnt_compress"]
    assert rec.rdb_type == 9
    assert rec.value == [(b"MKD1G6", b"2"), (b"YNNXK", b"F7TI")]


def test_rdbtools_zipmap_with_big_values() -> None:
    rec = _peer("zipmap_with_big_values")[0][b"zipmap_with_big_values"]
    lengths = {f: len(v) for f, v in rec.value}
    assert lengths == {b"253bytes": 253, b"254bytes": 254, b"255bytes": 255, b"300bytes": 300, b"20kbytes": 20000}


def test_rdbtools_dictionary() -> None:
    rec = _peer("dictionary")[0][b"force_dictionary"]
    value = dict(rec.value)
    assert len(rec.value) == len(value) == 1000
    assert value[b"ZMU5WEJDG7KU89AOG5LJT6K7HMNB3DEI43M6EYTJ83VRJ6XNXQ"] == (
        b"T63SOS8DQJF0Q0VJEZ0D1IQFCYTIPSBOUIAI9SB0OV57MQR1FI")
    assert value[b"UHS5ESW4HLK8XOGTM39IK1SJEUGVV9WOPK6JYA5QBZSJU84491"] == (
        b"6VULTCV52FXJ8MGVSFTZVAGK2JXZMGQ5F8OVJI0X6GEDDR27RZ")


def test_rdbtools_ziplists() -> None:
    easy = _peer("ziplist_that_compresses_easily")[0][b"ziplist_compresses_easily"].value
    assert easy == [b"a" * n for n in (6, 12, 18, 24, 30, 36)]
    hard = _peer("ziplist_that_doesnt_compress")[0][b"ziplist_doesnt_compress"].value
    assert hard == [b"aj2410", b"cc953a17a8e096e76a44169ad3f9ac87c5f8248a403274416179aa9fbd852344"]
    ints = _peer("ziplist_with_integers")[0][b"ziplist_with_integers"].value
    assert ints == [str(n).encode() for n in [*range(13), -2, 13, 25, -61, 63, 16380, -16000, 65535, -65523,
                                               4194304, 0x7FFFFFFFFFFFFFFF]]


def test_rdbtools_linkedlist_and_sets() -> None:
    items = _peer("linkedlist")[0][b"force_linkedlist"].value
    assert len(items) == 1000
    assert b"JYY4GIFI0ETHKP4VAJF5333082J4R1UPNPLE329YT0EYPGHSJQ" in items
    assert b"TKBXHJOX9Q99ICF4V78XTCA2Y1UYW6ERL35JCIL1O0KSGXS58S" in items
    members = _peer("regular_set")[0][b"regular_set"].value
    assert sorted(members) == sorted([b"alpha", b"beta", b"gamma", b"delta", b"phi", b"kappa"])


def test_rdbtools_sorted_set_as_ziplist() -> None:
    zset = dict(_peer("sorted_set_as_ziplist")[0][b"sorted_set_as_ziplist"].value)
    assert len(zset) == 3
    assert math.isclose(zset[b"8b6ba6718a786daefa69438148361901"], 1)
    assert math.isclose(zset[b"cb7a24bb7528f934b841b34c3a73e0c7"], 2.37)
    assert math.isclose(zset[b"523af537946b79c4f8369ed39ba78605"], 3.423)


def test_rdbtools_version_5_with_checksum() -> None:
    path = RDBTOOLS / "rdb_version_5_with_checksum.rdb"
    db = _peer("rdb_version_5_with_checksum")[0]
    assert {k: r.value for k, r in db.items() if k != b"abc"} == {
        b"abcd": b"efgh", b"foo": b"bar", b"bar": b"baz", b"abcdef": b"abcdef",
        b"longerstring": b"thisisalongerstring.idontknowwhatitmeans",
    }
    dump, _ = read_all(path)
    assert dump.header.version == 5 and dump.checksum_status == "ok"


def test_rdbtools_version_8_with_64b_length_and_scores() -> None:
    db = _peer("rdb_version_8_with_64b_length_and_scores")[0]
    assert db[b"foo"].value == b"bar"
    bigset = db[b"bigset"]
    assert bigset.rdb_type == 5  # ZSET_2: binary doubles
    zset = dict(bigset.value)
    assert len(bigset.value) == len(zset) == 1000
    assert zset[b"finalfield"] == 2.718
    assert set(zset.values()) == {1.618, 2.718}


def test_rdbtools_redis_50_with_streams() -> None:
    db = _peer("redis_50_with_streams")[0]
    assert db[b"string"].value == b"Hello World"
    assert db[b"number"].value == b"10"
    assert sorted(db[b"set_zipped_1"].value) == [b"1", b"2", b"3", b"4"]
    assert dict(db[b"hash_zipped"].value) == {b"a": b"1", b"b": b"2", b"c": b"3"}
    assert db[b"zset_zipped"].value == [(b"a", 1.0), (b"b", 2.0), (b"c", 3.0)]
    stream = db[b"mystream"]
    assert stream.rdb_type == 15
    value = stream.value
    assert isinstance(value, rdbspec.Stream)
    assert value.length == 4 and value.last_id == (1528199178069, 0)
    entries = [(e.id, e.fields) for e in value.entries()]
    assert entries[0] == ((1528176919539, 0), [(b"message", b"apple")])
    assert entries[-1] == ((1528199178069, 0), [(b"sensor-id", b"123456"), (b"temperature", b"19.10")])
    groups = {g.name: g for g in value.groups}
    assert sorted(groups) == [b"mygroup", b"mygroup2"]
    g = groups[b"mygroup"]
    assert g.last_delivered_id == (1528199075689, 0)
    assert [(p.id, p.consumer, p.delivery_count) for p in g.pending] == [((1528199075689, 0), b"Dave", 1)]
    assert sorted(c.name for c in g.consumers) == [b"Alice", b"Dave"]
    assert groups[b"mygroup2"].pending == [] and groups[b"mygroup2"].consumers == []


def test_rdbtools_module_value() -> None:
    db = _peer("redis_40_with_module")[0]
    assert db[b"simplekey"].value == b"someval"
    assert db[b"foo"].type_name == "module"
    assert db[b"foo"].value.name == "ReJSON-RL"


def test_rdbtools_parser_filters_through_cli(tmp_path: Path) -> None:
    path = RDBTOOLS / "parser_filters.rdb"
    assert path.is_file(), f"{path} is absent"
    keys = {r["key"]: r["value"] for r in dump_records(path, tmp_path, "--key", "^k[0-9]$")}
    assert keys == {"k1": "ssssssss", "k3": "wwwwwwww"}
    zsets = {r["key"] for r in dump_records(path, tmp_path, "--type", "zset")}
    assert zsets == {"z1", "z2", "z3", "z4"}
    db2 = dump_records(RDBTOOLS / "multiple_databases.rdb", tmp_path, "--db", "2")
    assert [r["key"] for r in db2] == ["key_in_second_database"]


RDBTOOLS_FILES = _peer_files(RDBTOOLS)


@pytest.mark.parametrize("path", RDBTOOLS_FILES, ids=_id)
def test_rdbtools_parser_agrees(path: Path) -> None:
    """Every string, list, set, sorted set and hash reads as rdbtools 0.1.15 reads it."""
    assert_rdbtools_agrees(path)
