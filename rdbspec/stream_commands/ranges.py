"""Entries by ID, as XRANGE, XREVRANGE and XREAD serve them (redis src/t_stream.c
streamReplyWithRange, xreadCommand): pure functions of a `Stream` and the command's arguments."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence

from ..read.streams import EntryColumns, Stream, StreamEntry
from ..server.streams import MAX_ID, ZERO_ID, CommandError, StreamId, arg_bytes, decr_id, incr_id, parse_id, parse_range
from ..server.versions import Version


def _key(stream_id: StreamId) -> int:
    return (stream_id[0] << 64) | stream_id[1]


def _masters(stream: Stream) -> list[int]:
    """Node master IDs as 128-bit integers (cached on the stream object). A node holds IDs from
    its master ID up to, not including, the next node's."""
    masters = stream.__dict__.get("_range_masters")
    if masters is None:
        masters = stream.__dict__["_range_masters"] = [_key(node.master_id) for node in stream.nodes]
    return masters


def _live(stream: Stream, nodes: range, rev: bool) -> Iterator[tuple[int, EntryColumns]]:
    """(row, columns) of the live entries of `nodes`, in that order (rows reversed with rev)."""
    for index in nodes:
        cols = stream.node_columns(index)
        for row in (range(len(cols) - 1, -1, -1) if rev else range(len(cols))):
            if not cols.deleted[row]:
                yield row, cols


def iter_range(stream: Stream, start: StreamId, end: StreamId, rev: bool = False) -> Iterator[StreamEntry]:
    """Live entries with start <= id <= end, ascending (or descending with rev). Only the nodes
    that can hold such IDs are decoded, one at a time."""
    low, high = _key(start), _key(end)
    masters = _masters(stream)
    first, last = max(bisect_right(masters, low) - 1, 0), bisect_right(masters, high)
    for row, cols in _live(stream, range(last - 1, first - 1, -1) if rev else range(first, last), rev):
        if low <= (cols.ms[row] << 64) | cols.seq[row] <= high:
            yield StreamEntry((cols.ms[row], cols.seq[row]), cols.fields[row])


def take(entries: Iterator[StreamEntry], count: int) -> list[StreamEntry]:
    """streamReplyWithRange's count: 0 means all."""
    out = []
    for entry in entries:
        out.append(entry)
        if count and len(out) == count:
            break
    return out


def xrange(stream: Stream, start: str | bytes = "-", end: str | bytes = "+",
           count: int | None = None) -> list[StreamEntry]:
    """XRANGE: entries from start to end (``-``, ``+``, ``ms``, ``ms-seq``, ``(id``).
    count None is unlimited; a count <= 0 gives [] (the server answers a null array)."""
    low, high = parse_range(start, end)
    if count is not None and count <= 0:
        return []
    return take(iter_range(stream, low, high), count or 0)


def xrevrange(stream: Stream, end: str | bytes = "+", start: str | bytes = "-",
              count: int | None = None) -> list[StreamEntry]:
    """XREVRANGE: entries from end down to start."""
    low, high = parse_range(start, end)
    if count is not None and count <= 0:
        return []
    return take(iter_range(stream, low, high, rev=True), count or 0)


def last_valid_id(stream: Stream) -> StreamId:
    """streamLastValidID: the last live entry, 0-0 when there is none."""
    for row, cols in _live(stream, range(len(stream.nodes) - 1, -1, -1), rev=True):
        return cols.ms[row], cols.seq[row]
    return ZERO_ID


def xread_id(stream: Stream | None, arg: str | bytes, version: Version = (7, 2), valkey: bool = False) -> StreamId:
    """The ID after which XREAD serves: ``$`` (the last generated ID), ``+`` (7.4+: just before
    the last entry; Valkey 9: just before the last generated ID, valkey src/t_stream.c
    xreadCommand, so nothing after an XDEL of the last entry or an XSETID past it), else a strict
    ID with a missing sequence of 0."""
    raw = arg_bytes(arg)
    if raw == b"$":
        return stream.last_id if stream is not None else ZERO_ID
    if raw == b">":
        raise CommandError("ERR The > ID can be specified only when calling XREADGROUP using the "
                           "GROUP <group> <consumer> option.")
    if raw == b"+" and version >= (7, 4) and valkey and stream is not None:
        # last ID 0-0: an empty stream (XGROUP CREATE MKSTREAM), which serves nothing; 9.1.2
        # answers no error there
        return decr_id(stream.last_id) or ZERO_ID
    if raw == b"+" and version >= (7, 4):
        if stream is None or not stream.length:
            return stream.last_id if stream is not None else ZERO_ID
        return decr_id(last_valid_id(stream)) or ZERO_ID
    return parse_id(raw, 0, strict=True)


def xread(streams: Sequence[tuple[Stream | None, str | bytes]], count: int | None = None,
          version: Version = (7, 2), valkey: bool = False) -> list[tuple[int, list[StreamEntry]]]:
    """XREAD (non-blocking): for each (stream, id) with entries after id, its index in
    `streams` and up to count entries (None or 0: all). Missing streams (None) are skipped."""
    after = [xread_id(stream, arg, version, valkey) for stream, arg in streams]
    out = []
    for index, ((stream, _arg), gt) in enumerate(zip(streams, after)):
        if stream is None or not stream.length or last_valid_id(stream) <= gt:
            continue
        start = incr_id(gt)
        if start is not None:
            out.append((index, take(iter_range(stream, start, MAX_ID), max(count or 0, 0))))
    return out
