"""Valkey 9 as a target (issue 30, point 5): `Target` and `target_of` (rdbspec/server/versions.py),
Valkey's HASH_2 written by `Writer.hash_with_ttls`, and `rewrite --target valkey-9.x` on the inputs
made here (golden fixtures, Dragonfly snapshots, Redis 8.8 and 8.10 files, Valkey 9.2 files): a
VALKEY080 dump in which the hashes with field TTLs are HASH_2 with their TTLs, and what Valkey
9 cannot hold refused by name or dropped with --allow-lossy. Valkey 9.1 loading such dumps:
tests/servers/test_convert.py."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from rdbspec_generated.enums import ValueType
from rdbspec_generated.hash import HashListpackEx
from rdbspec_generated.rdb import KeyValue

import rdbspec
from rdbspec import Writer, cli, rewrite
from rdbspec.errors import EXIT_CODES, UnwritableError
from rdbspec.server.versions import TARGETS, Target, target_of
from rdbspec.write import convert
from rdbspec.write.layouts import key_hash_slot, rdb_string
from tests.support import dragonfly_dumps, template_dump
from tests.support.rdb14 import golden_file
from tests.support.valkey_dumps import write_valkey081

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "conformance"))

from golden import GOLDEN_DIR, load_fixture  # noqa: E402

VALKEY_9 = TARGETS["valkey-9.1"]
LATER = 4102444800000  # 2100-01-01 in Unix ms
HASH_LISTPACK_EX = ValueType.HASH_LISTPACK_EX


# -- targets -----------------------------------------------------------------------------------


def test_a_target_is_its_version_and_magic() -> None:
    assert Target(9).magic == "REDIS0009" and Target(12).magic == "REDIS0012"
    assert TARGETS["valkey-9.0"] == TARGETS["valkey-9.1"] == Target(80, valkey=True)
    assert VALKEY_9.magic == "VALKEY080"
    assert (VALKEY_9.layouts, Target(12).layouts) == (11, 12)  # Valkey 9 loads Redis's layouts up to RDB 11
    assert {name: (t.version, t.valkey) for name, t in TARGETS.items() if not name.startswith("valkey-9")} == {
        "redis-6.0": (9, False), "redis-6.2": (9, False), "redis-7.0": (10, False), "redis-7.2": (11, False),
        "redis-7.4": (12, False), "redis-8.0": (12, False), "valkey-8.0": (11, False)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        VALKEY_9.version = 81  # type: ignore[misc]


@pytest.mark.parametrize(("server", "version", "name"), [
    ("redis", (7, 0), "redis-7.0"), ("redis", (8, 4), "redis-8.0"), ("redis", (7, 4), "redis-7.4"),
    ("redis", (7, 9), "redis-7.4"),  # 8.0's milestones report 7.9.x
    ("redis", (8, 6), "redis-8.0"), ("redis", (6, 0), "redis-6.0"), ("redis", (5, 0), None),
    ("valkey", (9, 1), "valkey-9.1"), ("valkey", (9, 0), "valkey-9.0"), ("valkey", (9, 2), "valkey-9.1"),
    ("valkey", (8, 1), "valkey-8.0"), ("valkey", (7, 2), "redis-7.2"),  # Valkey 7.2 is Redis 7.2.4's fork
])
def test_the_newest_target_a_server_loads(server: str, version: tuple[int, int], name: str | None) -> None:
    assert target_of(server, version) == name


def test_a_server_family_is_redis_or_valkey() -> None:
    with pytest.raises(ValueError, match="not a server family: 'dragonfly'"):
        target_of("dragonfly", (1, 0))


# -- the converter and the writer --------------------------------------------------------------


def test_the_converter_of_a_target() -> None:
    converter = convert.Converter.for_target(VALKEY_9, allow_lossy=True, compress=False)
    assert (converter.version, converter.valkey, converter.allow_lossy, converter.compress) == (80, True, True, False)
    assert not convert.Converter.for_target(TARGETS["redis-7.0"]).valkey
    with pytest.raises(UnwritableError, match="VALKEY081 is not written: the VALKEY dumps written are Valkey 9's "
                                              "VALKEY080"):
        convert.Converter(81, valkey=True)
    with pytest.raises(UnwritableError, match=r"RDB 80 is not written: versions 9 to 12 \(.*valkey-9.1 VALKEY080\)"):
        convert.Converter(80)


def test_the_writer_writes_valkey_hash_2(tmp_path: Path) -> None:
    """HASH_2 as valkey src/rdb.c rdbSaveObject writes it: the bytes of the golden fixture (the first
    field from a Valkey DUMP); a later row of a field replaces the earlier; without TTLs, a plain hash."""
    path = tmp_path / "h2.rdb"
    with Writer(path, 80, valkey=True) as out:
        out.select_db(0, 3, 0)
        out.hash_with_ttls(b"h", [(b"Z", b"old", None), (b"k", b"v", None), (b"Z", b"Y", 1774986721702)])
        out.hash_with_ttls(b"m", {b"a": (b"1", LATER)})
        out.hash_with_ttls(b"plain", {b"a": (b"1", None)})
    data = path.read_bytes()
    assert bytes([22, 1]) + b"h" + load_fixture("hash_valkey_hash_2", GOLDEN_DIR).data in data
    with rdbspec.open(path) as dump:
        h, m, plain = dump.keys()
        assert (h.rdb_type, h.value, h.field_expire_at_ms) == (22, [(b"Z", b"Y"), (b"k", b"v")],
                                                               [(b"Z", 1774986721702)])
        assert (m.rdb_type, m.field_expire_at_ms) == (22, [(b"a", LATER)])
        assert (plain.rdb_type, plain.value, plain.field_expire_at_ms) == (16, [(b"a", b"1")], None)


def test_the_writer_writes_hash_2_only_in_a_valkey_dump(tmp_path: Path) -> None:
    with pytest.raises(UnwritableError, match="HASH_2, in a VALKEY dump, not in REDIS0012"), \
            Writer(tmp_path / "no.rdb", 12) as out:
        out.select_db(0)
        out.hash_with_ttls(b"h", {b"f": (b"v", LATER)})
    with pytest.raises(ValueError, match="not negative"), Writer(tmp_path / "no.rdb", 80, valkey=True) as out:
        out.select_db(0)
        out.hash_with_ttls(b"h", {b"f": (b"v", -5)})
    assert not (tmp_path / "no.rdb").exists()


# -- rewrite --target valkey-9.x -----------------------------------------------------------------


def _keys(path: Path) -> dict[bytes, tuple[int, list, list | None]]:
    with rdbspec.open(path) as dump:
        assert dump.header.magic == "VALKEY080"
        return {k.key: (k.rdb_type, k.value, k.field_expire_at_ms) for k in dump.keys()}


@pytest.mark.parametrize("name", ["rdb_librdb_hash_pre_ga_22", "rdb_valkey_slot_import"])
def test_field_ttls_become_hash_2_and_keep_their_ttls(name: str, tmp_path: Path) -> None:
    """Redis 7.4-rc's type 22 (under REDIS magic) becomes HASH_2 with the same fields and TTLs; a
    VALKEY080 file (a HASH_2, Valkey 9's SLOT_IMPORT before the databases) is written as it was."""
    source = tmp_path / "source.rdb"
    source.write_bytes(load_fixture(name, GOLDEN_DIR).data)
    out = tmp_path / "valkey.rdb"
    converter = convert.Converter.for_target(VALKEY_9)
    rewrite.rewrite(source, out, converter=converter)
    assert not converter.dropped
    with rdbspec.open(source) as dump:
        before = {k.key: (k.value, k.field_expire_at_ms) for k in dump.keys()}
    after = _keys(out)
    assert {key: (value, ttls) for key, (_, value, ttls) in after.items()} == before
    assert {rdb_type for rdb_type, _, _ in after.values()} == {22}
    if name == "rdb_valkey_slot_import":
        assert out.read_bytes() == source.read_bytes()


def test_a_redis_7_4_cluster_dump_gets_valkey_slot_counts(tmp_path: Path) -> None:
    """Redis 7.4's SLOT_INFO records become Valkey 9's `slot-info` AUX fields (valkey src/rdb.c
    rdbSaveDb): the slot, its keys, those with an expiry, those with volatile items (the hashes
    with field TTLs, HASH_2 now)."""
    source = tmp_path / "cluster.rdb"
    ttl_hash = HashListpackEx.from_bytes(load_fixture("hash_listpack_ex_25", GOLDEN_DIR).data)
    a, b = key_hash_slot(b"{a}"), key_hash_slot(b"{b}")
    with Writer(source, 12) as out:
        out.select_db(0, 4, 1)
        for slot in sorted((a, b)):
            out.slot_info(slot, *((3, 0) if slot == a else (1, 1)))
            if slot == a:
                out.string(b"{a}1", b"v")
                out.string(b"{a}2", b"v")
                out.record(HASH_LISTPACK_EX, KeyValue._new(type_code=HASH_LISTPACK_EX, is_valkey=False, rdb_version=12,
                                                           key=rdb_string(b"{a}h"), value=ttl_hash))
            else:
                out.string(b"{b}1", b"v", expire_at_ms=LATER)
    out_path = tmp_path / "valkey.rdb"
    rewrite.rewrite(source, out_path, converter=convert.Converter.for_target(VALKEY_9))
    assert _keys(out_path)[b"{a}h"] == (22, [(b"f1", b"v1"), (b"f2", b"v2")], [(b"f1", 1700000000500)])
    with rdbspec.open(out_path) as dump:
        list(dump.keys())
        counts = {int(v.split(b",")[0]): [int(n) for n in v.split(b",")[1:]] for k, v in dump.aux
                  if k == b"slot-info"}
        assert dump.slot_info == []
    assert counts == {a: [3, 0, 1], b: [1, 1, 0]}


def test_a_dragonfly_snapshot_keeps_its_hash_field_ttls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Dragonfly's hashes with member TTLs (31: whole seconds) become HASH_2 with the same
    expiries; its sets with member TTLs lose them; its own types are dropped by name."""
    dragonfly_dumps.build(tmp_path / "df")
    source = tmp_path / "df" / "set"
    out = tmp_path / "valkey.rdb"
    assert cli.main(["rewrite", str(source), "-o", str(out), "--target", "valkey-9.1"]) == EXIT_CODES["unwritable"]
    assert "VALKEY080 cannot hold Dragonfly " in capsys.readouterr().err and not out.exists()
    assert cli.main(["rewrite", str(source), "-o", str(out), "--target", "valkey-9.1", "--allow-lossy"]) == 0
    dropped = [line.split(": dropped ")[1] for line in capsys.readouterr().err.splitlines() if ": dropped " in line]
    assert "set member TTLs (Dragonfly type 32): 1" in dropped
    assert not any("hash field TTLs" in line for line in dropped)
    with rdbspec.open(source) as dump:
        before = {k.key: (k.value, k.field_expire_at_ms) for k in dump.keys() if k.rdb_type == 31}
    after = _keys(out)
    assert before and {key: (after[key][1], after[key][2]) for key in before} == before
    assert {after[key][0] for key in before} == {22}


def test_what_valkey_9_cannot_hold_is_refused_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Redis 8.8's sparse arrays and NACK zones, Redis 8.6's IDMP settings and producers, Valkey
    9.2's path hashes: refused by name, or dropped and counted with --allow-lossy."""
    sources = {"Redis 8.8 array keys (type 28)": golden_file("rdb_redis14_array_basic", tmp_path),
               "stream NACK zones (type 27": golden_file("stream_rdb_t27_xnack", tmp_path),
               "stream IDMP settings and producers (types 26 and 27)": golden_file("stream_rdb_t26", tmp_path),
               "Valkey 9.2 path-hash keys (type 23)": write_valkey081(tmp_path / "valkey92.rdb")}
    for what, source in sources.items():
        out = source.with_suffix(".valkey.rdb")
        assert cli.main(["rewrite", str(source), "-o", str(out), "--target", "valkey-9.0"]) == EXIT_CODES["unwritable"]
        assert f"VALKEY080 cannot hold {what}" in capsys.readouterr().err and not out.exists()
        assert cli.main(["rewrite", str(source), "-o", str(out), "--target", "valkey-9.0", "--allow-lossy"]) == 0
        assert any(line.startswith(f"rdbspec rewrite: dropped {what}")
                   for line in capsys.readouterr().err.splitlines())
        with rdbspec.open(source) as dump:
            kept = {k.key for k in dump.keys() if k.value_kind not in convert.NO_OLDER_FORM}
        after = _keys(out)
        assert set(after) == kept
        assert {rdb_type for rdb_type, _, _ in after.values() if rdb_type in convert.STREAM_TYPES} <= \
            {convert.stream_type(80, valkey=True)}


def test_template_hashes_become_plain_hashes(tmp_path: Path) -> None:
    """Redis 8.10's template hashes (RDB 15) are plain hashes of the same fields for Valkey 9, and
    their HASH_TEMPLATE records are not written: nothing is lost."""
    source = tmp_path / "t.rdb"
    written = template_dump.build(source, 8, late=False)
    out = tmp_path / "valkey.rdb"
    converter = convert.Converter.for_target(VALKEY_9)
    rewrite.rewrite(source, out, converter=converter)
    assert not converter.dropped
    assert {key: dict(value) for key, (_, value, _) in _keys(out).items()} == written
    with rdbspec.open(out) as dump:
        list(dump.keys())
        assert dump.hash_templates == []
