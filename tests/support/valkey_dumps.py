"""Valkey 9.2 dumps made here: a VALKEY081 file with path hashes (written by `rdbspec.Writer`), and
any dump wrapped as `rdbcompression lz4` wraps it (spec/vcs.ksy), for the tests that read them."""

from __future__ import annotations

from pathlib import Path

import lz4.frame

from rdbspec import Writer

# a path hash of every kind of path and value the layout allows: the empty (root) path, binary
# paths and values, integer-encoded and LZF-compressible values, a path of many fields
PATHS: dict[bytes, dict[bytes, bytes]] = {
    b"": {b"root": b"root-value"},
    b"a": {b"f": b"one"},
    b"ab": {b"f1": b"v1", b"f2": b"12345"},
    b"\x00\x01\xff": {b"\x00field": b"v\x00alue\xff"},
    b"long:path:" + b"x" * 40: {b"big": b"payload " * 20},
    b"many": {b"field:%d" % i: b"value:%d" % i for i in range(30)},
}
# the VCS envelope Valkey writes before an LZ4 frame: "VCS", version 1, codec 1 (LZ4), reserved 0,
# stream kind 1 (an RDB file): valkey tests/integration/rdb-compression.tcl assert_rdb_file_envelope
LZ4_ENVELOPE = b"VCS\x01\x01\x00\x01"


def write_valkey081(path: Path) -> Path:
    """A VALKEY081 dump (what Valkey 9.2 saves) with path hashes beside the classic types."""
    with Writer(path, 81, valkey=True) as out:
        out.aux(b"valkey-ver", b"9.2.0")
        out.aux(b"redis-bits", b"64")
        out.select_db(0, 8, 1)
        out.path_hash(b"tree", PATHS)
        out.path_hash(b"tree:ttl", {b"p": {b"f": b"v"}}, expire_at_ms=4102444800000)
        out.path_hash(b"tree:wide", {b"path:%03d" % i: {b"f": b"%d" % i} for i in range(100)})
        out.string(b"str", b"hello")
        out.hash(b"hash", {b"a": b"1", b"b": b"2"})
        out.list(b"list", [b"x", b"y", b"z"])
        out.set(b"set", [b"1", b"2", b"3"])
        out.zset(b"zset", {b"m": 1.5, b"n": 2.0})
    return path


def vcs_lz4(rdb: bytes, checksum: bool = True) -> bytes:
    """`rdb` (an RDB file of version 5 or later) as Valkey saves it with `rdbcompression lz4`: its
    CRC-64 trailer left 0 (the saver skips it), then the envelope and one LZ4 frame of 64 KB linked
    blocks, with block and content checksums when `checksum` (`rdbchecksum yes`), none otherwise
    (valkey src/rdb.c rdbSaveInternal, src/compression_lz4.c)."""
    inner = rdb[:-8] + bytes(8)
    frame = lz4.frame.compress(inner, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=True,
                               block_checksum=checksum, content_checksum=checksum, store_size=False)
    return LZ4_ENVELOPE + frame
