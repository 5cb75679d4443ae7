"""`rdbspec restore FILE... --to URL`: the keys of dumps sent to a live server or cluster
(`rdbspec.restore.restore`), with a progress line on a terminal and a summary on stderr.

Exit codes: 0 every selected key restored or skipped as asked; 2 a bad command line (a URL that is
no server's); 6 the server cannot be reached or goes away (the line names the key reached and
the keys restored before); 7 a value the target cannot hold (named; `--allow-lossy` drops it);
8 the server refused a command (its reply and the key); 3, 4, 5 bad input as every command."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..errors import EXIT_CODES, RdbError, ServerError, UnwritableError, WriteError, exit_code, os_error_text
from ..read import location
from .common import (
    Progress,
    add_tls_options,
    error_line,
    key_pattern,
    positive_int,
    readable_twice,
    tls_of,
    type_name,
)

if TYPE_CHECKING:
    from ..net.connection import Tls
    from ..restore.restore import Restore

SIZE = re.compile(r"(\d+)\s*(b|kb?|mb?|gb?)?", re.IGNORECASE)
UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30}


def byte_size(text: str) -> int:
    """--max-payload: bytes, or with a unit as redis.conf writes sizes (1k, 512mb: powers of 1024)."""
    match = SIZE.fullmatch(text.strip())
    if match is None or int(match.group(1)) < 1:
        raise argparse.ArgumentTypeError(f"not a size (e.g. 1048576, 512kb, 1mb): {text!r}")
    return int(match.group(1)) * UNITS[(match.group(2) or "").lower()]


def db_pair(text: str) -> tuple[int, int]:
    """--db-map SRC:DST."""
    source, _, target = text.partition(":")
    if not (source.isdigit() and target.isdigit()):
        raise argparse.ArgumentTypeError(f"not SRC:DST (two database numbers): {text!r}")
    return int(source), int(target)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("restore", help="send the keys to a live server or cluster (RESTORE, pipelined)",
                       description="Sends every selected key of the dumps to the server at URL (in a cluster, to "
                                   "its slot's master) as RESTORE with the payload the server's DUMP writes, laid "
                                   "out for that server's version; a value too large for one command as the plain "
                                   "commands that build it.")
    p.add_argument("file", nargs="+", help="dump files (local paths, object-store URLs, or live servers as "
                                           "redis://… and rediss://…: their RDB taken as a replica takes it)")
    p.add_argument("--to", required=True, metavar="URL",
                   help="redis://[[user]:password@]host[:port][/db] or rediss://… (TLS); without a password in "
                        "the URL, REDISCLI_AUTH's; a /db puts every key in that database")
    p.add_argument("--db", type=int, action="append", help="only this database (repeatable)")
    p.add_argument("--type", action="append", type=type_name, metavar="TYPE",
                   help="only keys of this type (repeatable)")
    p.add_argument("--key", type=key_pattern, metavar="REGEX", help="only keys matching this regular expression")
    p.add_argument("--exclude-key", type=key_pattern, metavar="REGEX", help="leave out keys matching this")
    p.add_argument("--db-map", type=db_pair, action="append", metavar="SRC:DST",
                   help="the keys of database SRC go to DST (repeatable; a cluster has database 0 only)")
    existing = p.add_mutually_exclusive_group()
    existing.add_argument("--replace", action="store_true", help="replace a key that exists on the target")
    existing.add_argument("--skip-existing", action="store_true",
                          help="leave a key that exists on the target as it is (a rerun goes on where one stopped)")
    p.add_argument("--allow-lossy", action="store_true",
                   help="drop what the target cannot hold (counted in the summary) instead of refusing it")
    p.add_argument("--pipeline", type=positive_int, default=256, metavar="N",
                   help="commands sent ahead of their replies, a connection (default 256)")
    p.add_argument("--max-payload", type=byte_size, metavar="SIZE",
                   help="a larger value is sent as plain commands of at most SIZE bytes (and 64 MiB) each "
                        "(default: the server's proto-max-bulk-len, less than its client-query-buffer-limit)")
    p.add_argument("--now", type=int, metavar="MS", help="keys expired before this time (Unix ms) are skipped "
                                                          "(default: now)")
    add_tls_options(p, "a rediss:// target, and rediss:// FILEs")
    p.set_defaults(standalone=run_restore)


def run_restore(args: argparse.Namespace) -> int:
    from ..net.connection import Address
    from ..restore.restore import Existing, Options, Restore
    from ..rewrite import Selection

    try:
        tls = tls_of(args)
        address = Address.parse(args.to, tls)
    except ValueError as err:
        print(f"rdbspec restore: {err}", file=sys.stderr)
        return EXIT_CODES["usage"]
    existing = Existing.REPLACE if args.replace else Existing.SKIP if args.skip_existing else Existing.FAIL
    options = Options(Selection(frozenset(args.db or ()), frozenset(args.type or ()), args.key, args.exclude_key),
                      dict(args.db_map or ()), existing, args.allow_lossy, args.pipeline, args.max_payload, args.now)
    progress = _Progress()
    run: Restore | None = None
    file = args.file[0]
    try:
        with Restore(address, options, progress.update) as run:
            for file in _sources(args.file, tls):
                with readable_twice(file, None, tls) as path:
                    run.run(path)
    except (RdbError, OSError, ServerError, UnwritableError, WriteError) as err:
        progress.done()
        if isinstance(err, RdbError):
            where = error_line(file, err)
        else:
            where = f"rdbspec restore: {os_error_text(err) if isinstance(err, OSError) else err}"
        print(where + (_reached(run) if run is not None and run.summary.last_key is not None else ""),
              file=sys.stderr)
        return exit_code(err)
    progress.done()
    assert run is not None
    _print_summary(run)
    return EXIT_CODES["ok"]


def _sources(files: list[str], tls: Tls) -> Iterator[str]:
    """The dumps FILE... name: each, a `redis+cluster://` URL giving every master of its cluster."""
    from ..restore.cluster import servers_of

    for file in files:
        yield from servers_of(file, tls) if location.is_cluster(file) else (file,)


def _reached(run: Restore) -> str:
    summary = run.summary
    last = f"; the last key sent: {summary.last_key!r}" if summary.last_key is not None else ""
    return f" ({summary.restored} keys restored before{last}; --skip-existing goes on from there)"


class _Progress:
    """A progress line on a terminal: the share of the dump's bytes sent (a new line a dump)."""

    def __init__(self) -> None:
        self.line: Progress | None = None

    def update(self, offset: int, size: int) -> None:
        if self.line is None or self.line.total != max(size, 1):
            self.line = Progress(size)
        self.line.update(offset)

    def done(self) -> None:
        if self.line is not None:
            self.line.done()


def _print_summary(run: Restore) -> None:
    summary = run.summary
    chunked = f" ({summary.chunked} as plain commands)" if summary.chunked else ""
    print(f"rdbspec restore: restored {summary.restored} keys into {summary.target}{chunked}", file=sys.stderr)
    for reason, count in sorted(summary.skipped.items()):
        print(f"rdbspec restore: skipped {count} keys: {reason}", file=sys.stderr)
    for what, count in sorted(summary.dropped.items()):
        print(f"rdbspec restore: dropped {what}: {count}", file=sys.stderr)
