"""`rdbspec dump --format resp` (issue 30): the dump as the commands that `redis-cli --pipe` or an
AOF loader replays, in RESP: each function library (FUNCTION LOAD), then the keys in file order,
SELECT before each database's, each key's value as plain commands (`rdbspec.restore.commands`)
and its expiry as PEXPIREAT.

A key already expired when the commands are written is left out, as a master loading the dump
leaves it out (redis src/rdb.c rdbLoadRioWithLoadingCtx: `expiretime < now` on a master), and
as an empty list, set, sorted set or hash (rdbLoadObject skips it); one that expires between the
writing and the replay is deleted by its PEXPIREAT (a time past), as a server deletes it.

The output goes through one process (`--jobs` is not used). With `-o`, it is written beside OUT
and renamed at the end, so that a refusal (exit 7: what the target cannot hold, named) leaves no
commands to replay in part; on stdout, the commands before it are written.

The commands come from `rdbspec.restore`, imported when the format is asked for: the other
formats start without the writers it loads."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from typing import Any, TextIO

from ..read import dumpfile
from ..server.versions import server_of
from .common import positive_int, server_version

FORMATS = ("json", "resp")
DEFAULT_MAX_COMMAND_BYTES = 1 << 20  # rdbspec.restore.commands.MAX_COMMAND_BYTES, without importing it


class FormatAction(argparse.Action):
    """--format: RESP output is written whole or not at all (`run_dump_command`'s `whole_output`)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.whole_output = values == "resp"


def add_options(parser: argparse.ArgumentParser) -> None:
    """`dump`'s --format and the options of its RESP output."""
    parser.add_argument("--format", choices=FORMATS, default="json", action=FormatAction,
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
                      help="each key replaces one of its name (DEL first), each function library one of its name")


def write_resp(dump: dumpfile.Dump, args: argparse.Namespace, records: Iterator[dumpfile.KeyRecord],
               out: TextIO) -> None:
    """The commands of the dump's function libraries and of the keys of `records` (see the module doc)."""
    from ..restore.commands import function_commands, key_commands
    from ..restore.resp import command
    from ..write.convert import Losses

    server = args.as_version or server_of(dump.aux, dump.header.version)
    losses = Losses(str(server), args.allow_lossy)
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
        lines = key_commands(record, args.max_command_bytes, server, losses, args.replace)
        first = next(lines, None)
        if first is None:
            continue
        if record.db != db:
            write(command(b"SELECT", b"%d" % record.db))
            db = record.db
        write(command(*first))
        for line in lines:
            write(command(*line))
    write_libraries()
    if expired:
        print(f"rdbspec dump: left out {expired} keys already expired", file=sys.stderr)
    for what, count in sorted(losses.dropped.items()):
        print(f"rdbspec dump: dropped {what}: {count}", file=sys.stderr)
