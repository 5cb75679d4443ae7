"""The commands that change a stream's entries, its IDs and its groups, applied offline (issue
15: `rdbspec rewrite --commands`), in the server's order of checks, with its error texts (redis
src/t_stream.c xaddCommand, xtrimCommand, xdelCommand, xsetidCommand, xackCommand,
xgroupCommand, streamParseAddOrTrimArgsOrReply). `version` picks the generation's rules: before
7.0 there is no `ms-*` ID, no ENTRIESREAD, and XSETID takes no options. What delivers entries
to consumers (XREADGROUP, XCLAIM, XAUTOCLAIM) is in `delivery`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..server.numbers import MASK64
from ..server.streams import (
    MAX_ID,
    NO_KEY,
    SCG_INVALID_ENTRIES_READ,
    SYNTAX,
    ZERO_ID,
    CommandError,
    StreamId,
    incr_id,
    parse_id,
    parse_int,
)
from ..server.versions import Version
from ..write.stream import EditableConsumer, EditableGroup, EditableStream

EditLookup = Callable[[bytes, bool], "EditableStream | None"]  # (key, create) -> the stream; WRONGTYPE raised


@dataclass
class StreamEdit:
    """What a stream command runs against: the keys, the clock, the generation and the
    stream-node-max-bytes / -entries the server runs with."""

    lookup: EditLookup
    now_ms: int
    version: Version
    node_max_bytes: int = 4096
    node_max_entries: int = 100

    @property
    def tracks_activity(self) -> bool:
        """7.2+ (redis PR #11099): a consumer has an active time, set when it reads or claims an
        entry, and XREADGROUP, XCLAIM and XAUTOCLAIM make it and see it even when they do not."""
        return self.version >= (7, 2)

    def new_consumer(self) -> EditableConsumer:
        """streamCreateConsumer: seen now, never active (7.2+; before, active is the seen time)."""
        return EditableConsumer(self.now_ms, -1 if self.tracks_activity else self.now_ms)

    @property
    def drops_gone_entries(self) -> bool:
        """XCLAIM/XAUTOCLAIM remove a PEL entry whose stream entry is gone (7.0+)."""
        return self.version >= (7, 0)


def strict_id(arg: bytes) -> StreamId:
    return parse_id(arg, 0, strict=True)


def _xadd_id(arg: bytes, edit: StreamEdit) -> tuple[StreamId, bool]:
    """streamParseStrictIDOrReply with seq_given: `ms-*` (7.0+) leaves the sequence to the server."""
    if edit.version >= (7, 0) and arg.endswith(b"-*") and len(arg) <= 127:
        ms, _ = strict_id(arg[:-2])
        return (ms, 0), False
    return strict_id(arg), True


@dataclass
class TrimArgs:
    maxlen: int | None = None
    minid: StreamId | None = None
    approx: bool = False
    limit: int = 0
    no_mkstream: bool = False
    id: StreamId | None = None
    seq_given: bool = True


def _trim_args(edit: StreamEdit, argv: Sequence[bytes], xadd: bool) -> tuple[TrimArgs, int]:
    """streamParseAddOrTrimArgsOrReply: the options, and where the ID (XADD) stopped them."""
    args = TrimArgs()
    limit_given = False
    i = 2
    while i < len(argv):
        more = len(argv) - 1 - i
        opt = argv[i].lower()
        if xadd and argv[i] == b"*":
            break
        if opt in (b"maxlen", b"minid") and more:
            if args.maxlen is not None or args.minid is not None:
                raise CommandError("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
            args.approx = False
            if more >= 2 and argv[i + 1] in (b"~", b"="):
                args.approx = argv[i + 1] == b"~"
                i += 1
            if opt == b"maxlen":
                args.maxlen = parse_int(argv[i + 1])
                if args.maxlen < 0:
                    raise CommandError("ERR The MAXLEN argument must be >= 0.")
            else:
                args.minid = strict_id(argv[i + 1])
            i += 1
        elif opt == b"limit" and more:
            args.limit = parse_int(argv[i + 1])
            if args.limit < 0:
                raise CommandError("ERR The LIMIT argument must be >= 0.")
            limit_given = True
            i += 1
        elif xadd and opt == b"nomkstream":
            args.no_mkstream = True
        elif xadd:
            args.id, args.seq_given = _xadd_id(argv[i], edit)
            break
        else:
            raise CommandError(SYNTAX)
        i += 1
    trimming = args.maxlen is not None or args.minid is not None
    if args.limit and not trimming:
        raise CommandError("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
    if not xadd and not trimming:
        raise CommandError("ERR syntax error, XTRIM must be called with a trimming strategy")
    if limit_given and not args.approx:
        raise CommandError("ERR syntax error, LIMIT cannot be used without the special ~ option")
    if not limit_given:
        args.limit = min(100 * edit.node_max_entries, 10_000) if args.approx and edit.node_max_entries > 0 else (
            10_000 if args.approx else 0)
    return args, i


def _trim(stream: EditableStream, args: TrimArgs) -> int:
    if args.maxlen is None and args.minid is None:
        return 0
    return stream.trim(args.maxlen, args.minid, args.approx, args.limit)


def xadd(edit: StreamEdit, argv: Sequence[bytes]) -> Any:
    args, i = _trim_args(edit, argv, xadd=True)
    fields = argv[i + 1:]
    if len(fields) < 2 or len(fields) % 2:
        raise CommandError("ERR wrong number of arguments for 'xadd' command")
    if args.id == ZERO_ID and args.seq_given:
        raise CommandError("ERR The ID specified in XADD must be greater than 0-0")
    stream = edit.lookup(argv[1], not args.no_mkstream)
    if stream is None:
        return None
    if stream.last_id == MAX_ID:
        raise CommandError("ERR The stream has exhausted the last possible ID, unable to add more items")
    new_id = _next_id(stream, args, edit.now_ms)
    if new_id is None or new_id <= stream.last_id:
        raise CommandError("ERR The ID specified in XADD is equal or smaller than the target stream top item")
    stream.append(new_id, [(fields[k], fields[k + 1]) for k in range(0, len(fields), 2)], edit.node_max_bytes,
                  edit.node_max_entries)
    _trim(stream, args)
    return b"%d-%d" % new_id


def _next_id(stream: EditableStream, args: TrimArgs, now_ms: int) -> StreamId | None:
    """streamAppendItem's ID: given, `ms-*` (the next sequence of that ms), or streamNextID."""
    if args.id is not None and args.seq_given:
        return args.id
    if args.id is not None:
        if stream.last_id[0] != args.id[0]:
            return args.id
        return None if stream.last_id[1] == MASK64 else (args.id[0], stream.last_id[1] + 1)
    if now_ms > stream.last_id[0]:
        return now_ms, 0
    return incr_id(stream.last_id)


def xtrim(edit: StreamEdit, argv: Sequence[bytes]) -> Any:
    args, _ = _trim_args(edit, argv, xadd=False)
    stream = edit.lookup(argv[1], False)
    return 0 if stream is None else _trim(stream, args)


def xdel(edit: StreamEdit, argv: Sequence[bytes]) -> Any:
    stream = edit.lookup(argv[1], False)
    if stream is None:
        return 0
    ids = [strict_id(a) for a in argv[2:]]
    deleted = 0
    first_gone = False
    for entry_id in ids:
        if stream.delete(entry_id):
            first_gone |= entry_id == stream.first_id
            stream.max_deleted = max(stream.max_deleted, entry_id)
            deleted += 1
    if deleted:
        if stream.length == 0:
            stream.first_id = ZERO_ID
        elif first_gone:
            stream.first_id = stream.edge_id(first=True)
    return deleted


def xack(edit: StreamEdit, argv: Sequence[bytes]) -> Any:
    stream = edit.lookup(argv[1], False)
    group = stream.groups.get(argv[2]) if stream is not None else None
    if group is None:
        return 0
    acked = 0
    for entry_id in [strict_id(a) for a in argv[3:]]:
        pending = group.pel.pop(entry_id, None)
        if pending is not None:
            group.disown(entry_id, pending)
            acked += 1
    return acked


# -- XGROUP ------------------------------------------------------------------------------------

# how many arguments each subcommand takes where xgroupCommand dispatches (7.0+, 6.2)
XGROUP_ARGUMENTS = {b"create": (5, 6, 7, 8), b"setid": (5, 7), b"destroy": (4,), b"createconsumer": (5,),
                    b"delconsumer": (5,)}
XGROUP_ARGUMENTS_6 = {**XGROUP_ARGUMENTS, b"create": (5, 6), b"setid": (5,)}


def xgroup(edit: StreamEdit, argv: Sequence[bytes]) -> Any:
    """xgroupCommand. From 7.0 the command table refuses an unknown subcommand or a wrong count
    of arguments first; 6.2 looks the key and the group up first, and refuses both alike last."""
    sub = argv[1].lower()
    if sub == b"help" and len(argv) == 2:
        return None
    mkstream, entries_read = False, None
    if edit.version >= (7, 0):
        arity = {b"create": -5, b"setid": -5, b"destroy": 4, b"delconsumer": 5, b"createconsumer": 5}.get(sub)
        if arity is None:
            raise CommandError(f"ERR unknown subcommand '{argv[1].decode(errors='replace')}'. Try XGROUP HELP.")
        if (arity < 0 and len(argv) < -arity) or (arity > 0 and len(argv) != arity):
            raise CommandError(f"ERR wrong number of arguments for 'xgroup|{sub.decode()}' command")
        i = 5
        while i < len(argv) and sub in (b"create", b"setid"):
            if sub == b"create" and argv[i].lower() == b"mkstream":
                mkstream = True
                i += 1
            elif argv[i].lower() == b"entriesread" and i + 1 < len(argv):
                entries_read = _entries_read(argv[i + 1])
                i += 2
            else:
                raise CommandError(_subcommand_syntax(edit, argv[1]))
    elif len(argv) == 6 and sub == b"create":
        if argv[5].lower() != b"mkstream":
            raise CommandError(_subcommand_syntax(edit, argv[1]))
        mkstream = True
    if len(argv) < 4:
        raise CommandError(_subcommand_syntax(edit, argv[1]))
    stream = edit.lookup(argv[2], False)
    name = argv[3]
    group = stream.groups.get(name) if stream is not None else None
    if not mkstream:
        if stream is None:
            raise CommandError("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may "
                               "want to use the MKSTREAM option to create an empty stream automatically.")
        if group is None and sub in (b"setid", b"createconsumer", b"delconsumer"):
            raise CommandError(f"NOGROUP No such consumer group '{name.decode(errors='replace')}' for key name "
                               f"'{argv[2].decode(errors='replace')}'")
    if len(argv) not in (XGROUP_ARGUMENTS if edit.version >= (7, 0) else XGROUP_ARGUMENTS_6).get(sub, ()):
        raise CommandError(_subcommand_syntax(edit, argv[1]))
    if sub == b"create":
        group_id = (stream.last_id if stream is not None else ZERO_ID) if argv[4] == b"$" else strict_id(argv[4])
        if stream is None:
            stream = edit.lookup(argv[2], True)
            assert stream is not None  # made: MKSTREAM
        if name in stream.groups:
            raise CommandError("BUSYGROUP Consumer Group name already exists")
        stream.groups[name] = EditableGroup(group_id, entries_read)  # streamCreateCG: unknown unless ENTRIESREAD
        return b"OK"
    assert stream is not None  # without the key only CREATE (with MKSTREAM) goes on, above
    if sub == b"destroy":
        return 1 if stream.groups.pop(name, None) is not None else 0
    assert group is not None  # SETID, CREATECONSUMER, DELCONSUMER: NOGROUP above without it
    if sub == b"setid":
        group_id = stream.last_id if argv[4] == b"$" else parse_id(argv[4])
        group.last_id = group_id
        group.entries_read = entries_read
        return b"OK"
    if sub == b"createconsumer":
        if argv[4] in group.consumers:
            return 0
        group.consumers[argv[4]] = edit.new_consumer()
        return 1
    consumer = group.consumers.pop(argv[4], None)  # DELCONSUMER
    if consumer is None:
        return 0
    for entry_id in consumer.pel:
        group.pel.pop(entry_id, None)
    return len(consumer.pel)


def _subcommand_syntax(edit: StreamEdit, sub: bytes) -> str:
    """addReplySubcommandSyntaxError (capitalised before 7.0)."""
    unknown = "unknown" if edit.version >= (7, 0) else "Unknown"
    return (f"ERR {unknown} subcommand or wrong number of arguments for '{sub.decode(errors='replace')}'. "
            "Try XGROUP HELP.")


def _entries_read(arg: bytes) -> int | None:
    value = parse_int(arg)
    if value < 0 and value != SCG_INVALID_ENTRIES_READ:
        raise CommandError("ERR value for ENTRIESREAD must be positive or -1")
    return None if value == SCG_INVALID_ENTRIES_READ else value


# -- XSETID ------------------------------------------------------------------------------------

def xsetid(edit: StreamEdit, argv: Sequence[bytes]) -> Any:
    """xsetidCommand: the stream's last generated ID; from 7.0 also its entries-added counter
    (ENTRIESADDED) and its largest deleted ID (MAXDELETEDID), and from 7.2 no ID below that. 6.2
    takes the key and the ID only, looked up before the ID is parsed."""
    entries_added: int | None = None
    max_deleted = ZERO_ID
    if edit.version < (7, 0):
        if len(argv) != 3:
            raise CommandError("ERR wrong number of arguments for 'xsetid' command")
        stream = _existing(edit, argv[1])
        new_id = strict_id(argv[2])
    else:
        new_id = strict_id(argv[2])
        i = 3
        while i < len(argv):
            more = len(argv) - 1 - i
            opt = argv[i].lower()
            if opt == b"entriesadded" and more:
                entries_added = parse_int(argv[i + 1])
                if entries_added < 0:
                    raise CommandError("ERR entries_added must be positive")
            elif opt == b"maxdeletedid" and more:
                max_deleted = strict_id(argv[i + 1])
                if new_id < max_deleted:
                    raise CommandError("ERR The ID specified in XSETID is smaller than the provided "
                                       "max_deleted_entry_id")
            else:
                raise CommandError(SYNTAX)
            i += 2
        stream = _existing(edit, argv[1])
        if edit.version >= (7, 2) and new_id < stream.max_deleted:  # redis PR #11444
            raise CommandError("ERR The ID specified in XSETID is smaller than current max_deleted_entry_id")
    if stream.length:
        if new_id < stream.edge_id(first=False):  # streamLastValidID
            raise CommandError("ERR The ID specified in XSETID is smaller than the target stream top item")
        if entries_added is not None and stream.length > entries_added:
            raise CommandError("ERR The entries_added specified in XSETID is smaller than the target stream length")
    stream.last_id = new_id
    if entries_added is not None:
        stream.entries_added = entries_added
    if max_deleted != ZERO_ID:
        stream.max_deleted = max_deleted
    return b"OK"


def _existing(edit: StreamEdit, key: bytes) -> EditableStream:
    """lookupKeyWriteOrReply with shared.nokeyerr."""
    stream = edit.lookup(key, False)
    if stream is None:
        raise CommandError(NO_KEY)
    return stream


COMMANDS: dict[bytes, tuple[int, Callable[[StreamEdit, Sequence[bytes]], Any]]] = {
    b"xadd": (-5, xadd), b"xtrim": (-4, xtrim), b"xdel": (-3, xdel), b"xsetid": (-3, xsetid), b"xack": (-4, xack),
    b"xgroup": (-2, xgroup),
}
