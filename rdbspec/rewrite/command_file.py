"""`rdbspec rewrite --commands FILE`: commands applied to a dump offline, as a server that loaded it
at `now` would apply them, before it is written again.

FILE holds one command a line, split as redis-cli splits what it reads (redis src/sds.c
sdssplitargs: spaces between arguments, "double quotes" with \\n, \\xHH... escapes, 'single
quotes'); empty lines and lines starting with # are skipped. The commands: XADD, XDEL, XTRIM,
XSETID, XACK, XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER (`stream_commands.changes`),
XREADGROUP, XCLAIM, XAUTOCLAIM (`stream_commands.delivery`), DEL, EXPIRE, PERSIST, RENAME and
SELECT (redis src/db.c delCommand, renameGenericCommand, selectCommand; src/expire.c
expireGenericCommand, persistCommand), checked as the server checks them; the first error ends
the run with the server's text and the line (`CommandFileError`), and nothing is written. The
keys are those the dump holds but the ones already expired at `now`, which a loading server drops
too (rdbLoadRioWithLoadingCtx).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rdbspec_generated.rdb import KeyValue

from ..errors import RdbspecError
from ..read import dumpfile
from ..server.numbers import INT64_MAX, INT64_MIN
from ..server.streams import NO_KEY, WRONGTYPE, CommandError, loaded, parse_int, stream_type
from ..server.versions import Version
from ..stream_commands import changes, delivery
from ..stream_commands.changes import StreamEdit
from ..write.layouts import new_key_record, rdb_string
from ..write.stream import EditableStream, groups_from_value

DATABASES = 16  # redis.conf default `databases`
STREAM_COMMANDS = {**changes.COMMANDS, **delivery.COMMANDS}
# the generation whose rules a dump's commands follow, by RDB version (a VALKEY dump: Valkey 9's)
VERSION_OF_RDB: dict[int, Version] = {9: (6, 2), 10: (7, 0), 11: (7, 2), 12: (7, 4), 13: (8, 6), 14: (8, 8),
                                      15: (8, 10)}
VALKEY_9: Version = (7, 4)


class CommandFileError(RdbspecError):
    """A command the server would refuse (its error text), or a line that does not split."""

    def __init__(self, path: str, line: int, message: str):
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line, self.message = path, line, message


def split_args(line: bytes) -> list[bytes] | None:
    """sdssplitargs: the arguments of a line, None for unbalanced quotes."""
    out: list[bytes] = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i:i + 1].isspace():
            i += 1
        if i >= n:
            return out
        current = bytearray()
        quote = None
        while True:
            if quote == b'"':
                if i >= n:
                    return None
                c = line[i:i + 1]
                if c == b"\\" and i + 3 < n and line[i + 1:i + 2] == b"x" and _is_hex(line[i + 2:i + 4]):
                    current.append(int(line[i + 2:i + 4], 16))
                    i += 3
                elif c == b"\\" and i + 1 < n:
                    current += {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"a": b"\a"}.get(
                        line[i + 1:i + 2], line[i + 1:i + 2])
                    i += 1
                elif c == b'"':
                    if i + 1 < n and not line[i + 1:i + 2].isspace():
                        return None  # closing quote must be followed by a space or nothing
                    i += 1
                    break
                else:
                    current += c
            elif quote == b"'":
                if i >= n:
                    return None
                c = line[i:i + 1]
                if c == b"\\" and i + 1 < n and line[i + 1:i + 2] == b"'":
                    current += b"'"
                    i += 1
                elif c == b"'":
                    if i + 1 < n and not line[i + 1:i + 2].isspace():
                        return None
                    i += 1
                    break
                else:
                    current += c
            else:
                if i >= n or line[i:i + 1].isspace():
                    break
                c = line[i:i + 1]
                if c in (b'"', b"'"):
                    quote = c
                else:
                    current += c
            i += 1
        out.append(bytes(current))


def _is_hex(two: bytes) -> bool:
    return len(two) == 2 and all(c in b"0123456789abcdefABCDEF" for c in two)


def read_commands(path: str | os.PathLike) -> list[tuple[int, list[bytes]]]:
    """(line number, arguments) of each command of the file."""
    out = []
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            line = raw.rstrip(b"\r\n")
            if not line.strip() or line.lstrip().startswith(b"#"):
                continue
            argv = split_args(line)
            if argv is None:
                raise CommandFileError(os.fspath(path), number, "ERR Protocol error: unbalanced quotes in request")
            if argv:
                out.append((number, argv))
    return out


@dataclass
class Key:
    """A key of the keyspace: as read (`record`), or made by a command; its stream, once a
    command changed it."""

    record: dumpfile.KeyRecord | None
    type_name: str
    expire_at_ms: int | None
    stream: EditableStream | None = None


@dataclass
class Keyspace:
    """The databases after the commands: each key in the dump's order, new keys after."""

    dbs: dict[int, dict[bytes, Key]] = field(default_factory=dict)

    def db(self, number: int) -> dict[bytes, Key]:
        return self.dbs.setdefault(number, {})


@dataclass
class Session:
    """The commands' run: the keyspace, the selected database, the clock, the rules."""

    keys: Keyspace
    now_ms: int
    version: Version
    node_max_bytes: int
    node_max_entries: int
    db: int = 0

    def stream(self, key: bytes, create: bool) -> EditableStream | None:
        """The stream at `key` (made empty with `create`); WRONGTYPE for another type."""
        found = self.keys.db(self.db).get(key)
        if found is None:
            if not create:
                return None
            found = self.keys.db(self.db)[key] = Key(None, "stream", None, EditableStream())
        if found.type_name != "stream":
            raise CommandError(WRONGTYPE)
        if found.stream is None:
            record = found.record
            assert record is not None  # a key a command made has its stream
            model = record.value
            found.stream = EditableStream.from_value(record._body.value, loaded(model))
            found.stream.groups = groups_from_value(record._body.value, model.groups)
        return found.stream

    def run(self, argv: Sequence[bytes]) -> Any:
        name = argv[0].lower()
        if name in STREAM_COMMANDS:
            arity, handler = STREAM_COMMANDS[name]
            _check_arity(name, arity, argv)
            edit = StreamEdit(self.stream, self.now_ms, self.version, self.node_max_bytes, self.node_max_entries)
            return handler(edit, argv)
        if name in KEY_COMMANDS:
            arity, key_handler = KEY_COMMANDS[name]
            _check_arity(name, arity, argv)
            return key_handler(self, argv)
        raise CommandError(_unknown_command(argv, self.version))


def _unknown_command(argv: Sequence[bytes], version: Version) -> str:
    """processCommand's reply to a command it does not know (in backquotes before 7.0)."""
    if version < (7, 0):
        shown = "".join(f"`{a[:128].decode(errors='replace')}`, " for a in argv[1:])
        return f"ERR unknown command `{argv[0][:128].decode(errors='replace')}`, with args beginning with: {shown}"
    shown = "".join(f"'{a[:128].decode(errors='replace')}' " for a in argv[1:])
    return f"ERR unknown command '{argv[0][:128].decode(errors='replace')}', with args beginning with: {shown}"


def _check_arity(name: bytes, arity: int, argv: Sequence[bytes]) -> None:
    if (arity < 0 and len(argv) < -arity) or (arity > 0 and len(argv) != arity):
        raise CommandError(f"ERR wrong number of arguments for '{name.decode()}' command")


# -- key commands ----------------------------------------------------------------------------------

def cmd_del(session: Session, argv: Sequence[bytes]) -> int:
    db = session.keys.db(session.db)
    return sum(db.pop(key, None) is not None for key in argv[1:])


EXPIRE_FLAGS = {b"nx", b"xx", b"gt", b"lt"}


def cmd_expire(session: Session, argv: Sequence[bytes]) -> int:
    if session.version < (7, 0) and len(argv) != 3:  # the options came with 7.0
        raise CommandError("ERR wrong number of arguments for 'expire' command")
    flags = {a.lower() for a in argv[3:]}
    for a in argv[3:]:
        if a.lower() not in EXPIRE_FLAGS:
            raise CommandError(f"ERR Unsupported option {a.decode(errors='replace')}")
    if b"nx" in flags and flags & {b"xx", b"gt", b"lt"}:
        raise CommandError("ERR NX and XX, GT or LT options at the same time are not compatible")
    if {b"gt", b"lt"} <= flags:
        raise CommandError("ERR GT and LT options at the same time are not compatible")
    seconds = parse_int(argv[2])
    if not INT64_MIN // 1000 <= seconds <= INT64_MAX // 1000 or seconds * 1000 > INT64_MAX - session.now_ms:
        raise CommandError("ERR invalid expire time in 'expire' command")
    when = seconds * 1000 + session.now_ms
    db = session.keys.db(session.db)
    key = db.get(argv[1])
    if key is None:
        return 0
    current = key.expire_at_ms
    if (b"nx" in flags and current is not None or b"xx" in flags and current is None
            or b"gt" in flags and (current is None or when <= current)
            or b"lt" in flags and current is not None and when >= current):
        return 0
    if when <= session.now_ms:  # checkAlreadyExpired: the key goes now
        del db[argv[1]]
    else:
        key.expire_at_ms = when
    return 1


def cmd_persist(session: Session, argv: Sequence[bytes]) -> int:
    key = session.keys.db(session.db).get(argv[1])
    if key is None or key.expire_at_ms is None:
        return 0
    key.expire_at_ms = None
    return 1


def cmd_rename(session: Session, argv: Sequence[bytes]) -> bytes:
    db = session.keys.db(session.db)
    if argv[1] not in db:
        raise CommandError(NO_KEY)
    if argv[1] != argv[2]:
        moved = db.pop(argv[1])
        db.pop(argv[2], None)
        db[argv[2]] = moved
    return b"OK"


def cmd_select(session: Session, argv: Sequence[bytes]) -> bytes:
    try:
        number = parse_int(argv[1])
    except CommandError:
        raise CommandError("ERR value is not an integer or out of range") from None
    if not 0 <= number < DATABASES:
        raise CommandError("ERR DB index is out of range")
    session.db = number
    return b"OK"


KEY_COMMANDS = {b"del": (-2, cmd_del), b"expire": (-3, cmd_expire), b"persist": (2, cmd_persist),
                b"rename": (3, cmd_rename), b"select": (2, cmd_select)}


# -- the dump through the commands ----------------------------------------------------------------

def load(dump: dumpfile.Dump, now_ms: int) -> Keyspace:
    """The keys of the dump (read by the Python parsers) a server loading it at `now_ms` holds."""
    keys = Keyspace()
    for record in dump.keys():
        if record.expire_at_ms is None or record.expire_at_ms > now_ms:
            keys.db(record.db)[record.key] = Key(record, record.type_name, record.expire_at_ms)
    return keys


def apply(dump: dumpfile.Dump, path: str | os.PathLike, commands: list[tuple[int, list[bytes]]], now_ms: int,
          version: Version | None = None, node_max_bytes: int = 4096, node_max_entries: int = 100) -> Keyspace:
    """The keyspace of `dump` after `commands` (read from `path`, named by errors)."""
    if version is None:
        version = VALKEY_9 if dump.header.dialect == "valkey" else VERSION_OF_RDB.get(dump.header.version, (7, 2))
    session = Session(load(dump, now_ms), now_ms, version, node_max_bytes, node_max_entries)
    for line, argv in commands:
        try:
            session.run(argv)
        except CommandError as err:
            raise CommandFileError(os.fspath(path), line, err.message) from None
    return session.keys


def written(keys: Keyspace, rdb_version: int, valkey: bool) -> Iterator[dumpfile.KeyRecord]:
    """The keys to write, database by database: each as read, renamed, with its new expiry, or
    its stream as the commands left it (the stream type the dump's server writes)."""
    for db in sorted(keys.dbs):
        for name, key in keys.dbs[db].items():
            record = key.record
            if record is None:  # made by a command: a stream
                assert key.stream is not None
                code = stream_type(rdb_version, valkey)
                yield new_key_record(db, name, code, key.stream.to_value(code), rdb_version, valkey,
                                     expire_at_ms=key.expire_at_ms)
                continue
            if key.stream is None and name == record.key and key.expire_at_ms == record.expire_at_ms:
                yield record  # as read: rdbspec rewrite copies its bytes
                continue
            body = record._body
            if key.stream is not None or name != record.key:
                value = key.stream.to_value(record.rdb_type) if key.stream is not None else body.value
                body = KeyValue._new(type_code=body.type_code, is_valkey=body.is_valkey, rdb_version=body.rdb_version,
                                     key=body.key if name == record.key else rdb_string(name), value=value)
            yield dataclasses.replace(record, key=name, expire_at_ms=key.expire_at_ms, _body=body)
