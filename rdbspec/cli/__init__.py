"""The `rdbspec` command line: dump, info, keys, prefixes (and report, the stream commands, rewrite, split,
pipeline).

Bad input ends with one line on stderr (the problem, the byte offset, the key being read)
and the exit code of `errors.EXIT_CODES`; lines already written stay valid JSON Lines. Any other
exception is a bug: exit 70 and one line asking for a report (the traceback with `--debug`).

Each command reading a dump gathers what it needs from some keys (`_dump_lines`, `_key_rows`,
`_count_keys`, `_prefix_tree`) and adds up what the ranges gathered in file order: one range, the
whole file, in one process; with --jobs, one per byte range read by a worker (`each_range`).

The other commands' lines are in this package too, one module each: `common` (what every command
shares: argument types, the options of a command reading one dump, the progress line, the error
line), `report`, `streams` (the stream commands), `split` (a dump cut by cluster slots), `pipeline`
(the Spark pipeline). Imports:
anything below; what one command alone needs is imported when that command runs.
"""

from __future__ import annotations

import argparse
import csv
import gc
import heapq
import json
import os
import sys
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import BinaryIO, TextIO

from .. import memory
from ..atomic import AtomicFile, scratch_directory
from ..errors import (
    EXIT_CODES,
    InternalError,
    RdbError,
    ServerError,
    UnwritableError,
    WriteError,
    as_internal,
    exit_code,
    internal_error_line,
    print_warnings,
)
from ..jsonl import (
    entries_json,
    part_json,
    s,
    stream_line_ends,
    value_line_ends,
    write_joined,
    write_records,
    write_rows,
)
from ..read import backend, dumpfile, location, parallel, values
from ..read.streams import Stream
from ..read.values import STREAM_KINDS
from ..report.data import element_count
from ..report.prefixes import PrefixSums
from .common import (
    TYPES,
    AnyCaseSubParsers,
    Progress,
    add_cluster_option,
    add_file_arguments,
    add_memory_options,
    add_target_options,
    dump_command,
    each_range,
    error_line,
    key_filter,
    key_pattern,
    open_dump,
    parse_version,
    positive_int,
    readable_twice,
    separator,
    target_of_args,
    tls_of,
    type_name,
)
from .pipeline import register as register_pipeline
from .report import register as register_report
from .resp import add_options as add_resp_options
from .resp import write_resp
from .restore import register as register_restore
from .split import register as register_split
from .streams import register as register_stream_commands


def _selected(dump: dumpfile.Dump, args: argparse.Namespace,
              records: Iterator[dumpfile.KeyRecord] | None = None) -> Iterator[dumpfile.KeyRecord]:
    """The keys `--db`, `--type` and `--key` select: of the dump, showing progress on a terminal
    (the dump's own iterator when there is neither: no Python step of ours per key), or of
    `records` (a range's, read by a worker: the parent shows the progress)."""
    keep = key_filter(args)
    if records is not None:
        return records if keep is None else filter(keep, records)
    progress = Progress(len(dump.source.buffer))
    if keep is None and not progress.enabled:
        return dump.keys()
    return _filtered(dump, keep, progress)


def _filtered(dump: dumpfile.Dump, keep: Callable[[dumpfile.KeyRecord], bool] | None,
              progress: Progress) -> Iterator[dumpfile.KeyRecord]:
    for record in dump.keys():
        progress.update(record.offset)
        if keep is None or keep(record):
            yield record
    progress.done()


def cmd_dump(dump: dumpfile.Dump, args: argparse.Namespace, out: TextIO) -> None:
    if args.format == "resp":
        write_resp(dump, args, _selected(dump, args), out)
        return
    out.flush()  # JSON Lines are UTF-8 bytes: written below the text layer
    key: list[tuple[_LinePart, BinaryIO]] = []  # the part splits of a key read so far
    for piece, part, spool in each_range(dump, args, out, _dump_lines, streaming=True, parts=True):
        if piece is not None and spool is not None and part is not None:
            key.append((part, spool))
            if piece.last:
                _join_line(out.buffer, key)
                key = []


@dataclass(frozen=True)
class _LinePart:
    """What a part split of a key wrote of its line: the line's start (the first split's), from
    `elements_at` the elements of its part (`elements` bytes), then the line's end (the last's)."""

    elements_at: int
    elements: int


def _dump_lines(dump: dumpfile.Dump, args: argparse.Namespace, records: Iterator[dumpfile.KeyRecord] | None,
                piece: parallel.Piece | None, out: TextIO) -> _LinePart | None:
    """`dump`'s lines of the keys of `records` (all: None), or a part split's part of a key's
    line (a stream's entries of its nodes, another value's elements)."""
    out.flush()
    selected = _selected(dump, args, records)
    if piece is None or piece.split.part is None:
        write_records(out.buffer, selected, args.include_deleted)
        return None
    record = next(selected, None)
    if record is None:  # not selected
        return None
    write = out.buffer
    chunks: Iterator[bytes]
    if record.value_kind in STREAM_KINDS:
        head, tail = stream_line_ends(record, args.include_deleted) if piece.first or piece.last else (b"", b"")
        chunks = (entries_json(got.columns, args.include_deleted) for _, got in parallel.piece_nodes(record, piece))
    elif record.skipped_by_server if piece.first else record.packed() is None:
        return None  # empty: the server skips the key, and its line is left out (the first part warns)
    else:
        head, tail = value_line_ends(record) if piece.first or piece.last else (b"", b"")
        packed = _part_of(record, piece)
        chunks = (part_json(chunk, packed.shape) for chunk in packed.parts) if packed is not None else iter(())
    if piece.first:
        write.write(head)
    start = write.tell()
    write_joined(write, chunks)
    part = _LinePart(start, write.tell() - start)
    if piece.last:
        write.write(tail)
    return part


def _part_of(record: dumpfile.KeyRecord, piece: parallel.Piece) -> values.Packed | None:
    """The elements of a part split (`Split.part`) of `record`, a value of `values.CUTS` other
    than a stream, as they are iterated."""
    at, _, count = piece.split.part or (0, 0, 0)
    return record.packed(after_value=True, part=(at, count))


def _join_line(out: BinaryIO, parts: list[tuple[_LinePart, BinaryIO]]) -> None:
    """A key's line from what its part splits wrote, their elements joined by commas."""
    joined = False
    for part, spool in parts:
        parallel.copy(spool, out, 0, part.elements_at)
        if part.elements:
            if joined:
                out.write(b",")
            parallel.copy(spool, out, part.elements_at, part.elements_at + part.elements)
            joined = True
        parallel.copy(spool, out, part.elements_at + part.elements)


KEY_COLUMNS = ["db", "key", "type", "encoding", "size_in_file", "elements"]


def cmd_keys(dump: dumpfile.Dump, args: argparse.Namespace, out: TextIO) -> None:
    """One row a key; with --cluster, each node's keys (its --top) in turn, each row naming its node."""
    header = _key_header(args)
    if args.first:
        _write_header(out, header, args.csv)
    top: list[list] = []
    for _, rows, _ in each_range(dump, args, out, _key_rows, streaming=not args.top):
        top = _largest(top + rows, args) if args.top else top
    if args.top:
        _write_rows(out, header, iter(top), args.csv)


def _key_header(args: argparse.Namespace) -> list[str]:
    return ["node"] * (args.node is not None) + KEY_COLUMNS + ["memory"] * args.memory


def _key_rows(dump: dumpfile.Dump, args: argparse.Namespace, records: Iterator[dumpfile.KeyRecord] | None,
              piece: parallel.Piece | None, out: TextIO) -> list[list] | None:
    """`keys`' rows of the keys of `records` (all: None): with --top, the largest (returned),
    else all of them, written."""
    usage = [memory.model_for(dump, args.as_version, args.allocator).usage] if args.memory else []
    node = [args.node] if args.node is not None else []
    rows: Iterator[list] = ([*node, r.db, r.key, r.type_name, r.encoding, r.size, element_count(r),
                             *(f(r) for f in usage)] for r in _selected(dump, args, records))
    if args.top:
        return _largest(rows, args)
    _write_rows(out, _key_header(args), rows, args.csv)
    return None


def _largest(rows: Iterable[list], args: argparse.Namespace) -> list[list]:
    """The --top rows with the most memory (--memory; a key whose memory is not sized as 0) or bytes
    in the file, in file order among equals."""
    by = _key_header(args).index("memory" if args.memory else "size_in_file")
    return heapq.nsmallest(args.top, rows, key=lambda row: -(row[by] or 0))  # sorted()[:top], holding top rows


def cmd_prefixes(dump: dumpfile.Dump, args: argparse.Namespace, out: TextIO) -> None:
    """Keys, elements and memory by key prefix (`report.prefixes`), the most memory first. Past
    `prefixes.SPILL_PREFIXES` prefixes the sums go through sorted runs in a temporary directory
    (`atomic.scratch_directory`): the memory held stays the same whatever the number of prefixes."""
    with scratch_directory("prefixes") as directory:
        sums: PrefixSums | None = None
        for _, part, _ in each_range(dump, args, out, partial(_prefix_sums, directory)):
            if sums is None:
                sums = part
            else:
                sums.merge(part)
        assert sums is not None
        header = ["prefix", "level", "keys", "elements", "memory"]
        rows = ([row.prefix, row.level, row.keys, row.elements, row.memory] for row in sums.ranked(args.top))
        _write_table(out, header, rows, args.csv)


def _prefix_sums(directory: str, dump: dumpfile.Dump, args: argparse.Namespace,
                 records: Iterator[dumpfile.KeyRecord] | None, piece: parallel.Piece | None, out: TextIO) -> PrefixSums:
    """The prefix sums of the keys of `records` (all: None); a worker's (`piece`) big ones on disk."""
    model = memory.model_for(dump, args.as_version, args.allocator)
    sums = PrefixSums(args.separator, args.depth, directory)
    for record in _selected(dump, args, records):
        sums.add(record.key, element_count(record), model.usage(record) or 0)  # not sized: 0 bytes
    if piece is not None:
        sums.settle()
    return sums


def _write_table(out: TextIO, header: list[str], rows: Iterator[list], as_csv: bool) -> None:
    """Rows holding a key or a prefix: CSV (byte strings as `s` gives them, {"hex": ...} as its
    JSON) or JSON Lines."""
    _write_header(out, header, as_csv)
    _write_rows(out, header, rows, as_csv)


def _write_header(out: TextIO, header: list[str], as_csv: bool) -> None:
    """CSV's header row (JSON Lines name the columns in each row)."""
    if as_csv:
        csv.writer(out).writerow(header)


def _write_rows(out: TextIO, header: list[str], rows: Iterator[list], as_csv: bool) -> None:
    if as_csv:
        writer = csv.writer(out)
        for row in rows:
            texts = [s(v) if isinstance(v, bytes) else v for v in row]
            writer.writerow([json.dumps(v) if isinstance(v, dict) else v for v in texts])
    else:
        out.flush()  # JSON Lines are UTF-8 bytes: written below the text layer
        write_rows(out.buffer, header, rows)


def check(record: dumpfile.KeyRecord) -> None:
    """Decodes a key's value (a stream's every node) so the checks the server makes on load run:
    what it refuses raises, what it loads is counted in `dump.warnings`. A value that can be
    read without an object per element is walked so; a string stored as its bytes or as an
    integer has nothing to check beyond its length (checked as the record was read): it is not
    read."""
    stored = record.stored_string()
    if stored is not None and not stored.lzf:
        return
    packed = record.packed()
    if packed is not None:
        for _ in packed.parts:
            pass
        return
    value = record.value
    if isinstance(value, Stream):
        for _ in value.node_entries():
            pass


def cmd_info(dump: dumpfile.Dump, args: argparse.Namespace, out: TextIO) -> None:
    per_db: dict[int, Counter] = defaultdict(Counter)
    per_type: Counter = Counter()
    for _, (dbs, types), _ in each_range(dump, args, out, _count_keys, parts=True):
        for db, counts in dbs.items():
            per_db[db].update(counts)
        per_type.update(types)
    info = {
        "file": dump.source.name,
        "magic": dump.header.magic,
        "version": dump.header.version,
        "dialect": dump.header.dialect,
        "aux": [[s(k), s(v)] for k, v in dump.aux],
        "databases": {str(db): dict(counts) for db, counts in sorted(per_db.items())},
        "types": dict(sorted(per_type.items())),
        "functions": [s(f.code) for f in dump.functions],
        "module_aux": [{"module": m.name, "encoding_version": m.encoding_version, "when": m.when}
                       for m in dump.module_aux],
        "slot_info": dump.slot_info,
        "hash_templates": len(dump.hash_templates),
        "checksum": dump.checksum_status,
        "warnings": len(dump.warnings),
        "backend": dump.backend,
        **getattr(dump, "extra_info", {}),  # producer-specific facts (Dragonfly DFS: shard_count, shards)
    }
    if args.json:
        out.write(json.dumps(info, ensure_ascii=False, indent=2) + "\n")
        return
    out.write(f"{info['file']}: {info['magic']} (RDB {info['version']}, {info['dialect']}), "
              f"checksum {info['checksum']}\n")
    for key, value in info["aux"]:
        out.write(f"  aux {key} = {value}\n")
    for db, counts in info["databases"].items():
        out.write(f"  db {db}: {counts.get('keys', 0)} keys, {counts.get('expires', 0)} with expiry\n")
    for name, count in info["types"].items():
        out.write(f"  {name}: {count}\n")
    if info["functions"]:
        out.write(f"  functions: {len(info['functions'])} libraries\n")
    if info["hash_templates"]:
        out.write(f"  hash templates: {info['hash_templates']}\n")
    out.write(f"  warnings: {info['warnings']}\n")
    for key, value in getattr(dump, "extra_info", {}).items():
        out.write(f"  {key}: {json.dumps(value, ensure_ascii=False)}\n")


def _count_keys(dump: dumpfile.Dump, args: argparse.Namespace, records: Iterator[dumpfile.KeyRecord] | None,
                piece: parallel.Piece | None, out: TextIO) -> tuple[dict[int, Counter], Counter]:
    """The keys of `records` (all: None) per database and per type, each value checked (`check`;
    a part split's nodes or elements only, and the key counted with its first split)."""
    per_db: dict[int, Counter] = defaultdict(Counter)
    per_type: Counter = Counter()
    for record in _selected(dump, args, records):
        if piece is not None and piece.split.part is not None:
            if record.value_kind in STREAM_KINDS:
                for _ in parallel.piece_nodes(record, piece):
                    pass
            elif piece.first and record.skipped_by_server:  # empty: warned of (and counted) once
                pass
            else:
                packed = _part_of(record, piece)
                for _ in packed.parts if packed is not None else ():
                    pass
            if not piece.first:
                continue
        else:
            check(record)
        per_db[record.db]["keys"] += 1
        per_db[record.db]["expires"] += record.expire_at_ms is not None
        per_type[record.type_name] += 1
    return per_db, per_type


class VersionAction(argparse.Action):
    """`--version`: the installed version and the backend that runs, found only when asked for
    (importlib.metadata takes 15 ms to load, a fifth of the command line's start)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, help: str | None = None):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help=help or "show the version and the backend, and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        from importlib.metadata import version

        print(f"{parser.prog} {version('rdbspec')} ({backend.describe()})")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rdbspec", description="Read Redis, Valkey and Dragonfly RDB dumps.")
    parser.add_argument("--version", action=VersionAction)
    parser.add_argument("--debug", action="store_true",
                        help="print the traceback of an internal error (a bug in rdbspec, exit 70)")
    sub = parser.add_subparsers(dest="command", required=True, action=AnyCaseSubParsers,
                                help="subcommands, in any case (each has its own --help)")

    common = partial(dump_command, sub)

    dump = common("dump", "every key as JSON Lines")
    dump.add_argument("--include-deleted", action="store_true",
                      help="stream entries deleted but still stored (JSON Lines)")
    add_resp_options(dump)
    dump.set_defaults(run=cmd_dump, reads_once=True)
    add_cluster_option(dump)
    info = common("info", "header, AUX fields, counts, checksum")
    info.add_argument("--json", action="store_true", help="all of it as one JSON object (with --cluster: one a node)")
    add_cluster_option(info)
    info.set_defaults(run=cmd_info, reads_once=True)
    keys = common("keys", "one row per key: type, encoding, size in the file, elements")
    keys.add_argument("--csv", action="store_true", help="CSV with a header row instead of JSON Lines")
    keys.add_argument("--top", type=positive_int, metavar="N",
                      help="only the N largest keys (by memory with --memory, else by size in the file)")
    add_memory_options(keys)
    add_cluster_option(keys)
    keys.set_defaults(run=cmd_keys, reads_once=True)
    prefixes = common("prefixes", "keys, elements and memory summed by key prefix, the most memory first")
    prefixes.add_argument("--separator", type=separator, default=b":", help="what splits a key into parts (default :)")
    prefixes.add_argument("--depth", type=positive_int, default=2, metavar="N",
                          help="prefixes of up to N parts (default 2: a and a:b for the key a:b:c)")
    prefixes.add_argument("--top", type=positive_int, metavar="N", help="only the N prefixes with the most memory")
    prefixes.add_argument("--csv", action="store_true", help="CSV with a header row instead of JSON Lines")
    add_memory_options(prefixes, always=True)
    prefixes.set_defaults(run=cmd_prefixes, reads_once=True)
    register_report(sub)
    rewrite = sub.add_parser("rewrite", help="write the dump again, whole or only some databases, keys, types",
                             description=REWRITE_DESCRIPTION)
    add_file_arguments(rewrite)
    rewrite.add_argument("-o", "--output", required=True, help="the dump to write (written whole, or not at all)")
    rewrite.add_argument("--db", type=int, action="append", help="only this database (repeatable)")
    rewrite.add_argument("--type", action="append", type=type_name, metavar="TYPE",
                         help=f"only keys of this type (repeatable): {', '.join(TYPES)}")
    rewrite.add_argument("--key", type=key_pattern, metavar="REGEX",
                         help="only keys matching this regular expression (searched in the key's bytes)")
    rewrite.add_argument("--exclude-key", type=key_pattern, metavar="REGEX",
                         help="leave out keys matching this regular expression")
    add_target_options(rewrite)
    rewrite.add_argument("--commands", metavar="FILE",
                         help="apply these commands first, one a line as redis-cli reads them: XADD, XDEL, XTRIM, "
                              "XSETID, XGROUP, XREADGROUP, XACK, XCLAIM, XAUTOCLAIM, DEL, EXPIRE, PERSIST, RENAME, "
                              "SELECT")
    rewrite.add_argument("--now", type=int, metavar="MS", help="the commands' clock, in Unix ms (default: now)")
    rewrite.add_argument("--as-version", type=parse_version, metavar="X.Y",
                         help="apply the commands by the rules of this server version (default: the dump's)")
    rewrite.add_argument("--stream-node-max-bytes", type=int, default=4096, metavar="N",
                         help="the server's stream-node-max-bytes, where XADD opens a node (default 4096)")
    rewrite.add_argument("--stream-node-max-entries", type=int, default=100, metavar="N",
                         help="the server's stream-node-max-entries (default 100)")
    rewrite.set_defaults(standalone=run_rewrite)
    register_split(sub)
    register_stream_commands(sub)
    register_pipeline(sub)
    register_restore(sub)
    return parser


REWRITE_DESCRIPTION = ("Writes the dump again with the generated writers: byte for byte what the server wrote when "
                       "nothing is left out; with --db, --type, --key, --exclude-key only the keys selected, each "
                       "database's RESIZEDB counted again. The output is written beside its destination and "
                       "renamed at the end: a failure leaves none.")


def run_rewrite(args: argparse.Namespace) -> int:
    """`rewrite`: bad input, or what cannot be written, ends with one line and its exit code."""
    from .. import rewrite
    from ..rewrite import command_file
    from ..write import convert

    selection = rewrite.Selection(frozenset(args.db or ()), frozenset(args.type or ()), args.key, args.exclude_key)
    target = target_of_args(args)
    try:
        converter = convert.Converter.for_target(target, args.allow_lossy) if target is not None else None
        commands = None
        if args.commands is not None:
            now = args.now if args.now is not None else int(time.time() * 1000)
            commands = rewrite.Commands(args.commands, command_file.read_commands(args.commands), now, args.as_version,
                                        args.stream_node_max_bytes, args.stream_node_max_entries)
        with readable_twice(args.file, args.save, tls_of(args)) as path:
            found = rewrite.rewrite(path, args.output, selection, converter, commands)
    except (ValueError, command_file.CommandFileError) as err:  # the output would replace the input; a bad command
        print(f"rdbspec rewrite: {err}", file=sys.stderr)
        return EXIT_CODES["usage"]
    except (RdbError, OSError, UnwritableError, WriteError, ServerError) as err:
        print(error_line(args.file, err), file=sys.stderr)
        return exit_code(err)
    kept = sum(found.keys.values())
    print(f"rdbspec rewrite: wrote {kept} of {found.read} keys to {args.output}", file=sys.stderr)
    for what, count in sorted((converter.dropped if converter is not None else {}).items()):
        print(f"rdbspec rewrite: dropped {what}: {count}", file=sys.stderr)
    return EXIT_CODES["ok"]


# Objects the cyclic garbage collector passes over between two of its youngest collections (the
# default is 700): a command makes millions of short-lived objects a record, none in a cycle (the
# readers let go of theirs), and the default spent a tenth of `dump` on a file of streams walking them
GC_YOUNGEST = 100_000


def main(argv: list[str] | None = None) -> int:
    gc.set_threshold(GC_YOUNGEST, 50, 1000)
    parser = build_parser()
    args = parser.parse_args(argv)
    if isinstance(getattr(args, "file", None), str) and location.is_cluster(args.file):
        if not hasattr(args, "every_master"):
            parser.error(f"a {args.file.split('://', 1)[0]}:// URL reads every master of a cluster: info, keys, dump "
                         f"and restore do; {args.command} reads one server (redis://…)")
        args.every_master = True
    if getattr(args, "save", None) is not None and not location.is_server(args.file):
        parser.error(f"--save keeps the RDB of a live server (redis://…), and {args.file} is not one")
    if getattr(args, "every_master", False) and not location.is_server(args.file):
        parser.error(f"--cluster reads the masters of a live cluster (redis://…), and {args.file} is not one")
    if getattr(args, "every_master", False) and args.save is not None:
        parser.error("--save keeps one server's RDB: not with --cluster")
    try:
        backend.name()
    except backend.BackendError as err:  # RDBSPEC_BACKEND names none, or the native one is not built
        print(f"rdbspec: {err}", file=sys.stderr)
        unavailable = isinstance(err, backend.BackendUnavailableError)
        return EXIT_CODES["unavailable" if unavailable else "usage"]
    try:
        if getattr(args, "standalone", None) is not None:
            return args.standalone(args)
        return run_dump_command(args)
    except Exception as err:  # noqa: BLE001 - anything that is not about the input is a bug of ours
        if args.debug:
            traceback.print_exception(err)
        print(internal_error_line(err, getattr(args, "file", None)), file=sys.stderr)
        return exit_code(err)


def _sources(args: argparse.Namespace) -> list[str]:
    """What FILE names: itself, or with --cluster each master of the cluster it is a node of."""
    if not getattr(args, "every_master", False):
        return [args.file]
    from ..restore.cluster import servers_of

    return servers_of(args.file, tls_of(args))


def run_dump_command(args: argparse.Namespace) -> int:
    """`dump`, `info`, `keys`, `prefixes`, `report`: bad input ends with one line and its exit
    code. -o is written beside its name and renamed at the end (`atomic.AtomicFile`), so that a
    failure leaves the file as it was; on stdout, what came before the failure stays."""
    dump = None
    out = sys.stdout
    output = None
    source = args.file
    try:
        if args.output:
            output = AtomicFile(args.output)
            out = output.text()
        for number, source in enumerate(_sources(args)):
            args.node = location.shown(source) if getattr(args, "every_master", False) else None
            args.first = number == 0
            with open_dump(args, getattr(args, "parsers", None), source) as dump:
                args.run(dump, args, out)
            print_warnings(dump.warnings)
        out.flush()
        if output is not None:
            output.commit()
        return EXIT_CODES["ok"]
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): not an error; keep Python from complaining at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_CODES["ok"]
    except parallel.RangeError as failed:  # a worker's range (--jobs): it ends as a single process would
        failure = failed.failure
        if not failure.internal:
            print_warnings(dump.warnings if dump is not None else ())
        elif args.debug and failure.traceback:
            sys.stderr.write(failure.traceback)
        print(failure.line, file=sys.stderr)
        return failure.code
    except (RdbError, OSError, UnwritableError, WriteError, ServerError) as err:  # Unwritable: `dump --format resp`
        print_warnings(dump.warnings if dump is not None else ())
        print(error_line(source, err), file=sys.stderr)
        return exit_code(err)
    except InternalError:
        raise
    except Exception as err:  # noqa: BLE001 - a bug outside the decoding: named with the record being read
        raise as_internal(err, dump.current if dump is not None else None) from err
    finally:
        if output is not None:
            output.discard()  # unless committed
