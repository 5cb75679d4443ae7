"""`rdbspec report FILE -o report.html`: the figures of `report.data` over the keys selected,
written as one HTML page (`report.html`) or, with --json, as JSON. Read with the command line's
`run_dump_command`, so bad input ends with one line and its exit code like `keys`."""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import TextIO

from .. import api, memory
from ..command_line import Progress, add_memory_options, dump_command, key_filter, positive_int, separator
from . import html
from .data import ReportBuilder, from_dump, save_time_ms


def cmd_report(dump: api.Dump, args: argparse.Namespace, out: TextIO) -> None:
    now_ms = args.now
    if now_ms is None:
        now_ms = save_time_ms(dump.aux) or int(time.time() * 1000)
    builder = ReportBuilder(args.top, args.separator, args.depth, now_ms)
    progress = Progress(len(dump.source.buffer))
    from_dump(dump, memory.model_for(dump, args.as_version, args.allocator), builder, keep=key_filter(args),
              progress=progress.update, server=args.as_version)
    progress.done()
    result = builder.result()
    if args.json:
        out.write(json.dumps(result, ensure_ascii=False, indent=1) + "\n")
    else:
        out.write(html.render(result, title=f"rdbspec report: {os.path.basename(dump.source.name)}"))


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
    p.set_defaults(run=cmd_report, whole_output=True)
