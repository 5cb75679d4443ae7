"""Pieces every `rdbspec` subcommand shares: argument types that refuse bad values as usage
errors (exit 2, argparse's message), subcommand names matched in any case, the options of the
commands that read one dump (file, --db, --type, --key, -o, --jobs; the memory model's), the
progress line, the one line that names the file an OSError is about, and `each_range`, which
reads a dump in one process or, with --jobs, in byte ranges read by worker processes."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from .. import memory
from ..errors import IntegrityError, RdbError, ServerError, as_internal, exit_code, internal_error_line, os_error_text
from ..jsonl import dumps, s
from ..read import dumpfile, location, parallel, source
from ..read.values import TYPE_NAMES
from ..server import versions
from ..server.versions import Version

if TYPE_CHECKING:  # the modules of live servers load ssl: only the commands that reach one import them
    from ..net.connection import Tls


class _AnyCaseNames(dict):
    """Subcommand name -> parser, looked up in any case (names are stored in lower case)."""

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(name.lower())

    def __getitem__(self, name: str) -> argparse.ArgumentParser:
        return super().__getitem__(name.lower())


class AnyCaseSubParsers(argparse._SubParsersAction):
    """Subcommands in any case (`xinfo STREAM`, `XRANGE`), as the server reads its command words
    (redis src/server.c lookupCommand: the command table is case-insensitive)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._name_parser_map = self.choices = _AnyCaseNames()


def key_pattern(text: str) -> re.Pattern[bytes]:
    """--key: a regular expression over the key's bytes."""
    try:
        return re.compile(os.fsencode(text))
    except re.error as err:
        raise argparse.ArgumentTypeError(f"not a regular expression: {text!r} ({err})") from None


TYPES = sorted(set(TYPE_NAMES.values()))


def type_name(text: str) -> str:
    """--type: one of the type names `dump` writes, in any case."""
    name = text.lower()
    if name not in TYPES:
        raise argparse.ArgumentTypeError(f"unknown type {text!r} (types: {', '.join(TYPES)})")
    return name


def positive_int(text: str) -> int:
    """--top: a count of 1 or more."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a positive integer: {text!r}")
    return value


def separator(text: str) -> bytes:
    """--separator of the prefix commands: the bytes that split a key into parts, not empty."""
    if not text:
        raise argparse.ArgumentTypeError("the separator is empty")
    return os.fsencode(text)


def parse_version(text: str) -> Version:
    """--as-version: a server version X.Y (`versions.parse_version`)."""
    try:
        return versions.parse_version(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def dump_command(sub: argparse._SubParsersAction, name: str, help_text: str,
                 output_required: bool = False) -> argparse.ArgumentParser:
    """A subcommand that reads one dump: FILE, the key filters (`key_filter`), --no-verify-checksum
    and -o; its `run(dump, args, out)` is called by the command line's run_dump_command."""
    p = sub.add_parser(name, help=help_text)
    add_file_arguments(p)
    p.add_argument("--db", type=int, action="append", help="only this database (repeatable)")
    p.add_argument("--type", action="append", type=type_name, metavar="TYPE",
                   help=f"only this type (repeatable): {', '.join(TYPES)}")
    p.add_argument("--key", type=key_pattern, metavar="REGEX",
                   help="only keys matching this regular expression (searched in the key's bytes)")
    p.add_argument("--no-verify-checksum", action="store_true", help="do not fail on a wrong checksum")
    p.add_argument("-o", "--output", required=output_required,
                   help="write here" if output_required else "write here instead of stdout")
    p.add_argument("--jobs", type=positive_int, default=parallel.usable_cores(), metavar="N",
                   help="decode the file in N processes, a range of it each, for the same output (default: the "
                        "cores this process may use); 1, stdin, a Dragonfly dump or a file under 8 MiB: one process")
    return p


FILE_HELP = ("dump file, - for stdin, or a live server as redis://[user:password@]host[:port] or rediss://… "
             "(its RDB taken as a replica takes it; the password also from REDISCLI_AUTH)")


def add_file_arguments(parser: argparse.ArgumentParser) -> None:
    """FILE, and --save and the TLS options for a FILE that is a live server."""
    parser.add_argument("file", help=FILE_HELP)
    parser.add_argument("--save", metavar="FILE", help="with a redis:// FILE: keep the RDB the server sent in FILE")
    add_tls_options(parser, "a rediss:// FILE")


def add_tls_options(parser: argparse.ArgumentParser, what: str) -> None:
    """The options of `rediss://` servers (`tls_of`), as redis-cli names them."""
    tls = parser.add_argument_group(f"TLS ({what})")
    tls.add_argument("--cacert", metavar="FILE", help="the CA certificate that signs the server's")
    tls.add_argument("--cert", metavar="FILE", help="a client certificate")
    tls.add_argument("--key-file", metavar="FILE", help="the client certificate's private key")
    tls.add_argument("--sni", metavar="NAME", help="the name the server's certificate holds (default: the host)")
    tls.add_argument("--insecure", action="store_true", help="do not check the server's certificate")


def tls_of(args: argparse.Namespace) -> Tls:
    """What `add_tls_options` asks for."""
    from ..net.connection import Tls  # loaded by the commands that reach a server only (ssl)

    return Tls(args.cacert, args.cert, args.key_file, args.sni, args.insecure)


def add_cluster_option(parser: argparse.ArgumentParser) -> None:
    """--cluster: FILE is a node of a cluster, whose every master is read."""
    parser.add_argument("--cluster", action="store_true", dest="every_master",
                        help="FILE is a node of a cluster (redis://…): read every master's RDB, one after another, "
                             "each row naming its node")


def open_dump(args: argparse.Namespace, parsers: str | None = None, path: str | None = None) -> dumpfile.Dump:
    """The dump at `path` (else FILE, `add_file_arguments`): a live server's RDB is kept in
    --save's file, with a progress line on a terminal while it comes, and parsed as it arrives by
    a command that reads each key once (`reads_once`: a key's value done with before the next)."""
    path = args.file if path is None else path
    if not location.is_server(path):
        return dumpfile.open(path, verify_checksum=not args.no_verify_checksum, parsers=parsers)
    return dumpfile.open(path, verify_checksum=not args.no_verify_checksum, parsers=parsers, save=args.save,
                         progress=receiving(path), tls=tls_of(args), once=getattr(args, "reads_once", False))


@contextlib.contextmanager
def readable_twice(path: str, save: str | None, tls: Tls) -> Iterator[str]:
    """A path that a command reading its dump more than once (rewrite, split, restore) may open
    again: a live server's RDB received first, into `save` or a temporary file removed at the end
    (the server is read once, and every read sees the same RDB); any other path as it is."""
    if not location.is_server(path):
        yield path
        return
    from ..net.connection import Address

    with tempfile.TemporaryDirectory(prefix="rdbspec-") as directory:
        into = save if save is not None else os.path.join(directory, "server.rdb")
        source.receive(Address.parse(path, tls), into, receiving(path), durable=save is not None)
        yield into


def receiving(url: str) -> Callable[[int, int | None], None] | None:
    """A progress line on stderr while a live server's RDB comes (None: stderr is no terminal),
    cleared when its last byte has come (told as `got == length`)."""
    if not sys.stderr.isatty():
        return None
    shown = location.shown(url)
    last = [0.0]

    def update(got: int, length: int | None) -> None:
        now = time.monotonic()
        if got == length:
            if last[0]:
                sys.stderr.write("\r\x1b[K")
                sys.stderr.flush()
        elif now - last[0] > 0.5:
            last[0] = now
            of = f" of {length}" if length is not None else ""
            sys.stderr.write(f"\r\x1b[Kreceived {got}{of} bytes from {shown}")
            sys.stderr.flush()
    return update


def key_filter(args: argparse.Namespace) -> Callable[[dumpfile.KeyRecord], bool] | None:
    """Whether a key is one `--db`, `--type` and `--key` select; None when they select all."""
    dbs, types, pattern = args.db, args.type, getattr(args, "key", None)
    if not (dbs or types or pattern is not None):
        return None
    return lambda r: ((not dbs or r.db in dbs) and (not types or r.type_name in types)
                      and (pattern is None or pattern.search(r.key) is not None))


def server_version(text: str) -> memory.Server:
    """--as-version of the memory commands: 7.0, redis-7.0 or valkey-9.1."""
    try:
        return memory.parse_server(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_memory_options(parser: argparse.ArgumentParser, always: bool = False) -> None:
    """--memory (unless always on), --as-version and --allocator."""
    if not always:
        parser.add_argument("--memory", action="store_true",
                            help="add the bytes the server uses for each key (MEMORY USAGE key SAMPLES 0)")
    parser.add_argument("--as-version", type=server_version, metavar="SERVER",
                        help="count memory as this server does: X.Y for Redis, valkey-X.Y for Valkey (default: the "
                             "one that wrote the dump, from its AUX fields)")
    parser.add_argument("--allocator", choices=sorted(memory.ALLOCATORS), default="jemalloc",
                        help="the server's allocator: jemalloc (the default build) or libc (MALLOC=libc builds)")


class Progress:
    """A progress line on stderr, only when stderr is a terminal."""

    def __init__(self, total: int):
        self.total = max(total, 1)
        self.enabled = sys.stderr.isatty()
        self.shown = 0.0

    def update(self, offset: int) -> None:
        now = time.monotonic()
        if self.enabled and now - self.shown > 0.5:
            self.shown = now
            sys.stderr.write(f"\r{100 * offset / self.total:5.1f}% of {self.total} bytes")
            sys.stderr.flush()

    def done(self) -> None:
        if self.enabled and self.shown:
            sys.stderr.write("\r" + " " * 40 + "\r")


def add_target_options(parser: argparse.ArgumentParser) -> None:
    """--target NAME or --rdb-version N, and --allow-lossy: the server generation a command
    writes for (`target_version`; `rdbspec.write.convert`)."""
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--target", choices=sorted(versions.TARGETS),
                        help="write for this server: its RDB version and value layouts")
    target.add_argument("--rdb-version", type=int, metavar="N",
                        help=f"write RDB version N ({versions.OLDEST} to {versions.NEWEST}) and its value layouts")
    parser.add_argument("--allow-lossy", action="store_true",
                        help="drop what the target cannot hold (listed at the end) instead of refusing it")


def target_of_args(args: argparse.Namespace) -> versions.Target | None:
    """The target `add_target_options` asks for; None: the input's own (no conversion)."""
    if args.target:
        return versions.TARGETS[args.target]
    return versions.Target(args.rdb_version) if args.rdb_version is not None else None


def error_line(path: str, err: BaseException) -> str:
    """`rdbspec: PATH: problem (key K)` for an error reading `path`, K the key whose record was
    being read (an IntegrityError names its key in its own message); an OSError names the file it
    is about (an output file, a shard of a set) with its own words, not `[Errno n]`."""
    key = None if isinstance(err, IntegrityError) else getattr(err, "key", None)
    where = f" (key {dumps(s(key))})" if key is not None else ""
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        return f"rdbspec: {os_error_text(err)}{where}"
    if isinstance(err, ServerError):  # a live server's refusal names its URL
        return f"rdbspec: {err}"
    return f"rdbspec: {location.shown(path)}: {err}{where}"


# (dump, args, records, piece, out) -> the result of reading those keys (`each_range`)
Gather = Callable[[dumpfile.Dump, argparse.Namespace, "Iterator[dumpfile.KeyRecord] | None", "parallel.Piece | None",
                   TextIO], Any]


def each_range(dump: dumpfile.Dump, args: argparse.Namespace, out: TextIO, gather: Gather, streaming: bool = False,
               parts: bool = False) -> Iterator[tuple[parallel.Piece | None, Any, BinaryIO | None]]:
    """Yields (piece, result, spool) of `gather(dump, args, records, piece, out)` over the keys of
    the dump, in file order. When one process reads the dump (`parallel.split_size`, --jobs 1),
    once: over all of them (`records` and `piece` None: the dump's keys, with a progress line on
    a terminal), writing to `out`. Else once per range of the file, in a worker process, with the
    range's records and writing to its spool (encoded as `out` is); the parent shows the progress.
    With `parts`, a big value that can be is read in part splits (`splits.cut`). With
    `streaming`, the spools hold output: each is copied to `out` in turn (spool None), except a
    part split's (a part of a key's line: for the caller to join). A range that fails
    raises `parallel.RangeError` after the ranges before it, and with `streaming` its own output
    up to the record it failed at (its worker writes whole records)."""
    size = parallel.split_size(args.file, dump, args.jobs)
    if size is None:
        yield None, gather(dump, args, None, None, out), None
        return
    progress = Progress(len(dump.source.buffer))

    def work(part: dumpfile.Dump, records: Iterator[dumpfile.KeyRecord], piece: parallel.Piece, spool: BinaryIO) -> Any:
        text = io.TextIOWrapper(spool, encoding=out.encoding, errors=out.errors)
        try:
            return gather(part, args, records, piece, text)
        finally:
            text.flush()
            text.detach()

    def fail(err: BaseException, part: dumpfile.Dump | None) -> parallel.Failure:
        return range_failure(args, err, part)

    out.flush()  # what it holds comes before the spools
    with contextlib.closing(parallel.ranges(dump, size, args.jobs, work, fail,
                                            parallel.value_parts(args.jobs) if parts else 0,
                                            progress.update if progress.enabled else None)) as done_ranges:
        for done in done_ranges:
            copied = streaming and done.piece.split.part is None
            if copied and (done.failure is None or done.whole):
                parallel.copy(done.spool, out.buffer)
            if done.failure is not None:
                raise parallel.RangeError(done.failure)
            yield done.piece, done.value, None if copied else done.spool
    progress.done()


def range_failure(args: argparse.Namespace, err: BaseException, dump: dumpfile.Dump | None) -> parallel.Failure:
    """How an exception that ended a range in a worker ends the command: as it would in a single
    process (bad input: `error_line` and its exit code; anything else a bug, exit 70)."""
    if isinstance(err, (RdbError, OSError)):
        return parallel.Failure(error_line(args.file, err), exit_code(err))
    internal = as_internal(err, dump.current if dump is not None else None)
    if internal is not err:
        internal.__cause__ = err
    return parallel.Failure(internal_error_line(internal, args.file), exit_code(internal), internal=True,
                            traceback="".join(traceback.format_exception(internal)) if args.debug else None)
