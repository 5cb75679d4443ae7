"""RDB 14 (Redis 8.8) inputs the tests share: the golden fixtures (tests/golden/) as dump files,
a one-key REDIS0014 file around a golden value, another header over a dump, and the content of
librdb's stream_v14_xnack test (its IDs and delivery time)."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

from rdbspec.read.checksum import crc64

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "conformance"))

from golden import load_fixture  # noqa: E402

T = 1779170191996  # the first entry's ms in librdb's stream_v14_xnack
SENT = 1779170192004  # the delivery time of its owned pending entries
NOW = SENT + 1000


def golden_file(name: str, tmp_path: Path) -> Path:
    """The bytes of a golden fixture (a whole file) as a dump file in `tmp_path`."""
    path = tmp_path / f"{name}.rdb"
    path.write_bytes(load_fixture(name).data)
    return path


def golden_value(name: str) -> bytes:
    """The bytes of a golden fixture of a value."""
    return load_fixture(name).data


def with_header(magic: bytes, data: bytes) -> bytes:
    """`data` (a whole dump) under another 9-byte magic, its CRC-64 trailer computed again."""
    body = magic + data[9:-8]
    return body + struct.pack("<Q", crc64(body))


def one_key_file(rdb_type: int, key: bytes, value: bytes) -> bytes:
    """A REDIS0014 file of one key whose value is `value` (a golden value fixture's bytes)."""
    body = b"REDIS0014\xfe\x00" + bytes([rdb_type, len(key)]) + key + value + b"\xff"
    return body + struct.pack("<Q", crc64(body))


def sid(ms: int) -> str:
    """The ID ms-0 as text."""
    return f"{ms}-0"
