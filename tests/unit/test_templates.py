"""Redis 8.10's hash templates (RDB 15): HASH_TEMPLATE records and the hashes of types 29-32 read
as plain hashes, as librdb's tests expect them; RDB 14 and 15 headers over older types; the
Dragonfly types that share the numbers 30-37; `--jobs` reading keys that name a template defined
at the start of the file; the Writer, `rewrite --target` and the fuzz seed of these records."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

import rdbspec
from rdbspec import cli
from rdbspec.errors import EXIT_CODES, IntegrityError, RdbError, UnwritableError
from rdbspec.read import parallel
from rdbspec.read.checksum import crc64
from rdbspec.read.values import HASH_TMPL_ARRAY, HASH_TMPL_ARRAY_REF, HASH_TMPL_LP, HASH_TMPL_LP_REF
from rdbspec.rewrite import rewrite
from rdbspec.server.templates import strictly_ascending, template_fields
from rdbspec.write.convert import Converter
from rdbspec.write.writer import Writer
from tests.support import dragonfly_dumps, template_dump

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
REAL = Path(__file__).resolve().parents[1] / "corpus" / "real"

# librdb test/dumps/*.json for the tests of test/test_rdb_to_json.c (JSON compared order-insensitively)
LIBRDB = {
    "rdb15_hash_template_lp_ref": {f"h{n}": {"name": f"n{n}", "age": f"a{n}", "city": f"c{n}"} for n in range(1, 6)},
    "rdb15_hash_template_array_ref": {f"k{n}": {"alpha": f"A{n}", "beta": f"B{n}", "gamma": f"G{n}",
                                                "delta": f"D{n}"} for n in range(1, 4)},
    "rdb15_hash_template_values": {f"e{n}": {"num": str(n * 1000000), "empty": "", "big": "a" * 400}
                                   for n in range(1, 4)},
    "rdb15_hash_template_self_lp": {f"h{n}": {"age": f"a{n}", "city": f"c{n}", "name": f"n{n}"} for n in range(1, 4)},
    "rdb15_hash_template_self_array": {f"h{n}": {"age": f"a{n}", "city": f"c{n}", "name": f"n{n}"}
                                       for n in range(1, 4)},
    "rdb15_multiple_types": {"str": "hello world", "myzset": {"one": 1.0, "two": 2.0, "three": 3.0},
                             "myhash": {"f1": "v1", "f2": "v2", "f3": "v3"},
                             "mylist": ["a", "b", "c", "1", "2", "3"], "myset": ["x", "y", "z"]},
}


def golden(name: str) -> bytes:
    """A golden fixture's bytes (the hex before each `#`)."""
    text = (GOLDEN / f"{name}.hex").read_text()
    return bytes.fromhex("".join(line.split("#")[0] for line in text.splitlines()))


def with_checksum(data: bytes | bytearray) -> bytes:
    out = bytearray(data)
    out[-8:] = struct.pack("<Q", crc64(bytes(out), 0, len(out) - 8))
    return bytes(out)


def dump_lines(path: Path, tmp_path: Path, *args: str) -> tuple[int, list[dict]]:
    out = tmp_path / "out.jsonl"
    out.unlink(missing_ok=True)
    code = cli.main(["dump", str(path), *args, "-o", str(out)])
    return code, [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []


def as_librdb(line: dict) -> object:
    """A `dump` line's value as librdb's JSON holds it (a hash or sorted set as an object)."""
    value = line["value"]
    if line["type"] in ("hash", "zset"):
        return dict(value)
    return sorted(value) if line["type"] == "set" else value


@pytest.mark.parametrize("name", sorted(LIBRDB))
def test_template_hashes_read_as_librdb_expects(name: str, tmp_path: Path, each_backend: str) -> None:
    """`dump` gives each template hash the fields and values librdb's test expects of the same
    content (test_r2j_hash_template_*_v15, test_r2j_multiple_types_v15), as a plain hash."""
    path = tmp_path / f"{name}.rdb"
    path.write_bytes(golden(name))
    code, lines = dump_lines(path, tmp_path)
    assert code == 0
    assert {line["key"]: as_librdb(line) for line in lines} == LIBRDB[name]
    with rdbspec.open(path) as dump:
        rows = [(r.type_name, r.encoding, r.count_elements()) for r in dump.keys()]
    if name != "rdb15_multiple_types":
        assert {row[0] for row in rows} == {"hash"}
        assert {row[1] for row in rows} <= {"template-listpack", "template-array"}
        assert [row[2] for row in rows] == [len(v) for v in LIBRDB[name].values()]


def test_info_counts_the_templates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.rdb"
    path.write_bytes(golden("rdb15_hash_template_lp_ref"))
    assert cli.main(["info", "--json", str(path)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["version"] == 15 and info["hash_templates"] == 1 and info["types"] == {"hash": 5}


@pytest.mark.parametrize("version", [b"0014", b"0015"])
def test_rdb14_and_15_headers_over_older_types_read_as_rdb12(version: bytes, tmp_path: Path) -> None:
    """A dump of Redis 7.4 (RDB 12) with the header of RDB 14 or 15: every line of `dump`, and
    `keys`, are those of the RDB 12 file (no type it holds changed meaning)."""
    source = REAL / "redis-7.4.1" / "mixed_types.rdb"
    twin = tmp_path / "twin.rdb"
    twin.write_bytes(with_checksum(b"REDIS" + version + source.read_bytes()[9:]))
    for args in ([], ["--include-deleted"]):
        assert dump_lines(twin, tmp_path, *args) == dump_lines(source, tmp_path, *args)
    with rdbspec.open(source) as a, rdbspec.open(twin) as b:
        assert [(r.key, r.rdb_type, r.value_kind, r.encoding) for r in a.keys()] == \
            [(r.key, r.rdb_type, r.value_kind, r.encoding) for r in b.keys()]
        assert b.header.version == int(version)


def test_dragonfly_types_30_to_37_stay_dragonfly(tmp_path: Path) -> None:
    """Dragonfly writes REDIS0009 with its own types 30-37 (dragonfly src/server/rdb_extensions.h),
    the numbers Redis 8.10 gives its template hashes in RDB 15: the version decides. The same
    records under a REDIS0015 header are not Dragonfly's."""
    dragonfly_dumps.build(tmp_path)
    path = tmp_path / "rdb" / "dump.rdb"
    kinds = {}
    for snapshot in (tmp_path / "set", path):  # a DFS set and a single-file snapshot
        with rdbspec.open(snapshot) as dump:
            kinds |= {r.rdb_type: (r.value_kind, r.type_name) for r in dump.keys() if r.rdb_type >= 30}
            assert dump.header.dialect == "dragonfly" and dump.hash_templates == []
    assert set(kinds) == set(range(30, 38))
    assert all(kind == rdb_type for rdb_type, (kind, _) in kinds.items())
    assert {name for _, name in kinds.values()} == {"json", "hash", "set", "bloom", "cms", "topk", "cuckoo"}
    renamed = tmp_path / "v15.rdb"
    renamed.write_bytes(b"REDIS0015" + path.read_bytes()[9:])
    with pytest.raises(RdbError), rdbspec.open(renamed, verify_checksum=False) as dump:
        for record in dump.keys():
            _ = record.value


def self_contained_listpack(names: list[bytes]) -> bytes:
    """A REDIS0015 file of one type-29 key whose field names are the listpack `names`."""
    def entries(items: list[int | bytes]) -> bytes:
        body = b"".join(bytes([v, 1]) if isinstance(v, int) else bytes([0x80 | len(v)]) + v + bytes([len(v) + 1])
                        for v in items)
        blob = struct.pack("<IH", 7 + len(body), len(items)) + body + b"\xff"
        return bytes([len(blob)]) + blob
    record = b"\x1d\x01k" + b"\x00" + entries(list(names)) + entries([0, *[b"v"] * len(names)])
    return with_checksum(b"REDIS0015\xfe\x00" + record + b"\xff" + bytes(8))


def test_listpack_names_out_of_order_are_refused(tmp_path: Path) -> None:
    """The order of names a listpack carries (fields format 0) is checked as the loader checks it
    (redis src/rdb.c rdbLoadTemplateFields: "template fields not strictly sorted"): exit 5."""
    good = tmp_path / "good.rdb"
    good.write_bytes(self_contained_listpack([b"a", b"b", 12]))
    assert dump_lines(good, tmp_path)[1][0]["value"] == [["a", "v"], ["b", "v"], ["12", "v"]]
    bad = tmp_path / "bad.rdb"
    bad.write_bytes(self_contained_listpack([b"b", b"a"]))
    with pytest.raises(IntegrityError, match="not strictly ascending"), rdbspec.open(bad) as dump:
        for record in dump.keys():
            _ = record.value
    assert dump_lines(bad, tmp_path)[0] == EXIT_CODES["integrity"]


def test_the_order_of_template_fields() -> None:
    """sdscmplen: a shorter name first, then byte by byte; no name twice."""
    assert template_fields([b"name", b"city", b"age", b"name", b"12"]) == [b"12", b"age", b"city", b"name"]
    assert strictly_ascending([b"zz", b"aaa"]) and not strictly_ascending([b"b", b"a"])
    assert not strictly_ascending([b"a", b"a"])


def test_the_writer_writes_templates_and_the_four_types(tmp_path: Path, each_backend: str) -> None:
    path = tmp_path / "w.rdb"
    written = template_dump.build(path, 8)
    with rdbspec.open(path) as dump:
        read = {r.key: (r.rdb_type, r.value_kind, dict(r.value)) for r in dump.keys()}
        assert dump.hash_templates == [1] and dump.checksum_status == "ok"
    assert {key: pairs for key, (_, _, pairs) in read.items()} == written
    assert [read[b"user:%d" % n][:2] for n in range(4)] == [
        (30, HASH_TMPL_LP_REF), (32, HASH_TMPL_ARRAY_REF), (29, HASH_TMPL_LP), (31, HASH_TMPL_ARRAY)]


def test_the_writer_refuses_what_rdb_15_cannot_hold(tmp_path: Path) -> None:
    with Writer(tmp_path / "old.rdb", 12) as out, pytest.raises(UnwritableError, match="RDB 15"):
        out.hash_template(1, [b"a"])
    with Writer(tmp_path / "new.rdb", 15) as out:
        out.hash_template(1, [b"a", b"b"])
        out.select_db(0)
        with pytest.raises(UnwritableError, match="hash template 2"):
            out.template_hash(b"k", {b"a": b"1", b"b": b"2"}, template_id=2)
        with pytest.raises(UnwritableError, match="hash template 1"):
            out.template_hash(b"k", {b"a": b"1"}, template_id=1)  # not the template's fields


def test_rewrite_for_an_older_server_makes_plain_hashes(tmp_path: Path) -> None:
    """`rewrite --target` below RDB 15 writes each template hash as a plain hash of the same fields
    (nothing lost) and no HASH_TEMPLATE record; a rewrite for RDB 15 copies them as they are."""
    source = tmp_path / "t.rdb"
    written = template_dump.build(source, 8, late=False)
    older = tmp_path / "older.rdb"
    converter = Converter(12)
    rewrite(source, older, converter=converter)
    assert not converter.dropped
    with rdbspec.open(older) as dump:
        read = {r.key: (r.rdb_type, dict(r.value)) for r in dump.keys()}
        assert dump.header.version == 12 and dump.hash_templates == []
    assert {key: pairs for key, (_, pairs) in read.items()} == written
    assert {rdb_type for _, (rdb_type, _) in read.items()} <= {4, 16}
    same = tmp_path / "same.rdb"
    rewrite(source, same)  # copied: the same records (and a RESIZEDB the Writer above left out)
    with rdbspec.open(source) as a, rdbspec.open(same) as b:
        assert [(r.rdb_type, r.key, r.value) for r in a.keys()] == [(r.rdb_type, r.key, r.value) for r in b.keys()]
        assert b.hash_templates == [1]
    assert same.read_bytes()[:46] == source.read_bytes()[:46]  # the header, AUX field and template, as they were


def test_rewrite_refuses_a_template_among_the_keys(tmp_path: Path) -> None:
    """A template after the first database is not a record rewrite writes again: refused by name,
    unless the target has no templates (its hashes become plain ones)."""
    source = tmp_path / "late.rdb"
    written = template_dump.build(source, 8, late=True)
    with pytest.raises(UnwritableError, match="hash templates among its keys"):
        rewrite(source, tmp_path / "copy.rdb")
    rewrite(source, tmp_path / "older.rdb", converter=Converter(12))
    with rdbspec.open(tmp_path / "older.rdb") as dump:
        assert {r.key: dict(r.value) for r in dump.keys()} == written


def test_rewrite_commands_over_template_hashes(tmp_path: Path) -> None:
    """A key a command renames is written again by the generated writers, which check it against
    the templates the rewrite copied."""
    source = tmp_path / "t.rdb"
    written = template_dump.build(source, 4)
    commands = tmp_path / "commands.txt"
    commands.write_text("RENAME user:0 renamed:0\nRENAME user:1 renamed:1\n")
    out = tmp_path / "out.rdb"
    assert cli.main(["rewrite", str(source), "-o", str(out), "--commands", str(commands)]) == 0
    with rdbspec.open(out) as dump:
        read = {r.key: (r.rdb_type, dict(r.value)) for r in dump.keys()}
    assert read[b"renamed:0"] == (30, written[b"user:0"]) and read[b"renamed:1"] == (32, written[b"user:1"])


@pytest.fixture
def rdbspec_main(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                 pieces: list[parallel.Piece]):
    """`rdbspec ARGS -o OUT` in this process, with ranges of `split_size` bytes; the ranges read."""
    def run(args: list[str], split_size: int) -> tuple[int, bytes, str, int]:
        monkeypatch.setenv(parallel.ENV_SPLIT_SIZE, str(split_size))
        out = tmp_path / "out"
        out.unlink(missing_ok=True)
        pieces.clear()
        code = cli.main([*args, "-o", str(out)])
        return code, out.read_bytes() if out.exists() else b"", capsys.readouterr().err, len(pieces)

    return run


@pytest.mark.parametrize("late", [False, True], ids=["templates first", "a template among the keys"])
@pytest.mark.parametrize("command", [["dump"], ["keys", "--memory"], ["info", "--json"]], ids=" ".join)
def test_jobs_read_keys_that_name_a_template(tmp_path: Path, rdbspec_main, command: list[str], late: bool) -> None:
    """`--jobs 2` over ranges of 2 kB reads what `--jobs 1` reads: each worker reads the templates
    at the start of the file before its range; a template among the keys ends the cutting (the
    ranges after it would not know it)."""
    path = tmp_path / "many.rdb"
    template_dump.build(path, 400, late=late)
    args = [command[0], str(path), *command[1:]]
    one = rdbspec_main([*args, "--jobs", "1"], 2_000)
    many = rdbspec_main([*args, "--jobs", "2"], 2_000)
    assert many[:3] == one[:3] and one[0] == 0 and one[1]
    assert one[3] == 0 and many[3] > 1
    if command[0] == "keys":
        rows = [json.loads(line) for line in one[1].splitlines()]
        assert {row["memory"] is None for row in rows if row["key"].startswith("user:")} == {True}
        assert [row["memory"] for row in rows if row["key"] == "plain"] != [None]
