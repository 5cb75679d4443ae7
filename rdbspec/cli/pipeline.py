"""`rdbspec pipeline INPUT... --out DIR`: reads dumps with the ``rdb`` data source on a
local (or given) Spark master, writes each table under DIR/<table>/ and prints a summary.

    rdbspec pipeline dumps/ other.rdb --out out/ --tables keys,stream_entries

Wiring: `register(subparsers)` adds the ``pipeline`` subcommand with
``set_defaults(standalone=run, run_pipeline=run)``; ``run(args) -> int`` is the whole command
(the CLI's ``main`` calls ``args.standalone(args)``). ``python -m rdbspec.cli.pipeline``
runs it on its own.
"""

from __future__ import annotations

import argparse
import builtins
import json
import os
import re
import sys
import tempfile
import traceback
from types import ModuleType
from typing import IO, Any, TextIO

from .. import errors
from ..atomic import AtomicFile, remove_stale_in
from ..errors import EXIT_CODES, RdbspecError, exit_code, os_error_text
from ..read import dragonfly, location
from ..server.versions import TARGETS
from ..spark.options import DUMPS_DIR, TABLES, ReadOptions, resolve_paths
from .common import add_memory_options

INTERNAL = "rdbspec: internal error"  # how errors.internal_error_line starts
# what an executor's Python without rdbspec (or a package the reads need) says when a task starts
MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")
CLUSTER_RECIPE = ('give the executors a Python with rdbspec and pyarrow: a wheel installed on every node, or a '
                  'packed environment in spark.archives (README.md, "Running on a cluster")')

DEFAULT_TABLES = ("files", "keys", "streams", "stream_entries", "stream_groups", "stream_pending",
                  "stream_consumers", "aux")
FORMATS = ("parquet", "orc", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="dump files, globs, directories (their *.rdb files) or comma-separated lists")
    p.add_argument("--out", required=True, help="output directory; each table goes to OUT/<table>/ (overwritten)")
    p.add_argument("--master", default="local[*]", help="Spark master (default: local[*])")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark property for the session, repeated for more (e.g. "
                        "spark.archives=env.tar.gz#environment ships the executors' Python: README, "
                        "\"Running on a cluster\")")
    p.add_argument("--tables", action="append",
                   help=f"tables to write, comma-separated or repeated (default: all): {', '.join(TABLES)}")
    p.add_argument("--format", default="parquet", choices=FORMATS, help="output format (default: parquet)")
    p.add_argument("--db", action="append", help="only these databases (comma-separated or repeated)")
    p.add_argument("--types", help="only these types, comma-separated (string, list, set, zset, hash, stream...)")
    p.add_argument("--key-pattern", help="only keys matching this glob (fnmatch syntax)")
    p.add_argument("--include-deleted", action="store_true", help="keep deleted stream entries")
    p.add_argument("--ignore-corrupt-files", action="store_true",
                   help="skip the unreadable rest of a corrupt file (reported in the files table) instead of failing")
    p.add_argument("--dumps", action="store_true",
                   help=f"also write each input's selected keys (--db, --types, --key-pattern) as a dump under "
                        f"OUT/{DUMPS_DIR}/, one task an input")
    p.add_argument("--dumps-target", choices=sorted(TARGETS), metavar="NAME",
                   help="write those dumps for this server (needed for Dragonfly snapshots): "
                        + ", ".join(sorted(TARGETS)))
    p.add_argument("--dumps-allow-lossy", action="store_true",
                   help="drop what the target cannot hold from those dumps instead of failing the input")
    p.add_argument("--report", metavar="FILE",
                   help="also write the page of rdbspec report over all the inputs (FILE.json: its data as JSON)")
    add_memory_options(p, always=True)
    p.add_argument("--split-size", default="64m",
                   help="files over this size are split into byte ranges read by separate tasks (default: 64m)")
    p.add_argument("--no-summary", action="store_true", help="do not print the summary")
    # SUPPRESS: a global --debug given before the subcommand is not reset by this default
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="on failure, print the Python traceback and Spark's logs")


DESCRIPTION = ("Reads dumps with the rdb data source on a local (or given) Spark master, writes each table "
               "under OUT/<table>/ and prints a summary.")


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Adds ``pipeline`` to an argparse subparsers object; the parsed args carry
    ``standalone`` (and ``run_pipeline``), a ``callable(args) -> int``."""
    p = subparsers.add_parser("pipeline", help="read many dumps with Spark and write tables (Parquet...)",
                              description=DESCRIPTION)
    add_arguments(p)
    p.set_defaults(standalone=run, run_pipeline=run)
    return p


def _tables(requested: list[str] | None) -> list[str]:
    if not requested:
        return list(DEFAULT_TABLES)
    out: list[str] = []
    for item in requested:
        for t in item.split(","):
            t = t.strip().lower()
            if not t:
                continue
            if t not in TABLES:
                raise ValueError(f"unknown table {t!r}; tables: {', '.join(TABLES)}")
            if t not in out:
                out.append(t)
    return out


def read_options(args: argparse.Namespace) -> dict[str, str]:
    """The ``rdb`` reader options the command line asks for."""
    options = {
        "includeDeleted": str(bool(getattr(args, "include_deleted", False))).lower(),
        "ignoreCorruptFiles": str(bool(getattr(args, "ignore_corrupt_files", False))).lower(),
        "splitSize": getattr(args, "split_size", "64m"),
    }
    if getattr(args, "db", None):
        options["db"] = ",".join(args.db)
    if getattr(args, "types", None):
        options["types"] = args.types
    if getattr(args, "key_pattern", None):
        options["keyPattern"] = args.key_pattern
    if getattr(args, "as_version", None):
        options["memoryVersion"] = str(args.as_version)
    if getattr(args, "allocator", None):
        options["allocator"] = args.allocator
    return options


def reader(spark: Any, table: str, options: dict[str, str], inputs: list[str]) -> Any:
    """The DataFrame of one table of the inputs."""
    return spark.read.format("rdb").options(**options).option("table", table).load(inputs)


def _text(data: bytes | str | None) -> str:
    if data is None:
        return "-"
    if isinstance(data, str):  # read back from JSON (base64)
        return data
    data = bytes(data)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + data.hex()


def summarize(spark: Any, frames: dict[str, Any], out: TextIO, max_streams: int = 20) -> None:
    """Prints files, keys per type and, per stream, length, groups, pending and largest lag."""
    from pyspark.sql import functions as F  # noqa: N812

    if "files" in frames:
        files = frames["files"].orderBy("file").collect()
        bad = [f for f in files if f["error"]]
        out.write(f"files: {len(files)} ({len(files) - len(bad)} read whole, {len(bad)} corrupt)\n")
        for f in files:
            status = f"ERROR {f['error']}" if f["error"] else f"checksum {f['checksum']}"
            header = "header unreadable" if f["version"] is None else f"RDB {f['version']} {f['dialect']}"
            out.write(f"  {f['file']}: {header}, {f['keys']} keys, {status}\n")
    if "keys" in frames:
        rows = frames["keys"].groupBy("type").count().orderBy(F.desc("count"), "type").collect()
        total = sum(r["count"] for r in rows)
        out.write(f"keys: {total}\n")
        for r in rows:
            out.write(f"  {r['type']:<10} {r['count']}\n")
    if "streams" in frames:
        streams = frames["streams"]
        if "stream_groups" in frames:
            g = (frames["stream_groups"].groupBy("file", "db", "key")
                 .agg(F.sum("pel_count").alias("pending"), F.max("lag").alias("max_lag"),
                      F.max(F.col("lag").isNull()).alias("nil_lag")))
            streams = streams.join(g, ["file", "db", "key"], "left")
        else:
            streams = (streams.withColumn("pending", F.lit(None)).withColumn("max_lag", F.lit(None))
                       .withColumn("nil_lag", F.lit(None)))
        count = streams.count()
        out.write(f"streams: {count}" + (f" (the {max_streams} longest)" if count > max_streams else "") + "\n")
        rows = streams.orderBy(F.desc("length"), "file", "db", "key").limit(max_streams).collect()
        if rows:
            out.write(f"  {'length':>10} {'groups':>6} {'pending':>8} {'max lag':>8}  key (db, file)\n")
        for r in rows:
            pending = r["pending"] if r["pending"] is not None else 0
            lag = _max_lag(r["groups"], r["nil_lag"], r["max_lag"])
            out.write(f"  {r['length']:>10} {r['groups']:>6} {pending:>8} {lag!s:>8}  "
                      f"{_text(r['key'])} (db {r['db']}, {os.path.basename(r['file'])})\n")


def _max_lag(groups: int, any_nil: bool | None, largest: int | None) -> str:
    """The largest XINFO GROUPS lag of a stream: nil when the server answers nil for a group
    (its lag is unknown, so is the largest), "-" without groups (or the stream_groups table)."""
    if not groups or any_nil is None:
        return "-"
    return "nil" if any_nil else str(largest)


class PipelineError(RdbspecError):
    """A failure of the command: its one line for stderr (`line`) and the exit code."""

    def __init__(self, message: str, code: int, line: str | None = None):
        super().__init__(message)
        self.code = code
        self.line = line or f"rdbspec pipeline: {message}"


def _error_class_code(name: str) -> int | None:
    """The exit code of an exception class named in a Spark error's text (ChecksumError...)."""
    cls = getattr(errors, name, None) or getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, BaseException):
        return exit_code(cls.__new__(cls))
    return None


def job_failure(err: BaseException) -> PipelineError:
    """The one line and exit code of a failed Spark job: a `CorruptFileError` names the file,
    the error and its byte offset; a bug of ours met in a task (`source.InternalReadError`)
    brings its own line; an executor whose Python lacks a module the reads need (it fails
    before any of rdbspec runs, unpickling the reader) names it and the README's recipe, exit 69;
    anything else is a bug too."""
    lines = str(err).splitlines()
    bug = next((line for line in lines if INTERNAL in line), None)
    if bug is not None:
        bug = bug[bug.index(INTERNAL):]
        return PipelineError(bug, EXIT_CODES["internal"], line=bug)
    missing = next((found for found in map(MISSING_MODULE.search, lines) if found), None)
    if missing is not None:
        return PipelineError(f"an executor's Python has no module {missing.group(1)}: {CLUSTER_RECIPE}",
                             EXIT_CODES["unavailable"])
    for line in reversed(lines):
        found = re.search(r"CorruptFileError: (.*?): (\w+)(?: at byte \d+)?: ", line)
        if found:
            code = _error_class_code(found.group(2))
            return PipelineError(line[found.start(1):].strip(), EXIT_CODES["corrupt"] if code is None else code)
    first = next((line.strip() for line in lines if line.strip()), err.__class__.__name__)
    return PipelineError(f"internal error, please report: {first}", EXIT_CODES["internal"])


def _check_inputs(args: argparse.Namespace, options: dict[str, str]) -> list[str]:
    """What can be checked before Spark starts: options, the inputs, the output directory.
    Returns the input files."""
    try:
        parsed = ReadOptions.parse(options)
    except ValueError as err:
        raise PipelineError(str(err), EXIT_CODES["usage"]) from None
    location.configure(parsed.store)
    try:
        files = resolve_paths(list(args.inputs))
        os.makedirs(args.out, exist_ok=True)
    except OSError as err:
        raise PipelineError(os_error_text(err), EXIT_CODES["io"]) from None
    if args.dumps and args.dumps_target is None and any(dragonfly.is_dfs_name(f) for f in files):
        raise PipelineError("a Dragonfly snapshot is written for a Redis server: give --dumps-target",
                            EXIT_CODES["usage"])
    return files


def _write_tables(spark: Any, tables: list[str], args: argparse.Namespace, options: dict[str, str],
                  out: TextIO) -> dict[str, Any]:
    """Writes each table and returns the frames read back."""
    written: dict[str, Any] = {}
    for i, table in enumerate(tables):
        path = os.path.join(args.out, table)
        # a corrupt file is reported once, by the read of the first table
        quiet = {"warnCorruptFiles": str(i == 0).lower()}
        reader(spark, table, {**options, **quiet}, list(args.inputs)).write.mode("overwrite") \
            .format(args.format).save(path)
        written[table] = spark.read.format(args.format).load(path)
    if not args.no_summary:
        summarize(spark, written, out)
    out.write(f"wrote {', '.join(tables)} to {args.out} ({args.format})\n")
    return written


def _write_report(spark: Any, written: dict[str, Any], args: argparse.Namespace, options: dict[str, str],
                  out: TextIO) -> None:
    """`--report FILE`: the page of the tables written, and of the others it needs read for it;
    written beside FILE and renamed at the end (`atomic.AtomicFile`). A FILE ending in .json gets
    the page's data."""
    from ..report import html
    from ..report.data import ReportBuilder
    from ..spark import report as spark_report

    quiet = {**options, "warnCorruptFiles": "false"}  # a corrupt file was reported by the tables' reads
    frames = {table: written[table] if table in written else reader(spark, table, quiet, list(args.inputs))
              for table in spark_report.REPORT_TABLES}
    now_ms = spark_report.save_time_ms(frames["aux"])
    builder = spark_report.build(frames, ReportBuilder(now_ms=now_ms))
    result = builder.result()
    if args.report.endswith(".json"):
        page = json.dumps(result, ensure_ascii=False, indent=1) + "\n"
    else:
        page = html.render(result, title=f"rdbspec report: {', '.join(map(os.path.basename, args.inputs))}")
    try:
        with AtomicFile(args.report) as report_file:
            report_file.text().write(page)
    except OSError as err:  # a full disk...: the page's own line, not a Spark job's
        raise PipelineError(os_error_text(err), EXIT_CODES["io"]) from None
    out.write(f"wrote the report of {result['totals']['keys']} keys to {args.report}\n")


def _write_dumps(spark: Any, files: list[str], args: argparse.Namespace, options: dict[str, str],
                 out: TextIO) -> None:
    """`--dumps`: one task an input writes its dump (`dumps.write_dump`); a failed one is
    reported, and ends the command unless --ignore-corrupt-files."""
    from ..spark import dumps

    directory = os.path.join(args.out, DUMPS_DIR)
    remove_stale_in(directory, recursive=True)  # what a killed run's tasks left, whatever their inputs
    jobs = dumps.jobs(files, directory, options, args.dumps_target, args.dumps_allow_lossy)
    results = spark.sparkContext.parallelize(jobs, len(jobs)).map(dumps.write_dump).collect()
    failed = [r for r in results if r.error is not None]
    if failed and not args.ignore_corrupt_files:
        raise PipelineError(failed[0].error, failed[0].exit_code)
    for r in results:
        if r.error is None:
            out.write(f"dump: wrote {r.written} of {r.read} keys of {r.job.source} to {r.job.destination}\n")
            out.writelines(f"  dropped {what}: {count}\n" for what, count in r.dropped)
        else:
            out.write(f"dump: none for {r.error}\n")
    out.write(f"wrote {len(results) - len(failed)} dumps to {directory}"
              + (f" ({len(failed)} inputs failed)" if failed else "") + "\n")


SPARK_EXTRA = ("pyspark", "pyarrow", "pandas")  # the packages of the `spark` extra


def _launch() -> ModuleType:
    """`launch`, imported when the command runs rather than with the command line: it imports
    pyspark, the optional extra ``spark``, which costs every other command about 80 ms to load."""
    try:
        from ..spark import launch
    except ModuleNotFoundError as err:
        package = (err.name or "").split(".")[0]
        if package not in SPARK_EXTRA:
            raise
        raise PipelineError(f"needs the spark extra, {package} is not installed: pip install 'rdbspec[spark]'",
                            EXIT_CODES["unavailable"]) from None
    return launch


def spark_conf(pairs: list[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` options as a dict (the last of a key wins, as spark-submit's)."""
    conf: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise PipelineError(f"--conf {pair}: expected KEY=VALUE", EXIT_CODES["usage"])
        conf[key.strip()] = value
    return conf


def _start_spark(master: str, conf: dict[str, str], debug: bool, jvm_log: IO[bytes]) -> Any:
    """The session. Unless `debug`, the JVM it starts writes its stderr to `jvm_log`, not to the
    console: its own notes, and what the Python workers print (the JVM copies their stderr),
    e.g. the tracebacks of workers cut off when a failed job is cancelled. Raises
    PipelineError when pyspark or Java 17+ is missing."""
    launch = _launch()
    try:
        if debug:
            return launch.session(master, verbose=True, conf=conf)
        sys.stderr.flush()
        console = os.dup(2)
        os.dup2(jvm_log.fileno(), 2)  # the JVM inherits this descriptor when it is started
        try:
            return launch.session(master, conf=conf)
        finally:
            os.dup2(console, 2)
            os.close(console)
    except launch.JavaMissingError as err:
        raise PipelineError(str(err), EXIT_CODES["unavailable"]) from None


def _forward_warnings(jvm_log: IO[bytes]) -> None:
    """The data source's own lines ("rdbspec: skipping the rest of a corrupt file...") to stderr."""
    jvm_log.seek(0)
    for line in jvm_log.read().decode("utf-8", "replace").splitlines():
        if line.startswith("rdbspec: "):
            print(line, file=sys.stderr)


def _pipeline(args: argparse.Namespace, out: TextIO, debug: bool, jvm_log: IO[bytes]) -> None:
    try:
        tables = _tables(args.tables)
    except ValueError as err:
        raise PipelineError(str(err), EXIT_CODES["usage"]) from None
    conf = spark_conf(args.conf)
    options = read_options(args)
    # the store as the driver reaches it (--conf spark.hadoop.fs.s3a.*, the environment), given to
    # every read and dump job as options: an executor's environment may not hold it
    options.update(location.Store.from_settings(options, conf).as_options())
    files = _check_inputs(args, options)
    spark = _start_spark(args.master, conf, debug, jvm_log)
    try:
        written = _write_tables(spark, tables, args, options, out)
        if args.report:
            _write_report(spark, written, args, options, out)
        if args.dumps:
            _write_dumps(spark, files, args, options, out)
    except PipelineError:
        raise
    except Exception as err:  # a Spark job failure: one line, not a JVM stack trace
        if debug:
            traceback.print_exc()
        raise job_failure(err) from None
    finally:
        spark.stop()


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """The ``pipeline`` command: returns the exit code. Every failure ends with one line on
    stderr and the exit code of `errors.EXIT_CODES`; ``--debug`` adds the traceback."""
    debug = getattr(args, "debug", False)
    failure = None
    with tempfile.TemporaryFile() as jvm_log:
        try:
            _pipeline(args, out or sys.stdout, debug, jvm_log)
        except PipelineError as err:
            failure = err
        _forward_warnings(jvm_log)
    if failure is None:
        return EXIT_CODES["ok"]
    print(failure.line, file=sys.stderr)
    return failure.code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rdbspec-pipeline", description=DESCRIPTION)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
