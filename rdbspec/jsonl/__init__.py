"""The `rdbspec dump` JSON Lines contract: one object per key, byte strings as UTF-8 text
or {"hex": ...}, stream IDs as "ms-seq" strings; a type-27 stream's groups add their NACK zone
(`"nacked"`, IDs in the zone's order), a sparse array is {"insert_idx", "elements"}.

The text is json.dumps(ensure_ascii=False, separators=(",", ":"))'s, byte for byte, written
by orjson: floats are `Real`, which orjson hands to `_default` to be written as json.dumps
writes them (1e-07, NaN; orjson writes 1e-7, null); what orjson refuses (an int beyond 64 bits)
goes through json.dumps. When the compiled `rdbspec.jsonl._encode` was built, it writes the
lines of string and list keys whole (`write_records`): a list, set, hash or sorted set still in
its listpack, ziplist or intset entries, or read in chunks (`KeyRecord.packed`), straight from
them, with no object per element (a line of parts read as they are iterated that grows past
8 MB a part at a time, spooled: `write_record`); and `rdbspec keys`' rows (`write_rows`), a
megabyte at a time, and a stream's entries a node at a time from its columns; else
`record_json`, `entry_json` and `value_json` do (same bytes).

Imports: the reading side and the server's rules.
"""

from __future__ import annotations

import binascii
import codecs
import json
import math
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from typing import IO, Any, BinaryIO

import orjson

from ..read.dumpfile import KeyRecord
from ..read.streams import (
    ConsumerGroup,
    EntryColumns,
    EntryFields,
    IdColumns,
    PendingEntries,
    Stream,
    StreamEntry,
    format_id,
)
from ..read.values import PACKERS, STRING, ModuleValue, Packed, SparseArray

try:  # compiled by setup.py from _encode.pyx; absent without a C compiler
    from . import _encode
except ImportError:
    _encode = None  # type: ignore[assignment]


class Real(float):
    """A float that `dumps` writes as json.dumps does."""


_SPECIAL_FLOATS = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}  # json.dumps' names


def _default(obj: Any) -> Any:
    if isinstance(obj, float):  # json.dumps writes float.__repr__ (json.encoder.floatstr)
        text = float.__repr__(obj)
        return orjson.Fragment(_SPECIAL_FLOATS.get(text, text))
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def s(data: bytes) -> Any:
    """A byte string: a JSON string when valid UTF-8, otherwise {"hex": "..."}."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"hex": data.hex()}


def number(score: float) -> Any:
    if math.isnan(score):
        return "nan"
    if math.isinf(score):
        return "inf" if score > 0 else "-inf"
    return Real(score)


def entry_json(entry: StreamEntry) -> dict:
    row: dict[str, Any] = {"id": format_id(entry.id), "fields": [[s(f), s(v)] for f, v in entry.fields]}
    if entry.deleted:
        row["deleted"] = True
    return row


def stream_json(stream: Stream, include_deleted: bool, with_entries: bool = True) -> dict:
    """A stream's object. Without its entries it is the frame of the line `write_record` writes
    around them, which goes to `dumps_bytes` only: its PELs are in it as JSON text already."""
    entries = [entry_json(e) for e in stream.entries(include_deleted)] if with_entries else None
    return {
        "length": stream.length,
        "last_id": format_id(stream.last_id),
        "first_id": format_id(stream.first_id) if stream.first_id else None,
        "max_deleted_entry_id": format_id(stream.max_deleted_entry_id) if stream.max_deleted_entry_id else None,
        "entries_added": stream.entries_added,
        "entries": entries,
        "groups": [group_json(g, serialized=not with_entries) for g in stream.groups],
    }


def group_json(g: ConsumerGroup, serialized: bool = False) -> dict:
    """A consumer group's object, its pending entries (once in the group, again in a consumer)
    read from the PELs' columns, each entry's consumer name made once per name. `serialized`: for
    `dumps_bytes` only, the PELs in it as their JSON text (orjson.Fragment), written by the
    compiled encoder where it is built."""
    pending = PendingEntries.of(g.pending)
    owned = [IdColumns.of(c.pending) for c in g.consumers]
    if serialized and _encode is not None:
        texts = [dumps_bytes(s(name)) for name in pending.names]
        entries: Any = orjson.Fragment(b"[" + _encode.encode_pending(
            pending.ids.ms, pending.ids.seq, pending.owners, pending.delivery_times_ms, pending.delivery_counts,
            texts) + b"]")
        owned_json: Any = [orjson.Fragment(b"[" + _encode.encode_ids(ids.ms, ids.seq) + b"]") for ids in owned]
    else:
        names = [s(name) for name in pending.names]
        entries = [{"id": format_id(entry_id), "consumer": names[owner] if owner >= 0 else None,
                    "delivery_time_ms": time_ms, "delivery_count": count}
                   for entry_id, owner, time_ms, count in zip(pending.ids, pending.owners, pending.delivery_times_ms,
                                                              pending.delivery_counts)]
        owned_json = [list(map(format_id, ids)) for ids in owned]
    out = {
        "name": s(g.name),
        "last_delivered_id": format_id(g.last_delivered_id),
        "entries_read": g.entries_read,
        "pending": entries,
        "consumers": [{"name": s(c.name), "seen_time_ms": c.seen_time_ms, "active_time_ms": c.active_time_ms,
                       "pending": ids} for c, ids in zip(g.consumers, owned_json)],
    }
    if g.nacked is not None:  # type 27: the pending entries released to the group, in the zone's order
        out["nacked"] = list(map(format_id, g.nacked))
    return out


def array_json(array: SparseArray) -> dict:
    """A sparse array's object: its last insert index (null: none) and its elements as [index,
    value] pairs, a value as its tag stores it (an integer, a number as `number` writes a
    double, a byte string as `s`)."""
    return {"insert_idx": array.insert_idx,
            "elements": [[index, s(v) if isinstance(v, bytes) else number(v) if isinstance(v, float) else v]
                         for index, v in array.elements]}


def plain_json(value: Any, key: str = "") -> Any:
    """A Dragonfly sketch/filter value (a dict): raw filter bytes as {"hex": ...}, item names
    (key "item") as byte strings, floats as `number`."""
    if isinstance(value, bytes):
        return s(value) if key == "item" else {"hex": value.hex()}
    if isinstance(value, dict):
        return {k: plain_json(v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_json(v, key) for v in value]
    if isinstance(value, float):
        return number(value)
    return value


def value_json(value: Any, include_deleted: bool, with_entries: bool = True) -> Any:
    if isinstance(value, bytes):
        return s(value)
    if isinstance(value, dict):
        return plain_json(value)
    if isinstance(value, Stream):
        return stream_json(value, include_deleted, with_entries)
    if isinstance(value, SparseArray):
        return array_json(value)
    if isinstance(value, ModuleValue):
        return {"module": value.name, "encoding_version": value.encoding_version,
                "opcodes": [[name, s(v) if isinstance(v, bytes) else Real(v) if isinstance(v, float) else v]
                            for name, v in value.opcodes]}
    if isinstance(value, list):  # one kind of item per value (see values.py): the first tells which
        first = value[0] if value else None
        if isinstance(first, tuple) and isinstance(first[1], float):
            return [[s(member), number(score)] for member, score in value]
        if isinstance(first, tuple) and isinstance(first[1], list):  # a Valkey path hash
            return [{"path": s(path), "fields": [[s(f), s(v)] for f, v in fields]} for path, fields in value]
        if isinstance(first, tuple):
            return [[s(x) for x in item] for item in value]
        return [s(item) for item in value]
    return value


_DECODED = object()


def record_json(record: KeyRecord, include_deleted: bool = False, with_entries: bool = True,
                value: Any = _DECODED) -> dict:
    """A key's JSON object; with `value`, that in place of its decoded value (which is then
    not read: only a string, list, set, hash or sorted set without TTLs of its own may be given
    one)."""
    given = record.value_kind in PACKERS or record.value_kind == STRING  # values with no TTLs of their own
    if value is _DECODED:
        value = value_json(record.value, include_deleted, with_entries)
    elif not given:
        raise ValueError(f"a {record.type_name} key's value cannot be given")
    out = {
        "db": record.db,
        "key": s(record.key),
        "type": record.type_name,
        "rdb_type": record.rdb_type,
        "expire_at_ms": record.expire_at_ms,
        "idle_s": record.idle,
        "freq": record.freq,
        "value": value,
    }
    if given:  # no TTLs of its own: its value need not be decoded
        return out
    if record.field_expire_at_ms is not None:
        out["field_expire_at_ms"] = [[s(f), t] for f, t in record.field_expire_at_ms]
    member_ttls = record._decode().member_expire_at_ms
    if member_ttls is not None:
        out["member_expire_at_ms"] = [[s(m), t] for m, t in member_ttls]
    return out


def dumps_bytes(obj: Any) -> bytes:
    try:
        return orjson.dumps(obj, default=_default)
    except TypeError:  # what orjson does not write (an int beyond 64 bits): json writes it
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def dumps(obj: Any) -> str:
    return dumps_bytes(obj).decode()


def entries_json(cols: EntryColumns, include_deleted: bool) -> bytes:
    """A node's entries (live ones, or all with include_deleted) as `entry_json` objects
    joined by commas."""
    fields = cols.fields
    if _encode is not None and isinstance(fields, EntryFields):
        return _encode.encode_entries(cols.ms, cols.seq, cols.deleted, fields.samefields,
                                             fields.master_fields, fields.items, include_deleted)
    return orjson.dumps([entry_json(e) for e in cols.entries(include_deleted)])[1:-1]


_SPOOL_IN_MEMORY = 8 << 20  # bytes of a line's elements kept in memory before spilling to a temporary file
# a string value of more bytes is written a piece at a time (`write_long_string`): no line held in
# memory is longer than the part of a line held before it is spooled
LONG_STRING = _SPOOL_IN_MEMORY
ENTRIES_SLOT = b'"entries":null'  # a stream's entries in its line written without them
VALUE_SLOT = b'"value":null'  # a list's, set's, hash's or sorted set's elements in its line written without them


def part_json(part: Any, shape: str) -> bytes:
    """One chunk of a `values.Packed` value (a hashtable-encoded value's) as the elements of
    `value_json`'s list joined by commas."""
    if _encode is not None:
        return _encode.encode_part(part, shape)
    return orjson.dumps(value_json(Packed(shape, [part]).elements(), False), default=_default)[1:-1]


def _spooled_line(out: BinaryIO, line: bytes, slot: bytes, chunks: Iterable[bytes]) -> None:
    """`line` with the JSON list of `chunks` (elements joined by commas) in place of `slot`
    (`"name":null`, the only one of its kind: names and values inside are escaped strings).
    The chunks are checked as they are decoded: spooled first, so a bad one leaves no partial
    line, and a list of any size is never one text in memory."""
    head, tail = line_ends(line, slot)
    with tempfile.SpooledTemporaryFile(_SPOOL_IN_MEMORY, mode="w+b") as spool:
        write_joined(spool, chunks)
        spool.seek(0)
        out.write(head)
        shutil.copyfileobj(spool, out, 1 << 20)
    out.write(tail)


def write_long_string(out: BinaryIO, record: KeyRecord) -> None:
    """A string key's line, its value read and written a piece at a time
    (`KeyRecord.string_pieces`) as `s` gives it: text when the whole of it is valid UTF-8 (a first
    pass over the pieces tells: the first one that is not ends it), else {"hex": ...}. A value that
    does not decode (LZF) fails in that first pass, before any of its line is written."""
    head, tail = dumps_bytes(record_json(record, value=None)).rsplit(VALUE_SLOT, 1)
    text = _utf8(record.string_pieces())
    out.write(head + VALUE_SLOT[:-4])
    if text:
        decoder = codecs.getincrementaldecoder("utf-8")()
        out.write(b'"')
        for piece in record.string_pieces():
            out.write(orjson.dumps(decoder.decode(piece))[1:-1])
        out.write(b'"')
    else:
        out.write(b'{"hex":"')
        for piece in record.string_pieces():
            out.write(binascii.hexlify(piece))
        out.write(b'"}')
    out.write(tail + b"\n")


def _utf8(pieces: Iterable[bytes]) -> bool:
    """Whether the bytes of `pieces`, one after another, are valid UTF-8 (as `s` judges them)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        for piece in pieces:
            if not (piece.isascii() and not decoder.getstate()[0]):
                decoder.decode(piece)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def line_ends(line: bytes, slot: bytes) -> tuple[bytes, bytes]:
    """`line` around `slot` (`"name":null`) made a list: up to its `[`, and from its `]` to the
    newline."""
    head, tail = line.rsplit(slot, 1)
    return head + slot[:-4] + b"[", b"]" + tail + b"\n"


def write_joined(out: IO[bytes], chunks: Iterable[bytes]) -> bool:
    """`chunks` (each elements joined by commas, or empty) joined by commas; whether one was not empty."""
    separator = b""
    for chunk in chunks:
        if chunk:
            out.write(separator + chunk)
            separator = b","
    return bool(separator)


def stream_line_ends(record: KeyRecord, include_deleted: bool = False) -> tuple[bytes, bytes]:
    """A stream key's line (`write_record`'s) around its entries, for a writer of the entries
    of some of its nodes (`rdbspec --jobs`: a stream split over several workers)."""
    return line_ends(dumps_bytes(record_json(record, include_deleted, with_entries=False)), ENTRIES_SLOT)


def value_line_ends(record: KeyRecord) -> tuple[bytes, bytes]:
    """The line of a list, set, hash or sorted set key (one of `values.PACKERS`) around the
    elements of its value, for a writer of some of them (`rdbspec --jobs`: a value split over
    several workers)."""
    return line_ends(dumps_bytes(record_json(record, value=None)), VALUE_SLOT)


def write_record(out: BinaryIO, record: KeyRecord, include_deleted: bool = False) -> None:
    """One JSON Lines record; a stream's entries are written a node at a time and a list, set,
    hash or sorted set of more than one chunk a chunk at a time, so that a value of millions of
    elements never exists as one JSON text or one list of objects, nor a string of more than
    `LONG_STRING` bytes as one text (`write_long_string`)."""
    stored = record.stored_string()
    if stored is not None and stored.length > LONG_STRING:
        write_long_string(out, record)
        return
    packed = record.packed()
    if packed is not None and not isinstance(packed.parts, list):  # read as iterated
        line = dumps_bytes(record_json(record, value=None))
        _spooled_line(out, line, VALUE_SLOT, (part_json(part, packed.shape) for part in packed.parts))
        return
    value = record.value
    if not isinstance(value, Stream):
        out.write(dumps_bytes(record_json(record)) + b"\n")
        return
    line = dumps_bytes(record_json(record, include_deleted, with_entries=False))
    _spooled_line(out, line, ENTRIES_SLOT, (entries_json(got.columns, include_deleted)
                                            for _, got in value.node_entries()))


def write_records(out: BinaryIO, records: Iterable[KeyRecord], include_deleted: bool = False) -> None:
    """`rdbspec dump`'s lines: `write_record` of each record the server loads (an empty
    container it skips is left out: a warning says so). The compiled encoder writes the lines
    it can and hands the others back."""
    def write_loaded(record: KeyRecord) -> None:
        if not record.skipped_by_server:
            write_record(out, record, include_deleted)

    if _encode is None:
        for record in records:
            write_loaded(record)
    else:
        _encode.write_lines(records, out.write, write_loaded, _SPOOL_IN_MEMORY)


def write_rows(out: BinaryIO, names: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Each row as one JSON line: the object of `names` and the row's values (None, ints, str,
    byte strings as `s` gives them)."""
    if _encode is not None:
        _encode.write_rows(names, rows, out.write)
        return
    for row in rows:
        out.write(dumps_bytes(dict(zip(names, [s(v) if isinstance(v, bytes) else v for v in row]))) + b"\n")
