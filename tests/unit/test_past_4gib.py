"""Dumps over 4 GiB, cheaply: a sparse file (tests/support/sparse_dump.py) whose first key is a string
of more than 2^32 bytes, all of them a hole, and whose other keys lie past 2^32. Offsets, sizes and
lengths past 32 bits through the library and every command that reads the file (in one process and in
byte ranges read by workers: `--jobs 2`, its ranges past 2^32), the string measured from its header and
never read (its memory, `info`'s check, `keys`, `prefixes`, `report`). Each with both parsing backends.
The run over a whole dump of 5 GiB written by a server is bench/large.py's (`make test-large`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rdbspec
from rdbspec import cli, memory
from rdbspec.jsonl import dumps_bytes, record_json
from rdbspec.memory.redis import DICT_ENTRY, ROBJ
from rdbspec.read import parallel
from rdbspec.read.dumpfile import STRING_PIECE, KeyRecord
from rdbspec.write.convert import Converter
from tests.support import sparse_dump
from tests.support.sparse_dump import AFTER, BIG, ENTRIES, HASH, HOLE, LIST, PENDING, STRINGS

pytestmark = pytest.mark.usefixtures("each_backend")
PAST_32_BITS = 1 << 32


@pytest.fixture(scope="module")
def sparse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sparse_dump.build(tmp_path_factory.mktemp("sparse") / "past-4gib.rdb")


@pytest.fixture
def big_never_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decoding `big`'s value (4 GiB of zeros) fails, in this process and in the workers it forks: a
    command measures the string from its header."""
    for name in ("_decode", "plain_string"):
        real = getattr(KeyRecord, name)

        def guarded(record: KeyRecord, real=real):  # type: ignore[no-untyped-def]
            assert record.key != BIG, "the big string's value was decoded"
            return real(record)

        monkeypatch.setattr(KeyRecord, name, guarded)


def test_the_file_is_over_4_gib_and_takes_no_disk(sparse: Path) -> None:
    assert sparse.stat().st_size > PAST_32_BITS
    assert sparse.stat().st_blocks * 512 < 1 << 20


def test_offsets_sizes_and_values_past_32_bits(sparse: Path) -> None:
    with rdbspec.open(sparse) as dump:
        big, *after = list(dump.keys())
        assert [r.key for r in after] == AFTER
        assert big.key == BIG and big.size == len(sparse_dump.big_record()) + HOLE
        assert after[0].offset == big.offset + big.size > PAST_32_BITS
        assert all(r.offset + r.size == s.offset for r, s in zip(after, after[1:]))
        assert dump.end_offset == after[-1].offset + after[-1].size + 1  # EOF
        values = {r.key: r.value for r in after}
        assert dump.checksum_status == "disabled (0)"
    assert values[b"after:list"] == LIST
    stream = values[b"after:stream"]
    assert [(e.id, e.fields) for e in stream.entries()] == ENTRIES
    assert {p.id: p.consumer for p in stream.groups[0].pending} == PENDING
    assert values[b"after:hash"] == HASH
    assert {k: v for k, v in values.items() if k in STRINGS} == STRINGS


@pytest.mark.usefixtures("big_never_read")
def test_the_big_string_is_measured_from_its_header_never_read(sparse: Path) -> None:
    with rdbspec.open(sparse) as dump:
        big = next(dump.keys())
        stored = big.stored_string()
        assert (stored.length, stored.raw_at, stored.lzf) == (HOLE, big.offset + len(sparse_dump.big_record()), False)
        assert big.count_elements() is None and not big.skipped_by_server
        model = memory.model_for(dump)
        assert model.usage(big) == ROBJ + model.sds(HOLE) + model.sds(len(BIG)) + DICT_ENTRY  # a RAW string
        assert next(big.string_pieces()) == bytes(STRING_PIECE)  # its first piece only


def _run(args: list[str], out: Path, capsys: pytest.CaptureFixture[str]) -> bytes:
    assert cli.main([*args, "-o", str(out)]) == 0, capsys.readouterr().err
    return out.read_bytes()


COMMANDS = [["info", "--json"], ["keys", "--memory"], ["prefixes"], ["report", "--json", "--now", "1800000000000"],
            ["dump", "--key", "^after:"]]


@pytest.mark.usefixtures("big_never_read")
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_commands_in_one_process_and_in_ranges_past_32_bits(sparse: Path, command: list[str], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           pieces: list[parallel.Piece]) -> None:
    args = [command[0], str(sparse), *command[1:]]
    one = _run([*args, "--jobs", "1"], tmp_path / "one", capsys)
    monkeypatch.setenv(parallel.ENV_SPLIT_SIZE, "4096")
    assert _run([*args, "--jobs", "2"], tmp_path / "two", capsys) == one
    assert len(pieces) > 2 and (pieces[-1].split.start or 0) > PAST_32_BITS
    if command[0] == "info":
        info = json.loads(one)
        assert info["databases"] == {"0": {"keys": 1 + len(AFTER), "expires": 0}} and info["checksum"] == "disabled (0)"
    elif command[0] == "keys":
        rows = [json.loads(line) for line in one.splitlines()]
        assert [r["key"] for r in rows] == [k.decode() for k in [BIG, *AFTER]]
        assert rows[0]["size_in_file"] == len(sparse_dump.big_record()) + HOLE and rows[0]["memory"] > HOLE
    elif command[0] == "report":
        totals = json.loads(one)["totals"]
        assert totals["keys"] == 1 + len(AFTER) and totals["size_in_file"] > HOLE
    elif command[0] == "dump":
        with rdbspec.open(sparse) as dump:
            expected = b"".join(dumps_bytes(record_json(r)) + b"\n" for r in dump.keys() if r.key != BIG)
        assert one == expected


def test_stream_commands_past_32_bits(sparse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    got = json.loads(_run(["xrange", str(sparse), "after:stream", "-", "+", "COUNT", "3", "--json"], tmp_path / "x",
                          capsys))
    assert [(e["id"], e["fields"]) for e in got] == [
        (f"{ms}-{seq}", [[f.decode(), v.decode()] for f, v in fields]) for (ms, seq), fields in ENTRIES[:3]]
    info = json.loads(_run(["xinfo", "stream", str(sparse), "after:stream", "--json"], tmp_path / "i", capsys))
    assert (info["length"], info["groups"]) == (len(ENTRIES), 1)
    pending = json.loads(_run(["xpending", str(sparse), "after:stream", "g", "--json"], tmp_path / "p", capsys))
    assert pending[0] == len(PENDING)


@pytest.mark.parametrize("target", [[], ["--rdb-version", "9", "--type", "string"]], ids=["as-is", "rdb-9"])
def test_rewrite_reads_past_32_bits(sparse: Path, target: list[str], tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The keys after the big string, rewritten (the whole file would write its hole as 4 GiB of zeros:
    bench/large.py rewrites a whole dump over 4 GiB), as they are, or the strings for RDB 9, which a
    conversion copies as their bytes (never read whole)."""
    real = Converter.key

    def key(converter: Converter, record: KeyRecord) -> KeyRecord:
        assert record.type_name != "string", "a string was converted"
        return real(converter, record)

    monkeypatch.setattr(Converter, "key", key)
    out = tmp_path / "after.rdb"
    assert cli.main(["rewrite", str(sparse), "-o", str(out), "--exclude-key", "^big$", *target]) == 0, \
        capsys.readouterr().err
    with rdbspec.open(sparse) as source, rdbspec.open(out) as rewritten:
        expected = [dumps_bytes(record_json(r)) for r in source.keys()
                    if r.key != BIG and (not target or r.type_name == "string")]
        assert [dumps_bytes(record_json(r)) for r in rewritten.keys()] == expected
        assert rewritten.header.version == (9 if target else 10)
