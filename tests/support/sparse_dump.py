"""A dump over 4 GiB that costs no disk: a sparse file. Its first key, `big`, is a string of `HOLE`
bytes (more than 2^32: a 64-bit RDB length) that are a hole of zeros in the file; the keys after it
lie past 2^32: a list, a stream with a consumer group and pending entries, a hash, strings (`AFTER`).
RDB 10 as Redis 7.0 writes it, the records written by rdbspec's Writer, its checksum 0 (as a server
with `rdbchecksum no` saves: no reader computes a CRC over the hole). A reader pays for the pages it
touches only: one that steps over the string never reads the hole."""

from __future__ import annotations

import struct
from pathlib import Path

import rdbspec
from rdbspec.write.stream import EditableConsumer, EditableGroup, EditableStream, Pending

HOLE = (1 << 32) + 12_345  # the big string's length
BIG = b"big"
FIRST_MS = 1_700_000_000_000
LIST = [b"item:%d" % i for i in range(3000)]
ENTRIES = [((FIRST_MS + i, 0), [(b"n", b"%d" % i), (b"kind", b"even" if i % 2 == 0 else b"odd")]) for i in range(1000)]
PENDING = {(FIRST_MS + i, 0): b"alice" if i % 2 else b"bob" for i in range(10)}  # read by the group `g`, not acked
HASH = [(b"field:%d" % i, b"v" * (i % 30)) for i in range(200)]
STRINGS = {b"after:s%d" % i: b"x" * i for i in range(10)}
AFTER = [b"after:list", b"after:stream", b"after:hash", *STRINGS]  # the keys after `big`, in file order


def stream() -> EditableStream:
    out = EditableStream()
    for entry_id, fields in ENTRIES:
        out.append(entry_id, fields, 4096, 100)
    group = out.groups[b"g"] = EditableGroup(last_id=max(PENDING), entries_read=len(PENDING))
    delivered = FIRST_MS + 60_000
    for entry_id, consumer in PENDING.items():
        group.pel[entry_id] = Pending(consumer, delivered, 1)
        group.consumers.setdefault(consumer, EditableConsumer(delivered, delivered)).pel[entry_id] = None
    return out


def big_record() -> bytes:
    """`big`'s record up to its bytes: the type (string), the key, the 64-bit length (0x81, big-endian)."""
    return bytes([0, len(BIG)]) + BIG + b"\x81" + struct.pack(">Q", HOLE)


def build(path: Path) -> Path:
    """Writes the dump to `path`: the keys after `big` by the Writer into a small dump, whose
    records before its first key are copied first, then `big`'s record and its hole, then the rest."""
    small = path.with_name(path.name + ".small")
    with rdbspec.Writer(small, 10, checksum=False) as out:
        out.aux(b"redis-ver", b"7.0.15")
        out.aux(b"redis-bits", b"64")
        out.select_db(0)
        out.list(b"after:list", LIST)
        out.stream(b"after:stream", stream())
        out.hash(b"after:hash", HASH)
        for key, value in STRINGS.items():
            out.string(key, value)
    data = small.read_bytes()
    small.unlink()
    with rdbspec.parse(data) as dump:
        first = next(dump.keys())
        cut = first.offset - first.prefix_size
    with open(path, "wb") as f:
        f.write(data[:cut] + big_record())
        f.seek(HOLE, 1)  # the hole: nothing written
        f.write(data[cut:])
    return path

