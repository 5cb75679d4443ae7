"""CRC-64/Jones as Redis computes it (reflected, init 0), in C through anycrc."""

from __future__ import annotations

import anycrc

_MODEL = anycrc.Model("CRC64-REDIS")
_CHUNK = 64 << 20  # bytes per call, so a huge mmap is never copied whole


def crc64(data, start: int = 0, end: int | None = None) -> int:
    """CRC of `data[start:end]` (bytes, mmap or memoryview)."""
    view = memoryview(data)
    end = len(view) if end is None else end
    crc = 0
    try:
        for offset in range(start, end, _CHUNK):
            crc = _MODEL.calc(view[offset:min(offset + _CHUNK, end)], crc)
    finally:
        view.release()
    return crc
