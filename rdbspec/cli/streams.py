"""The stream commands on the `rdbspec` command line: `register()` adds xrange, xrevrange,
xread, xpending and xinfo; `run()` turns the arguments into the server's command line, reads
the dump and writes the reply."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence

from ..atomic import AtomicFile
from ..errors import RdbError, ServerError, exit_code, print_warnings
from .common import AnyCaseSubParsers, add_file_arguments, error_line, open_dump, parse_version

XREAD_WORDS = (b"count", b"streams")  # where XREAD's own syntax starts, in any case


def _argv(args: argparse.Namespace) -> list[bytes]:
    """The server command line equivalent to the CLI arguments (options, then the command's
    own trailing words as given, which the server's parsing reads in any case)."""
    b = os.fsencode
    name = args.stream_command
    count = [b"COUNT", b(args.count)] if getattr(args, "count", None) is not None else []
    if name in ("xrange", "xrevrange"):
        first, second = (args.end, args.start) if name == "xrevrange" else (args.start, args.end)
        return [name.upper().encode(), b(args.key), b(first), b(second), *count, *map(b, args.options)]
    if name == "xread":
        items = [b(x) for x in args.pairs]
        if items[0].lower() in XREAD_WORDS:  # the server's own syntax
            return [b"XREAD", *count, *items]
        keys, ids = items[0::2], items[1::2]
        if len(items) % 2:  # the server's "Unbalanced" error
            return [b"XREAD", *count, b"STREAMS", *items]
        return [b"XREAD", *count, b"STREAMS", *keys, *ids]
    if name == "xpending":
        idle = [b"IDLE", b(args.idle)] if args.idle is not None else []
        rng = [b(x) for x in args.range]
        return [b"XPENDING", b(args.key), b(args.group), *idle, *rng]
    extra = [b(args.group)] if name == "consumers" else []
    if name == "stream":
        extra = [*([b"FULL", *count] if args.full else []), *map(b, args.options)]
    return [b"XINFO", name.upper().encode(), b(args.key), *extra]


def _keys_of(argv: Sequence[bytes]) -> list[bytes]:
    """The keys a command line reads (XREAD: after STREAMS, as commands.cmd_xread finds it)."""
    if argv[0] == b"XREAD":
        i = 1
        while i < len(argv) and argv[i].lower() == b"count":
            i += 2
        rest = argv[i + 1:]
        return list(rest[:len(rest) // 2]) if len(rest) % 2 == 0 else list(rest)
    return [argv[2] if argv[0] == b"XINFO" else argv[1]]


def run(args: argparse.Namespace) -> int:
    """A stream subcommand: 0, 1 with the server's error on stderr, or the dump's exit code."""
    from ..stream_commands.commands import CommandError, dump_context, dump_lookup, execute
    from ..stream_commands.reply import render_json, render_text

    now_ms = args.now if args.now is not None else int(time.time() * 1000)
    argv = _argv(args)
    dump = None
    try:
        with open_dump(args) as dump:
            lookup = dump_lookup(dump, args.db, _keys_of(argv), now_ms)
            reply = execute(dump_context(dump, lookup, now_ms, args.as_version), argv)
    except CommandError as err:
        print_warnings(dump.warnings if dump is not None else ())
        print(f"(error) {err.message}", file=sys.stderr)
        return 1
    except (RdbError, OSError, ServerError) as err:
        print_warnings(dump.warnings if dump is not None else ())
        print(error_line(args.file, err), file=sys.stderr)
        return exit_code(err)
    print_warnings(dump.warnings)
    text = render_json(reply) + "\n" if args.json else render_text(reply)
    return _write(text, args.output)


def _write(text: str, output: str | None) -> int:
    """Writes the reply (to `output` whole or not at all: `atomic.AtomicFile`); a reader that went
    away (a closed pipe) is not an error."""
    try:
        if output:
            with AtomicFile(output) as out:
                out.text().write(text)
        else:
            sys.stdout.write(text)
            sys.stdout.flush()
    except BrokenPipeError:
        return 0
    except OSError as err:
        print(error_line(output or "<stdout>", err), file=sys.stderr)
        return exit_code(err)
    return 0


RADIX_NOTE = ("radix-tree-nodes is left out of XINFO STREAM: it counts the server's in-memory radix "
              "tree nodes, which the dump does not record.")
EPILOG = ("Replies follow the server generation that writes the stream's RDB type (15: 6.2, 19: 7.0, "
          "21: 7.2, 26: 8.6; any type in a VALKEY-magic dump: Valkey 9) unless --as-version. A server "
          "error (no such key or group, invalid ID...) is printed on stderr with exit code 1. " + RADIX_NOTE)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", type=int, default=0, help="database number (default 0)")
    p.add_argument("--json", action="store_true", help="the reply as JSON (server field names)")
    p.add_argument("--now", type=int, help="current time in Unix ms for idle times and expiry (default: now)")
    p.add_argument("--as-version", type=parse_version, help="answer as this server version X.Y")
    p.add_argument("--no-verify-checksum", action="store_true", help="do not fail on a wrong checksum")
    p.add_argument("-o", "--output", help="write here instead of stdout")


def _parser(sub: argparse._SubParsersAction, name: str, help_text: str, command: str,
            one_key: bool = True) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help_text, description=help_text, epilog=EPILOG)
    add_file_arguments(p)
    if one_key:
        p.add_argument("key", help="the stream's key")
    p.set_defaults(standalone=run, stream_command=command)
    return p


RANGE_OPTIONS = "the server's trailing words, in any case: COUNT n"
START_HELP = "the lowest ID: -, ms or ms-seq; (ID leaves that ID out"
END_HELP = "the highest ID: +, ms or ms-seq; (ID leaves that ID out"
COUNT_HELP = "at most N entries (the server's COUNT)"


def register(sub: argparse._SubParsersAction) -> None:
    """Adds xrange, xrevrange, xread, xpending and xinfo to the rdbspec command line."""
    p = _parser(sub, "xrange", "XRANGE key start end [COUNT n] over a dump", "xrange")
    p.add_argument("start", help=START_HELP), p.add_argument("end", help=END_HELP)
    p.add_argument("options", nargs="*", metavar="WORD", help=RANGE_OPTIONS)
    p.add_argument("--count", metavar="N", help=COUNT_HELP)
    _common(p)
    p = _parser(sub, "xrevrange", "XREVRANGE key end start [COUNT n] over a dump", "xrevrange")
    p.add_argument("end", help=END_HELP), p.add_argument("start", help=START_HELP)
    p.add_argument("options", nargs="*", metavar="WORD", help=RANGE_OPTIONS)
    p.add_argument("--count", metavar="N", help=COUNT_HELP)
    _common(p)
    p = _parser(sub, "xread", "XREAD [COUNT n] STREAMS key... id... over a dump", "xread", one_key=False)
    p.add_argument("pairs", nargs="+", metavar="KEY ID",
                   help="KEY ID pairs (entries after ID: ms, ms-seq, $ or +), or the server's own words, in any "
                        "case: [COUNT n] STREAMS key... id... (the form for a key named count or streams)")
    p.add_argument("--count", metavar="N", help="at most N entries per stream (the server's COUNT)")
    _common(p)
    p = _parser(sub, "xpending", "XPENDING key group [[IDLE ms] start end count [consumer]] over a dump",
                "xpending")
    p.add_argument("group", help="the consumer group")
    p.add_argument("range", nargs="*", metavar="START END COUNT [CONSUMER]",
                   help="the extended form (a range, at most COUNT rows, one consumer's), may start with IDLE ms")
    p.add_argument("--idle", metavar="MS", help="only entries idle at least this many ms")
    _common(p)
    _register_xinfo(sub)


def _register_xinfo(sub: argparse._SubParsersAction) -> None:
    xinfo = sub.add_parser("xinfo", help="XINFO STREAM | GROUPS | CONSUMERS over a dump", epilog=EPILOG)
    which = xinfo.add_subparsers(dest="xinfo_command", required=True, action=AnyCaseSubParsers,
                                 help="what to show, in any case")
    p = _parser(which, "stream", "XINFO STREAM key [FULL [COUNT n]]", "stream")
    p.add_argument("options", nargs="*", metavar="WORD",
                   help="the server's trailing words, in any case: FULL [COUNT n]")
    p.add_argument("--full", action="store_true", help="every entry, group, consumer and PEL row (the server's FULL)")
    p.add_argument("--count", metavar="N", help="with --full: entries and PEL rows shown (0: all; default 10)")
    _common(p)
    p = _parser(which, "groups", "XINFO GROUPS key", "groups")
    _common(p)
    p = _parser(which, "consumers", "XINFO CONSUMERS key group", "consumers")
    p.add_argument("group", help="the consumer group")
    _common(p)

