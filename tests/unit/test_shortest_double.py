"""`rdbspec dump`'s compiled writer writes each sorted-set score as Python's float repr, byte for
byte: rdbspec/jsonl/_shortest_double.h (Ryu's shortest digits, formatted as repr) replaced
PyOS_double_to_string in rdbspec/jsonl/_encode.pyx `put_number`. The scores come from a dump
built byte by byte, through both of the writer's paths: a ZSET_2 key (binary doubles, written
from the decoded list) and a listpack sorted set (scores as text, as Redis 7.0 writes them with
"%.17g", redis src/util.c d2string; written from the entries' columns).

The doubles: random 64-bit patterns (every finite one a ZSET_2 can hold), random uniform(0, 1000)
values and their "%.17g" text, every power of two from 2^-1074 to 2^1023 (every binary exponent,
so every entry of the header's tables that is read), the subnormal and normal edges and DBL_MAX,
integers around 2^53 and 10^15..10^17, the switches between fixed and exponent notation (1e-4 /
1e-5 and 1e16 / 1e17, with their neighbours), short decimals of every decimal exponent, each
also negated, and -0.0."""

from __future__ import annotations

import math
import random
import struct
from pathlib import Path

from rdbspec import cli, jsonl
from rdbspec.read.checksum import crc64

TESTS = Path(__file__).resolve().parents[1]

from tests.support import dragonfly_dumps as rdb_bytes  # noqa: E402 - byte builders shared with the Dragonfly fixtures

RDB_ZSET_2, RDB_ZSET_LISTPACK = 5, 17  # redis src/rdb.h RDB_TYPE_ZSET_2, RDB_TYPE_ZSET_LISTPACK
RANDOM_PATTERNS = 200_000
UNIFORM = 40_000


def random_patterns(rng: random.Random) -> list[float]:
    patterns = (struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0] for _ in range(RANDOM_PATTERNS))
    return [x for x in patterns if math.isfinite(x)]


def edges() -> list[float]:
    """The doubles of the module doc other than the random ones, positive (negated by the caller)."""
    powers = [math.ldexp(1.0, e) for e in range(-1074, 1024)]
    limits = [5e-324, 1e-323, 2.225073858507201e-308, 2.2250738585072014e-308, 1.7976931348623157e308]
    integers = [float(base + k) for base in (2**53, 10**15, 10**16, 10**17) for k in range(-4, 5)]
    switches = [math.nextafter(x, toward) for x in (1e-4, 1e-5, 1e16, 1e17) for toward in (0, x, math.inf)]
    decimals = [float(f"{m}e{e}") for e in range(-323, 308) for m in ("1", "1.5", "2.5", "9.999999999999999")]
    fixed = [0.1, 0.5, 1.0, 12.5, 123.0, 123456.789, 1234567890123456.0, 9999999999999998.0, 0.3, 2 / 3]
    return [0.0, *powers, *limits, *integers, *switches, *decimals, *fixed]


def zset_2(name: bytes, scores: list[float]) -> bytes:
    members = b"".join(rdb_bytes.rdb_str(b"m%d" % i) + rdb_bytes.f64(x) for i, x in enumerate(scores))
    return bytes([RDB_ZSET_2]) + rdb_bytes.rdb_str(name) + rdb_bytes.rdb_len(len(scores)) + members


def zset_listpack(name: bytes, texts: list[bytes]) -> bytes:
    entries = [x for i, text in enumerate(texts) for x in (b"m%d" % i, text)]
    return bytes([RDB_ZSET_LISTPACK]) + rdb_bytes.rdb_str(name) + rdb_bytes.rdb_str(rdb_bytes.listpack(entries))


def rdb10(*records: bytes) -> bytes:
    body = b"REDIS0010" + b"\xfe" + rdb_bytes.rdb_len(0) + b"".join(records) + b"\xff"
    return body + struct.pack("<Q", crc64(body))


def written_value(line: bytes) -> bytes:
    """The text of a line's "value" (the last field)."""
    head, value = line.split(b',"value":', 1)
    assert value.endswith(b"}")
    return value[:-1]


def reprs(scores: list[float]) -> bytes:
    return b"[" + b",".join(b'["m%d",%s]' % (i, repr(x).encode()) for i, x in enumerate(scores)) + b"]"


def test_scores_are_written_as_float_repr(tmp_path: Path) -> None:
    assert jsonl._encode is not None  # `make test` builds it: without it, nothing is compared
    rng = random.Random(20181)
    positive = edges()
    binary = [*random_patterns(rng), *positive, *[-x for x in positive]]
    uniform = [rng.uniform(0, 1000) for _ in range(UNIFORM)]
    texts = [b"%.17g" % x for x in uniform]
    path = tmp_path / "scores.rdb"
    path.write_bytes(rdb10(zset_2(b"binary", binary + uniform), zset_listpack(b"text", texts)))
    out = tmp_path / "scores.jsonl"
    assert cli.main(["dump", str(path), "-o", str(out)]) == 0
    binary_line, text_line = out.read_bytes().split(b"\n")[:-1]
    assert written_value(binary_line) == reprs(binary + uniform)
    assert written_value(text_line) == reprs([float(text) for text in texts])
    assert len(binary) > RANDOM_PATTERNS * 0.99  # about 1 in 2048 patterns is nan or inf
    assert {"0.0", "-0.0", "5e-324", "1e+16", "1.5e-05", "0.0001", "1e+300"} <= {repr(x) for x in binary}
