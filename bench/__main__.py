"""`python -m bench [--quick] [--large] [--only X] [--file F] [--runs N] [--timeout S] [--profile]
[--memory-only | --no-memory] [--mix-only | --no-mix] [--restore-only | --no-restore] [--live-only | --no-live]
[--spark-memory-only | --no-spark-memory] [--cold-start-only | --no-cold-start]`
(see bench/__init__.py)."""

from __future__ import annotations

import argparse
import compileall
import sys
from pathlib import Path

from tests.support.binaries import debian_binary

from . import cold_start, live, memory, mix, mix_content, restore, spark_memory
from . import datasets as ds_mod
from .contenders import contenders
from .report import AFTER_LIVE, AFTER_MIX, AFTER_RESTORE, document, merge_rows, merge_section
from .runner import Result, measure, warm_page_cache
from .targets import live_rows, restore_rows

RESULTS_DIR = Path(__file__).resolve().parent / "results"
ROOT = RESULTS_DIR.parent.parent
# rdbspec's Python modules, byte-compiled before any timing as installing a wheel does: an editable
# install under PYTHONDONTWRITEBYTECODE would otherwise time their compilation on every start
PACKAGES = ("rdbspec", "generated")
LARGE_TIMEOUT_FACTOR = 4  # the large file gets this many times --timeout per run


def total_ram() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 16 << 30


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--quick", action="store_true",
                   help=f"{ds_mod.QUICK_ENTRIES:,} stream entries and {ds_mod.QUICK_KEYS:,} keys "
                        f"(default {ds_mod.FULL_ENTRIES:,} and {ds_mod.FULL_KEYS:,})")
    p.add_argument("--large", action="store_true",
                   help=f"also the ~1 GB dump: {ds_mod.LARGE_ENTRIES:,} stream entries and {ds_mod.LARGE_KEYS:,} "
                        "keys, RDB 10 (built once, ~5 min, and cached); --file large runs on it alone")
    p.add_argument("--runs", type=int, default=3, help="runs per contender and file (default 3)")
    p.add_argument("--timeout", type=float, default=600.0,
                   help=f"seconds per run before it counts as a timeout (default 600; "
                        f"{LARGE_TIMEOUT_FACTOR}x on the large file)")
    p.add_argument("--max-memory", type=float, default=round(0.6 * total_ram() / 2**30),
                   help="GiB of data segment (RLIMIT_DATA) a contender may use before it fails as out of memory "
                        "(default 60%% of RAM: %(default)s; 0 = no cap; not applied to Spark's JVM)")
    p.add_argument("--single-run-above", type=float, default=120.0,
                   help="do not repeat a contender whose first run took longer than this (default 120 s)")
    p.add_argument("--only", action="append", default=[],
                   help="run only contenders whose name contains this (repeatable)")
    p.add_argument("--file", action="append", default=[], help="run only on files whose name contains this")
    p.add_argument("--rebuild", action="store_true", help="rebuild the cached dumps")
    p.add_argument("--profile", action="store_true",
                   help="cProfile rdbspec's full decode of the stream dump instead of benchmarking")
    p.add_argument("--memory-only", action="store_true",
                   help="only the memory accuracy comparison (bench/memory.py: rdbspec, rdbtools and HDT3213/rdb "
                        "against MEMORY USAGE on dumps written by the real servers; ~20 s)")
    p.add_argument("--no-memory", action="store_true",
                   help="leave the memory accuracy comparison out (it runs after the contenders on a plain run, "
                        "without --only or --file; --only memory is --memory-only)")
    p.add_argument("--mix-only", action="store_true",
                   help="only the content mix (bench/mix.py: rdbspec dump against librdb and HDT3213/rdb, and "
                        "each rdbspec command's peak RSS, on dumps of one kind of content each; --file picks "
                        "files of it), its section merged into the report file, the other sections kept (the "
                        "section is replaced whole: with --file it lists those files only)")
    p.add_argument("--no-mix", action="store_true",
                   help="leave the content mix out (it runs after the contenders on a plain run, without --only "
                        "or --file; --only mix is --mix-only)")
    p.add_argument("--restore-only", action="store_true",
                   help="only the restore into a live server (bench/restore.py: `rdbspec restore`, librdb's "
                        "`rdb-cli ... redis` with and without -r and, when `rdbspec dump` has --format resp, its "
                        "output through `redis-cli --pipe`, on each dump of the content mix into a local Redis "
                        "7.0; --file picks files of the mix), its section and the restore target's rows merged "
                        "into the report file, the other sections kept")
    p.add_argument("--no-restore", action="store_true",
                   help="leave the restore out (it runs after the content mix on a plain run, without --only or "
                        "--file; --only restore is --restore-only)")
    p.add_argument("--live-only", action="store_true",
                   help="only the read of a live server (bench/live.py: `rdbspec dump redis://…` against "
                        "`redis-cli --rdb F` then `rdbspec dump F`, each dump of the content mix and the stream dump "
                        "served by a local Redis 7.0, diskless and disk sync; --file picks the dumps), its section "
                        "and its targets' rows merged into the report file, the other sections kept")
    p.add_argument("--no-live", action="store_true",
                   help="leave the read of a live server out (it runs after the restore on a plain run, without "
                        "--only or --file; --only live is --live-only)")
    p.add_argument("--spark-memory-only", action="store_true",
                   help="only the Spark workers' memory (bench/spark_memory.py: the peak RSS of each Python worker "
                        "of a `keys` read of the mix's big hash and a `stream_entries` read of a 10M-entry stream, "
                        "and the rdb source's warm rows/s against the floor source's on local[1]; ~4 min), its "
                        "section merged into the report file, the other sections kept")
    p.add_argument("--no-spark-memory", action="store_true",
                   help="leave the Spark workers' memory out (it runs after the contenders on a plain run, without "
                        "--only or --file; --only spark-memory is --spark-memory-only)")
    p.add_argument("--cold-start-only", action="store_true",
                   help="only the pipeline's first query, cold and warm, and the cold one's steps "
                        "(bench/cold_start.py: table files of the bundled sample, --runs times; ~20 s a run), its "
                        "section merged into the report file, the other sections kept")
    p.add_argument("--no-cold-start", action="store_true",
                   help="leave the cold start out (it runs after the contenders on a plain run, without --only or "
                        "--file; --only cold-start is --cold-start-only)")
    p.add_argument("--output", type=Path,
                   help="where to write the Markdown report (default bench/results/latest.md; with --memory-only "
                        "bench/results/memory.md, leaving the whole run's report alone)")
    return p.parse_args(argv)


def memory_only(args: argparse.Namespace) -> bool:
    """--memory-only, or --only memory and no other --only."""
    return args.memory_only or bool(args.only) and all(o.lower() == "memory" for o in args.only)


def wants_memory(args: argparse.Namespace) -> bool:
    """The memory comparison also runs after the contenders on a plain run (no --only, --file or --no-memory)."""
    return not (args.no_memory or args.only or args.file)


def mix_only(args: argparse.Namespace) -> bool:
    """--mix-only, or --only mix and no other --only."""
    return args.mix_only or bool(args.only) and all(o.lower() == "mix" for o in args.only)


def wants_mix(args: argparse.Namespace) -> bool:
    """The content mix also runs after the contenders on a plain run (no --only, --file or --no-mix)."""
    return not (args.no_mix or args.only or args.file)


def restore_only(args: argparse.Namespace) -> bool:
    """--restore-only, or --only restore and no other --only."""
    return args.restore_only or bool(args.only) and all(o.lower() == "restore" for o in args.only)


def wants_restore(args: argparse.Namespace) -> bool:
    """The restore also runs after the content mix on a plain run (no --only, --file or --no-restore)."""
    return not (args.no_restore or args.only or args.file)


def live_only(args: argparse.Namespace) -> bool:
    """--live-only, or --only live and no other --only."""
    return args.live_only or bool(args.only) and all(o.lower() == "live" for o in args.only)


def wants_live(args: argparse.Namespace) -> bool:
    """The live read also runs after the restore on a plain run (no --only, --file or --no-live)."""
    return not (args.no_live or args.only or args.file)


def spark_memory_only(args: argparse.Namespace) -> bool:
    """--spark-memory-only, or --only spark-memory and no other --only."""
    return args.spark_memory_only or bool(args.only) and all(o.lower() == "spark-memory" for o in args.only)


def wants_spark_memory(args: argparse.Namespace) -> bool:
    """The Spark workers' memory also runs after the contenders on a plain run (no --only, --file or
    --no-spark-memory)."""
    return not (args.no_spark_memory or args.only or args.file)


def cold_start_only(args: argparse.Namespace) -> bool:
    """--cold-start-only, or --only cold-start and no other --only."""
    return args.cold_start_only or bool(args.only) and all(o.lower() == "cold-start" for o in args.only)


def wants_cold_start(args: argparse.Namespace) -> bool:
    """The cold start also runs after the contenders on a plain run (no --only, --file or --no-cold-start)."""
    return not (args.no_cold_start or args.only or args.file)


def run_cold_start(args: argparse.Namespace, argv: list[str]) -> list[str]:
    return cold_start.section(cold_start.run(args.runs, args.timeout, log, argv))


def run_spark_memory(args: argparse.Namespace, argv: list[str], spark_results: list[Result] | None) -> list[str]:
    """The Spark workers' memory (its dumps built when missing) and its report section; the rdb ÷ floor
    share from `spark_results` when given, else measured too."""
    got = spark_memory.run(args.quick, args.rebuild, args.runs, args.timeout, args.single_run_above, log,
                           spark_results, argv)
    return spark_memory.section(got)


def merge_into(output: Path, heading: str, section: list[str], before: tuple[str, ...], whole: str,
               target_rows: list[str] | None = None) -> None:
    """Writes `section` into the report file `output` in place of its own, the other sections kept, and
    `target_rows` into its Targets table in place of theirs; `whole` (a report of that section alone) when
    there is no such file."""
    old = output.read_text() if output.is_file() else None
    if old is None:
        write(whole, output)
        return
    write(merge_rows(merge_section(old, heading, section, before), "## Targets", target_rows or []), output)


def run_mix(args: argparse.Namespace, argv: list[str], memory_limit: int | None) -> list[str]:
    """The content mix's dumps (built when missing), its run and its report section."""
    files, notes = mix_content.datasets(args.quick, args.rebuild, log, names=args.file if mix_only(args) else None)
    got = mix.run(files, args.runs, args.timeout, args.single_run_above, log, memory_limit, argv)
    got.notes[:0] = notes
    return mix.section(got)


def run_restore(args: argparse.Namespace, argv: list[str], memory_limit: int | None) -> restore.RestoreRun:
    """The restore into a live server on the content mix's dumps (built when missing)."""
    files, notes = mix_content.datasets(args.quick, args.rebuild, log,
                                        names=args.file if restore_only(args) else None)
    got = restore.run(files, args.runs, args.timeout, args.single_run_above, log, memory_limit, argv)
    got.notes[:0] = notes
    return got


def run_live(args: argparse.Namespace, argv: list[str], memory_limit: int | None) -> live.LiveRun:
    """The read of a live server on the content mix's dumps and the stream dump (built when missing)."""
    names = args.file if live_only(args) else None
    files, notes = mix_content.datasets(args.quick, args.rebuild, log, names=names)
    binary = debian_binary()
    stream = ds_mod.stream_dump_name(10, ds_mod.stream_size(args.quick)[0])
    if binary is not None and (not names or any(n in stream for n in names)):
        files.append(ds_mod.stream_dump(binary, 10, args.quick, args.rebuild, log))
    got = live.run(files, args.runs, args.timeout, args.single_run_above, log, memory_limit, argv)
    got.notes[:0] = notes
    return got


def write(text: str, output: Path) -> None:
    print(text)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    log(f"written to {output}")


def byte_compile() -> None:
    for package in PACKAGES:
        if not compileall.compile_dir(ROOT / package, quiet=1, workers=0):
            raise SystemExit(f"python -m bench: {package}/ does not compile")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    byte_compile()
    memory_limit = int(args.max_memory * 2**30) or None
    if memory_only(args):
        rows, notes = memory.run(log)
        write(document([], [], [], argv, args.runs, args.timeout, memory=memory.section(rows, notes)),
              args.output or RESULTS_DIR / "memory.md")
        return 0
    if mix_only(args):  # the section replaces the one of the report file, the rest of which stays
        section = run_mix(args, argv, memory_limit)
        merge_into(args.output or RESULTS_DIR / "latest.md", mix.HEADING, section, AFTER_MIX,
                   document([], [], [], argv, args.runs, args.timeout, memory_limit, mix=section))
        return 0
    if restore_only(args):  # its section and its target's rows replace theirs; the rest of the file stays
        got = run_restore(args, argv, memory_limit)
        section = restore.section(got)
        merge_into(args.output or RESULTS_DIR / "latest.md", restore.HEADING, section, AFTER_RESTORE,
                   document([], [], [], argv, args.runs, args.timeout, memory_limit, restore=section,
                            section_results=got.all_results), restore_rows(got.all_results))
        return 0
    if live_only(args):  # likewise
        got_live = run_live(args, argv, memory_limit)
        section = live.section(got_live)
        merge_into(args.output or RESULTS_DIR / "latest.md", live.HEADING, section, AFTER_LIVE,
                   document([], [], [], argv, args.runs, args.timeout, memory_limit, live=section,
                            section_results=got_live.all_results), live_rows(got_live.all_results))
        return 0
    if spark_memory_only(args):
        section = run_spark_memory(args, argv, None)
        merge_into(args.output or RESULTS_DIR / "latest.md", spark_memory.HEADING, section, spark_memory.BEFORE,
                   document([], [], [], argv, args.runs, args.timeout, spark_memory=section))
        return 0
    if cold_start_only(args):
        section = run_cold_start(args, argv)
        merge_into(args.output or RESULTS_DIR / "latest.md", cold_start.HEADING, section, cold_start.BEFORE,
                   document([], [], [], argv, args.runs, args.timeout, cold_start=section))
        return 0
    files = ds_mod.datasets(args.quick, args.rebuild, log, large=args.large)
    if args.file:
        files = [d for d in files if any(f in d.name for f in args.file)]
    if not files:
        log("no dump to run on: no redis-server to write one" if not args.file else
            f"no dump matches --file {' '.join(args.file)} (the large one needs --large)")
        return 1
    if args.profile:
        from .profile import profile

        print(profile(files[0].path))
        return 0
    all_contenders, notes = contenders(log)
    if args.only:
        all_contenders = [c for c in all_contenders if any(o.lower() in c.name.lower() for o in args.only)]
    for d in files:
        warm_page_cache(d.path)
    results: list[Result] = []
    for c in all_contenders:
        for d in files:
            why = c.skip_reason(d)
            if why is not None:
                results.append(Result(c.name, d, status="skipped", note=why, group=c.group))
                continue
            log(f"{c.name} on {d.name} ({c.description})")
            timeout = args.timeout * (LARGE_TIMEOUT_FACTOR if d.large else 1)
            results.append(measure(c, d, args.runs, timeout, args.single_run_above, log, memory_limit))
    spark_lines = (run_spark_memory(args, argv, [r for r in results if r.group == "spark"])
                   if wants_spark_memory(args) else None)
    cold_lines = run_cold_start(args, argv) if wants_cold_start(args) else None
    mix_lines = run_mix(args, argv, memory_limit) if wants_mix(args) else None
    restored = run_restore(args, argv, memory_limit) if wants_restore(args) else None
    lived = run_live(args, argv, memory_limit) if wants_live(args) else None
    memory_lines = memory.section(*memory.run(log)) if wants_memory(args) else None
    write(document(results, files, notes, argv, args.runs, args.timeout, memory_limit, memory_lines, mix_lines,
                   spark_lines, cold_lines, restore.section(restored) if restored else None,
                   live.section(lived) if lived else None,
                   (restored.all_results if restored else []) + (lived.all_results if lived else [])),
          args.output or RESULTS_DIR / "latest.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
