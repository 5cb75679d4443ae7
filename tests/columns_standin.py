"""A pure-Python stand-in of the native backend's `ScalarColumns` and `RaggedColumns` (issue 14
"Columns contract"), so the consumers' columns paths are tested before the native backend is
built. Only what the contract names: the sequence protocol, the bulk methods, the raw columns
(memoryviews into one buffer), `wrapping_u64` and `bits`."""

from __future__ import annotations

from array import array

MASK64 = (1 << 64) - 1


def _text(v: int | bytes) -> bytes:
    return v if isinstance(v, bytes) else str(v).encode()


class ScalarColumns:
    def __init__(self, items: list[int | bytes]):
        self._items = list(items)
        blob = bytearray(b"\xee")  # byte strings live in one buffer, not at offset 0
        starts, lengths = array("q"), array("q")
        for v in self._items:
            starts.append(len(blob) if isinstance(v, bytes) else 0)
            lengths.append(len(v) if isinstance(v, bytes) else 0)
            blob += v if isinstance(v, bytes) else b""
        self.buf = bytes(blob)
        self.kinds = memoryview(array("B", [isinstance(v, bytes) for v in self._items]))
        self.ints = memoryview(array("q", [0 if isinstance(v, bytes) else v for v in self._items]))
        self.starts, self.lengths = memoryview(starts), memoryview(lengths)

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index):
        return self._items[index]

    def __iter__(self):
        return iter(self._items)

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other)  # type: ignore[call-overload]

    def values(self) -> list[int | bytes]:
        return list(self._items)

    def texts(self) -> list[bytes]:
        return [_text(v) for v in self._items]

    def pairs(self) -> list[tuple[bytes, bytes]]:
        flat = self.texts()
        return [(flat[i], flat[i + 1]) for i in range(0, len(flat) - 1, 2)]

    def wrapping_u64(self, base: int) -> array:
        return array("Q", [(base + v) & MASK64 for v in self._items])

    def bits(self, mask: int) -> bytes:
        return bytes(1 if v & mask else 0 for v in self._items)


class RaggedColumns:
    def __init__(self, rows: list[list[int | bytes]]):
        self.values = ScalarColumns([v for row in rows for v in row])
        starts = array("q", [0])
        for row in rows:
            starts.append(starts[-1] + len(row))
        self.row_starts = memoryview(starts)

    def __len__(self) -> int:
        return len(self.row_starts) - 1

    def __getitem__(self, index: int) -> list[int | bytes]:
        return self.values[self.row_starts[index]:self.row_starts[index + 1]]


class EntryRows:
    """A generated `stream_entry` columns object as the native backend gives it."""

    def __init__(self, flags: list[int], ms_diff: list[int], seq_diff: list[int], items: list[list[int | bytes]]):
        self.flags, self.ms_diff, self.seq_diff = ScalarColumns(flags), ScalarColumns(ms_diff), ScalarColumns(seq_diff)
        self.items = RaggedColumns(items)
