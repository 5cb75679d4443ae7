"""A key's value as the payload RESTORE loads (redis src/cluster.c createDumpPayload, which DUMP
writes, and verifyDumpPayload, which RESTORE checks): the value's type byte and its bytes as
rdbSaveObject writes them in a dump, then the RDB version they are laid out for (2 bytes, little
endian), then the CRC-64 of all the bytes before (8 bytes, little endian; the dump's own CRC).

The server refuses a payload whose version is above its own RDB version (Valkey 9 also takes its
own 80: RESTORE answers "DUMP payload version or checksum are wrong"), so a value is laid out
for the target's version first (`rdbspec.write.convert`), as `rewrite --target` lays it out.

A value the target loads as it was read is not decoded: its bytes are taken from the buffer the
dump is read from (`Payload.parts` are views of it, sent as they are: a mapped file's pages, never
a copy of a big value in memory). A converted value is written by the generated writers."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from rdbspec_generated import WriteIo
from rdbspec_generated import rdb as _rdb
from rdbspec_generated._runtime import WriteInputs

from ..read.checksum import crc64_update
from ..read.dumpfile import KeyRecord
from ..write.layouts import rdb_string
from ..write.writer import COPY_CHUNK, DumpBuffer

FOOTER_BYTES = 10  # the RDB version (2) and the CRC-64 (8)


@dataclass(frozen=True)
class Payload:
    """RESTORE's payload as the pieces it is sent in: the value's type byte and bytes (`parts`),
    then `footer`."""

    parts: Sequence[bytes | memoryview]
    footer: bytes

    @property
    def size(self) -> int:
        return sum(len(part) for part in self.parts) + len(self.footer)

    def __bytes__(self) -> bytes:
        return b"".join([*map(bytes, self.parts), self.footer])


SMALL = 1 << 16  # a value up to this size is copied into one piece: two calls of the CRC, one bytes object


def size_copied(record: KeyRecord) -> int:
    """The bytes `copied` gives (its payload is not built to know it)."""
    return 1 + record.offset + record.size - record.value_offset + FOOTER_BYTES


def copied(record: KeyRecord, buffer: DumpBuffer, version: int) -> Payload:
    """The payload of a key as it was read from `buffer` (its value's bytes not decoded), for a
    server that loads its layout, labelled with that server's RDB `version`."""
    start, end = record.value_offset, record.offset + record.size
    if end - start <= SMALL:
        data = buffer[record.offset:record.offset + 1] + buffer[start:end]
        return Payload([data], _footer(crc64_update(0, data), version))
    view = memoryview(buffer)
    head = bytes(view[record.offset:record.offset + 1])
    parts: list[bytes | memoryview] = [head]
    crc = crc64_update(0, head)
    for at in range(start, end, COPY_CHUNK):
        part = view[at:min(at + COPY_CHUNK, end)]
        crc = crc64_update(crc, part)
        parts.append(part)
    return Payload(parts, _footer(crc, version))


def written(record: KeyRecord, version: int, valkey: bool) -> Payload:
    """The payload of a key made or converted here (`record._body` holds the generated objects
    of its value), written by the generated writers in the layout of RDB `version`."""
    # a key record with an empty name: its type byte, the name's one length byte 0, the value
    body = _rdb.KeyValue._new(type_code=record.rdb_type, is_valkey=valkey, rdb_version=version,
                              key=rdb_string(b"", compress=False), value=record._body.value)
    out = WriteIo()
    root = WriteInputs(is_valkey=valkey, version=version, hash_templates={})
    _rdb.Record._new(opcode=record.rdb_type, body=body)._write(out, None, root)
    data = bytes(out.data[:1]) + bytes(out.data[2:])
    return Payload([data], _footer(crc64_update(0, data), version))


def _footer(crc: int, version: int) -> bytes:
    tail = struct.pack("<H", version)
    return tail + struct.pack("<Q", crc64_update(crc, tail))
