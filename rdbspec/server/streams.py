"""The server's stream rules, each after its function in redis src/t_stream.c (as `t_stream.c`
keeps one type's rules in one place): stream IDs and how a command's argument names one, the
numbers and error texts of the stream commands, the generation whose replies a stream's type
stands for, and the read counter and lag of a consumer group as a server computes them after
loading the stream (src/rdb.c). What reads a stream (`rdbspec.read.streams`), what changes one
(`rdbspec.write.stream`, `rdbspec.stream_commands`) and what reports on one (the report, Spark)
all take these rules from here."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol

from rdbspec_generated.enums import ValueType

from ..errors import RdbspecError
from .numbers import MASK64, string2ll, string2ull
from .versions import Version

StreamId = tuple[int, int]
SCG_INVALID_ENTRIES_READ = -1  # redis src/stream.h: a group's entries_read the server does not know
UNKNOWN_ENTRIES_READ = SCG_INVALID_ENTRIES_READ & MASK64  # as rdbSaveLen saves it: a uint64
MAX_ID: StreamId = (MASK64, MASK64)
ZERO_ID: StreamId = (0, 0)
VERSION_OF_TYPE: dict[int, Version] = {ValueType.STREAM_LISTPACKS: (6, 2), ValueType.STREAM_LISTPACKS_2: (7, 0),
                                       ValueType.STREAM_LISTPACKS_3: (7, 2), ValueType.STREAM_LISTPACKS_4: (8, 6),
                                       ValueType.STREAM_LISTPACKS_5: (8, 8)}
XNACK: Version = (8, 8)  # redis PR #14797: NACKed entries, XINFO STREAM FULL's nacked-count
IDMP_DEFAULTS = (100, 100)  # stream-idmp-duration (s) / stream-idmp-maxsize defaults (8.6)
NEWEST_LAG: Version = (7, 4)  # redis PRs #13338/#13473: the lag rules of 7.4 and later
VALKEY_9: Version = (7, 4)  # the Redis generation whose reply fields and ID rules Valkey 9 shares

INVALID_ID = "ERR Invalid stream ID specified as stream command argument"
NOT_INTEGER = "ERR value is not an integer or out of range"
SYNTAX = "ERR syntax error"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
NO_KEY = "ERR no such key"


class CommandError(RdbspecError):
    """An error reply, with the server's text (``ERR ...``, ``NOGROUP ...``, ``WRONGTYPE ...``)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


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
        after = incr_id(low)
        if after is None:
            raise CommandError("ERR invalid start ID for the interval")
        low = after
    high, exclusive = parse_interval(end, MASK64)
    if exclusive:
        before = decr_id(high)
        if before is None:
            raise CommandError("ERR invalid end ID for the interval")
        high = before
    return low, high


def stream_version(stream: Stored, as_version: Version | None = None) -> Version:
    """The reply generation: as_version, else the one that writes the stream's type."""
    return as_version or VERSION_OF_TYPE.get(stream.type_code, XNACK)



def stream_type(version: int, valkey: bool = False) -> ValueType:
    """The stream type a server of RDB `version` writes (rdbSaveObjectType): the first before RDB
    10, the second (consumer group metadata) for RDB 10, the third (entries_read) for RDB 11 and
    12 and every VALKEY dump (`valkey`: Valkey has no later stream type), the fourth (IDMP) for
    RDB 13 (Redis 8.6), the fifth (NACK zones) from RDB 14 (Redis 8.8)."""
    if valkey:
        return ValueType.STREAM_LISTPACKS_3
    if version < 10:
        return ValueType.STREAM_LISTPACKS
    if version == 10:
        return ValueType.STREAM_LISTPACKS_2
    if version <= 12:
        return ValueType.STREAM_LISTPACKS_3
    return ValueType.STREAM_LISTPACKS_4 if version == 13 else ValueType.STREAM_LISTPACKS_5


# -- what a server of a given version holds after loading the stream ----------------------------


@dataclass
class Loaded:
    """Stream metadata as the server keeps it in memory after loading the dump."""

    entries_added: int
    max_deleted: StreamId
    first_id: StreamId


class Counted(Protocol):
    """What the read counter's rules look at besides the metadata: a stream as read
    (`rdbspec.read.streams.Stream`), or one changed by commands (`rdbspec.write.stream`)."""

    @property
    def length(self) -> int: ...

    @property
    def last_id(self) -> StreamId: ...


class Stored(Counted, Protocol):
    """A stream as a dump stores it: its type and the metadata types 19+ save."""

    @property
    def type_code(self) -> int: ...

    @property
    def entries_added(self) -> int | None: ...

    @property
    def max_deleted_entry_id(self) -> StreamId | None: ...

    @property
    def first_id(self) -> StreamId | None: ...

    def first_live_id(self) -> StreamId | None:
        """The ID of the first entry not deleted (streamGetEdgeID), None when there is none."""


class StoredGroup(Protocol):
    """A consumer group as a dump stores it."""

    @property
    def last_delivered_id(self) -> StreamId: ...

    @property
    def entries_read(self) -> int | None: ...


def loaded(stream: Stored) -> Loaded:
    """Stored metadata (types 19+), or what rdb.c derives for a type-15 stream (`derived`)."""
    if stream.entries_added is not None:
        return Loaded(stream.entries_added, stream.max_deleted_entry_id or ZERO_ID, stream.first_id or ZERO_ID)
    return derived(stream)


def derived(stream: Stored) -> Loaded:
    """What redis src/rdb.c rdbLoadObject sets for a stream of the first type, which stores no
    metadata: entries_added = length, no tombstone, first_id = the first live entry
    (streamGetEdgeID: max ID if empty)."""
    return Loaded(stream.length, ZERO_ID, stream.first_live_id() or MAX_ID)


def metadata_derived(stream: Stored) -> bool:
    """Whether the stream's metadata (entries_added, first and max-deleted IDs) is what a loader
    computes for the first stream type (`derived`): what a copy that holds none of it (a type-15
    stream, a server before 7.0) loses nothing of."""
    return stream.entries_added is None or loaded(stream) == derived(stream)


def entries_read_derived(stream: Stored, group: StoredGroup) -> bool:
    """Whether the group's read counter is the one a loader estimates for a group of the first
    stream type, which stores none (rdb.c, `estimate_entries_read` by the 7.0 rules): what a copy
    without it loses nothing of."""
    if stream.type_code < ValueType.STREAM_LISTPACKS_2:
        return True
    return group.entries_read == estimate_entries_read(stream, derived(stream), group.last_delivered_id, (7, 0))


def has_tombstones_from(stream: Counted, meta: Loaded, start: StreamId, version: Version) -> bool:
    """streamRangeHasTombstones(s, start, NULL)."""
    if not stream.length or meta.max_deleted == ZERO_ID:
        return False
    if version < NEWEST_LAG and meta.first_id > meta.max_deleted:
        return False  # 7.0-7.2: "the latest tombstone is before the first entry"
    return start <= meta.max_deleted


def estimate_entries_read(stream: Counted, meta: Loaded, stream_id: StreamId, version: Version) -> int | None:
    """streamEstimateDistanceFromFirstEverEntry; None for SCG_INVALID_ENTRIES_READ."""
    if not meta.entries_added:
        return 0
    if not stream.length and stream_id <= stream.last_id:
        return meta.entries_added
    if version >= NEWEST_LAG and stream_id != ZERO_ID and stream_id < meta.max_deleted:
        return None  # 7.4+: fragmentation between the ID and the last generated ID
    if stream_id == stream.last_id:
        return meta.entries_added
    if stream_id > stream.last_id:
        return None
    if meta.max_deleted == ZERO_ID or meta.max_deleted < meta.first_id:
        if stream_id < meta.first_id:
            return meta.entries_added - stream.length
        if stream_id == meta.first_id:
            return meta.entries_added - stream.length + 1
    return None


def group_entries_read(stream: Stored, group: StoredGroup) -> int | None:
    """The group's read counter in memory: stored (types 19+; None = invalid), or estimated at
    load for a type-15 stream (rdb.c). The estimate uses the load-time (7.0) rules."""
    if stream.type_code >= ValueType.STREAM_LISTPACKS_2:
        return group.entries_read
    return estimate_entries_read(stream, loaded(stream), group.last_delivered_id, (7, 0))


def group_lag(stream: Stored, group: StoredGroup, version: Version, valkey: bool = False) -> int | None:
    """streamReplyWithCGLag (7.0-7.2) / streamCGLag (7.4+); None is the server's null.

    Valkey 9 (``valkey``, valkey src/t_stream.c streamReplyWithCGLag) has the 7.4 tombstone rules
    of streamRangeHasTombstones and streamEstimateDistanceFromFirstEverEntry (valkey PR #1952, the
    counterpart of redis #13338) but not the two shortcuts of 7.4's streamCGLag (redis #13473): an
    empty stream and a group behind a trimmed head are estimated like any other group."""
    meta = loaded(stream)
    entries_read = group_entries_read(stream, group)
    if not meta.entries_added:
        return 0
    if version >= NEWEST_LAG and not valkey:
        if not stream.length:
            return 0
        if group.last_delivered_id < meta.first_id and meta.max_deleted < meta.first_id:
            return stream.length
    if entries_read is not None and not has_tombstones_from(stream, meta, group.last_delivered_id, version):
        return meta.entries_added - entries_read
    estimate = estimate_entries_read(stream, meta, group.last_delivered_id, version)
    return None if estimate is None else meta.entries_added - estimate

