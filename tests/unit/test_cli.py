"""`python -m rdbspec` on good and bad input: one stderr line with a byte offset, the documented
exit code, and JSON Lines on stdout that stay valid up to the error."""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import struct
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest

import rdbspec
from rdbspec import cli
from rdbspec.errors import EXIT_CODES
from rdbspec.read.checksum import crc64

REAL = Path(__file__).resolve().parents[1] / "corpus" / "real"
GROUPS = REAL / "redis-7.0.15" / "stream_groups.rdb"
BASIC = REAL / "redis-7.0.15" / "stream_basic.rdb"
MIXED = REAL / "redis-7.0.15" / "mixed_types.rdb"
BYTE_OFFSET = re.compile(r"\bbyte \d+")


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "rdbspec", *args], input=stdin, capture_output=True,
                          timeout=60, check=False)


def records_of(path: Path) -> list[rdbspec.KeyRecord]:
    """Every key with its value decoded (cached) while the file is open."""
    with rdbspec.open(path) as dump:
        out = list(dump.keys())
        for record in out:
            _ = record.value
    return out


def end_offset(path: Path) -> int:
    with rdbspec.open(path) as dump:
        for _ in dump.keys():
            pass
        assert dump.end_offset is not None
        return dump.end_offset


def with_checksum(data: bytes | bytearray) -> bytes:
    """`data` with its CRC-64 trailer recomputed, so only the edit itself is wrong."""
    out = bytearray(data)
    end = len(out) - 8
    out[end:] = struct.pack("<Q", crc64(bytes(out), 0, end))
    return bytes(out)


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def assert_clean_failure(proc: subprocess.CompletedProcess[bytes], code: str, path: Path) -> str:
    """One stderr line naming the file and a byte offset, the exit code, valid JSON on stdout."""
    err = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"rdbspec: {path}: "), lines[0]
    assert BYTE_OFFSET.search(lines[0]), lines[0]
    assert proc.returncode == EXIT_CODES[code], (proc.returncode, err)
    for line in proc.stdout.decode("utf-8").splitlines():
        json.loads(line)
    return lines[0]


def stdout_records(proc: subprocess.CompletedProcess[bytes]) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.decode("utf-8").splitlines()]


# -- truncation --------------------------------------------------------------------------------


def _cut_points() -> list[tuple[str, int]]:
    data = BASIC.read_bytes()
    records = records_of(BASIC)
    stream = next(r for r in records if r.type_name == "stream" and r.size > 1000)
    end = end_offset(BASIC)
    return [
        ("empty", 0),
        ("inside-magic", 5),
        ("after-magic", 9),
        ("inside-aux", 15),
        ("stream-type-byte", stream.offset + 1),
        ("stream-key", stream.offset + 3),
        ("stream-third", stream.offset + stream.size // 3),
        ("stream-half", stream.offset + stream.size // 2),
        ("stream-last-byte", stream.offset + stream.size - 1),
        ("before-eof", end - 1),
        ("inside-checksum", end + 3),
        ("no-checksum", end),
        ("last-byte", len(data) - 1),
    ]


@pytest.mark.parametrize(("label", "cut"), _cut_points(), ids=[c[0] for c in _cut_points()])
def test_truncated_file(tmp_path: Path, label: str, cut: int) -> None:
    data = BASIC.read_bytes()
    path = write(tmp_path, "cut.rdb", data[:cut])
    proc = run("dump", str(path))
    assert_clean_failure(proc, "corrupt", path)
    complete = [r for r in records_of(BASIC) if r.offset + r.size <= cut]
    assert len(stdout_records(proc)) <= len(complete)
    with pytest.raises(rdbspec.RdbError):
        with rdbspec.parse(data[:cut]) as dump:
            for record in dump.keys():
                _ = record.value


def test_truncated_stream_inside_groups(tmp_path: Path) -> None:
    data = GROUPS.read_bytes()
    for record in records_of(GROUPS):
        for cut in range(record.offset + 1, record.offset + record.size, 211):
            path = write(tmp_path, f"cut{cut}.rdb", data[:cut])
            assert_clean_failure(run("dump", str(path)), "corrupt", path)


# -- header ------------------------------------------------------------------------------------


def test_bad_magic(tmp_path: Path) -> None:
    path = write(tmp_path, "magic.rdb", b"RADIS" + GROUPS.read_bytes()[5:])
    line = assert_clean_failure(run("dump", str(path)), "corrupt", path)
    assert "RADIS0010" in line and "byte 0" in line
    assert run("dump", str(path)).stdout == b""


@pytest.mark.parametrize("version", [b"0016", b"0099", b"9999", b"0000"])
def test_unknown_rdb_version_is_rejected(tmp_path: Path, version: bytes) -> None:
    """The grammar accepts REDIS0001..REDIS0015 (and VALKEY080..081); anything else is corrupt."""
    path = write(tmp_path, "version.rdb", b"REDIS" + version + GROUPS.read_bytes()[9:])
    line = assert_clean_failure(run("dump", str(path)), "corrupt", path)
    assert f"an RDB version this reader does not know (starts with 'REDIS{version.decode()}')" in line
    assert "byte 0" in line


def test_text_file_is_not_an_rdb_file(tmp_path: Path) -> None:
    """A failed spec check reads as words: what was expected, and what the file holds."""
    path = write(tmp_path, "notes.txt", b"hello world\n" * 4)
    line = assert_clean_failure(run("dump", str(path)), "corrupt", path)
    assert line == (f"rdbspec: {path}: not an RDB file (starts with 'hello wor'): expected REDIS0001..REDIS0015 "
                    "or VALKEY080..VALKEY081 at byte 0 (rdb:rdb.magic)")


@pytest.mark.parametrize("version", [13, 14, 15])
def test_newest_known_version_reads_an_older_body(tmp_path: Path, version: int) -> None:
    """REDIS0013..REDIS0015 over a version-10 body: the encodings did not change, so it reads."""
    path = write(tmp_path, "v.rdb", with_checksum(b"REDIS%04d" % version + GROUPS.read_bytes()[9:]))
    proc = run("info", "--json", str(path))
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["version"] == version and info["checksum"] == "ok"


@pytest.mark.parametrize("digits", [b"+012", b" 012"])
def test_version_digits_read_like_atoi(tmp_path: Path, digits: bytes) -> None:
    """Observed: the version is read with int(), so "+012" and " 012" mean 12 (as redis'
    atoi(buf+5) would). Documented here as the current behaviour."""
    path = write(tmp_path, "v.rdb", with_checksum(b"REDIS" + digits + GROUPS.read_bytes()[9:]))
    proc = run("info", "--json", str(path))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["version"] == 12


@pytest.mark.parametrize("digits", [b"00x9", b"0x12", b"-001", b"1_0\x00"])
def test_version_non_digits_are_rejected(tmp_path: Path, digits: bytes) -> None:
    path = write(tmp_path, "v.rdb", b"REDIS" + digits + GROUPS.read_bytes()[9:])
    assert_clean_failure(run("dump", str(path)), "corrupt", path)


# -- records -----------------------------------------------------------------------------------


def test_unknown_type_byte(tmp_path: Path) -> None:
    data = bytearray(GROUPS.read_bytes())
    first = records_of(GROUPS)[0]
    assert data[first.offset] == 19
    data[first.offset] = 100
    path = write(tmp_path, "type.rdb", with_checksum(data))
    line = assert_clean_failure(run("dump", str(path)), "corrupt", path)
    assert f"byte {first.offset}" in line and "found 100" in line


def _listpack_start(data: bytes, record: rdbspec.KeyRecord) -> int:
    """The listpack that ends a type-16 record starts where its total-bytes header says."""
    end = record.offset + record.size
    return next(i for i in range(record.offset, end) if struct.unpack_from("<I", data, i)[0] == end - i)


@pytest.mark.parametrize("where", ["terminator", "entry-encoding"])
def test_corrupt_listpack_byte(tmp_path: Path, where: str) -> None:
    data = bytearray(MIXED.read_bytes())
    records = records_of(MIXED)
    index = next(i for i, r in enumerate(records) if r.rdb_type == 16)
    record = records[index]
    start = _listpack_start(bytes(data), record)
    if where == "terminator":
        assert data[record.offset + record.size - 1] == 0xFF
        data[record.offset + record.size - 1] = 0xFE
    else:
        data[start + 6] = 0xF5  # no listpack entry encoding starts with 0xF5
    path = write(tmp_path, "lp.rdb", with_checksum(data))
    proc = run("dump", str(path))
    line = assert_clean_failure(proc, "corrupt", path)
    assert "listpack" in line
    assert len(stdout_records(proc)) == index  # every key before the broken one was written


@pytest.mark.parametrize("length", [b"\x80\x7f\xff\xff\xff", b"\x81" + struct.pack(">Q", 1 << 62),
                                    b"\x81" + b"\xff" * 8])
def test_length_larger_than_what_remains(tmp_path: Path, length: bytes) -> None:
    data = MIXED.read_bytes()
    record = next(r for r in records_of(MIXED) if r.rdb_type == 0 and len(r.key) < 64)
    key_len_at = record.offset + 1
    assert data[key_len_at] == len(record.key)
    path = write(tmp_path, "len.rdb", with_checksum(data[:key_len_at] + length + data[key_len_at + 1:]))
    line = assert_clean_failure(run("dump", str(path)), "corrupt", path)
    assert "remain" in line


# -- checksum ----------------------------------------------------------------------------------


def test_wrong_checksum(tmp_path: Path) -> None:
    data = bytearray(GROUPS.read_bytes())
    data[-1] ^= 0x01
    path = write(tmp_path, "crc.rdb", bytes(data))
    proc = run("dump", str(path))
    line = assert_clean_failure(proc, "checksum", path)
    assert "checksum mismatch" in line and f"byte {end_offset(GROUPS)}" in line
    good = run("dump", str(GROUPS))
    assert proc.stdout == good.stdout  # every record was written before the trailer was checked

    unchecked = run("dump", "--no-verify-checksum", str(path))
    assert unchecked.returncode == 0 and unchecked.stderr == b""
    assert unchecked.stdout == good.stdout
    info = run("info", "--json", "--no-verify-checksum", str(path))
    assert json.loads(info.stdout)["checksum"] == "not verified"


def test_wrong_checksum_in_data_byte(tmp_path: Path) -> None:
    """A flipped bit inside a string value parses but fails the CRC."""
    data = bytearray(MIXED.read_bytes())
    record = next(r for r in records_of(MIXED) if r.rdb_type == 0 and r.size > 100)
    data[record.offset + record.size - 1] ^= 0x01
    path = write(tmp_path, "crc2.rdb", bytes(data))
    assert_clean_failure(run("dump", str(path)), "checksum", path)
    assert run("dump", "--no-verify-checksum", str(path)).returncode == 0


def test_disabled_checksum_is_accepted(tmp_path: Path) -> None:
    data = GROUPS.read_bytes()
    path = write(tmp_path, "zero.rdb", data[:-8] + b"\0" * 8)
    proc = run("info", "--json", str(path))
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["checksum"] == "disabled (0)"


# -- stream integrity --------------------------------------------------------------------------


def test_consumer_pel_entry_missing_from_group_pel(tmp_path: Path) -> None:
    data = bytearray(GROUPS.read_bytes())
    first = records_of(GROUPS)[0]
    stream = first.value
    group = stream.groups[0]
    consumer = next(c for c in group.consumers if c.pending)
    target = consumer.pending[-1]
    raw = struct.pack(">QQ", *target)  # PEL IDs are stored as 128-bit big-endian
    region = range(first.offset, first.offset + first.size - 15)
    hits = [i for i in region if bytes(data[i:i + 16]) == raw]
    assert len(hits) >= 2  # the group PEL row first, the consumer's copy after
    struct.pack_into(">Q", data, hits[-1] + 8, target[1] + 1000)
    path = write(tmp_path, "pel.rdb", with_checksum(data))
    proc = run("dump", str(path))
    line = assert_clean_failure(proc, "integrity", path)
    assert "not in the group PEL" in line and f"{target[0]}-{target[1] + 1000}" in line
    assert f"byte {first.offset}" in line
    with pytest.raises(rdbspec.IntegrityError):
        with rdbspec.open(path) as dump:
            for record in dump.keys():
                _ = record.value


def test_group_pel_entry_pending_twice(tmp_path: Path) -> None:
    data = bytearray(GROUPS.read_bytes())
    first = records_of(GROUPS)[0]
    group = first.value.groups[0]
    a, b = group.pending[0].id, group.pending[1].id
    raw_b = struct.pack(">QQ", *b)
    hit = next(i for i in range(first.offset, first.offset + first.size) if bytes(data[i:i + 16]) == raw_b)
    data[hit:hit + 16] = struct.pack(">QQ", *a)
    path = write(tmp_path, "dup.rdb", with_checksum(data))
    line = assert_clean_failure(run("dump", str(path)), "integrity", path)
    assert "pending twice" in line


# -- stdin, info, keys -------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["dump"], ["dump", "--include-deleted"], ["info", "--json"], ["keys"]])
def test_stdin_gives_the_same_output(command: list[str]) -> None:
    for path in (GROUPS, MIXED):
        from_file = run(*command, str(path))
        from_stdin = run(*command, "-", stdin=path.read_bytes())
        assert from_file.returncode == from_stdin.returncode == 0
        if command[0] == "info":
            a, b = json.loads(from_file.stdout), json.loads(from_stdin.stdout)
            assert a.pop("file") == str(path) and b.pop("file") == "<stdin>"
            assert a == b
        else:
            assert from_file.stdout == from_stdin.stdout


def test_stdin_bad_input(tmp_path: Path) -> None:
    proc = run("dump", "-", stdin=BASIC.read_bytes()[:5000])
    err = proc.stderr.decode()
    assert proc.returncode == EXIT_CODES["corrupt"] and len(err.splitlines()) == 1
    assert err.startswith("rdbspec: -: ") and BYTE_OFFSET.search(err) and "Traceback" not in err


def test_info_json() -> None:
    proc = run("info", "--json", str(MIXED))
    assert proc.returncode == 0 and proc.stderr == b""
    info = json.loads(proc.stdout)
    expected = json.loads(MIXED.with_name("mixed_types.expected.json").read_text())
    assert info["magic"] == "REDIS0010" and info["version"] == 10 and info["dialect"] == "redis"
    assert info["checksum"] == "ok"
    assert dict(info["aux"])["redis-ver"] == "7.0.15"
    assert set(info["databases"]) == set(expected["databases"])
    for db, recs in expected["databases"].items():
        assert info["databases"][db]["keys"] == len(recs)
        assert info["databases"][db]["expires"] == sum(r["expire_at_ms"] is not None for r in recs)
    counts: dict[str, int] = {}
    for recs in expected["databases"].values():
        for r in recs:
            counts[r["type"]] = counts.get(r["type"], 0) + 1
    assert info["types"] == counts
    assert len(info["functions"]) == len(expected["functions"] or [])

    text = run("info", str(MIXED))
    assert text.returncode == 0
    assert text.stdout.decode().startswith(f"{MIXED}: REDIS0010 (RDB 10, redis), checksum ok")


def test_keys_csv_top() -> None:
    proc = run("keys", "--csv", "--top", "3", str(MIXED))
    assert proc.returncode == 0 and proc.stderr == b""
    rows = list(csv.reader(io.StringIO(proc.stdout.decode())))
    assert rows[0] == ["db", "key", "type", "encoding", "size_in_file", "elements"]
    assert len(rows) == 4
    everything = sorted(records_of(MIXED), key=lambda r: -r.size)
    top = everything[:3]
    assert [r[1] for r in rows[1:]] == [r.key.decode() for r in top]
    assert [int(r[4]) for r in rows[1:]] == [r.size for r in top]
    sizes = [int(r[4]) for r in rows[1:]]
    assert sizes == sorted(sizes, reverse=True)
    for row, rec in zip(rows[1:], top):
        assert int(row[0]) == rec.db and row[2] == rec.type_name and row[3] == rec.encoding
        assert int(row[5]) == len(rec.value)

    lines = run("keys", str(GROUPS)).stdout.decode().splitlines()
    rows_json = [json.loads(line) for line in lines]
    assert [(r["key"], r["type"], r["elements"]) for r in rows_json] == [
        (r.key.decode(), "stream", r.value.length) for r in records_of(GROUPS)]


def test_missing_file_is_an_io_error(tmp_path: Path) -> None:
    path = tmp_path / "absent.rdb"
    proc = run("dump", str(path))
    err = proc.stderr.decode()
    assert proc.returncode == EXIT_CODES["io"]
    assert len(err.splitlines()) == 1 and "Traceback" not in err and str(path) in err


def test_usage_error() -> None:
    assert run("dump").returncode == EXIT_CODES["usage"]
    assert run("frobnicate", str(GROUPS)).returncode == EXIT_CODES["usage"]


def test_closed_stdout_pipe_is_not_an_error() -> None:
    """`rdbspec dump big.rdb | head -c 100`: the reader going away is not a problem with the
    input. cli.main means to return EXIT_CODES["ok"] on BrokenPipeError, but that clause comes
    after `except (RdbError, OSError)` and BrokenPipeError is an OSError, so today it exits 6
    with "rdbspec: FILE: [Errno 32] Broken pipe" on stderr."""
    big = REAL / "redis-7.4.1" / "mixed_types.rdb"
    proc = subprocess.Popen([sys.executable, "-m", "rdbspec", "dump", str(big)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(100)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=60) == EXIT_CODES["ok"], err
    assert "Traceback" not in err and "Broken pipe" not in err


@pytest.mark.parametrize("command", [["dump"], ["xrange", "-", "+"]])
def test_unwritable_output_is_a_clean_error(tmp_path: Path, command: list[str]) -> None:
    """`-o` into a missing directory: one line naming the output (it blamed the input file)."""
    target = tmp_path / "missing-dir" / "out.jsonl"
    proc = run(command[0], str(GROUPS), *(["s:grp"] if command[0] == "xrange" else []), *command[1:],
               "-o", str(target))
    err = proc.stderr.decode()
    assert "Traceback" not in err, err
    assert len(err.splitlines()) == 1 and proc.returncode == EXIT_CODES["io"]
    assert err.startswith(f"rdbspec: {target}: ") and str(GROUPS) not in err, err


# -- the command line itself -------------------------------------------------------------------


def assert_usage_error(proc: subprocess.CompletedProcess[bytes], *words: str) -> None:
    """argparse's usage line and `error: ...` naming the option, exit 2, no traceback."""
    err = proc.stderr.decode()
    assert proc.returncode == EXIT_CODES["usage"], err
    assert err.startswith("usage: rdbspec ") and "Traceback" not in err, err
    for word in words:
        assert word in err.splitlines()[-1], err


def test_bad_key_regex_is_a_usage_error() -> None:
    assert_usage_error(run("dump", "--key", "[", str(GROUPS)), "argument --key", "not a regular expression: '['")


@pytest.mark.parametrize(("args", "words"), [
    (["dump", "--type", "nosuchtype"], ["argument --type", "'nosuchtype'", "stream"]),
    (["keys", "--top", "-1"], ["argument --top", "'-1'"]),
    (["keys", "--top", "0"], ["argument --top", "'0'"]),
    (["keys", "--top", "many"], ["argument --top", "'many'"]),
])
def test_bad_option_values_are_usage_errors(args: list[str], words: list[str]) -> None:
    assert_usage_error(run(*args, str(GROUPS)), *words)


def test_type_names_are_read_in_any_case() -> None:
    assert run("dump", "--type", "STREAM", str(GROUPS)).stdout == run("dump", str(GROUPS)).stdout
    assert run("dump", "--type", "string", str(GROUPS)).stdout == b""


def test_version() -> None:
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.decode() == f"rdbspec {version('rdbspec')} (native backend)\n"


@pytest.mark.parametrize("command", ["dump", "info", "DUMP"])
def test_a_directory_of_dumps_is_not_a_snapshot_set(tmp_path: Path, command: str) -> None:
    """A directory opens as a Dragonfly DFS set; one of ordinary dumps says what it is, not
    "no <name>-summary.dfs file"."""
    write(tmp_path, "one.rdb", GROUPS.read_bytes())
    proc = run(command, str(tmp_path))
    err = proc.stderr.decode()
    assert proc.returncode == EXIT_CODES["io"] and proc.stdout == b""
    assert err == (f"rdbspec: {tmp_path}: a directory, and not a Dragonfly snapshot set "
                   "(no <name>-summary.dfs file in it): give a dump file\n")


def _parsers(parser: argparse.ArgumentParser, name: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {sub_name}")


def test_every_option_and_argument_has_help() -> None:
    """Walks every parser of `rdbspec`: each option, positional and subcommand has a help text,
    and no text shows reStructuredText markup (the pipeline's showed ``rdb``)."""
    empty, markup = [], []
    for name, parser in _parsers(cli.build_parser(), "rdbspec"):
        texts = [parser.description or "", parser.epilog or ""]
        for action in parser._actions:
            label = f"{name} {action.option_strings or action.dest}"
            if not action.help or action.help == argparse.SUPPRESS:
                empty.append(label)
            texts.append(action.help or "")
            for choice in getattr(action, "_choices_actions", []):
                if not choice.help:
                    empty.append(f"{name} {choice.dest}")
                texts.append(choice.help or "")
        markup += [f"{name}: {t}" for t in texts if "`" in t]
    assert empty == [] and markup == []


# -- stream entry checks, made as the nodes are decoded ------------------------------------------

from tests.support import dragonfly_dumps as rdb_bytes  # noqa: E402 - byte builders shared with the Dragonfly fixtures


def _stream_dump(nodes: list[tuple[bytes, bytes]], length: int) -> bytes:
    """REDIS0011: a string key, then stream `s` (type 19, no groups) with `nodes`."""
    value = b"".join(rdb_bytes.stream_value(19, nodes, length, (9, 0), (1, 0), (0, 0), 9, []))
    body = (b"REDIS0011" + bytes([0xFE]) + rdb_bytes.rdb_len(0) + b"\x00" + rdb_bytes.rdb_str(b"a")
            + rdb_bytes.rdb_str(b"1") + bytes([19]) + rdb_bytes.rdb_str(b"s") + value + b"\xff")
    return with_checksum(body + b"\x00" * 8)


def _entries(*ids: tuple[int, int]) -> list:
    return [(i, [(b"f", b"v")]) for i in ids]


def _recount(node: tuple[bytes, bytes], live: int, deleted: int) -> tuple[bytes, bytes]:
    """The node with its master entry's counts (its first two elements, one byte each plus a
    one-byte backlen) changed; the entries still number live + deleted."""
    key, lp = node
    assert lp[6] < 128 and lp[8] < 128  # 7-bit uint elements
    return key, lp[:6] + bytes([live]) + lp[7:8] + bytes([deleted]) + lp[9:]


@pytest.mark.parametrize(("case", "nodes", "length", "reason"), [
    ("backwards", [rdb_bytes.stream_node(_entries((5, 0), (6, 0), (3, 0)))], 3,
     "stream entry 3-0 is not after 6-0"),
    ("count", [_recount(rdb_bytes.stream_node(_entries((1, 0), (2, 0))), 1, 1)], 2,
     "stream node 1-0 declares 1 live and 1 deleted entries but flags 2 and 0"),
    ("length", [rdb_bytes.stream_node(_entries((1, 0), (2, 0)))], 5,
     "stream length 5 but 2 live entries (the server answers 5)"),
])
def test_stream_entry_checks_warn_where_the_walk_reaches_them(tmp_path: Path, case: str, nodes: list,
                                                              length: int, reason: str) -> None:
    """The server makes none of these checks on load (tests/servers/test_warnings.py loads such dumps into
    a real server): each is a warning, once, naming the key and its offset; the entries read on."""
    path = write(tmp_path, f"{case}.rdb", _stream_dump(nodes, length))
    with rdbspec.open(path) as dump:
        records = list(dump.keys())
        stream = records[1].value  # the metadata and groups are read; the nodes are not yet decoded
        assert stream.length == length and len(stream.nodes) == len(nodes)
        assert dump.warnings == []
        entries = list(stream.entries())
        assert len(entries) == {"backwards": 3, "count": 2, "length": 2}[case]  # read on, as the server does
        list(stream.entries())  # walked again: the same warning is not recorded twice
    assert [(w.reason, w.key, w.offset) for w in dump.warnings] == [(reason, b"s", records[1].offset)]
    proc = run("dump", str(path))
    assert proc.returncode == 0
    assert proc.stderr.decode().splitlines() == [f"rdbspec: warning: {dump.warnings[0]}"]
    assert [r["key"] for r in stdout_records(proc)] == ["a", "s"]
