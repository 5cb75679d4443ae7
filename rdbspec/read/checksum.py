"""CRC-64/Jones as Redis computes it (reflected, init 0), in C through anycrc."""

from __future__ import annotations

from collections.abc import Callable

import anycrc

from .source import Buffer

_MODEL = anycrc.Model("CRC64-REDIS")
_CHUNK = 16 << 20  # bytes per call: a huge mmap is never copied whole, and is released as it goes


def crc64(data: Buffer | memoryview, start: int = 0, end: int | None = None,
          after_chunk: Callable[[], None] | None = None) -> int:
    """CRC of `data[start:end]` (bytes, mmap or memoryview); `after_chunk` runs after each
    chunk (to drop the mapped pages read so far: `Source.release`)."""
    view = memoryview(data)
    end = len(view) if end is None else end
    crc: int = 0
    try:
        for offset in range(start, end, _CHUNK):
            crc = _MODEL.calc(view[offset:min(offset + _CHUNK, end)], crc)
            if after_chunk is not None:
                after_chunk()
    finally:
        view.release()
    return crc


def crc64_update(crc: int, data: bytes | bytearray | memoryview) -> int:
    """The CRC of what `crc` was computed over, followed by `data` (a file written piece by piece)."""
    updated: int = _MODEL.calc(data, crc)
    return updated
