"""`rdbspec dump --format resp` (issue 30): the dump as the commands that `redis-cli --pipe` or an AOF
loader replays, in RESP: each function library (FUNCTION LOAD), then the keys in file order, SELECT
before each database's, each key's value as plain commands (`rdbspec.restore.commands`) and its
expiry as PEXPIREAT, or with `--restore-payloads` each key as the RESTORE `rdbspec restore` sends
(`rdbspec.restore.restore`: the payload DUMP writes, laid out for the newest generation the server
loads, its expiry as ABSTTL, its LRU or LFU data as IDLETIME or FREQ).

The commands are written for a server (`--as-version`, by default the one that wrote the dump):
what it cannot hold is refused by name (exit 7), or dropped and counted with `--allow-lossy`.
A key already expired when the commands are written is left out, as a master loading the dump
leaves it out (redis src/rdb.c rdbLoadRioWithLoadingCtx: `expiretime < now` on a master), and so
is an empty list, set, sorted set or hash (rdbLoadObject skips it); one that expires between the
writing and the replay is deleted by its PEXPIREAT (a time past), as a server deletes it.

The output goes through one process (`--jobs` is not used). With `-o`, it is written beside OUT
and renamed at the end, so that a refusal leaves no commands to replay in part; on stdout, the
commands before it are written.

The commands come from `rdbspec.restore`, imported when the format is asked for: the other
formats start without the writers it loads."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import UnwritableError
from ..read import dumpfile
from ..server.versions import TARGETS, Server, server_of, target_of
from .common import positive_int, server_version

if TYPE_CHECKING:
    from ..write.convert import Losses

FORMATS = ("json", "resp")
DEFAULT_MAX_COMMAND_BYTES = 1 << 20  # rdbspec.restore.commands.MAX_COMMAND_BYTES, without importing it


class PayloadsAction(argparse.Action):
    """--restore-payloads: the dump is read by the Python parsers, whose objects the writers write
    (a value converted for the server: `run_dump_command`'s `parsers`)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None):
        super().__init__(option_strings, dest, nargs=0, default=False, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, True)
        namespace.parsers = "python"


def add_options(parser: argparse.ArgumentParser) -> None:
    """`dump`'s --format and the options of its RESP output."""
    parser.add_argument("--format", choices=FORMATS, default="json",
                        help="json: JSON Lines (the default); resp: the commands redis-cli --pipe replays")
    resp = parser.add_argument_group("--format resp")
    resp.add_argument("--as-version", type=server_version, metavar="SERVER",
                      help="the commands this server takes: X.Y for Redis, valkey-X.Y for Valkey (default: the one "
                           "that wrote the dump, from its AUX fields)")
    resp.add_argument("--max-command-bytes", type=positive_int, default=DEFAULT_MAX_COMMAND_BYTES, metavar="N",
                      help="cut a value into commands of at most N bytes where it can be cut (default 1 MiB)")
    resp.add_argument("--allow-lossy", action="store_true",
                      help="drop what the server cannot hold (listed at the end) instead of refusing it")
    resp.add_argument("--replace", action="store_true",
                      help="each key replaces one of its name (DEL first, RESTORE ... REPLACE), each function "
                           "library one of its name")
    resp.add_argument("--restore-payloads", action=PayloadsAction,
                      help="each key as RESTORE with the payload DUMP writes, laid out for the server, instead of "
                           "the commands that build it")


def write_resp(dump: dumpfile.Dump, args: argparse.Namespace, records: Iterator[dumpfile.KeyRecord],
               out: TextIO) -> None:
    """The commands of the dump's function libraries and of the keys of `records` (see the module doc)."""
    from ..net.resp import command
    from ..restore.commands import function_commands

    server = args.as_version or server_of(dump.aux, dump.header.version)
    encode, losses = (_payloads if args.restore_payloads else _commands)(dump, args, server)
    now_ms = int(time.time() * 1000)
    out.flush()  # RESP is bytes: written below the text layer
    write = out.buffer.write
    libraries = 0  # the function libraries written: the dump's come before its keys
    db = None
    expired = 0

    def write_libraries() -> None:
        nonlocal libraries
        for line in function_commands(dump.functions[libraries:], server, losses, args.replace):
            write(command(*line))
        libraries = len(dump.functions)

    for record in records:
        if len(dump.functions) > libraries:
            write_libraries()
        if record.expire_at_ms is not None and record.expire_at_ms < now_ms:
            expired += 1
            continue
        parts = encode(record)
        first = next(parts, None)
        if first is None:
            continue
        if record.db != db:
            write(command(b"SELECT", b"%d" % record.db))
            db = record.db
        write(first)
        for part in parts:
            write(part)
    write_libraries()
    if expired:
        print(f"rdbspec dump: left out {expired} keys already expired", file=sys.stderr)
    for what, count in sorted(losses.dropped.items()):
        print(f"rdbspec dump: dropped {what}: {count}", file=sys.stderr)


# a key's bytes to write, and what the target cannot hold (`rdbspec.write.convert.Losses`)
Encoder = Callable[[dumpfile.KeyRecord], Iterator[bytes | memoryview]]


def _commands(dump: dumpfile.Dump, args: argparse.Namespace, server: Server) -> tuple[Encoder, Losses]:
    """Each key as the plain commands that build it (`rdbspec.restore.commands`)."""
    from ..net.resp import command
    from ..restore.commands import key_commands
    from ..write.convert import Losses

    losses = Losses(str(server), args.allow_lossy)

    def encode(record: dumpfile.KeyRecord) -> Iterator[bytes]:
        for line in key_commands(record, args.max_command_bytes, server, losses, args.replace):
            yield command(*line)

    return encode, losses


def _payloads(dump: dumpfile.Dump, args: argparse.Namespace, server: Server) -> tuple[Encoder, Losses]:
    """Each key as the RESTORE `rdbspec restore` sends (`rdbspec.restore.restore`): its payload
    laid out for the newest generation the server loads, converted as `rewrite --target` does."""
    from ..restore import payload
    from ..restore.restore import converter_for, restore_command, unchanged
    from ..write.convert import Losses

    name = target_of(server.name, server.version)
    if name is None:
        raise UnwritableError(f"{server} loads none of the RDB versions written ({', '.join(sorted(TARGETS))})")
    target = TARGETS[name]
    converter = converter_for(dump.header, target, args.allow_lossy)
    copy_from = None if dump.header.dialect == "dragonfly" else dump.source.buffer

    def encode(record: dumpfile.KeyRecord) -> Iterator[bytes | memoryview]:
        if converter is not None and not converter.holds(record, note=True):
            return
        written = record if converter is None else converter.key(record)
        as_read = copy_from is not None and unchanged(record, written)
        laid = (payload.copied(record, copy_from, target.version) if as_read and copy_from is not None
                else payload.written(written, target.version, target.valkey))
        yield from restore_command(record, laid, args.replace)

    return encode, converter if converter is not None else Losses(str(server), args.allow_lossy)
