"""`rdbspec pipeline INPUT... --out DIR`: reads dumps with the ``rdb`` data source on a
local (or given) Spark master, writes each table under DIR/<table>/ and prints a summary.

    rdbspec pipeline dumps/ other.rdb --out out/ --tables keys,stream_entries

Wiring: `register(subparsers)` adds the ``pipeline`` subcommand with
``set_defaults(standalone=run, run_pipeline=run)``; ``run(args) -> int`` is the whole command
(the CLI's ``main`` calls ``args.standalone(args)``). ``python -m rdbspec.spark.pipeline``
runs it on its own.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, TextIO

from ..errors import EXIT_CODES
from .source import TABLES

INTERNAL = "rdbspec: internal error"  # how errors.internal_error_line starts

DEFAULT_TABLES = ("files", "keys", "streams", "stream_entries", "stream_groups", "stream_pending",
                  "stream_consumers", "aux")
FORMATS = ("parquet", "orc", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="dump files, globs, directories (their *.rdb files) or comma-separated lists")
    p.add_argument("--out", required=True, help="output directory; each table goes to OUT/<table>/ (overwritten)")
    p.add_argument("--master", default="local[*]", help="Spark master (default: local[*])")
    p.add_argument("--tables", action="append",
                   help=f"tables to write, comma-separated or repeated (default: all): {', '.join(TABLES)}")
    p.add_argument("--format", default="parquet", choices=FORMATS, help="output format (default: parquet)")
    p.add_argument("--db", action="append", help="only these databases (comma-separated or repeated)")
    p.add_argument("--types", help="only these types, comma-separated (string, list, set, zset, hash, stream...)")
    p.add_argument("--key-pattern", help="only keys matching this glob (fnmatch syntax)")
    p.add_argument("--include-deleted", action="store_true", help="keep deleted stream entries")
    p.add_argument("--ignore-corrupt-files", action="store_true",
                   help="skip the unreadable rest of a corrupt file (reported in the files table) instead of failing")
    p.add_argument("--split-size", default="64m",
                   help="files over this size are split into byte ranges read by separate tasks (default: 64m)")
    p.add_argument("--no-summary", action="store_true", help="do not print the summary")


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Adds ``pipeline`` to an argparse subparsers object; the parsed args carry
    ``standalone`` (and ``run_pipeline``), a ``callable(args) -> int``."""
    p = subparsers.add_parser("pipeline", help="read many dumps with Spark and write tables (Parquet...)",
                              description=__doc__.split("\n\n")[0])
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


def build_session(master: str = "local[*]", app_name: str = "rdbspec") -> Any:
    """A SparkSession for the pipeline, with the ``rdb`` format registered."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from .source import register as register_source

    spark = (SparkSession.builder.master(master).appName(app_name)
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "8")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    register_source(spark)
    return spark


def reader(spark: Any, table: str, args: argparse.Namespace) -> Any:
    r = spark.read.format("rdb").option("table", table)
    if getattr(args, "db", None):
        r = r.option("db", ",".join(args.db))
    if getattr(args, "types", None):
        r = r.option("types", args.types)
    if getattr(args, "key_pattern", None):
        r = r.option("keyPattern", args.key_pattern)
    r = r.option("includeDeleted", str(bool(getattr(args, "include_deleted", False))).lower())
    r = r.option("ignoreCorruptFiles", str(bool(getattr(args, "ignore_corrupt_files", False))).lower())
    r = r.option("splitSize", getattr(args, "split_size", "64m"))
    return r.load(list(args.inputs))


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
            out.write(f"  {f['file']}: RDB {f['version']} {f['dialect']}, {f['keys']} keys, {status}\n")
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
                 .agg(F.sum("pel_count").alias("pending"), F.max("lag").alias("max_lag")))
            streams = streams.join(g, ["file", "db", "key"], "left")
        else:
            streams = streams.withColumn("pending", F.lit(None)).withColumn("max_lag", F.lit(None))
        count = streams.count()
        out.write(f"streams: {count}" + (f" (the {max_streams} longest)" if count > max_streams else "") + "\n")
        rows = streams.orderBy(F.desc("length"), "file", "db", "key").limit(max_streams).collect()
        if rows:
            out.write(f"  {'length':>10} {'groups':>6} {'pending':>8} {'max lag':>8}  key (db, file)\n")
        for r in rows:
            pending = r["pending"] if r["pending"] is not None else 0
            lag = r["max_lag"] if r["max_lag"] is not None else "-"
            out.write(f"  {r['length']:>10} {r['groups']:>6} {pending:>8} {lag!s:>8}  "
                      f"{_text(r['key'])} (db {r['db']}, {os.path.basename(r['file'])})\n")


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """The ``pipeline`` command: returns the exit code."""
    out = out or sys.stdout
    try:
        tables = _tables(args.tables)
    except ValueError as err:
        print(f"rdbspec pipeline: {err}", file=sys.stderr)
        return 2
    spark = build_session(args.master)
    try:
        written: dict[str, Any] = {}
        for table in tables:
            path = os.path.join(args.out, table)
            reader(spark, table, args).write.mode("overwrite").format(args.format).save(path)
            written[table] = spark.read.format(args.format).load(path)
        if not args.no_summary:
            summarize(spark, written, out)
        out.write(f"wrote {', '.join(tables)} to {args.out} ({args.format})\n")
        return 0
    except Exception as err:  # a Spark job failure: one line, not a JVM stack trace
        message = str(err).strip().splitlines()
        bug = next((line for line in message if INTERNAL in line), None)
        if bug is not None:  # a bug of ours in a task (source.InternalReadError): its own line and code
            print(bug[bug.index(INTERNAL):], file=sys.stderr)
            return EXIT_CODES["internal"]
        detail = next((line for line in reversed(message) if "CorruptFileError" in line), None)
        print(f"rdbspec pipeline: {detail or (message[0] if message else err.__class__.__name__)}",
              file=sys.stderr)
        return 3
    finally:
        spark.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rdbspec-pipeline", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
