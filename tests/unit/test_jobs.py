"""`--jobs N`: `dump`, `keys`, `info`, `prefixes` and `report` read one file in byte ranges, each in a
worker process, and write what `--jobs 1` writes, byte for byte: the same output, warnings, and on
bad input the same stderr line, exit code and output up to the record that failed.

The dumps here are small: `RDBSPEC_SPLIT_SIZE` cuts them into ranges of a few kilobytes (a stream
bigger than that into ranges of its nodes), and every test checks that several ranges were read.
The commands run in this process (`cli.main`, output to a file with -o), the workers forked from it."""

from __future__ import annotations

import copy
import io
import json
import os
import pickle
import pty
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

import rdbspec
from rdbspec import cli
from rdbspec.cli import report as report_cli
from rdbspec.errors import EXIT_CODES, RdbError
from rdbspec.read import backend, dumpfile, parallel, splits
from rdbspec.read.checksum import crc64
from rdbspec.read.streams import Stream
from rdbspec.report import prefixes, runs
from rdbspec.report.data import ReportBuilder
from rdbspec.report.prefixes import FramedTree, PrefixTree
from tests.support import dragonfly_dumps as rdb_bytes  # noqa: E402 - byte builders shared with the Dragonfly fixtures
from tests.support import split_dump  # noqa: E402

REAL = Path(__file__).resolve().parents[1] / "corpus" / "real"
CORPUS = sorted(REAL.glob("*/*.rdb"))
GROUPS = REAL / "redis-7.0.15" / "stream_groups.rdb"
# every command and the options that change how it reads or writes
COMMANDS = [["dump"], ["dump", "--include-deleted"], ["keys"], ["keys", "--csv"], ["keys", "--memory"],
            ["keys", "--top", "3"], ["keys", "--memory", "--top", "5", "--csv"], ["info", "--json"], ["info"],
            ["prefixes"], ["prefixes", "--depth", "1", "--csv"], ["report", "--json"], ["report"],
            ["dump", "--type", "stream"], ["keys", "--key", "^s"], ["info", "--json", "--db", "0"]]
CORPUS_COMMANDS = [["dump"], ["keys", "--csv", "--memory"], ["keys", "--top", "3"], ["info", "--json"],
                   ["prefixes"], ["report", "--json"]]


@dataclass
class Run:
    code: int
    out: bytes
    err: str


@pytest.fixture
def rdbspec_main(tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch):
    """`rdbspec ARGS` in this process, with ranges of `split_size` bytes: what it wrote to stdout
    (a failure's too: -o keeps none of it), or to -o for `report` (which writes there only), and
    to stderr."""
    def run(args: list[str], split_size: int | None = None) -> Run:
        if split_size is not None:
            monkeypatch.setenv(parallel.ENV_SPLIT_SIZE, str(split_size))
        output = tmp_path / "out" if args[0] == "report" else None
        code = cli.main(args if output is None else [*args, "-o", str(output)])
        out, err = capfdbinary.readouterr()
        if output is not None:
            out = output.read_bytes() if output.exists() else b""
            output.unlink(missing_ok=True)
        return Run(code, out, err.decode())

    return run


def assert_same(rdbspec_main, pieces: list[parallel.Piece], args: list[str], split_size: int,
                jobs: int = 3) -> Run:
    """`--jobs 1` and `--jobs N` give the same; the second read several ranges. The first run."""
    one = rdbspec_main([*args, "--jobs", "1"], split_size)
    assert pieces == []
    many = rdbspec_main([*args, "--jobs", str(jobs)], split_size)
    assert len(pieces) > 1, "one range: the file was not read in parallel"
    assert many == one
    pieces.clear()
    return one


def with_checksum(data: bytes | bytearray) -> bytes:
    out = bytearray(data)
    out[-8:] = struct.pack("<Q", crc64(bytes(out), 0, len(out) - 8))
    return bytes(out)


# -- the same output -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_corpus_reads_the_same(path: Path, rdbspec_main, pieces) -> None:
    """Every real server's dumps, in about six ranges (a stream of stream_basic in ranges of its nodes)."""
    for command in CORPUS_COMMANDS:
        run = assert_same(rdbspec_main, pieces, [command[0], str(path), *command[1:]], path.stat().st_size // 6)
        assert run.code == 0 and run.out, (command, run.err)


@pytest.fixture(scope="module")
def big_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every type in three databases and a 30,000-entry stream in 20-entry nodes, by a real server."""
    return split_dump.build(tmp_path_factory.mktemp("jobs") / "big.rdb")


@pytest.mark.parametrize("split_size", [2_000, 64_000])
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_big_dump_reads_the_same(big_dump: Path, command: list[str], split_size: int, rdbspec_main,
                                 pieces) -> None:
    """Every command and the options that change what it reads or writes, in ranges of 2 kB (the
    streams in some 400 ranges of a few nodes each) and of 64 kB."""
    args = [command[0], str(big_dump), *command[1:]]
    one = rdbspec_main([*args, "--jobs", "1"], split_size)
    many = rdbspec_main([*args, "--jobs", "2"], split_size)
    assert many == one and one.code == 0 and one.out
    assert len(pieces) > 1
    if command[0] in ("dump", "info"):  # the big values in ranges of their nodes or elements
        parted = [p for p in pieces if p.split.part is not None]
        assert len(parted) > 2 and parted[0].first and parted[-1].last
        with rdbspec.open(big_dump) as dump:
            ends = {r.offset + r.size: r.key for r in dump.keys()}
        assert {ends[p.split.end] for p in parted} >= set(split_dump.BIG_VALUES)


def test_big_values_in_parts_read_the_same_on_the_python_backend(big_dump: Path, rdbspec_main, pieces,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The Python parsers cut and read the parts (`cuts_<field>`, `chunks_<field>` from a cut,
    `_open`) as the native ones do: the same lines as the native backend's single process."""
    native = rdbspec_main(["dump", str(big_dump), "--jobs", "1"])
    monkeypatch.setattr(backend, "_chosen", "python")
    assert rdbspec_main(["dump", str(big_dump), "--jobs", "2"], 64_000) == native
    assert sum(p.split.part is not None for p in pieces) >= 2 * len(split_dump.BIG_VALUES)


def test_the_ranges_are_the_plan(big_dump: Path) -> None:
    """`parallel.ranges` reads the splits of `splits.plan`, every one, in order."""
    with rdbspec.open(big_dump) as dump:
        done = list(parallel.ranges(dump, 20_000, 3, lambda d, records, piece, out: sum(1 for _ in records),
                                    lambda err, d: parallel.Failure(str(err), 1), parts=3))
        assert [d.piece.split for d in done] == splits.plan(str(big_dump), 20_000, parts=3)
        assert all(d.failure is None for d in done)
        assert sum(d.value for d in done if d.piece.first) == sum(1 for _ in dump.keys())


def _stream_warnings_dump(tmp_path: Path) -> tuple[Path, int]:
    """A function library, then a stream of 30 nodes of 5 entries (the first key: its node splits
    all start at the file's start) and string keys: node 10's entries all deleted, node 15's first
    entry before node 14's last, and a stored length one above its live entries. Also the stream
    record's size."""
    nodes = []
    for n in range(30):
        ids = [(n * 10 + i, 0) for i in range(5)]
        if n == 15:
            ids[0] = (143, 0)  # node 14 ends with 144-0
        deleted = frozenset(ids) if n == 10 else frozenset(ids[1:2])
        nodes.append(rdb_bytes.stream_node([(i, [(b"f", b"v%d" % i[0])]) for i in ids], deleted))
    live = 29 * 4  # one entry deleted in each node but node 10
    value = b"".join(rdb_bytes.stream_value(19, nodes, live + 1, (294, 0), (0, 0), (0, 0), 150, []))
    stream = bytes([19]) + rdb_bytes.rdb_str(b"s") + value
    strings = [bytes([0]) + rdb_bytes.rdb_str(b"k%d" % i) + rdb_bytes.rdb_str(b"v" * 40) for i in range(40)]
    library = b"#!lua name=mylib\nredis.register_function('f', function() return 1 end)"
    body = (b"REDIS0011" + bytes([0xF5]) + rdb_bytes.rdb_str(library) + bytes([0xFE]) + rdb_bytes.rdb_len(0)
            + stream + b"".join(strings) + b"\xff")
    path = tmp_path / "warnings.rdb"
    path.write_bytes(with_checksum(body + b"\0" * 8))
    return path, len(stream)


def test_a_stream_split_over_workers_warns_as_one_walk(tmp_path: Path, rdbspec_main, pieces) -> None:
    """The checks across a cut between two workers' nodes (IDs ascending) and over all of them
    (the stored length) warn as a single walk does, once each, in order; a node without a live
    entry adds nothing to the line."""
    path, stream_size = _stream_warnings_dump(tmp_path)
    with rdbspec.open(path) as dump:
        record = next(r for r in dump.keys() if r.key == b"s")
        at, nodes = record.offset, [pos for pos, _ in record._body.value.cuts_nodes(1)]
    at_node_15 = nodes[15] - nodes[0]  # parts of this size: a cut right between nodes 14 and 15
    for split_size in (40, at_node_15, stream_size // 7):
        for command in (["dump"], ["info", "--json"], ["dump", "--include-deleted"]):
            run = assert_same(rdbspec_main, pieces, [command[0], str(path), *command[1:]], split_size)
            assert run.code == 0 and (command[0] != "info" or len(json.loads(run.out)["functions"]) == 1)
            assert run.err.splitlines() == [
                f"rdbspec: warning: stream entry 143-0 is not after 144-0 (key b's' at byte {at}) "
                "[redis src/rdb.c rdbLoadObject]",
                "rdbspec: warning: stream length 117 but 116 live entries (the server answers 117) "
                f"(key b's' at byte {at}) [redis src/rdb.c rdbLoadObject]"]
    cut = splits.plan(str(path), at_node_15, parts=sys.maxsize)
    assert [s.part[1:] for s in cut if s.part] == [(0, 15), (15, 15)]


# -- failures ------------------------------------------------------------------------------------


def _fails_within(data: bytes, start: int, end: int) -> bool:
    """Whether reading every value (every stream node) of `data` fails at a byte of [start, end):
    a flipped byte that the read steps past unseen (a length that swallows the bytes after it)
    fails somewhere later, in a range the test did not aim at."""
    try:
        with rdbspec.parse(data) as dump:
            for record in dump.keys():
                if isinstance(record.value, Stream):
                    for _ in record.value.node_entries():
                        pass
    except RdbError as err:
        return start <= err.offset < end
    return False


def _corrupt(data: bytes, start: int, end: int) -> bytes:
    """`data` with one byte in [start, end) flipped (the first, from the middle on, that makes a
    read fail there), its checksum made right."""
    for offset in range(start + (end - start) // 2, end):
        bad = bytearray(data)
        bad[offset] ^= 0x5A
        if _fails_within(with_checksum(bad), start, end):
            return with_checksum(bad)
    raise AssertionError("no byte there makes the read fail")


def _middle_key(path: Path, rdb_types: tuple[int, ...] = ()) -> dumpfile.KeyRecord:
    """A key (of one of `rdb_types`) of neither the first nor the last range of 20,000 bytes, with
    or without the big stream cut in ranges of its nodes (a server writes keys in hash order)."""
    edges = [(cut[0].end, cut[-1].start) for cut in (splits.plan(str(path), 20_000, parts=parts)
                                                     for parts in (0, 2))]
    with rdbspec.open(path) as dump:
        return next(r for r in dump.keys() if (not rdb_types or r.rdb_type in rdb_types)
                    and all(first <= r.offset < last for first, last in edges))


def _corrupt_key(data: bytes, record: dumpfile.KeyRecord) -> bytes:
    return _corrupt(data, record.offset + 1 + len(record.key) + 1, record.offset + record.size)


def _corrupt_stream_node(data: bytes, path: Path) -> bytes:
    """A node of the middle of the big stream."""
    with rdbspec.open(path) as dump:
        record = next(r for r in dump.keys() if r.key == b"big:stream")
        offsets = [at for at, _ in record._body.value.cuts_nodes(1)]  # every node, then the end
        middle = len(offsets) // 2
        return _corrupt(data, offsets[middle], offsets[middle + 1])


def _corrupt_big_value(data: bytes, path: Path, key: bytes) -> bytes:
    """A byte of the second half of a big value (read by a worker of one of its later parts)."""
    with rdbspec.open(path) as dump:
        record = next(r for r in dump.keys() if r.key == key)
    return _corrupt(data, record.offset + record.size // 2, record.offset + record.size)


@pytest.mark.parametrize("where", ["listpack", "stream node", "big:hash", "big:list", "checksum"])
@pytest.mark.parametrize("command", [["dump"], ["keys", "--csv"], ["info", "--json"], ["dump", "--no-verify-checksum"]],
                         ids=" ".join)
def test_a_failing_range_ends_as_one_process_does(big_dump: Path, tmp_path: Path, where: str, command: list[str],
                                                  rdbspec_main, pieces) -> None:
    """An error in a range in the middle: the ranges before it written whole, its own output up
    to the key that failed (none of a value cut into parts), then the same one line and exit
    code; the ranges after it are not written. A wrong checksum: everything written, then exit 4
    (as one process does)."""
    data = big_dump.read_bytes()
    if where == "listpack":  # a hash's, a sorted set's or a set's
        bad = _corrupt_key(data, _middle_key(big_dump, (16, 17, 20)))
    elif where == "stream node":
        bad = _corrupt_stream_node(data, big_dump)
    elif where.startswith("big:"):
        bad = _corrupt_big_value(data, big_dump, where.encode())
    else:
        bad = data[:-1] + bytes([data[-1] ^ 1])
    path = tmp_path / "bad.rdb"
    path.write_bytes(bad)
    args = [command[0], str(path), *command[1:]]
    one = rdbspec_main([*args, "--jobs", "1"], 20_000)
    many = rdbspec_main([*args, "--jobs", "3"], 20_000)
    assert many == one
    assert len(pieces) > 1 or where == "big:hash"  # the index pass ends the plan at a bad element
    if one.code:
        *warnings, line = one.err.splitlines()  # what the bad bytes read as before the error: warnings
        assert line.startswith(f"rdbspec: {path}: ") and all(w.startswith("rdbspec: warning: ") for w in warnings)
        assert one.code == EXIT_CODES["checksum" if where == "checksum" else "corrupt"]
        failed = pieces[-1]  # the range that failed
        later_part = failed.split.part is not None and not failed.first
        if where == "checksum":  # the last one
            assert failed.split.end is None
        elif command[0] == "keys":  # which cuts no value, and fails on a hash element where the
            assert failed.split.part is None  # index pass fails too (ending the plan there)
            assert where != "big:hash" or failed.split.end is None
        elif where == "big:list":  # a node's listpack: read by the worker of a later part of the list
            assert later_part
        elif where == "big:hash":  # bytes that only decoding finds bad (an LZF string's) fail a later
            # part of the hash; bytes the index pass steps over too end the plan there, and the last
            # range reads from the hash on
            assert later_part or failed.split.end is None
        else:
            assert failed.split.end is not None
    else:  # keys reads no stream node, and a listpack's count only; a checksum not verified
        assert command[0] == "keys" or (where == "checksum" and "--no-verify-checksum" in command)


def test_stream_integrity_error(tmp_path: Path, rdbspec_main, pieces) -> None:
    """A consumer PEL entry missing from its group PEL (exit 5), in the second stream's range."""
    data = bytearray(GROUPS.read_bytes())
    with rdbspec.open(GROUPS) as dump:
        last = list(dump.keys())[-1]
        consumer = next(c for c in last.value.groups[0].consumers if c.pending)
        target = consumer.pending[-1]
    raw = struct.pack(">QQ", *target)
    hits = [i for i in range(last.offset, last.offset + last.size - 15) if bytes(data[i:i + 16]) == raw]
    struct.pack_into(">Q", data, hits[-1] + 8, target[1] + 1000)
    path = tmp_path / "pel.rdb"
    path.write_bytes(with_checksum(data))
    for command in (["dump"], ["info"], ["report", "--json"]):
        run = assert_same(rdbspec_main, pieces, [command[0], str(path), *command[1:]], 500)
        assert run.code == EXIT_CODES["integrity"] and "not in the group PEL" in run.err


def _bug_at(key: bytes):
    """`element_count` that fails for `key`: a bug of rdbspec met while reading it."""
    real = cli.element_count

    def element_count(record: dumpfile.KeyRecord) -> int:
        if record.key == key:
            raise ZeroDivisionError("injected")
        return real(record)

    return element_count


@pytest.mark.parametrize("debug", [False, True])
def test_a_bug_in_a_worker_is_an_internal_error(big_dump: Path, monkeypatch: pytest.MonkeyPatch, debug: bool,
                                                rdbspec_main, pieces) -> None:
    """Exit 70 and the one line asking for a report, naming the key; the rows before it written;
    with --debug the traceback first."""
    key = _middle_key(big_dump).key
    monkeypatch.setattr(cli, "element_count", _bug_at(key))
    args = [*(["--debug"] if debug else []), "keys", str(big_dump)]
    one = rdbspec_main([*args, "--jobs", "1"], 20_000)
    many = rdbspec_main([*args, "--jobs", "3"], 20_000)
    assert len(pieces) > 1
    for run in (one, many):
        assert ("Traceback" in run.err) == debug and "ZeroDivisionError: injected" in run.err
    assert (many.code, many.out, many.err.splitlines()[-1]) == (one.code, one.out, one.err.splitlines()[-1])
    assert one.code == EXIT_CODES["internal"]
    line = one.err.splitlines()[-1]
    assert line.startswith(f"rdbspec: internal error reading {big_dump} at byte ")
    assert f"(key {key!r}): ZeroDivisionError: injected; this is a bug in rdbspec, please report it" in line
    assert one.out and one.out.endswith(b"\n")


def test_a_worker_that_dies_is_an_internal_error(big_dump: Path, monkeypatch: pytest.MonkeyPatch, rdbspec_main,
                                                 pieces) -> None:
    """A worker killed while reading: exit 70 naming its range; the ranges before it written whole,
    nothing of its own."""
    whole = rdbspec_main(["keys", str(big_dump), "--jobs", "1"], 20_000)
    real = cli.element_count
    key = _middle_key(big_dump).key

    def element_count(record: dumpfile.KeyRecord) -> int:
        if record.key == key:
            os.kill(os.getpid(), signal.SIGKILL)  # only ever in a worker: the test runs --jobs 3
        return real(record)

    monkeypatch.setattr(cli, "element_count", element_count)
    run = rdbspec_main(["keys", str(big_dump), "--jobs", "3"], 20_000)
    assert run.code == EXIT_CODES["internal"]
    assert run.err.startswith(f"rdbspec: internal error reading {big_dump}: RuntimeError: the worker process "
                              "reading bytes ")
    assert "was killed by signal 9; this is a bug in rdbspec, please report it" in run.err
    assert whole.out.startswith(run.out) and len(run.out) < len(whole.out)
    failed = pieces[-1].split
    with rdbspec.open(big_dump) as dump:
        before = sum(1 for r in dump.keys() if r.offset < (failed.start or 0))
    assert run.out == b"".join(whole.out.splitlines(keepends=True)[:before])  # the rows of the keys before it


# -- one process, the output itself ----------------------------------------------------------------


def test_what_one_process_reads(big_dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One job, stdin, a Dragonfly snapshot set and a file under 8 MiB are read by one process;
    a file over the split size set by the environment is not."""
    monkeypatch.delenv(parallel.ENV_SPLIT_SIZE, raising=False)
    out = tmp_path / "df"
    rdb_bytes.build(out)
    with rdbspec.open(big_dump) as dump:
        assert parallel.split_size(str(big_dump), dump, 4) is None  # 0.9 MB
        assert parallel.split_size("-", dump, 4) is None
        monkeypatch.setenv(parallel.ENV_SPLIT_SIZE, "100000")
        assert parallel.split_size(str(big_dump), dump, 4) == 100000
        assert parallel.split_size(str(big_dump), dump, 1) is None
        assert parallel.split_size("-", dump, 4) is None
    with rdbspec.open(out / "set") as dfs:
        assert parallel.split_size(str(out / "set"), dfs, 4) is None
    shard = tmp_path / "alone.rdb"
    shutil.copyfile(out / "set" / "snap-0001.dfs", shard)
    with rdbspec.open(shard, whole_set=False) as one:
        assert parallel.split_size(str(shard), one, 4) is None
    assert parallel.usable_cores() >= 1


def _subprocess(*args: str, stderr: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "rdbspec", *args], stdout=subprocess.PIPE, stderr=stderr,
                          timeout=120, check=False, env={**os.environ, parallel.ENV_SPLIT_SIZE: "20000"})


def test_stdout_a_file_and_a_terminal(big_dump: Path, tmp_path: Path) -> None:
    """To a pipe or to -o: the spools are copied to it (a failure too, to a pipe); a progress line
    on a terminal does not change the output."""
    one = _subprocess("dump", str(big_dump), "--jobs", "1")
    assert _subprocess("dump", str(big_dump), "--jobs", "2").stdout == one.stdout
    assert _subprocess("dump", str(big_dump), "--jobs", "2", "-o", str(tmp_path / "out")).returncode == 0
    assert (tmp_path / "out").read_bytes() == one.stdout
    primary, secondary = pty.openpty()
    try:
        shown = _subprocess("dump", str(big_dump), "--jobs", "2", stderr=secondary)
    finally:
        os.close(secondary)
        os.close(primary)
    assert shown.returncode == 0 and shown.stdout == one.stdout


# -- what the workers gather, added up -------------------------------------------------------------


def _keys(count: int, seed: int) -> list[tuple]:
    """Rows for `ReportBuilder.add_key`: prefixes of 1 to 4 parts, many memory figures equal."""
    rng = random.Random(seed)
    return [(rng.choice((0, 0, 3)), b":".join(b"p%d" % rng.randrange(6) for _ in range(rng.randint(1, 4))),
             rng.choice(("string", "hash", "list")), "listpack", rng.randrange(50), rng.randrange(5),
             rng.choice((8, 16, 16, 24, 100)), rng.choice((None, 1_700_000_000_000 + rng.randrange(10**8))))
            for _ in range(count)]


def _report(parts: list[list[tuple]], max_prefixes: int, follow: bool = False) -> dict:
    """The report of `parts` gathered by one builder each, added up in order: each spilling as a
    worker's, or (`follow`) following the merged builder as it was two parts before, once full."""
    builder = None
    frames: list[ReportBuilder] = []  # the merged builder after each part, as a worker forked then sees it
    for rows in parts:
        part = ReportBuilder(3, b":", 3, 1_700_000_000_000, max_prefixes)
        spilled: list[tuple[bytes, int, int]] = []
        if not (follow and len(frames) > 1 and part.follow(frames[-2])):
            part.spill_prefixes(lambda *row: spilled.append(row))  # noqa: B023 - called before the next part
        for row in rows:
            part.add_key(*row)
            if row[4] % 7 == 0:  # a stream, of the length of its memory (many equal)
                part.add_stream(row[0], row[1], row[6], 1, [])
        part.spill_prefixes(None)
        if builder is None:
            builder = part
        else:
            builder.merge(part)
        for row in spilled:
            builder.add_prefixes(*row)
        frames.append(copy.deepcopy(builder))
    assert builder is not None
    return builder.result()


@pytest.mark.parametrize("follow", [False, True])
@pytest.mark.parametrize("max_prefixes", [5, 40, 10_000])
def test_report_builders_add_up(max_prefixes: int, follow: bool) -> None:
    """Builders of consecutive parts of the keys, merged in order (and what a bounded prefix tree
    spilled added after, or counted in a full tree's frame), give the figures of one builder over
    all of them."""
    rows = _keys(400, max_prefixes)
    whole = _report([rows], max_prefixes)
    for cuts in ([100, 200, 300], [1, 2, 399], [50], list(range(10, 400, 10))):
        edges = [0, *cuts, len(rows)]
        assert _report([rows[a:b] for a, b in zip(edges, edges[1:])], max_prefixes, follow) == whole


def test_prefix_trees_add_up() -> None:
    """`prefixes`' trees of consecutive parts of the keys, merged, give the rows of one tree."""
    rows = _keys(300, 1)
    whole = PrefixTree(b":", 2)
    parts = [PrefixTree(b":", 2) for _ in range(3)]
    for number, (_, key, *_, memory, _) in enumerate(rows):
        whole.add(key, 1, memory)
        parts[number * 3 // len(rows)].add(key, 1, memory)
    for part in parts[1:]:
        parts[0].merge(part)
    assert list(parts[0].rows()) == list(whole.rows())


def test_prefix_trees_go_to_the_parent_as_they_were_and_rank_as_their_sorted_rows() -> None:
    """A worker's tree, pickled (as columns), is the tree it was: its rows, and for a bounded one (and a
    framed one) the order its prefixes were made in; `ranked` gives the rows by memory, then prefix
    (many memory figures equal), the `top` ones or all."""
    rows = _keys(400, 2)
    unbounded, bounded = PrefixTree(b":", 3), PrefixTree(b":", 3, max_nodes=40)
    for _, key, *_, memory, _ in rows:
        for tree in (unbounded, bounded):
            tree.add(key, 1, memory)
    framed = FramedTree(bounded)
    for _, key, *_, memory, _ in _keys(100, 3):
        framed.add(key, 2, memory)
    for tree in (unbounded, bounded, framed):
        copy = pickle.loads(pickle.dumps(tree))
        assert list(copy.rows()) == list(tree.rows()) and copy.nodes == tree.nodes
        assert (copy.made is None) == (tree.made is None)
        assert [part for _, part, _ in copy.made or ()] == [part for _, part, _ in tree.made or ()]
        expected = sorted(tree.rows(), key=lambda row: (-row.memory, row.prefix))
        assert list(copy.ranked(5)) == expected[:5]
        assert list(pickle.loads(pickle.dumps(tree)).ranked()) == expected


def test_prefix_sums_past_their_memory_rank_as_one_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`PrefixSums` of consecutive parts of the keys, each sending its tree to disk past 7 prefixes
    (a worker's past 5 when it settles), merged in any order, then summed over 3 runs at a time and
    ranked 11 rows at a time, give the rows of one tree; the runs are gone once read."""
    monkeypatch.setattr(prefixes, "SEND_PREFIXES", 5)
    monkeypatch.setattr(prefixes, "SORT_ROWS", 11)
    monkeypatch.setattr(runs, "FAN_IN", 3)
    rows = _keys(500, 4)
    for top in (None, 5):
        whole = PrefixTree(b":", 3)
        parts = [prefixes.PrefixSums(b":", 3, str(tmp_path), spill_at=7) for _ in range(4)]
        for number, (_, key, *_, memory, _) in enumerate(rows):
            whole.add(key, number % 3, memory)
            parts[number * 4 // len(rows)].add(key, number % 3, memory)
        for part in parts:
            part.settle()
        sums = pickle.loads(pickle.dumps(parts[2]))
        for part in (parts[0], parts[3], parts[1]):
            sums.merge(pickle.loads(pickle.dumps(part)))
        assert len(sums.runs) > 2 * runs.FAN_IN
        assert list(sums.ranked(top)) == list(whole.ranked(top))
        assert list(tmp_path.iterdir()) == []


def test_prefixes_past_their_memory(big_dump: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, rdbspec_main,
                                    pieces) -> None:
    """`rdbspec prefixes` whose sums go through runs on disk (past 40 prefixes, a worker's past 10)
    writes what it writes in memory, in one process or several; the temporary directory is gone."""
    in_memory = rdbspec_main(["prefixes", str(big_dump), "--depth", "3", "--jobs", "1"])
    assert in_memory.code == 0 and in_memory.out.count(b"\n") > 200
    monkeypatch.setattr(prefixes, "SPILL_PREFIXES", 40)
    monkeypatch.setattr(prefixes, "SEND_PREFIXES", 10)
    monkeypatch.setattr(prefixes, "SORT_ROWS", 30)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    written: list[str] = []
    write_run = runs.write_run

    def counted(rows, directory: str) -> str:
        written.append(write_run(rows, directory))
        return written[-1]

    monkeypatch.setattr(runs, "write_run", counted)
    one = rdbspec_main(["prefixes", str(big_dump), "--depth", "3", "--jobs", "1"])
    assert one == in_memory and len(written) > 5  # the tree's runs and the ranking's
    assert assert_same(rdbspec_main, pieces, ["prefixes", str(big_dump), "--depth", "3"], 4_000) == in_memory
    args = ["prefixes", str(big_dump), "--depth", "3", "--csv"]
    assert rdbspec_main([*args, "--top", "7"]).out.splitlines() == rdbspec_main(args).out.splitlines()[:8]
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith("rdbspec-prefixes-")] == []


def test_report_with_a_full_prefix_tree(big_dump: Path, monkeypatch: pytest.MonkeyPatch, rdbspec_main,
                                        pieces) -> None:
    """Past `max_prefixes`, a worker sends the keys its tree cannot hold through its spool: the
    page is the same still."""
    monkeypatch.setattr(report_cli, "ReportBuilder", partial(ReportBuilder, max_prefixes=60))
    run = assert_same(rdbspec_main, pieces, ["report", str(big_dump), "--json"], 20_000)
    assert run.code == 0 and b'"other": true' in run.out


def test_copy_to_a_file_a_pipe_or_memory(tmp_path: Path) -> None:
    """A spool's bytes, or some of them, written after what the output holds."""
    with open(tmp_path / "spool", "w+b") as spool:
        spool.write(b"0123456789" * 100_000)
        spool.flush()
        memory = io.BytesIO()
        memory.write(b"<")
        parallel.copy(spool, memory, 5, 25)
        assert memory.getvalue() == b"<56789012345678901234"
        with open(tmp_path / "out", "wb") as out:
            out.write(b"<")
            parallel.copy(spool, out)
            parallel.copy(spool, out, 999_990)
        assert (tmp_path / "out").read_bytes() == b"<" + b"0123456789" * 100_000 + b"0123456789"
        read_fd, write_fd = os.pipe()
        with os.fdopen(write_fd, "wb") as pipe, os.fdopen(read_fd, "rb") as reader:
            parallel.copy(spool, pipe, 10, 30)
            pipe.close()
            assert reader.read() == b"01234567890123456789"
