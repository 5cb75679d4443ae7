"""Hashtable-encoded values read in chunks (issue 26): `chunks_<field>` of the generated parsers
(spec key `-rdbspec-chunks`) gives, on both backends, the values the objects of the same field
hold, a bounded number of elements at a time (the native backend as `ScalarColumns`: spans of
the buffer, integers, LZF strings' decompressed bytes held by the columns, doubles); a corrupt
element fails with the object reader's error; and what `rdbspec dump` writes from the chunks is
what `jsonl.value_json` writes from the decoded value."""

from __future__ import annotations

import math
import struct

import pytest
from rdbspec_generated import dragonfly as python_dragonfly
from rdbspec_generated import hash as python_hash
from rdbspec_generated import rdb as python_rdb
from rdbspec_generated import zset as python_zset
from rdbspec_generated.native import dragonfly as native_dragonfly
from rdbspec_generated.native import hash as native_hash
from rdbspec_generated.native import rdb as native_rdb
from rdbspec_generated.native import zset as native_zset
from rdbspec_generated.native._columns import ScalarColumns

import rdbspec
from rdbspec import ParseError, jsonl
from rdbspec.read import values
from tests.support.dragonfly_dumps import f64, rdb_len, rdb_str_single_entry  # noqa: E402

# raw, integer-encoded (INT8, INT16, INT32), empty and LZF-compressed elements
ELEMENTS = [b"plain", b"7", b"-300", b"2147483647", b"", b"x" * 64, b"ab" * 40, b"\xff\x00bytes",
            b"9223372036854775807", b"0" * 30]
# relative field TTLs (rdb_len, up to 64 bits: one beyond a signed column's range)
TTLS = [0, 1, 1000, 1 << 32, (1 << 63) - 1, 1 << 63, (1 << 64) - 1, 5, 6, 7]
BACKENDS = {"python": (python_rdb, python_hash, python_zset), "native": (native_rdb, native_hash, native_zset)}
DRAGONFLY = {"python": python_dragonfly, "native": native_dragonfly}


def encoded(element: bytes) -> bytes:
    """An element as the server writes it: an integer encoding, LZF (over 20 bytes when it
    saves), else raw (redis src/rdb.c rdbSaveRawString)."""
    return rdb_str_single_entry(element)


def test_the_elements_take_every_string_form() -> None:
    forms = {encoded(e)[0] & 0x3F if encoded(e)[0] >> 6 == 3 else "length" for e in ELEMENTS}
    assert forms == {0, 1, 2, 3, "length"}  # INT8, INT16, INT32, LZF and plain lengths


def flat(chunks) -> list:
    return [v for chunk in chunks for v in (chunk.values() if isinstance(chunk, ScalarColumns) else chunk)]


def element(s) -> int | bytes:
    """An rdb_string object's element value, as the chunks give it."""
    return s.raw if s.raw is not None else s.int_value if s.int_value is not None else s.lzf


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("rows", [1, 2, 3, 7, 1 << 16])
def test_chunks_give_the_objects_values_a_bounded_number_at_a_time(backend: str, rows: int) -> None:
    rdb, hash_, zset = BACKENDS[backend]
    n = len(ELEMENTS)
    items = rdb.StringList.from_bytes(rdb_len(n) + b"".join(map(encoded, ELEMENTS)))
    table = hash_.HashTable.from_bytes(rdb_len(n) + b"".join(encoded(e) + encoded(e[::-1]) for e in ELEMENTS))
    scores = [1.5, -0.0, math.inf, -math.inf, 1e-310, 3.0, 7.25, -2.0, 0.1, 1e300]
    members = zset.Zset2.from_bytes(rdb_len(n) + b"".join(encoded(e) + f64(x) for e, x in zip(ELEMENTS, scores)))
    ttls = hash_.HashMetadata.from_bytes(struct.pack("<Q", 1700000000000) + rdb_len(n)
                                         + b"".join(rdb_len(ttl) + encoded(e) + encoded(b"v") for ttl, e in
                                                    zip(TTLS, ELEMENTS)))
    dragonfly = DRAGONFLY[backend]
    ttl = [encoded(b"%d" % (i * 100 - 1)) for i in range(n)]  # seconds since Dragonfly's base, -1: none
    df_set = dragonfly.DfSetWithExpiry.from_bytes(rdb_len(n) + b"".join(encoded(e) + t for e, t in zip(ELEMENTS, ttl)))
    df_hash = dragonfly.DfHashWithExpiry.from_bytes(rdb_len(n) + b"".join(encoded(e) + encoded(e[:3]) + t
                                                                         for e, t in zip(ELEMENTS, ttl)))
    cases = [
        (df_set.chunks_entries(rows), [element(x) for e in df_set.entries for x in (e.member, e.ttl)], 2),
        (df_hash.chunks_entries(rows), [element(x) for e in df_hash.entries for x in (e.field, e.value, e.ttl)], 3),
        (items.chunks_items(rows), [element(s) for s in items.items], 1),
        (table.chunks_entries(rows), [element(x) for p in table.entries for x in (p.field, p.value)], 2),
        (members.chunks_entries(rows), [x for e in members.entries for x in (element(e.member), e.score)], 2),
        (ttls.chunks_entries(rows), [x for e in ttls.entries for x in (e.ttl.value, element(e.field), b"v")], 3),
    ]
    for chunks, expected, width in cases:
        chunks = list(chunks)
        assert flat(chunks) == expected
        assert all(len(chunk) <= rows * width for chunk in chunks)
        assert len(chunks) == -(-n // rows)
        if backend == "native":
            assert all(isinstance(chunk, ScalarColumns) for chunk in chunks)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("step", [1, 5, 40, 1 << 20])
def test_values_cut_into_parts_read_as_the_whole(backend: str, step: int) -> None:
    """`cuts_<field>` (spec `-rdbspec-splits`): a part every `step` bytes or more, then the end
    and the count; the parts read from their cuts (`chunks_<field>(rows, start, count)`) give
    the whole's elements, in order. `_open` (what a lazy property reads) reads the object up to
    the field without stepping over it, as `_read` does otherwise."""
    rdb, hash_, zset = BACKENDS[backend]
    n = len(ELEMENTS)
    data = rdb_len(n) + b"".join(map(encoded, ELEMENTS))
    pairs = rdb_len(n) + b"".join(encoded(e) + encoded(e[::-1]) for e in ELEMENTS)
    scored = rdb_len(n) + b"".join(encoded(e) + f64(i / 3) for i, e in enumerate(ELEMENTS))
    for cls, raw, field in ((rdb.StringList, data, "items"), (hash_.HashTable, pairs, "entries"),
                            (zset.Zset2, scored, "entries")):
        value = cls.from_bytes(raw)
        cuts = getattr(value, f"cuts_{field}")(step)
        starts = [at for at, _ in cuts[:-1]]
        assert cuts[0] == (len(rdb_len(n)), 0) and cuts[-1] == (len(raw), n)
        assert all(b - a >= step for a, b in zip(starts, starts[1:]))
        chunks = getattr(value, f"chunks_{field}")
        parts = [v for (at, first), (_, after) in zip(cuts, cuts[1:]) for v in flat(chunks(3, at, after - first))]
        assert parts == flat(chunks(3))
        if step == 1:
            assert len(cuts) == n + 1  # every element a part
        with_tail, end = cls._read(value._io, 0, None, None)
        opened, start = cls._open(value._io, 0, None, None)
        assert (end, start) == (len(raw), len(rdb_len(n)))
        assert flat(getattr(opened, f"chunks_{field}")(3)) == flat(getattr(with_tail, f"chunks_{field}")(3))


def test_native_chunks_keep_spans_and_hold_only_decompressed_bytes() -> None:
    data = rdb_len(3) + encoded(b"plain") + encoded(b"ab" * 40) + encoded(b"12")
    chunk, = native_rdb.StringList.from_bytes(data).chunks_items(10)
    assert list(chunk.kinds) == [1, 3, 0]  # a span of the buffer, held bytes, an integer
    assert chunk.buf[chunk.starts[0]:chunk.starts[0] + chunk.lengths[0]] == b"plain"
    assert bytes(chunk.held) == b"ab" * 40
    assert chunk.values() == [b"plain", b"ab" * 40, 12]
    assert chunk.texts() == [b"plain", b"ab" * 40, b"12"]
    assert chunk[1] == b"ab" * 40 and chunk[-1] == 12
    lengths, = native_hash.HashMetadata.from_bytes(bytes(8) + rdb_len(2) + b"".join(
        rdb_len(ttl) + encoded(b"f") + encoded(b"v") for ttl in ((1 << 64) - 1, 7))).chunks_entries(4)
    assert list(lengths.kinds) == [5, 1, 1, 0, 1, 1]  # an unsigned row beyond int64, then an integer
    assert lengths.values() == [(1 << 64) - 1, b"f", b"v", 7, b"f", b"v"]
    assert lengths.texts()[0] == b"18446744073709551615" and list(lengths.text_lengths(0, 3)) == [20, 1]
    scored, = native_zset.Zset2.from_bytes(rdb_len(1) + encoded(b"m" * 30) + f64(2.5)).chunks_entries(4)
    assert list(scored.kinds) == [3, 4] and scored.values() == [b"m" * 30, 2.5]
    assert scored.strtod(0, 1, 127) == [0.0, 2.5]


def test_a_value_without_elements_gives_no_chunk() -> None:
    for rdb, hash_, _ in BACKENDS.values():
        assert list(rdb.StringList.from_bytes(rdb_len(0)).chunks_items(5)) == []
        assert list(hash_.HashTable.from_bytes(rdb_len(0)).chunks_entries(5)) == []


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_a_corrupt_element_fails_in_its_chunk_as_in_the_object_reader(backend: str) -> None:
    rdb = BACKENDS[backend][0]
    good = b"".join(map(encoded, ELEMENTS))
    lzf_at = good.index(encoded(b"ab" * 40))
    broken = bytearray(good)
    broken[lzf_at + 2] += 1  # the LZF run's uncompressed length one more: decompression gives less
    truncated = rdb_len(len(ELEMENTS) + 1) + good + b"\x05ab"  # the last element's 5 bytes cut to 2
    for data in (rdb_len(len(ELEMENTS)) + bytes(broken), truncated):
        with pytest.raises(ParseError) as from_objects:
            rdb.StringList.from_bytes(data).items  # noqa: B018 - reads the field
        with pytest.raises(ParseError) as from_chunks:
            list(rdb.StringList.from_bytes(data).chunks_items(3))
        assert str(from_chunks.value) == str(from_objects.value)


class _Lines(list):
    def write(self, data: bytes) -> None:
        self.append(bytes(data))


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_dump_writes_from_chunks_what_value_json_writes(backend: str) -> None:
    n = 2 * values.CHUNK_ROWS + 5  # three chunks
    fields = [b"f%d" % i for i in range(n)]
    body = {
        4: rdb_len(n) + b"".join(encoded(f) + encoded(f[::-1] * 3) for f in fields),  # hash
        2: rdb_len(n) + b"".join(encoded(f) for f in fields),  # set
        5: rdb_len(n) + b"".join(encoded(f) + f64(i / 3) for i, f in enumerate(fields)),  # sorted set
    }
    data = b"REDIS0009\xfe\x00" + b"".join(bytes([kind]) + encoded(b"k%d" % kind) + value
                                            for kind, value in body.items()) + b"\xff" + bytes(8)
    with rdbspec.parse(data, parsers=backend) as dump:
        for record in dump.keys():
            assert len(record.packed()) == n  # the declared count: nothing read
            lines = _Lines()
            jsonl.write_records(lines, [record])
            assert b"".join(lines) == jsonl.dumps_bytes(jsonl.record_json(record)) + b"\n"
            chunks = list(record.elements())
            assert [len(chunk) for chunk in chunks] == [values.CHUNK_ROWS, values.CHUNK_ROWS, 5]
            assert [x for chunk in chunks for x in chunk] == record.value
            assert record.count_elements() == n
