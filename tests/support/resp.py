"""The commands RESP bytes hold, as a server reads them (redis src/networking.c
processMultibulkBuffer: an array of bulk strings each), for the tests of `rdbspec dump --format
resp`."""

from __future__ import annotations

from collections.abc import Iterator


def commands_in(data: bytes) -> Iterator[tuple[list[bytes], int]]:
    """Each command of `data` and the bytes it takes."""
    at = 0
    while at < len(data):
        start = at
        assert data[at:at + 1] == b"*", f"no array at byte {at}"
        end = data.index(b"\r\n", at)
        count, at = int(data[at + 1:end]), end + 2
        line = []
        for _ in range(count):
            assert data[at:at + 1] == b"$", f"no bulk string at byte {at}"
            end = data.index(b"\r\n", at)
            size, at = int(data[at + 1:end]), end + 2
            line.append(data[at:at + size])
            assert data[at + size:at + size + 2] == b"\r\n"
            at += size + 2
        yield line, at - start
