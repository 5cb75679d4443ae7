"""Valkey 9.2: the VALKEY081 header, its type 23 (PATH_HASH: spec hash::valkey_path_hash) and the
whole-file compression of `rdbcompression lz4` (spec/vcs.ksy, rdbspec/read/source.py), through the
library and the command line, on dumps made here (tests/support/valkey_dumps.py)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import tracemalloc
from pathlib import Path

import lz4.frame
import pytest

import rdbspec
from rdbspec import Writer
from rdbspec.errors import EXIT_CODES, FrameChecksumError, IntegrityError, ParseError, UnwritableError
from rdbspec.read import source, splits
from rdbspec.read.checksum import crc64
from rdbspec.read.dumpfile import Dump
from tests.support.valkey_dumps import LZ4_ENVELOPE, PATHS, vcs_lz4, write_valkey081

REAL = Path(__file__).resolve().parents[1] / "corpus" / "real"
VALKEY_8 = sorted((REAL / "valkey-8.0.1").glob("*.rdb"))  # REDIS0011 files with types up to 21


def run(*args: str, stdin: bytes | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "rdbspec", *args], input=stdin, capture_output=True, timeout=120,
                          check=False, env=None if env is None else {**os.environ, **env})


def one_line(proc: subprocess.CompletedProcess[bytes], code: str) -> str:
    """The one stderr line a failure ends with, after checking the exit code."""
    err = proc.stderr.decode()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert proc.returncode == EXIT_CODES[code], (proc.returncode, err)
    return err


def with_checksum(data: bytes) -> bytes:
    end = len(data) - 8
    return data[:end] + struct.pack("<Q", crc64(data, 0, end))


def rdb_string(data: bytes) -> bytes:
    assert len(data) < 64
    return bytes([len(data)]) + data


def one_key(type_byte: int, value: bytes, magic: bytes = b"VALKEY081") -> bytes:
    """A dump of one key `k` of type `type_byte` and the value bytes given."""
    body = magic + b"\xfe\x00" + bytes([type_byte]) + rdb_string(b"k") + value + b"\xff"
    return with_checksum(body + bytes(8))


def path_hash_value(paths: list[tuple[bytes, list[tuple[bytes, bytes]]]]) -> bytes:
    """The bytes of a PATH_HASH value: `len n`, then per path the path, `len m`, m field/value pairs."""
    out = bytes([len(paths)])
    for path, fields in paths:
        out += rdb_string(path) + bytes([len(fields)]) + b"".join(rdb_string(f) + rdb_string(v) for f, v in fields)
    return out


@pytest.fixture(scope="module")
def dump_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_valkey081(tmp_path_factory.mktemp("valkey92") / "dump.rdb")


# -- PATH_HASH ----------------------------------------------------------------------------------


def test_path_hash_values(dump_path: Path, each_backend: str) -> None:
    with rdbspec.open(dump_path) as dump:
        assert (dump.header.magic, dump.header.version, dump.header.dialect) == ("VALKEY081", 81, "valkey")
        keys = {k.key: k for k in dump.keys()}
        tree = keys[b"tree"]
        assert (tree.rdb_type, tree.type_name, tree.encoding) == (23, "path-hash", "path-hash")
        assert tree.value == [(path, list(fields.items())) for path, fields in sorted(PATHS.items())]
        assert tree.count_elements() == len(PATHS)  # PHCARD: the paths
        assert tree.field_expire_at_ms is None and not tree.skipped_by_server
        assert keys[b"tree:ttl"].expire_at_ms == 4102444800000
        assert keys[b"tree:wide"].count_elements() == 100
        assert keys[b"hash"].value == [(b"a", b"1"), (b"b", b"2")]
        assert dump.warnings == [] and dump.checksum_status == "ok"


def test_path_hash_json_keys_and_info(dump_path: Path) -> None:
    lines = [json.loads(line) for line in run("dump", str(dump_path), "--type", "path-hash").stdout.splitlines()]
    assert [line["key"] for line in lines] == ["tree", "tree:ttl", "tree:wide"]
    assert lines[1]["value"] == [{"path": "p", "fields": [["f", "v"]]}]
    assert lines[0]["value"][1] == {"path": {"hex": "0001ff"}, "fields": [["\x00field", {"hex": "7600616c7565ff"}]]}
    rows = [json.loads(line) for line in run("keys", str(dump_path), "--memory").stdout.splitlines()]
    tree = next(row for row in rows if row["key"] == "tree")
    assert (tree["type"], tree["elements"], tree["memory"]) == ("path-hash", len(PATHS), None)  # not sized
    assert all(row["memory"] is not None for row in rows if row["type"] != "path-hash")
    info = json.loads(run("info", str(dump_path), "--json").stdout)
    assert info["types"]["path-hash"] == 3
    rows = [json.loads(line) for line in run("prefixes", str(dump_path), "--depth", "1").stdout.splitlines()]
    assert next(row for row in rows if row["prefix"] == "tree")["memory"] == 0  # not sized: summed as 0 bytes


def test_empty_path_hash_is_a_key(tmp_path: Path, each_backend: str) -> None:
    """No path: Valkey loads an empty key (tests/unit/type/path_hash.tcl "Empty Path Hash survives
    ... RDB reload"), it does not skip it as an empty hash."""
    path = tmp_path / "empty.rdb"
    path.write_bytes(one_key(23, path_hash_value([])))
    with rdbspec.open(path) as dump:
        (key,) = dump.keys()
        assert (key.type_name, key.value, key.skipped_by_server, dump.warnings) == ("path-hash", [], False, [])
    (line,) = run("dump", str(path)).stdout.splitlines()
    assert json.loads(line)["value"] == []


@pytest.mark.parametrize(("paths", "words"), [
    ([(b"a", [(b"f", b"x")]), (b"a", [(b"f", b"y")])], "the path b'a' twice"),
    ([(b"p", [(b"a", b"x"), (b"a", b"y")])], "the field b'a' twice in the path b'p'"),
])
def test_duplicates_are_refused(tmp_path: Path, paths: list, words: str, each_backend: str) -> None:
    """valkey src/rdb.c rdbLoadObject "Duplicate path-hash path or out of memory", "Duplicate
    path-hash payload field" (tests/unit/type/path_hash.tcl "RESTORE rejects malformed path hash
    payloads": the DUMP bytes with a path or a field made the same as another)."""
    path = tmp_path / "dup.rdb"
    path.write_bytes(one_key(23, path_hash_value(paths)))
    with rdbspec.open(path) as dump, pytest.raises(IntegrityError, match=words):
        for key in dump.keys():
            _ = key.value
    assert words in one_line(run("dump", str(path)), "integrity")


def test_a_path_without_fields_is_refused(tmp_path: Path) -> None:
    """valkey src/rdb.c rdbLoadObject "Path hash path with empty payload"."""
    path = tmp_path / "nofield.rdb"
    path.write_bytes(one_key(23, path_hash_value([(b"p", [])])))
    line = one_line(run("dump", str(path)), "corrupt")
    assert "expected at least one field for the path, found 0" in line
    assert "(hash:valkey_path_hash_path.num_fields)" in line


def test_type_23_keeps_its_redis_meaning_in_a_redis_file(tmp_path: Path) -> None:
    """In a REDIS file 23 is Redis 7.4-rc's HASH_LISTPACK_EX_PRE_GA, never a path hash."""
    path = tmp_path / "redis.rdb"
    path.write_bytes(one_key(23, path_hash_value([(b"p", [(b"f", b"v")])]), b"REDIS0012"))
    proc = run("dump", str(path))
    assert proc.returncode == EXIT_CODES["corrupt"] and b"path" not in proc.stdout


def test_writer_writes_a_path_hash_only_in_valkey_81(tmp_path: Path) -> None:
    for version, valkey in ((80, True), (12, False)):
        with pytest.raises(UnwritableError, match="RDB 81"), Writer(tmp_path / "no.rdb", version, valkey=valkey) as out:
            out.select_db(0)
            out.path_hash(b"t", {b"p": {b"f": b"v"}})
    with pytest.raises(ValueError, match="at least one field"), Writer(tmp_path / "no.rdb", 81, valkey=True) as out:
        out.select_db(0)
        out.path_hash(b"t", {b"p": {}})
    assert not (tmp_path / "no.rdb").exists()


def test_path_hash_keys_write_back_as_they_were(dump_path: Path, tmp_path: Path) -> None:
    """Read by the Python parsers and written again by the generated writers, byte for byte."""
    copy = tmp_path / "copy.rdb"
    with rdbspec.open(dump_path, parsers="python") as dump, Writer(copy, 81, valkey=True) as out:
        for record in dump.head():
            out.record(record.opcode, record.body)
        for key in dump.keys():
            if out.db != key.db:
                out.select_db(key.db, 8, 1)
            out.key(key)
    assert copy.read_bytes() == dump_path.read_bytes()


def test_rewrite_target_refuses_path_hashes_by_name(dump_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "old.rdb"
    line = one_line(run("rewrite", str(dump_path), "-o", str(out), "--target", "redis-7.2"), "unwritable")
    assert "cannot hold Valkey 9.2 path-hash keys (type 23)" in line and not out.exists()
    proc = run("rewrite", str(dump_path), "-o", str(out), "--target", "valkey-8.0", "--allow-lossy")
    assert proc.returncode == 0 and b"dropped Valkey 9.2 path-hash keys (type 23): 3" in proc.stderr
    with rdbspec.open(out) as dump:
        assert dump.header.magic == "REDIS0011"
        assert sorted(k.key for k in dump.keys()) == [b"hash", b"list", b"set", b"str", b"zset"]
    kept = tmp_path / "cut.rdb"  # without a target the keys are copied as they are
    assert run("rewrite", str(dump_path), "-o", str(kept), "--type", "path-hash").returncode == 0
    with rdbspec.open(kept) as dump:
        assert [k.key for k in dump.keys()] == [b"tree", b"tree:ttl", b"tree:wide"]


# -- VALKEY081 without path hashes ----------------------------------------------------------------


@pytest.mark.parametrize("original", VALKEY_8, ids=lambda p: p.stem)
def test_valkey081_with_classic_types_reads_as_its_valkey080_twin(original: Path, tmp_path: Path) -> None:
    """The same records under VALKEY080 and VALKEY081 (a Valkey 8.0 dump's body): every command's
    output is the same but for the header."""
    twins = []
    for magic in (b"VALKEY080", b"VALKEY081"):
        twin = tmp_path / f"{magic.decode()}.rdb"
        twin.write_bytes(with_checksum(magic + original.read_bytes()[9:]))
        twins.append(twin)
    for command in (["dump"], ["keys", "--memory", "--as-version", "valkey-9.0"], ["info", "--json"]):
        outputs = [run(*command[:1], str(t), *command[1:]) for t in twins]
        assert [o.returncode for o in outputs] == [0, 0]
        texts = [o.stdout.decode().replace(t.name, "F").replace("VALKEY080", "M").replace("VALKEY081", "M")
                 for o, t in zip(outputs, twins)]
        if command[0] == "info":
            texts = [t.replace('"version": 80', '"version": V').replace('"version": 81', '"version": V') for t in texts]
        assert texts[0] == texts[1] and texts[0]


# -- the VCS envelope (rdbcompression lz4) ---------------------------------------------------------


@pytest.fixture(scope="module", params=[True, False], ids=["checksums", "no-checksums"])
def compressed(request: pytest.FixtureRequest, dump_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lz4") / "dump.rdb"
    path.write_bytes(vcs_lz4(dump_path.read_bytes(), checksum=request.param))
    return path


def test_a_compressed_dump_reads_as_the_dump_inside(compressed: Path, dump_path: Path, each_backend: str) -> None:
    assert compressed.read_bytes().startswith(LZ4_ENVELOPE)
    with rdbspec.open(compressed) as inside, rdbspec.open(dump_path) as plain:
        assert inside.source.compressed == "lz4" and plain.source.compressed is None
        assert inside.header == plain.header and inside.aux == plain.aux
        assert [(k.db, k.key, k.rdb_type, k.expire_at_ms, k.value) for k in inside.keys()] == \
            [(k.db, k.key, k.rdb_type, k.expire_at_ms, k.value) for k in plain.keys()]
        assert inside.checksum_status == "not used (compressed: the lz4 frame's checksums)"
        assert inside.trailer_verified()
    with rdbspec.parse(compressed.read_bytes()) as given:
        assert [k.key for k in given.keys()][:3] == [b"tree", b"tree:ttl", b"tree:wide"]


def test_the_command_line_reads_a_compressed_dump(compressed: Path, dump_path: Path) -> None:
    """`dump` and `info` as of the dump inside, from the file, on two jobs (a compressed file is
    read by one process: one frame, decoded from its start) and from stdin."""
    small_ranges = {"RDBSPEC_SPLIT_SIZE": "512"}  # the plain file is cut into ranges; the compressed one is not
    expected = run("dump", str(dump_path), "--jobs", "2", env=small_ranges).stdout
    assert expected.count(b"\n") == 8
    assert run("dump", str(compressed)).stdout == expected
    assert run("dump", str(compressed), "--jobs", "2", env=small_ranges).stdout == expected
    assert run("dump", "-", stdin=compressed.read_bytes()).stdout == expected
    info, plain = (json.loads(run("info", str(p), "--json", "--jobs", "2", env=small_ranges).stdout)
                   for p in (compressed, dump_path))
    assert info.pop("checksum") == "not used (compressed: the lz4 frame's checksums)" and plain.pop("checksum") == "ok"
    assert {k: v for k, v in info.items() if k != "file"} == {k: v for k, v in plain.items() if k != "file"}


def test_a_compressed_dump_is_one_split(compressed: Path) -> None:
    """The index pass does not cut a compressed file (Spark reads it in one task)."""
    assert splits.plan(str(compressed), 64, parts=4) == [splits.Split(str(compressed))]


def test_trailing_bytes_after_the_frame_are_not_read(dump_path: Path, tmp_path: Path) -> None:
    """valkey tests/integration/rdb-compression.tcl "RDB loader ignores trailing data after an LZ4
    frame like a plain RDB"."""
    path = tmp_path / "trailing.rdb"
    path.write_bytes(vcs_lz4(dump_path.read_bytes()) + b"trailing-data")
    assert run("dump", str(path)).stdout == run("dump", str(dump_path)).stdout


def frame_with(data: bytes, edit: str) -> bytes:
    """A compressed dump of `data` with one thing wrong."""
    wrapped = bytearray(vcs_lz4(data))
    if edit == "content checksum":
        wrapped[-1] ^= 1
    elif edit == "block data":  # a byte of the first block, covered by its checksum
        wrapped[len(LZ4_ENVELOPE) + 7 + 4 + 10] ^= 0x55
    elif edit == "cut":
        del wrapped[-20:]
    elif edit == "not a frame":
        wrapped[len(LZ4_ENVELOPE)] ^= 0xFF  # the frame's magic number
    return bytes(wrapped)


MISMATCH = "the LZ4 frame's checksum does not match its bytes"


@pytest.mark.parametrize(("edit", "code", "words"), [
    ("content checksum", "checksum", f"{MISMATCH} (ERROR_contentChecksum_invalid)"),
    ("block data", "checksum", f"{MISMATCH} (ERROR_blockChecksum_invalid)"),
    ("cut", "corrupt", "the LZ4 frame ends before its end mark: the file is cut short"),
    ("not a frame", "corrupt", "the LZ4 frame does not decode (ERROR_frameType_unknown)"),
])
def test_a_bad_frame_is_one_line(dump_path: Path, tmp_path: Path, edit: str, code: str, words: str) -> None:
    """valkey tests/integration/rdb-compression.tcl "LZ4 compressed RDB detects a content checksum
    mismatch", "... detects corruption in its compressed stream", "Truncated LZ4 frame is rejected"."""
    path = tmp_path / "bad.rdb"
    path.write_bytes(frame_with(dump_path.read_bytes(), edit))
    for proc in (run("dump", str(path)), run("info", str(path)), run("dump", "-", stdin=path.read_bytes())):
        line = one_line(proc, code)
        assert words in line and "byte " in line and proc.stdout == b""
    with pytest.raises(FrameChecksumError if code == "checksum" else ParseError):
        rdbspec.open(path)


@pytest.mark.parametrize(("offset", "value", "words"), [
    (3, 2, "expected envelope version 1 (the one Valkey writes and loads), found 2 at byte 3 (vcs:vcs.version)"),
    (4, 127, "expected codec 1 (LZ4) or 2 (Zstandard), found 127 at byte 4 (vcs:vcs.codec_id)"),
    (4, 2, "a zstd-compressed dump (rdbcompression zstd): rdbspec unwraps LZ4 frames only at byte 4"),
    (5, 1, "expected the reserved byte 0, found 1 at byte 5 (vcs:vcs.reserved)"),
    (6, 127, "expected stream kind 1 (an RDB file), found 127 at byte 6 (vcs:vcs.stream_kind)"),
])
def test_an_envelope_the_loader_refuses(dump_path: Path, tmp_path: Path, offset: int, value: int, words: str) -> None:
    """valkey tests/integration/rdb-compression.tcl "RDB loader rejects incompatible VCS envelope
    fields" (version, codec, reserved byte, stream kind)."""
    data = bytearray(vcs_lz4(dump_path.read_bytes()))
    data[offset] = value
    path = tmp_path / "envelope.rdb"
    path.write_bytes(bytes(data))
    assert words in one_line(run("info", str(path)), "corrupt")


def test_a_cut_envelope_is_truncated(tmp_path: Path) -> None:
    path = tmp_path / "cut.rdb"
    path.write_bytes(LZ4_ENVELOPE[:5])
    assert "(vcs:vcs.reserved)" in one_line(run("info", str(path)), "corrupt")


def test_bytes_decoded_after_the_rdb_file_are_refused(dump_path: Path, tmp_path: Path) -> None:
    """valkey src/compression_stream.c streamReaderFinish: decoded bytes left after the RDB's end."""
    inner = dump_path.read_bytes()
    path = tmp_path / "extra.rdb"
    path.write_bytes(LZ4_ENVELOPE + lz4.frame.compress(inner[:-8] + bytes(8) + b"extra"))
    line = one_line(run("info", str(path)), "corrupt")
    assert f"5 more bytes decoded from the lz4 frame after the RDB file's end (the server refuses them) at byte " \
           f"{len(inner)} (rdb:rdb.checksum)" in line


def test_unwrapping_holds_a_bounded_piece_of_the_frame(tmp_path: Path) -> None:
    """A string of 64 MiB of zeros (the frame is 250 KiB) is decoded into the spool a bounded
    piece at a time, never held whole."""
    size = 64 << 20
    body = b"VALKEY081\xfe\x00\x00" + rdb_string(b"zeros") + b"\x80" + struct.pack(">I", size)
    path = tmp_path / "zeros.rdb"
    with path.open("wb") as out:
        out.write(LZ4_ENVELOPE)
        compressor = lz4.frame.LZ4FrameCompressor(block_size=lz4.frame.BLOCKSIZE_MAX64KB)
        out.write(compressor.begin() + compressor.compress(body))
        for _ in range(size >> 20):
            out.write(compressor.compress(bytes(1 << 20)))
        out.write(compressor.compress(b"\xff" + bytes(8)) + compressor.flush())
    tracemalloc.start()
    try:
        opened = source.open_source(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    with Dump(opened) as dump:
        (key,) = dump.keys()
        assert key.size > size and dump.checksum_status.startswith("not used")
    assert peak < 3 * source.DECODED_PIECE + source.FRAME_READ < size
