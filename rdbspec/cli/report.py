"""`rdbspec report FILE -o report.html`: the figures of `report.data` over the keys selected,
written as one HTML page (`report.html`) or, with --json, as JSON. Read with the command line's
`run_dump_command`, so bad input ends with one line and its exit code like `keys`; with --jobs,
the builders of the ranges are merged in file order (`ReportBuilder.merge`)."""

from __future__ import annotations

import argparse
import json
import os
import pickle
import time
from collections.abc import Iterator
from functools import partial
from typing import BinaryIO, TextIO

from .. import memory
from ..read import dumpfile, parallel
from ..report.data import ReportBuilder, from_dump, save_time_ms
from .common import Progress, add_memory_options, dump_command, each_range, key_filter, positive_int, separator


def cmd_report(dump: dumpfile.Dump, args: argparse.Namespace, out: TextIO) -> None:
    from ..report import html

    now_ms = args.now
    if now_ms is None:
        now_ms = save_time_ms(dump.aux) or int(time.time() * 1000)
    merged: list[ReportBuilder] = []  # the builder of the ranges read so far: a worker forked later sees it
    for _, part, spool in each_range(dump, args, out, partial(_gather, now_ms=now_ms, merged=merged)):
        if merged:
            merged[0].merge(part)
        else:
            merged.append(part)
        for key, elements, size in _spilled(spool):
            merged[0].add_prefixes(key, elements, size)
    result = merged[0].result()
    if args.json:
        out.write(json.dumps(result, ensure_ascii=False, indent=1) + "\n")
    else:
        out.write(html.render(result, title=f"rdbspec report: {os.path.basename(dump.source.name)}"))


def _gather(dump: dumpfile.Dump, args: argparse.Namespace, records: Iterator[dumpfile.KeyRecord] | None,
            piece: parallel.Piece | None, out: TextIO, now_ms: int, merged: list[ReportBuilder]) -> ReportBuilder:
    """The report's figures over the keys of `records` (all: None, with a progress line on a
    terminal). A worker's builder follows the prefix tree of the ranges merged when it was forked
    once that tree is full, else it spills to its spool the keys its own tree cannot hold."""
    builder = ReportBuilder(args.top, args.separator, args.depth, now_ms)
    spill = None
    if piece is not None and not (merged and builder.follow(merged[0])):
        spill = _Spill(out.buffer)
    builder.spill_prefixes(spill)
    progress = Progress(len(dump.source.buffer)) if records is None else None
    from_dump(dump, memory.model_for(dump, args.as_version, args.allocator), builder, keep=key_filter(args),
              progress=progress.update if progress is not None else None, server=args.as_version, records=records)
    if progress is not None:
        progress.done()
    if spill is not None:
        spill.flush()
        builder.spill_prefixes(None)
    return builder


class _Spill:
    """Where a worker's builder puts the prefix sums of the keys its tree cannot hold: pickled to
    the range's spool a list at a time, for the parent to add in order (`_spilled`)."""

    def __init__(self, out: BinaryIO):
        self.out = out
        self.rows: list[tuple[bytes, int, int]] = []

    def __call__(self, key: bytes, elements: int, memory: int) -> None:
        self.rows.append((key, elements, memory))
        if len(self.rows) >= 4096:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            pickle.dump(self.rows, self.out, pickle.HIGHEST_PROTOCOL)
            self.rows = []


def _spilled(spool: BinaryIO | None) -> Iterator[tuple[bytes, int, int]]:
    """The keys a worker spilled (`_Spill`), in order."""
    if spool is None:
        return
    spool.seek(0)
    while True:
        try:
            rows = pickle.load(spool)
        except EOFError:
            return
        yield from rows


def register(sub: argparse._SubParsersAction) -> None:
    p = dump_command(sub, "report", "one HTML page (or JSON) of where the memory goes: types, prefixes, "
                     "largest keys, expiry, streams", output_required=True)
    p.add_argument("--json", action="store_true", help="write the report's data as JSON instead of HTML")
    p.add_argument("--top", type=positive_int, default=50, metavar="N",
                   help="the N largest keys, streams and consumers (default 50)")
    p.add_argument("--separator", type=separator, default=b":", help="what splits a key into prefix parts (default :)")
    p.add_argument("--depth", type=positive_int, default=3, metavar="N", help="prefixes of up to N parts (default 3)")
    p.add_argument("--now", type=int, metavar="MS",
                   help="the clock for expiry and pending ages, Unix ms (default: the dump's save time, its ctime "
                        "AUX field, else now)")
    add_memory_options(p, always=True)
    p.set_defaults(run=cmd_report)
