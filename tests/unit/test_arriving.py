"""A dump read as its bytes arrive (`Source.grows`: a live server's RDB parsed as it comes,
`rdbspec.read.arriving`): every record that runs past the bytes at hand is read again once more
have come, and the bytes of the keys passed are given back.

`Arriving` below is a source whose bytes come a fixed number at a time, each time the reader runs
out, and which overwrites the bytes the reader says it has passed with 0xEE: a key read wrongly
across a boundary, or a value read after its bytes were passed, gives other JSON lines than the
file read whole. Every corpus dump (real servers' files) and the dumps the fuzz run makes, with
steps from 1 byte, on both backends."""

from __future__ import annotations

import io
import mmap
from pathlib import Path

import pytest

from rdbspec.errors import TruncatedError
from rdbspec.jsonl import write_records
from rdbspec.read.checksum import crc64
from rdbspec.read.dumpfile import CHECKSUM_BYTES, Dump
from rdbspec.read.dumpfile import open as open_dump
from rdbspec.read.source import Source

CORPUS = sorted((Path(__file__).resolve().parents[1] / "corpus" / "real").glob("*/*.rdb"))
POISON = 0xEE
SMALL = 4096


class Arriving(Source):
    """`data` arriving `step` bytes at a time, as the reader asks for more."""

    grows = True

    def __init__(self, data: bytes, step: int):
        mapping = mmap.mmap(-1, max(len(data), 1))
        mapping[:len(data)] = data
        super().__init__(mapping, "<arriving>")
        self.data, self.total, self.step = data, len(data), step
        self.arrived = min(step, self.total)
        self.cleared = 0
        self.asked = 0

    @property
    def size(self) -> int:
        return self.arrived

    def more(self, start: int, end: int) -> bool:
        assert start <= end <= self.arrived
        self.asked += 1
        self.arrived = min(self.arrived + self.step, self.total)
        return self.arrived > end

    def passed(self, offset: int) -> None:
        if offset > self.cleared:
            self.buffer[self.cleared:offset] = bytes([POISON]) * (offset - self.cleared)
            self.cleared = offset

    def whole(self) -> tuple[int, int] | None:
        """The sum of the bytes as they came (the real one sums them before they are passed)."""
        self.arrived = self.total
        return self.total - CHECKSUM_BYTES, crc64(self.data, 0, self.total - CHECKSUM_BYTES)


def lines(dump: Dump) -> bytes:
    out = io.BytesIO()
    write_records(out, dump.keys(), include_deleted=True)
    return out.getvalue()


@pytest.mark.parametrize("path", CORPUS, ids=[f"{p.parent.name}/{p.name}" for p in CORPUS])
def test_a_dump_read_as_it_arrives_reads_as_the_file(path: Path, each_backend: str) -> None:
    with open_dump(path) as whole:
        expected = lines(whole)
        checksum = whole.checksum_status
    data = path.read_bytes()
    # a byte at a time reads each record again for each of its bytes: on the small dumps only
    for step in ((1,) if len(data) < SMALL else ()) + (61, 4096):
        arriving = Arriving(data, step)
        dump = Dump(arriving)
        assert lines(dump) == expected, step
        assert arriving.arrived == arriving.total
        assert dump.checksum_status == checksum
        assert arriving.asked >= (arriving.total - CHECKSUM_BYTES) // step - 1  # each step came when asked for
    assert arriving.cleared > 0 or expected.count(b"\n") < 3  # keys were given back as they were passed


def test_an_rdb_that_ends_inside_a_record_is_cut_short_where_it_ends(each_backend: str) -> None:
    """When no more bytes come, the record the bytes ended in is a TruncatedError at the byte
    where they end, as for a file cut there."""
    data = CORPUS[0].read_bytes()
    cut = data[:len(data) // 2]
    with pytest.raises(TruncatedError) as from_file:
        Dump(Arriving(cut, len(cut)), verify_checksum=False).read_all()
    with pytest.raises(TruncatedError) as arriving:
        Dump(Arriving(cut, 97), verify_checksum=False).read_all()
    assert str(arriving.value) == str(from_file.value)
