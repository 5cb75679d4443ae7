"""A key's value as the plain commands that build the same value on a server (issue 30): for a
key too big for one RESTORE, and for `rdbspec dump --format resp`, which writes what `redis-cli
--pipe` or an AOF loader replays. Replayed on an empty key, they leave a value whose `DEBUG
DIGEST-VALUE` is the one the server that loads the dump gives it (redis src/debug.c
xorObjectDigest: the elements, the field TTLs' presence, the key's expiry's), and, for a stream,
what XINFO STREAM FULL and XPENDING answer there but the consumers' seen and active times, which
no command sets.

Each command is a list of byte strings (`rdbspec.net.resp.command` gives its bytes), at most
`max_bytes` of them where a value can be cut: a list, set, sorted set or hash is pushed as many
elements a command as fit (RPUSH, SADD, ZADD, HSET; each element at least), a string over the
limit is SET then APPENDed. A value is read a chunk at a time (`KeyRecord.elements`,
`KeyRecord.field_ttl_rows`, a stream a node at a time): a hash of millions of fields or a stream
of millions of entries is never a Python object per element all at once.

What the commands differ by is the target's family and version (`Server`, `Since`): field TTLs
are HPEXPIREAT's (Redis 7.4, Valkey 9.0), a stream's counters XSETID's ENTRIESADDED and
MAXDELETEDID and XGROUP CREATE's ENTRIESREAD (Redis 7.0), an idle consumer XGROUP
CREATECONSUMER's (Redis 6.2). What the target cannot hold is refused by name, or dropped with
`Losses(allow_lossy=True)` (the names and rules of `rdbspec rewrite --target`,
`rdbspec.write.convert`): field TTLs below it, a stream's counters below 7.0 where a loader would
not compute them back, pending entries of no consumer (Redis 8.8's NACK zones: XCLAIM gives each
entry a consumer), IDMP producers, module values (RESTORE only), and the types no target has
(Dragonfly's own, Valkey 9.2's path hashes, Redis 8.8's sparse arrays).

Imports: the reading side, the server's rules, `rdbspec.write.convert` (what a target cannot hold).
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..read.dumpfile import FunctionLibrary, KeyRecord
from ..read.streams import PendingEntries, Stream
from ..read.values import HashRow
from ..server.streams import (
    ZERO_ID,
    StreamId,
    entries_read_derived,
    group_entries_read,
    loaded,
    metadata_derived,
)
from ..server.versions import Server, Version
from ..write.convert import (
    DF_MEMBER_TTLS,
    DF_SET_WITH_EXPIRY,
    ENTRIES_READ,
    FUNCTIONS,
    IDMP,
    NACK_ZONES,
    PRE_GA_FUNCTIONS,
    STREAM_METADATA,
    Losses,
    field_ttls,
)

Command = list[bytes]

# what `rdbspec dump --format resp` makes a command at most: a value is sent in pieces that a
# server reads and runs in a moment (its whole value would be one command in memory on both sides)
MAX_COMMAND_BYTES = 1 << 20

ORPHANS = "stream pending entries of no consumer (XCLAIM gives each one a consumer)"
IDLE_CONSUMERS = "consumers without pending entries (XGROUP CREATECONSUMER: Redis 6.2+)"
MODULES = "module values (type {}: RESTORE alone loads one)"
# the group an empty stream without groups is made with (XGROUP CREATE ... MKSTREAM) and destroyed
MAKER_GROUP = b"rdbspec-mkstream"


@dataclass(frozen=True)
class Since:
    """The first release of each family that has a command or option. Valkey, forked from Redis
    7.2.4, has whatever Redis 7.2 has."""

    redis: Version
    valkey: Version = (7, 2)

    def on(self, server: Server) -> bool:
        return server.version >= (self.valkey if server.name == "valkey" else self.redis)


FIELD_TTL_COMMANDS = Since((7, 4), (9, 0))  # HPEXPIREAT: redis src/t_hash.c hexpireGenericCommand; Valkey 9.0
# XSETID's ENTRIESADDED and MAXDELETEDID, XGROUP CREATE's ENTRIESREAD: redis src/t_stream.c
# xsetidCommand, xgroupCommand
STREAM_COUNTERS = Since((7, 0))
CREATECONSUMER = Since((6, 2))  # XGROUP CREATECONSUMER: redis src/t_stream.c xgroupCommand
FUNCTION_LOAD = Since((7, 0))  # redis src/functions.c functionLoadCommand


def key_commands(record: KeyRecord, max_bytes: int, server: Server, losses: Losses | None = None,
                 replace: bool = False, name: bytes | None = None, expiry: bool = True) -> Iterator[Command]:
    """The commands that build `record`'s value on `server` (see the module doc) under its key (or
    `name`: `rdbspec restore` builds a big value under a name of its own, then renames it), then
    its expiry (PEXPIREAT; not with `expiry` false); with `replace`, a DEL of the key first. What
    `server` cannot hold is told to `losses` (by default refused: `UnwritableError`) before the
    first command. A key the server would not load (an empty list, set, sorted set or hash: redis
    src/rdb.c rdbLoadObject skips it) or one dropped whole gives none."""
    losses = losses if losses is not None else Losses(str(server))
    if losses.no_older_form(record):
        return
    if record.type_name == "module":
        losses.drop(MODULES.format(record.rdb_type), record)
        return
    key = record.key if name is None else name
    value = _BUILDERS[record.type_name](record, key, max_bytes, server, losses)
    first = next(value, None)
    if first is None:
        return
    if replace:
        yield [b"DEL", key]
    yield first
    yield from value
    if expiry and record.expire_at_ms is not None:
        yield [b"PEXPIREAT", key, b"%d" % record.expire_at_ms]


def function_commands(libraries: Iterable[FunctionLibrary], server: Server, losses: Losses | None = None,
                      replace: bool = False) -> Iterator[Command]:
    """FUNCTION LOAD [REPLACE] of each function library (FUNCTION2) of a dump. The single
    functions of Redis 7.0-rc1/rc2 are refused or dropped, as every release refuses them
    (redis src/rdb.c rdbFunctionLoad); a Dragonfly snapshot's Lua scripts (engine, no name) are
    not libraries, and a server loads none from a dump: left out."""
    losses = losses if losses is not None else Losses(str(server))
    for library in libraries:
        if library.engine is not None and library.name is None:
            continue
        if library.name is not None:
            losses.drop(PRE_GA_FUNCTIONS)
        elif not FUNCTION_LOAD.on(server):
            losses.drop(FUNCTIONS)
        else:
            yield [b"FUNCTION", b"LOAD", *([b"REPLACE"] if replace else []), library.code]


# -- batches ---------------------------------------------------------------------------------------


def _bulk_size(arg: bytes) -> int:
    """The bytes of a bulk string: `$`, its length, CRLF, itself, CRLF."""
    return len(arg) + len(b"%d" % len(arg)) + 5


def _size(args: int, bulks: int, count: int | None) -> int:
    """A command of `args` arguments whose bulk strings take `bulks` bytes, plus `count`'s."""
    size = len(b"*%d\r\n" % args) + bulks
    return size if count is None else size + _bulk_size(b"%d" % count)


def _batched(head: Sequence[bytes], groups: Iterable[Sequence[bytes]], max_bytes: int, tail: Sequence[bytes] = (),
             counted: bool = False) -> Iterator[Command]:
    """`head`, as many groups' arguments as fit in `max_bytes` (one group at least), `tail`: one
    command after another until the groups run out. `counted`: the number of groups goes right
    after `head` (HPEXPIREAT's FIELDS numfields)."""
    fixed = sum(map(_bulk_size, head)) + sum(map(_bulk_size, tail))
    fixed_args = len(head) + len(tail) + counted
    args: list[bytes] = []
    bulks = count = 0
    for group in groups:
        grow = sum(map(_bulk_size, group))
        if count and _size(fixed_args + len(args) + len(group), fixed + bulks + grow,
                           count + 1 if counted else None) > max_bytes:
            yield _joined(head, args, tail, count if counted else None)
            args, bulks, count = [], 0, 0
        args.extend(group)
        bulks += grow
        count += 1
    if count:
        yield _joined(head, args, tail, count if counted else None)


def _joined(head: Sequence[bytes], args: list[bytes], tail: Sequence[bytes], count: int | None) -> Command:
    return [*head, *([] if count is None else [b"%d" % count]), *args, *tail]


def _room(head: Sequence[bytes], max_bytes: int) -> int:
    """The bytes of the one argument after `head` that keep the command within `max_bytes` (1 at least)."""
    over = len(b"*%d\r\n" % (len(head) + 1)) + sum(map(_bulk_size, head)) + 5
    room = max_bytes - over
    while room > 1 and over + len(b"%d" % room) + room > max_bytes:
        room -= 1
    return max(room, 1)


def _id(stream_id: StreamId) -> bytes:
    return b"%d-%d" % stream_id


# -- values ----------------------------------------------------------------------------------------

def _string(record: KeyRecord, key: bytes, max_bytes: int, server: Server, losses: Losses) -> Iterator[Command]:
    """SET, then APPEND of what does not fit in it: a value of any size read a piece at a time."""
    head, append = [b"SET", key], [b"APPEND", key]
    pieces = record.string_pieces(_room(append, max_bytes), first=_room(head, max_bytes))
    yield [*head, next(pieces, b"")]
    for piece in pieces:
        yield [*append, piece]


def _list(record: KeyRecord, key: bytes, max_bytes: int, server: Server, losses: Losses) -> Iterator[Command]:
    yield from _batched([b"RPUSH", key], zip(itertools.chain.from_iterable(record.elements())), max_bytes)


def _set(record: KeyRecord, key: bytes, max_bytes: int, server: Server, losses: Losses) -> Iterator[Command]:
    if record.value_kind == DF_SET_WITH_EXPIRY:  # no server but Dragonfly has member TTLs
        losses.drop(DF_MEMBER_TTLS, record)
    yield from _batched([b"SADD", key], zip(itertools.chain.from_iterable(record.elements())), max_bytes)


def _zset(record: KeyRecord, key: bytes, max_bytes: int, server: Server, losses: Losses) -> Iterator[Command]:
    """ZADD of each score as the shortest text that reads back as the same double (inf, -inf too)."""
    members = itertools.chain.from_iterable(record.elements())
    yield from _batched([b"ZADD", key], ((repr(score).encode(), member) for member, score in members), max_bytes)


def _hash(record: KeyRecord, key: bytes, max_bytes: int, server: Server, losses: Losses) -> Iterator[Command]:
    """HSET; a hash with field TTLs, a chunk of fields at a time, HSET then an HPEXPIREAT a TTL
    (an instant already past deletes its fields at once, where the server would expire them soon
    after loading: redis src/t_hash.c hexpireGenericCommand)."""
    chunks = record.field_ttl_rows()
    if chunks is None:
        yield from _batched([b"HSET", key], itertools.chain.from_iterable(record.elements()), max_bytes)
        return
    with_ttls = FIELD_TTL_COMMANDS.on(server)
    if not with_ttls:
        losses.drop(field_ttls(record.value_kind), record)
    for rows in chunks:
        yield from _batched([b"HSET", key], ((field, value) for field, value, _ in rows), max_bytes)
        if with_ttls:
            yield from _field_ttls(key, rows, max_bytes)


def _field_ttls(key: bytes, rows: list[HashRow], max_bytes: int) -> Iterator[Command]:
    fields_by_ttl: dict[int, list[bytes]] = {}
    for field, _, ttl in rows:
        if ttl is not None:
            fields_by_ttl.setdefault(ttl, []).append(field)
    for ttl, fields in fields_by_ttl.items():
        yield from _batched([b"HPEXPIREAT", key, b"%d" % ttl, b"FIELDS"], zip(fields), max_bytes, counted=True)


def _stream(record: KeyRecord, key: bytes, max_bytes: int, server: Server, losses: Losses) -> Iterator[Command]:
    """Every entry the dump stores (XADD, in ID order), the deleted ones too, so that the nodes
    split where the server that wrote the dump split them (redis src/t_stream.c
    streamAppendItem counts a node's deleted entries with its live ones) and a deleted entry still
    pending exists for XCLAIM; then the groups (XGROUP CREATE with the group's last delivered ID
    and read counter, XGROUP CREATECONSUMER), each pending entry with its consumer, delivery time
    and count (XCLAIM ... TIME RETRYCOUNT FORCE JUSTID: redis src/t_stream.c xclaimCommand
    creates the entry in the group's PEL and sets both exactly, a time in the future as now),
    the deleted entries deleted (XDEL), and the stream's last ID and counters (XSETID)."""
    stream: Stream = record.value
    counters = STREAM_COUNTERS.on(server)
    _refuse_what_is_lost(record, stream, server, losses)
    deleted: tuple[array[int], array[int]] = (array("Q"), array("Q"))
    made = False
    for _, got in stream.node_entries():
        cols = got.columns
        for ms, seq, flag, fields in zip(cols.ms, cols.seq, cols.deleted, cols.fields):
            if flag:
                deleted[0].append(ms)
                deleted[1].append(seq)
            yield [b"XADD", key, _id((ms, seq)), *itertools.chain.from_iterable(fields)]
            made = True
    for group in stream.groups:
        create = [b"XGROUP", b"CREATE", key, group.name, _id(group.last_delivered_id)]
        if not made:  # no entry made the stream: the first group does
            create.append(b"MKSTREAM")
            made = True
        read = group_entries_read(stream, group) if counters else None
        yield create if read is None else [*create, b"ENTRIESREAD", b"%d" % read]
        if CREATECONSUMER.on(server):
            for consumer in group.consumers:
                yield [b"XGROUP", b"CREATECONSUMER", key, group.name, consumer.name]
    if not made:  # an empty stream without groups: only XGROUP CREATE ... MKSTREAM makes one
        yield [b"XGROUP", b"CREATE", key, MAKER_GROUP, b"0", b"MKSTREAM"]
        yield [b"XGROUP", b"DESTROY", key, MAKER_GROUP]
    for group in stream.groups:
        yield from _claims(key, group.name, PendingEntries.of(group.pending), max_bytes)
    yield from _batched([b"XDEL", key], ((_id(entry_id),) for entry_id in zip(*deleted)), max_bytes)
    setid = [b"XSETID", key, _id(stream.last_id)]
    if counters:
        meta = loaded(stream)
        setid += [b"ENTRIESADDED", b"%d" % meta.entries_added]
        if meta.max_deleted != ZERO_ID:  # XSETID takes 0-0 as "unchanged"
            setid += [b"MAXDELETEDID", _id(meta.max_deleted)]
    yield setid


def _refuse_what_is_lost(record: KeyRecord, stream: Stream, server: Server, losses: Losses) -> None:
    """Tells `losses` what of the stream the commands cannot make on `server`."""
    if stream.idmp is not None and not stream.idmp.is_default:
        losses.drop(IDMP, record)
    if any(group.nacked for group in stream.groups):
        losses.drop(NACK_ZONES, record)
    elif any(-1 in PendingEntries.of(group.pending).owners for group in stream.groups):
        losses.drop(ORPHANS, record)
    if not STREAM_COUNTERS.on(server):
        if not metadata_derived(stream):
            losses.drop(STREAM_METADATA, record)
        if not all(entries_read_derived(stream, group) for group in stream.groups):
            losses.drop(ENTRIES_READ, record)
    if not CREATECONSUMER.on(server) and any(not consumer.pending for group in stream.groups
                                             for consumer in group.consumers):
        losses.drop(IDLE_CONSUMERS, record)


def _claims(key: bytes, group: bytes, pending: PendingEntries, max_bytes: int) -> Iterator[Command]:
    """XCLAIM of each run of entries (in the PEL's ID order) of one consumer, delivery time and
    count; an entry of no consumer is left out (told to `Losses` already)."""
    names = pending.names
    rows = zip(pending.owners, pending.delivery_times_ms, pending.delivery_counts, pending.ids.ms, pending.ids.seq)
    for (owner, time_ms, count), run in itertools.groupby(rows, key=lambda row: row[:3]):
        if owner < 0:
            continue
        yield from _batched([b"XCLAIM", key, group, names[owner], b"0"],
                            ((_id((ms, seq)),) for *_, ms, seq in run), max_bytes,
                            tail=[b"TIME", b"%d" % time_ms, b"RETRYCOUNT", b"%d" % count, b"FORCE", b"JUSTID"])


_BUILDERS: dict[str, Callable[[KeyRecord, bytes, int, Server, Losses], Iterator[Command]]] = {
    "string": _string, "list": _list, "set": _set, "zset": _zset, "hash": _hash, "stream": _stream,
}
