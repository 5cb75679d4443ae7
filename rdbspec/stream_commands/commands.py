"""Commands as the server parses them: `execute()` runs a command line (a list of byte strings,
as the server receives it) over a key lookup and returns the reply value (rendered by
`reply`), raising `CommandError` with the server's error text."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..read import dumpfile
from ..read.streams import Stream
from ..server.streams import (
    NO_KEY,
    SYNTAX,
    VALKEY_9,
    WRONGTYPE,
    CommandError,
    arg_bytes,
    parse_int,
    parse_range,
    stream_version,
)
from ..server.versions import Version
from .groups import find_group, xpending, xpending_summary
from .ranges import iter_range, take, xread, xread_id
from .xinfo import xinfo_consumers, xinfo_groups, xinfo_stream


class WrongType:
    """What a lookup gives for a key that exists but holds another type."""


WRONG_TYPE = WrongType()
StreamLookup = Callable[[bytes], "Stream | WrongType | None"]


@dataclass
class Context:
    """What a command runs against: key lookup, the clock and the reply generation (``version``:
    --as-version; ``valkey``: a VALKEY-magic dump, answered as Valkey 9 unless ``version``)."""

    lookup: StreamLookup
    now_ms: int
    version: Version | None = None
    valkey: bool = False

    @property
    def valkey_rules(self) -> bool:
        """Valkey 9's lag and XREAD ``+`` rules apply (a Valkey dump, no --as-version)."""
        return self.valkey and self.version is None

    def stream(self, key: bytes) -> Stream | None:
        found = self.lookup(key)
        if isinstance(found, WrongType):
            raise CommandError(WRONGTYPE)
        return found

    def version_for(self, stream: Stream | None) -> Version:
        if self.version is not None:
            return self.version
        if self.valkey:
            return VALKEY_9
        return stream_version(stream) if stream is not None else (7, 2)


def _count_option(args: Sequence[bytes]) -> int | None:
    """XRANGE's trailing [COUNT n] (repeatable, last wins; negatives become 0)."""
    count = None
    i = 0
    while i < len(args):
        if args[i].lower() == b"count" and i + 1 < len(args):
            count = max(parse_int(args[i + 1]), 0)
            i += 2
        else:
            raise CommandError(SYNTAX)
    return count


def cmd_xrange(ctx: Context, argv: Sequence[bytes], rev: bool = False) -> Any:
    if len(argv) < 4:
        raise CommandError(f"ERR wrong number of arguments for '{argv[0].decode().lower()}' command")
    start, end = (argv[3], argv[2]) if rev else (argv[2], argv[3])
    low, high = parse_range(start, end)
    count = _count_option(argv[4:])
    stream = ctx.stream(argv[1])
    if stream is None:
        return []
    if count == 0:
        return None  # the server's null array
    return take(iter_range(stream, low, high, rev), count or 0)


def cmd_xread(ctx: Context, argv: Sequence[bytes]) -> Any:
    count, i = 0, 1
    while i < len(argv):
        word = argv[i].lower()
        if word == b"count" and i + 1 < len(argv):
            count = max(parse_int(argv[i + 1]), 0)
            i += 2
        elif word == b"streams" and i + 1 < len(argv):
            break
        else:
            raise CommandError(SYNTAX)
    rest = list(argv[i + 1:])
    if i >= len(argv) or len(rest) % 2:
        raise CommandError("ERR Unbalanced 'xread' list of streams: for each stream key an ID or '$' "
                           "must be specified.")
    keys, ids = rest[:len(rest) // 2], rest[len(rest) // 2:]
    pairs = []
    for key, raw in zip(keys, ids):
        stream = ctx.stream(key)
        xread_id(stream, raw, ctx.version_for(stream), ctx.valkey_rules)  # errors in argument order
        pairs.append((stream, raw))
    served = xread(pairs, count, ctx.version_for(next((s for s, _ in pairs if s is not None), None)),
                   ctx.valkey_rules)
    return [[keys[index], entries] for index, entries in served] or None


def cmd_xpending(ctx: Context, argv: Sequence[bytes]) -> Any:
    argc = len(argv)
    if argc != 3 and not 6 <= argc <= 9:
        raise CommandError(SYNTAX)
    key, group_name = argv[1], argv[2]
    extended = None
    if argc >= 6:
        start_index, min_idle = 3, 0
        if argv[3].lower() == b"idle":
            min_idle = parse_int(argv[4])
            if argc < 8:
                raise CommandError(SYNTAX)
            start_index = 5
        count = max(parse_int(argv[start_index + 2]), 0)
        parse_range(argv[start_index], argv[start_index + 1])
        consumer = argv[start_index + 3] if start_index + 3 < argc else None
        extended = (argv[start_index], argv[start_index + 1], count, consumer, min_idle)
    stream = ctx.stream(key)
    group = find_group(stream, group_name) if stream is not None else None
    if group is None:
        raise CommandError(f"NOGROUP No such key '{_c(key)}' or consumer group '{_c(group_name)}'")
    if extended is None:
        return xpending_summary(group)
    start, end, count, consumer, min_idle = extended
    return xpending(group, start, end, count, consumer, min_idle, ctx.now_ms)


def _c(name: bytes) -> str:
    """A name as the server's %s prints it: up to a NUL byte."""
    return name.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def cmd_xinfo(ctx: Context, argv: Sequence[bytes]) -> Any:
    if len(argv) < 3:
        raise CommandError("ERR wrong number of arguments for 'xinfo' command")
    sub, key = argv[1].lower(), argv[2]
    stream = ctx.stream(key)
    if stream is None:
        raise CommandError(NO_KEY)
    version = ctx.version_for(stream)
    if sub == b"consumers" and len(argv) == 4:
        group = find_group(stream, argv[3])
        if group is None:
            raise CommandError(f"NOGROUP No such consumer group '{_c(argv[3])}' for key name '{_c(key)}'")
        return xinfo_consumers(group, ctx.now_ms, version)
    if sub == b"groups" and len(argv) == 3:
        return xinfo_groups(stream, version, ctx.valkey_rules)
    if sub == b"stream":
        return _xinfo_stream_args(stream, argv[3:], version, ctx.valkey_rules)
    raise CommandError(SYNTAX)


def _xinfo_stream_args(stream: Stream, args: Sequence[bytes], version: Version, valkey: bool) -> dict[str, Any]:
    if not args:
        return xinfo_stream(stream, version=version, valkey=valkey)
    if args[0].lower() != b"full":
        raise CommandError(SYNTAX)
    count = 10
    if len(args) > 1:
        if len(args) != 3 or args[1].lower() != b"count":
            raise CommandError(SYNTAX)
        count = parse_int(args[2])
    return xinfo_stream(stream, full=True, count=count, version=version, valkey=valkey)


COMMANDS: dict[bytes, Callable[[Context, Sequence[bytes]], Any]] = {
    b"xrange": cmd_xrange,
    b"xrevrange": lambda ctx, argv: cmd_xrange(ctx, argv, rev=True),
    b"xread": cmd_xread,
    b"xpending": cmd_xpending,
    b"xinfo": cmd_xinfo,
}


def execute(ctx: Context, argv: Sequence[str | bytes]) -> Any:
    """Runs one command line (``[b"XRANGE", key, start, end, ...]``); raises CommandError."""
    args = [arg_bytes(a) for a in argv]
    handler = COMMANDS.get(args[0].lower())
    if handler is None:
        raise CommandError(f"ERR unknown command '{_c(args[0])}'")
    return handler(ctx, args)


def dump_context(dump: dumpfile.Dump, lookup: StreamLookup, now_ms: int, as_version: Version | None = None) -> Context:
    """The context of commands over `dump`: Valkey 9's replies for a VALKEY-magic file."""
    return Context(lookup, now_ms, as_version, valkey=dump.header.magic.startswith("VALKEY"))


def dump_lookup(dump: dumpfile.Dump, db: int, keys: Sequence[bytes], now_ms: int) -> StreamLookup:
    """Reads the dump once, keeping the values of `keys` in `db`; keys expired at now_ms are
    missing, as for the server. Unless the dump was opened without checksum verification, the
    checksum is verified as the server does on load (redis src/rdb.c rdbLoadRioWithLoadingCtx):
    from the trailer alone when it matches, else by reading on to the end, which fails as
    `rdbspec dump` does."""
    wanted, found = set(keys), {}
    records = dump.keys()
    for record in records:
        if record.db == db and record.key in wanted and record.key not in found:
            expired = record.expire_at_ms is not None and record.expire_at_ms <= now_ms
            if not expired:
                found[record.key] = record.value if isinstance(record.value, Stream) else WRONG_TYPE
            if len(found) == len(wanted):
                break
    if dump.verify_checksum and dump.checksum_status == "not read" and not dump.trailer_verified():
        for _ in records:
            pass
    return found.get
