"""The server's rules for the numbers and stream IDs of a command's arguments, its error texts,
and the server generations whose replies differ (redis src/t_stream.c, src/util.c, src/object.c).
Also what a command that changes a stream (XADD, XTRIM, XACK...) must parse the same way."""

from __future__ import annotations

import os

from rdbspec_generated.enums import ValueType

from ..errors import RdbspecError
from ..generations import Version
from ..primitives import string2ll
from ..streams import MASK64, Stream, StreamId

MAX_ID: StreamId = (MASK64, MASK64)
ZERO_ID: StreamId = (0, 0)
VERSION_OF_TYPE: dict[int, Version] = {ValueType.STREAM_LISTPACKS: (6, 2), ValueType.STREAM_LISTPACKS_2: (7, 0),
                                       ValueType.STREAM_LISTPACKS_3: (7, 2), ValueType.STREAM_LISTPACKS_4: (8, 6)}
VALKEY_9: Version = (7, 4)  # the Redis generation whose reply fields and ID rules Valkey 9 shares

INVALID_ID = "ERR Invalid stream ID specified as stream command argument"
NOT_INTEGER = "ERR value is not an integer or out of range"
SYNTAX = "ERR syntax error"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
NO_KEY = "ERR no such key"
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


class CommandError(RdbspecError):
    """An error reply, with the server's text (``ERR ...``, ``NOGROUP ...``, ``WRONGTYPE ...``)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def _strtoull(text: bytes) -> int | None:
    """C strtoull(s, &end, 10) that must consume the whole string: leading whitespace, a sign,
    '-' negating modulo 2^64; None on no digits, trailing bytes or overflow (ERANGE)."""
    i = 0
    while i < len(text) and text[i] in b" \t\n\v\f\r":
        i += 1
    negative = text[i:i + 1] == b"-"
    if text[i:i + 1] in (b"-", b"+"):
        i += 1
    digits = text[i:]
    if not digits or not (digits.isdigit() and digits.isascii()):
        return None
    value = int(digits)
    if value > MASK64:
        return None
    return (-value) & MASK64 if negative else value


def string2ull(text: bytes) -> int | None:
    """redis util.c string2ull: string2ll (rejecting negatives), else strtoull."""
    if not text:
        return None
    value = string2ll(text)
    if value is not None:
        return None if value < 0 else value
    return _strtoull(text)


def parse_int(text: bytes) -> int:
    """getLongLongFromObjectOrReply: a strict signed 64-bit decimal."""
    value = string2ll(text)
    if value is None:
        raise CommandError(NOT_INTEGER)
    return value


def arg_bytes(value: str | bytes) -> bytes:
    """A command argument as the server receives it: bytes (a str is encoded as a file name)."""
    return value if isinstance(value, bytes) else os.fsencode(value)


def parse_id(arg: str | bytes, missing_seq: int = 0, strict: bool = False) -> StreamId:
    """streamGenericParseIDOrReply: ``-``, ``+`` (unless strict), ``ms`` (seq = missing_seq) or
    ``ms-seq``. Read as a C string (up to a NUL byte), at most 127 bytes."""
    raw = arg_bytes(arg)
    if len(raw) > 127:
        raise CommandError(INVALID_ID)
    buf = raw.split(b"\0", 1)[0]
    if buf in (b"-", b"+"):
        if strict:
            raise CommandError(INVALID_ID)
        return ZERO_ID if buf == b"-" else MAX_ID
    ms_text, dash, seq_text = buf.partition(b"-")
    ms = string2ull(ms_text)
    seq = string2ull(seq_text) if dash else missing_seq
    if ms is None or seq is None:
        raise CommandError(INVALID_ID)
    return ms, seq


def parse_interval(arg: str | bytes, missing_seq: int) -> tuple[StreamId, bool]:
    """streamParseIntervalIDOrReply: ``(id`` is exclusive (and strict: no ``(-``/``(+``)."""
    raw = arg_bytes(arg)
    if len(raw) > 1 and raw[:1] == b"(":
        return parse_id(raw[1:], missing_seq, strict=True), True
    return parse_id(raw, missing_seq), False


def incr_id(stream_id: StreamId) -> StreamId | None:
    """streamIncrID; None where the server fails (the last possible ID)."""
    ms, seq = stream_id
    if seq < MASK64:
        return ms, seq + 1
    return None if ms == MASK64 else (ms + 1, 0)


def decr_id(stream_id: StreamId) -> StreamId | None:
    """streamDecrID; None where the server fails (0-0)."""
    ms, seq = stream_id
    if seq > 0:
        return ms, seq - 1
    return None if ms == 0 else (ms - 1, MASK64)


def parse_range(start: str | bytes, end: str | bytes) -> tuple[StreamId, StreamId]:
    """XRANGE's bounds, as inclusive IDs, in the server's order of checks and errors."""
    low, exclusive = parse_interval(start, 0)
    if exclusive:
        low = incr_id(low)
        if low is None:
            raise CommandError("ERR invalid start ID for the interval")
    high, exclusive = parse_interval(end, MASK64)
    if exclusive:
        high = decr_id(high)
        if high is None:
            raise CommandError("ERR invalid end ID for the interval")
    return low, high


def signed64(value: int) -> int:
    """A stored uint64 read as the server's signed mstime_t / long long."""
    value &= MASK64
    return value - (1 << 64) if value > INT64_MAX else value


def stream_version(stream: Stream, as_version: Version | None = None) -> Version:
    """The reply generation: as_version, else the one that writes the stream's type."""
    return as_version or VERSION_OF_TYPE.get(stream.type_code, (8, 6))
