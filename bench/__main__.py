"""`python -m bench [--quick] [--runs N] [--timeout S] [--profile]` (see bench/__init__.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import datasets as ds_mod
from .contenders import contenders
from .report import document
from .runner import Result, measure

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--quick", action="store_true",
                   help=f"{ds_mod.QUICK_ENTRIES:,} stream entries and {ds_mod.QUICK_KEYS:,} keys "
                        f"(default {ds_mod.FULL_ENTRIES:,} and {ds_mod.FULL_KEYS:,})")
    p.add_argument("--runs", type=int, default=3, help="runs per contender and file (default 3)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per run before it counts as a timeout")
    p.add_argument("--single-run-above", type=float, default=120.0,
                   help="do not repeat a contender whose first run took longer than this (default 120 s)")
    p.add_argument("--only", action="append", default=[],
                   help="run only contenders whose name contains this (repeatable)")
    p.add_argument("--file", action="append", default=[], help="run only on files whose name contains this")
    p.add_argument("--rebuild", action="store_true", help="rebuild the cached dumps")
    p.add_argument("--profile", action="store_true",
                   help="cProfile rdbspec's full decode of the stream dump instead of benchmarking")
    p.add_argument("--output", type=Path, default=RESULTS_DIR / "latest.md",
                   help="where to write the Markdown report (default bench/results/latest.md)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    files = ds_mod.datasets(args.quick, args.rebuild, log)
    if args.file:
        files = [d for d in files if any(f in d.name for f in args.file)]
    if not files:
        log("no redis-server available to write a dump")
        return 1
    if args.profile:
        from .profile import profile

        print(profile(files[0].path))
        return 0
    all_contenders, notes = contenders(log)
    if args.only:
        all_contenders = [c for c in all_contenders if any(o.lower() in c.name.lower() for o in args.only)]
    for d in files:  # warm the page cache so every contender reads from memory
        with open(d.path, "rb") as f:
            while f.read(1 << 24):
                pass
    results: list[Result] = []
    for c in all_contenders:
        for d in files:
            if c.argv is not None and c.argv(d) is None:
                results.append(Result(c.name, d, status="skipped", note=c.not_applicable))
                continue
            log(f"{c.name} on {d.name} ({c.description})")
            results.append(measure(c, d, args.runs, args.timeout, args.single_run_above, log))
    text = document(results, files, notes, argv, args.runs, args.timeout)
    print(text)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    log(f"written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
