"""The commands that deliver a stream's entries to consumers, applied offline (issue 15: `rdbspec
rewrite --commands`): XREADGROUP, XCLAIM and XAUTOCLAIM (redis src/t_stream.c xreadCommand,
streamReplyWithRange, streamReplyWithRangeFromConsumerPEL, xclaimCommand, xautoclaimCommand),
with the server's order of checks and its error texts.

The generations differ: before 7.0 a claim keeps a PEL entry whose stream entry is gone and a
group keeps no read counter; from 7.2 a consumer is made never active and a delivery or a claim
sets its active time; from 7.4 (and Valkey 9) a delivery counts on from the group's counter only
when its last delivered ID is not before the stream's first entry and no tombstone follows it.
A BLOCK that would wait is the timeout it runs into: a command file has no other client to add
entries meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..server.numbers import INT64_MAX
from ..server.streams import (
    MAX_ID,
    NEWEST_LAG,
    SYNTAX,
    ZERO_ID,
    CommandError,
    StreamId,
    estimate_entries_read,
    has_tombstones_from,
    incr_id,
    parse_int,
    parse_interval,
)
from ..write.stream import EditableConsumer, EditableGroup, EditableStream, Pending
from .changes import StreamEdit, strict_id

# -- XREADGROUP ----------------------------------------------------------------------------------

NEW_ENTRIES = MAX_ID  # xreadCommand's mark for `>` (a strict ID of the same value reads as `>` too)


def xreadgroup(edit: StreamEdit, argv: Sequence[bytes]) -> Any:
    """xreadCommand as XREADGROUP: for each stream, the entries after the group's last delivered
    ID (`>`: the group moves on, each entry pending for the consumer unless NOACK), or the
    consumer's own pending entries after an ID (their delivery time and count move on)."""
    count, noack, group_name, consumer_name, streams_at = 0, False, None, b"", 0
    i = 1
    while i < len(argv):
        more = len(argv) - 1 - i
        opt = argv[i].lower()
        if opt == b"block" and more:
            i += 1
            if _int(argv[i], "ERR timeout is not an integer or out of range") < 0:
                raise CommandError("ERR timeout is negative")
        elif opt == b"count" and more:
            i += 1
            count = max(parse_int(argv[i]), 0)
        elif opt == b"streams" and more:
            streams_at = i + 1
            if (len(argv) - streams_at) % 2:
                raise CommandError("ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' "
                                   "must be specified.")
            break
        elif opt == b"group" and more >= 2:
            group_name, consumer_name = argv[i + 1], argv[i + 2]
            i += 2
        elif opt == b"noack":
            noack = True
        else:
            raise CommandError(SYNTAX)
        i += 1
    if not streams_at:
        raise CommandError(SYNTAX)
    if group_name is None:
        raise CommandError("ERR Missing GROUP option for XREADGROUP")
    half = (len(argv) - streams_at) // 2
    reads = []
    for key, raw in zip(argv[streams_at:streams_at + half], argv[streams_at + half:]):
        stream = edit.lookup(key, False)
        group = stream.groups.get(group_name) if stream is not None else None
        if stream is None or group is None:
            raise CommandError(f"NOGROUP No such key '{key.decode(errors='replace')}' or consumer group "
                               f"'{group_name.decode(errors='replace')}' in XREADGROUP with GROUP option")
        reads.append((key, stream, group, _read_from(edit, raw)))
    served = []
    for key, stream, group, after in reads:
        history = after != NEW_ENTRIES
        new = not history and stream.length > 0 and stream.edge_id(first=False) > group.last_id
        if not (history or new or edit.tracks_activity):
            continue  # before 7.2 the consumer is made and seen only when the stream is served
        consumer = _consumer_seen(edit, group, consumer_name)
        if history:
            start = incr_id(after) or ZERO_ID  # streamIncrID wraps the last ID (`>`'s, not read here) to 0-0
            served.append([key, _redeliver(edit, stream, group, consumer, start, count)])
        elif new:
            served.append([key, _deliver(edit, stream, group, consumer_name, consumer, count, noack)])
    return served or None


def _read_from(edit: StreamEdit, raw: bytes) -> StreamId:
    if raw in (b"$", b"+") and (raw == b"$" or edit.version >= (7, 4)):
        mark = raw.decode()
        raise CommandError(f"ERR The {mark} ID is meaningless in the context of XREADGROUP: you want to read the "
                           f"history of this consumer by specifying a proper ID, or use the > ID to get new "
                           f"messages. The {mark} ID would just return an empty result set.")
    return NEW_ENTRIES if raw == b">" else strict_id(raw)


def _redeliver(edit: StreamEdit, stream: EditableStream, group: EditableGroup, consumer: EditableConsumer,
               start: StreamId, count: int) -> list[bytes]:
    """streamReplyWithRangeFromConsumerPEL: the consumer's pending IDs from `start`; each whose
    entry is still there is delivered again (delivery time now, count + 1)."""
    out: list[bytes] = []
    for entry_id in sorted(i for i in consumer.pel if i >= start):
        if count and len(out) == count:
            break
        if stream.find(entry_id) is not None:
            pending = group.pel[entry_id]
            pending.delivery_time = edit.now_ms
            pending.delivery_count += 1
        out.append(b"%d-%d" % entry_id)
    return out


def _deliver(edit: StreamEdit, stream: EditableStream, group: EditableGroup, name: bytes, consumer: EditableConsumer,
             count: int, noack: bool) -> list[bytes]:
    """streamReplyWithRange with a group: the live entries after the group's last ID."""
    out = []
    for entry_id in stream.live_ids_after(group.last_id):
        _count_read(edit, stream, group, entry_id)
        group.last_id = entry_id
        if not noack:
            pending = group.pel.get(entry_id)
            if pending is None:
                group.pel[entry_id] = Pending(name, edit.now_ms, 1)  # streamCreateNACK
            else:  # pending already (XGROUP SETID went back): it changes hands, delivered once
                group.disown(entry_id, pending)
                pending.consumer, pending.delivery_time, pending.delivery_count = name, edit.now_ms, 1
            consumer.pel[entry_id] = None
            if edit.tracks_activity:
                consumer.active_time = edit.now_ms
        out.append(b"%d-%d" % entry_id)
        if count and len(out) == count:
            break
    return out


def _count_read(edit: StreamEdit, stream: EditableStream, group: EditableGroup, entry_id: StreamId) -> None:
    """The group's read counter as an entry after its last ID is delivered: one more while the
    count is known to hold, else the estimate (streamEstimateDistanceFromFirstEverEntry)."""
    if edit.version < (7, 0):
        return
    meta = stream.loaded()
    if edit.version >= NEWEST_LAG:
        holds = group.last_id >= stream.first_id and not has_tombstones_from(stream, meta, group.last_id,
                                                                                edit.version)
    else:
        holds = not has_tombstones_from(stream, meta, entry_id, edit.version)
    if group.entries_read is not None and holds:
        group.entries_read += 1
    elif stream.entries_added:
        group.entries_read = estimate_entries_read(stream, meta, entry_id, edit.version)


# -- XCLAIM, XAUTOCLAIM ----------------------------------------------------------------------------

def _claiming_group(stream: EditableStream | None, argv: Sequence[bytes]) -> tuple[EditableStream, EditableGroup]:
    group = stream.groups.get(argv[2]) if stream is not None else None
    if stream is None or group is None:
        raise CommandError(f"NOGROUP No such key '{argv[1].decode(errors='replace')}' or consumer group "
                           f"'{argv[2].decode(errors='replace')}'")
    return stream, group


def _consumer_seen(edit: StreamEdit, group: EditableGroup, name: bytes) -> EditableConsumer:
    """The consumer `name`, made if new (streamLookupConsumer, streamCreateConsumer: never active
    from 7.2), seen now."""
    consumer = group.consumers.get(name)
    if consumer is None:
        consumer = group.consumers[name] = edit.new_consumer()
    consumer.seen_time = edit.now_ms
    return consumer


def _first_claimer(edit: StreamEdit, group: EditableGroup, name: bytes) -> EditableConsumer | None:
    """The claiming consumer: from 7.2 looked up (and made) before any claim, before 7.2 at the
    first claim of the command (`_claim`)."""
    return _consumer_seen(edit, group, name) if edit.tracks_activity else None


def _claim(edit: StreamEdit, group: EditableGroup, name: bytes, entry_id: StreamId, pending: Pending,
           consumer: EditableConsumer | None, delivery_time: int, count: int | None, justid: bool) -> EditableConsumer:
    """One PEL entry moved to the consumer `name` (`_first_claimer`, or made here on the first claim)."""
    if consumer is None:
        consumer = _consumer_seen(edit, group, name)
    if pending.consumer != name:
        group.disown(entry_id, pending)
    pending.delivery_time = delivery_time
    if count is not None and count >= 0:
        pending.delivery_count = count
    elif not justid:
        pending.delivery_count += 1
    pending.consumer = name
    consumer.pel[entry_id] = None
    if edit.tracks_activity:
        consumer.active_time = edit.now_ms
    return consumer


def xclaim(edit: StreamEdit, argv: Sequence[bytes]) -> Any:
    stream, group = _claiming_group(edit.lookup(argv[1], False), argv)
    min_idle = max(_int(argv[4], "ERR Invalid min-idle-time argument for XCLAIM"), 0)
    ids: list[StreamId] = []
    j = 5
    while j < len(argv):
        try:
            ids.append(strict_id(argv[j]))
        except CommandError:
            break
        j += 1
    force = justid = False
    count: int | None = None
    delivery: int | None = None
    last_id = ZERO_ID
    while j < len(argv):
        more = len(argv) - 1 - j
        opt = argv[j].lower()
        if opt == b"force":
            force = True
        elif opt == b"justid":
            justid = True
        elif opt == b"idle" and more:
            j += 1
            delivery = edit.now_ms - _int(argv[j], "ERR Invalid IDLE option argument for XCLAIM")
        elif opt == b"time" and more:
            j += 1
            delivery = _int(argv[j], "ERR Invalid TIME option argument for XCLAIM")
        elif opt == b"retrycount" and more:
            j += 1
            count = _int(argv[j], "ERR Invalid RETRYCOUNT option argument for XCLAIM")
        elif opt == b"lastid" and more:
            j += 1
            last_id = strict_id(argv[j])
        else:
            raise CommandError(f"ERR Unrecognized XCLAIM option '{argv[j].decode(errors='replace')}'")
        j += 1
    if last_id > group.last_id:
        group.last_id = last_id
    if delivery is None or delivery < 0 or delivery > edit.now_ms:
        delivery = edit.now_ms
    consumer = _first_claimer(edit, group, argv[3])
    claimed = []
    for entry_id in ids:
        pending = group.pel.get(entry_id)
        if edit.drops_gone_entries and stream.find(entry_id) is None:
            if pending is not None:
                group.disown(entry_id, group.pel.pop(entry_id))
            continue
        if force and pending is None and stream.find(entry_id) is not None:
            pending = group.pel[entry_id] = Pending(None, edit.now_ms, 1)  # streamCreateNACK
        if pending is None:
            continue
        if pending.consumer is not None and min_idle and edit.now_ms - pending.delivery_time < min_idle:
            continue
        consumer = _claim(edit, group, argv[3], entry_id, pending, consumer, delivery, count, justid)
        claimed.append(b"%d-%d" % entry_id)
    return claimed


def xautoclaim(edit: StreamEdit, argv: Sequence[bytes]) -> Any:
    min_idle = max(_int(argv[4], "ERR Invalid min-idle-time argument for XAUTOCLAIM"), 0)
    start, exclusive = parse_interval(argv[5], 0)
    if exclusive:
        after = incr_id(start)
        if after is None:
            raise CommandError("ERR invalid start ID for the interval")
        start = after
    count, justid = 100, False
    j = 6
    while j < len(argv):
        opt = argv[j].lower()
        if opt == b"count" and len(argv) - 1 - j:
            count = _int(argv[j + 1], "ERR COUNT must be > 0")
            if not 1 <= count <= INT64_MAX // 16:  # getRangeLongFromObjectOrReply(1, LONG_MAX / 16)
                raise CommandError("ERR COUNT must be > 0")
            j += 1
        elif opt == b"justid":
            justid = True
        else:
            raise CommandError(SYNTAX)
        j += 1
    stream, group = _claiming_group(edit.lookup(argv[1], False), argv)
    attempts = count * 10
    consumer = _first_claimer(edit, group, argv[3])
    claimed, gone = [], []
    candidates = iter([i for i in sorted(group.pel) if i >= start])
    while True:  # while (attempts-- && count && raxNext(&ri)): the cursor is the entry after
        if attempts <= 0 or not count:
            cursor = next(candidates, ZERO_ID)
            break
        attempts -= 1
        entry_id = next(candidates, None)
        if entry_id is None:
            cursor = ZERO_ID
            break
        pending = group.pel[entry_id]
        if edit.drops_gone_entries and stream.find(entry_id) is None:
            group.disown(entry_id, group.pel.pop(entry_id))
            gone.append(b"%d-%d" % entry_id)
            count -= 1
            continue
        if min_idle and edit.now_ms - pending.delivery_time < min_idle:
            continue
        consumer = _claim(edit, group, argv[3], entry_id, pending, consumer, edit.now_ms, None, justid)
        claimed.append(b"%d-%d" % entry_id)
        count -= 1
    return [b"%d-%d" % cursor, claimed, gone]


def _int(arg: bytes, message: str) -> int:
    try:
        return parse_int(arg)
    except CommandError:
        raise CommandError(message) from None


COMMANDS: dict[bytes, tuple[int, Callable[[StreamEdit, Sequence[bytes]], Any]]] = {
    b"xreadgroup": (-7, xreadgroup), b"xclaim": (-6, xclaim), b"xautoclaim": (-6, xautoclaim),
}
