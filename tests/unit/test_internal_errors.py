"""A bug of rdbspec never reads as corrupt input: any exception that is not about the input ends
every command with exit 70 and one stderr line asking for a report, naming the file offset and
the key being read; `rdbspec --debug` adds the traceback. Errors about the input name the key
whose record was being read when they happened, not the last key read before it.

A bug cannot be made by any input once it is fixed, so the tests here put one in (fault
injection with monkeypatch) into real code reading real dumps.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path

import pytest
from rdbspec_generated import rdb as generated_rdb

import rdbspec
from rdbspec import cli
from rdbspec.errors import EXIT_CODES, InternalError
from rdbspec.read import values
from rdbspec.read.checksum import crc64
from rdbspec.spark import source
from tests.support import dragonfly_dumps as dragonfly_build  # noqa: E402

REAL = Path(__file__).resolve().parents[1] / "corpus" / "real"
BASIC = REAL / "redis-7.0.15" / "stream_basic.rdb"
MIXED = REAL / "redis-7.0.15" / "mixed_types.rdb"
REPORT = "this is a bug in rdbspec, please report it (rdbspec --debug ... prints the traceback)"


def injected_bug(*args, **kwargs):
    raise TypeError("injected bug")


def key_records(path: Path) -> list[rdbspec.KeyRecord]:
    """The keys of a dump, their values not decoded."""
    with rdbspec.open(path) as dump:
        return list(dump.keys())


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    code = cli.main(list(argv))
    return code, capsys.readouterr().err.splitlines()


def test_exit_code_of_a_bug_is_70() -> None:
    assert EXIT_CODES["internal"] == 70
    assert rdbspec.errors.exit_code(TypeError("x")) == 70 and rdbspec.errors.exit_code(KeyError("x")) == 70
    assert rdbspec.errors.exit_code(OSError("x")) == EXIT_CODES["io"]


@pytest.mark.parametrize("argv", [["dump", "FILE"], ["keys", "FILE"], ["xrange", "FILE", "KEY", "-", "+"],
                                  ["xinfo", "stream", "FILE", "KEY"]])
def test_a_bug_while_decoding_a_value_is_an_internal_error(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str],
                                                           argv: list[str]) -> None:
    first = key_records(BASIC)[0]
    argv = [{"FILE": str(BASIC), "KEY": first.key.decode()}.get(a, a) for a in argv]
    monkeypatch.setattr(values, "decode", injected_bug)
    code, err = run_cli(capsys, *argv)
    assert code == 70
    assert err == [f"rdbspec: internal error reading {BASIC} at byte {first.offset} (key {first.key!r}): "
                   f"TypeError: injected bug; {REPORT}"]


@pytest.mark.usefixtures("python_backend")  # the bug goes into a class of the Python parsers
def test_a_bug_while_reading_records_is_an_internal_error(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(generated_rdb.Record, "_read", classmethod(injected_bug))
    code, err = run_cli(capsys, "info", str(BASIC))
    assert code == 70
    assert err == [f"rdbspec: internal error reading {BASIC} at byte 9: TypeError: injected bug; {REPORT}"]


def test_a_bug_in_a_consumer_names_the_record_it_was_writing(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    records = key_records(MIXED)

    def write_records(out, records, include_deleted):  # the second key meets a bug
        for seen, _ in enumerate(records, 1):
            if seen == 2:
                raise KeyError("injected bug")

    monkeypatch.setattr(cli, "write_records", write_records)
    code, err = run_cli(capsys, "dump", str(MIXED))
    assert code == 70
    assert err == [f"rdbspec: internal error reading {MIXED} at byte {records[1].offset} (key {records[1].key!r}): "
                   f"KeyError: 'injected bug'; {REPORT}"]


@pytest.mark.usefixtures("python_backend")  # the bug goes into a class of the Python parsers
def test_a_bug_in_a_dragonfly_shard_names_the_shard_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    dragonfly_build.build(tmp_path)
    read = generated_rdb.Record._read

    def read_with_a_bug(cls, io, pos, parent, root):  # fails on key records: only shards hold them
        if io.buf[pos] < 200:
            raise TypeError("injected bug")
        return read(io, pos, parent, root)

    monkeypatch.setattr(generated_rdb.Record, "_read", classmethod(read_with_a_bug))
    code, err = run_cli(capsys, "dump", str(tmp_path / "set"))
    assert code == 70 and len(err) == 1
    assert err[0].startswith(f"rdbspec: internal error reading {tmp_path / 'set' / 'snap-0000.dfs'} at byte ")
    assert err[0].endswith(f"TypeError: injected bug; {REPORT}")


def test_debug_prints_the_traceback_then_the_line(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(values, "decode", injected_bug)
    code, err = run_cli(capsys, "--debug", "dump", str(BASIC))
    assert code == 70
    assert err[0] == "Traceback (most recent call last):"
    assert 'in injected_bug\n    raise TypeError("injected bug")' in "\n".join(err)
    assert err[-1].startswith("rdbspec: internal error reading") and err[-1].endswith(REPORT)
    assert sum(line.startswith("rdbspec: ") for line in err) == 1


def test_the_library_raises_internal_error_with_the_original_as_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    first = key_records(BASIC)[0]
    monkeypatch.setattr(values, "decode", injected_bug)
    with rdbspec.open(BASIC) as dump, pytest.raises(InternalError) as err:
        for record in dump.keys():
            _ = record.value
    assert not isinstance(err.value, rdbspec.RdbError)
    assert (err.value.offset, err.value.key) == (first.offset, first.key)
    assert isinstance(err.value.__cause__, TypeError) and err.value.cause is err.value.__cause__


def test_a_spark_task_meeting_a_bug_fails_with_the_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a pipeline task raises (`rdbspec pipeline` prints it and exits 70); a bug is never
    skipped as a corrupt file, even with ignoreCorruptFiles."""
    first = key_records(BASIC)[0]
    monkeypatch.setattr(values, "decode", injected_bug)
    opts = source.ReadOptions.parse({"table": "keys", "ignoreCorruptFiles": "true"})
    split = source.Split(str(BASIC))
    with pytest.raises(source.InternalReadError) as err:
        list(source.read_split(split, opts))
    assert str(err.value) == (f"rdbspec: internal error reading {BASIC} at byte {first.offset} "
                              f"(key {first.key!r}): TypeError: injected bug; {REPORT}")


# -- errors about the input name the key being read ----------------------------------------------


def _with_checksum(data: bytes) -> bytes:
    return data[:-8] + struct.pack("<Q", crc64(data, 0, len(data) - 8))


def test_a_record_that_does_not_read_names_its_own_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A string value whose length runs past the end fails while its record is read, before the
    record is returned: the error names that record's key, not the key read before it."""
    records = key_records(MIXED)
    index, record = next((i, r) for i, r in enumerate(records) if i > 0 and r.rdb_type == 0 and len(r.key) < 64)
    data = MIXED.read_bytes()
    value_len_at = record.offset + 2 + len(record.key)
    assert data[value_len_at] < 0x40  # a 6-bit length: replaced by a 32-bit one
    path = tmp_path / "long.rdb"
    path.write_bytes(_with_checksum(data[:value_len_at] + b"\x80\x7f\xff\xff\xff" + data[value_len_at + 1:]))
    code, err = run_cli(capsys, "dump", str(path))
    assert code == EXIT_CODES["corrupt"] and len(err) == 1
    assert err[0].endswith(f' (key "{record.key.decode()}")') and f"byte {value_len_at + 5}" in err[0]
    assert records[index - 1].key.decode() not in err[0]


def test_a_value_that_does_not_decode_names_its_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = key_records(MIXED)
    record = next(r for r in records[1:] if r.rdb_type == 16)  # a listpack hash
    data = bytearray(MIXED.read_bytes())
    end = record.offset + record.size
    assert data[end - 1] == 0xFF
    data[end - 1] = 0xFE  # the listpack's end byte
    path = tmp_path / "lp.rdb"
    path.write_bytes(_with_checksum(bytes(data)))
    code, err = run_cli(capsys, "dump", str(path))
    assert code == EXIT_CODES["corrupt"] and len(err) == 1
    assert err[0] == (f"rdbspec: {path}: expected 255, found 254 at byte {end - 1} (listpack:listpack.terminator) "
                      f'(key "{record.key.decode()}")')


# -- inputs that used to end in a Python exception: read as the server reads them, or refused by a
# -- check that names what is wrong --------------------------------------------------------------


def _dump(version: bytes, body: bytes) -> bytes:
    """A dump of one database: the header, SELECTDB 0, `body`, EOF and the CRC-64 trailer."""
    data = b"REDIS" + version + b"\xfe\x00" + body + b"\xff" + bytes(8)
    return _with_checksum(data)


@pytest.mark.parametrize("text, score", [(b"0x10", 16.0), (b"3.2x", 3.2), (b"abcd", 0.0), (b" 2.5", 2.5),
                                         (b"\x80\x81\x82\x83", 0.0), (b"1e99", 1e99),
                                         # texts Python's float() reads otherwise than strtod
                                         (b"1_00", 1.0), (b"7\x0099", 7.0), (b"-InF", -math.inf)])
def test_a_listpack_score_reads_as_strtod_reads_it(text: bytes, score: float) -> None:
    """redis src/t_zset.c zzlStrtod: the server reads a score stored as text with strtod, and
    text that is not a number as 0; no check refuses it on load."""
    data = (REAL / "redis-7.4.1" / "mixed_types.rdb").read_bytes()
    entry = b"\x84" + b"3.25" + b"\x05"  # the 6-bit string "3.25", backlen 5: the score of "frac"
    assert data.count(entry) == 1
    with rdbspec.parse(_with_checksum(data.replace(entry, b"\x84" + text + b"\x05"))) as dump:
        value = next(r.value for r in dump.keys() if r.key == b"z:small")
    assert dict(value)[b"frac"] == score


@pytest.mark.parametrize("scores, read", [
    ([b"2.5", 7, b"-1e3"], [2.5, 7.0, -1000.0]),           # every text float() reads as strtod does
    ([b"2.5", b"1_0", 3], [2.5, 1.0, 3.0]),                 # one underscore: each text by strtod's rules
    ([b"1" + b"0" * 127, b"4"], [1e126, 4.0]),             # the server reads the first 127 bytes only
    ([b"0x1p3", b"nan(x)", b"9"], [8.0, math.nan, 9.0]),    # float() refuses one: strtod's rules again
])
def test_a_sorted_set_reads_its_scores_as_strtod_whatever_the_other_scores(scores: list, read: list) -> None:
    """values.scored reads a container's scores in one float() pass only when every text reads
    the same there as with strtod (redis src/t_zset.c zzlStrtod)."""
    entries = [x for i, score in enumerate(scores) for x in (b"m%d" % i, score)]
    got = values.scored(entries)
    assert [m for m, _ in got] == [b"m%d" % i for i in range(len(scores))]
    assert [str(s) for _, s in got] == [str(s) for s in read]  # str: nan equals nan


def test_a_type_3_score_that_is_not_a_number_is_refused() -> None:
    """redis src/rdb.c rdbLoadDoubleValue: sscanf("%lg") must read a number, or the load fails."""
    member = b"\x01m"
    good = _dump(b"0006", b"\x03\x01z\x02" + member + b"\x041.5x" + b"\x01n" + b"\xfe")  # "1.5x", then +inf
    with rdbspec.parse(good) as dump:
        assert [r.value for r in dump.keys()] == [[(b"m", 1.5), (b"n", float("inf"))]]
    bad = _dump(b"0006", b"\x03\x01z\x01" + member + b"\x04abcd")
    with rdbspec.parse(bad) as dump, pytest.raises(rdbspec.IntegrityError) as err:
        _ = next(dump.keys()).value
    assert err.value.reason == "the score 'abcd' is not a number (redis src/rdb.c rdbLoadDoubleValue)"
    assert (err.value.offset, err.value.key) == (11, b"z")


def test_a_dragonfly_member_ttl_that_is_not_a_number_is_refused() -> None:
    """dragonfly src/server/rdb_load.cc OpaqueObjLoader::CreateSet: absl::SimpleAtoi must read the TTL."""
    b = dragonfly_build
    value = b.rdb_len(1) + b.rdb_str(b"member") + b.rdb_str(b"12x")
    with rdbspec.parse(b.header_aux(None) + b.entry(b.T_SET_EXP, b"s", value) + b.epilog()) as dump:
        record = next(dump.keys())
        with pytest.raises(rdbspec.IntegrityError) as err:
            _ = record.value
    assert err.value.reason == "the member TTL b'12x' is not a 64-bit number" and err.value.key == b"s"


def test_a_plain_quicklist_node_is_its_element() -> None:
    """QUICKLIST_NODE_CONTAINER_PLAIN (1): the node is the element itself (redis src/rdb.c
    rdbLoadObject, RDB_TYPE_LIST_QUICKLIST_2)."""
    listpack = b"\x0d\x00\x00\x00\x02\x00\x81a\x02\x81b\x02\xff"  # a PACKED node: "a", "b"
    nodes = b"\x02" + b"\x01" + b"\x05plain" + b"\x02" + b"\x0d" + listpack
    with rdbspec.parse(_dump(b"0011", b"\x12\x01l" + nodes)) as dump:
        assert [r.value for r in dump.keys()] == [[b"plain", b"a", b"b"]]
