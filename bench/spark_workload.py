"""The Spark workload, run in its own process (JVM included):

    python -m bench.spark_workload FILE --master 'local[2]' --split-size 8388608 [--floor ROWS]
    python -m bench.spark_workload FILE --table keys

Builds the session as ``rdbspec pipeline`` does (``rdbspec.spark.launch.session``), with Spark
bound to the loopback interface (``SPARK_LOCAL_IP=127.0.0.1`` unless set: it runs in local mode
only), reads ``spark.read.format("rdb").option("table", T).option("splitSize", S).load(FILE)``
(T = ``stream_entries`` unless ``--table`` says ``keys``; without ``--split-size`` the source's
default) and forces every row through an aggregate over a real column (``count(*)`` and
``sum(length(id))``, ``sum(length(key))`` for ``keys``: the reader builds whole Arrow batches
anyway, and the sum makes Spark read the column of every row rather than answer from a row
count). The query runs twice in the same session: the first ("cold") also pays the session's
one-time costs (Python workers started and their imports, the JVM's class loading and JIT
warm-up), the second ("warm") is the steady state a session reading many files sees.

With ``--floor`` the query reads the format ``rdb-floor`` instead: the same table, partitions
and number of rows, but each task yields one Arrow batch of real rows (the file's first
batch, read once by rdbspec when the task starts) over and over, so the Python side costs
next to nothing and what remains is Spark's own work per row: taking the batches from the
worker and turning them into rows. Its local[2] ÷ local[1] is the most any reader can gain
from a second core on this machine.

With ``--store s3`` the file is read from an S3 store: moto's server started on 127.0.0.1,
the file uploaded to it before the session starts (untimed), the reader reaching it through
the AWS SDKs' environment variables; the queries read its ``s3://`` URL (planned by one
sequential read on the driver, each task fetching its own byte ranges).

Prints one JSON line: the table, rows of each query (``entries`` and ``warm_entries`` for
``stream_entries``, which the runner checks; ``keys`` and ``warm_keys`` for ``keys``), the sum of
the column's lengths (``id_chars``, ``key_chars``), the partitions Spark planned, the seconds
spent building the session (JVM start) and running each query, timed in this process (the
runner times the whole process as well), the CPU seconds the JVM and the Python workers spent
in the warm query (``warm_jvm_cpu_s``, ``warm_worker_cpu_s``), and ``RDBSPEC_BACKEND`` as a
Python worker sees it (after the queries, untimed), which the runner checks against the backend
asked for.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from rdbspec.spark.options import ReadOptions
from rdbspec.spark.source import SCHEMAS, plan_splits, read_split
from tests.support.s3 import S3Server

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row

FLOOR_FORMAT = "rdb-floor"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# The tables the workload reads: the column its aggregate sums the lengths of, and what a row counts
TABLES = {"stream_entries": ("id", "entries"), "keys": ("key", "keys")}


class FloorReader(DataSourceReader):
    """The splits of `rdb` for the file, each yielding its rows as copies of one real batch."""

    def __init__(self, path: str, split_size: str, rows: int):
        self.path = path
        self.opts = ReadOptions.parse({"table": "stream_entries", "splitSize": split_size})
        self.rows = rows

    def partitions(self) -> list[InputPartition]:
        """One per split of the `rdb` read, each (first row, end row) of an even share of the rows."""
        count = len(plan_splits([self.path], self.opts))
        return [InputPartition((self.rows * i // count, self.rows * (i + 1) // count)) for i in range(count)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        first = next(read_split(plan_splits([self.path], self.opts)[0], self.opts))
        start, end = partition.value
        while start < end:
            batch = first if end - start >= first.num_rows else first.slice(0, end - start)
            start += batch.num_rows
            yield batch


class FloorSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FLOOR_FORMAT

    def schema(self) -> Any:
        return SCHEMAS["stream_entries"]

    def reader(self, schema: Any) -> FloorReader:
        return FloorReader(self.options["path"], self.options["splitSize"], int(self.options["rows"]))


def tree_cpu() -> tuple[float, float]:
    """CPU seconds so far of this process's descendants: (the JVM, the others: Spark's Python
    workers), from /proc."""
    parents: dict[int, int] = {}
    stats: dict[int, tuple[str, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                text = f.read()
        except OSError:
            continue
        name, rest = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
        parents[int(entry)] = int(rest[1])
        stats[int(entry)] = (name, (int(rest[11]) + int(rest[12])) / CLOCK_TICKS)  # utime + stime
    jvm = workers = 0.0
    for pid, (name, cpu) in stats.items():
        ancestor = parents.get(pid)
        while ancestor and ancestor != os.getpid():
            ancestor = parents.get(ancestor)
        if ancestor:
            if name == "java":
                jvm += cpu
            else:
                workers += cpu
    return jvm, workers


def run(path: str, master: str, split_size: str | None, floor_rows: int | None,
        table: str = "stream_entries", store: str | None = None) -> dict[str, object]:
    if store == "s3":
        with S3Server() as server:
            url = server.upload(Path(path), Path(path).name)
            os.environ.update(server.environment())  # the JVM and its Python workers inherit them
            return {**run(url, master, split_size, floor_rows, table), "store": store}
    t0 = time.perf_counter()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # the JVM inherits it: nothing listens outside
    from pyspark.sql import functions as F  # noqa: N812

    from rdbspec.spark.launch import session as build_session

    column, counts = TABLES[table]
    spark = build_session(master, "rdbspec-bench")
    t1 = time.perf_counter()
    try:
        if floor_rows is not None:
            spark.dataSource.register(FloorSource)

        def query() -> tuple[DataFrame, Row, float, tuple[float, float]]:
            before = tree_cpu()
            start = time.perf_counter()
            reader = spark.read.option("table", table)
            if split_size is not None:
                reader = reader.option("splitSize", split_size)
            if floor_rows is None:
                df = reader.format("rdb").load(path)
            else:
                df = reader.format(FLOOR_FORMAT).option("rows", str(floor_rows)).load(path)
            row = df.select(F.count("*").alias("rows"), F.sum(F.length(column)).alias("chars")).collect()[0]
            elapsed = time.perf_counter() - start
            after = tree_cpu()
            return df, row, elapsed, (after[0] - before[0], after[1] - before[1])

        (_, cold, cold_s, _), (df, warm, warm_s, (jvm_cpu, worker_cpu)) = query(), query()
        partitions = df.rdd.getNumPartitions()
        worker_backend = worker_env(spark, "RDBSPEC_BACKEND")
    finally:
        spark.stop()
    return {"table": table, counts: int(cold["rows"]), f"warm_{counts}": int(warm["rows"]),
            f"{column}_chars": int(cold["chars"] or 0),
            "partitions": partitions, "master": master, "split_size": split_size, "session_s": round(t1 - t0, 3),
            "cold_query_s": round(cold_s, 3), "warm_query_s": round(warm_s, 3),
            "warm_jvm_cpu_s": round(jvm_cpu, 2), "warm_worker_cpu_s": round(worker_cpu, 2),
            "worker_backend": worker_backend}


def worker_env(spark: Any, name: str) -> str:
    """The variable as a Python worker sees it ("" when unset): the backend the data source ran on."""
    return spark.sparkContext.parallelize([0], 1).map(lambda _: os.environ.get(name, "")).first()


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.spark_workload")
    p.add_argument("file")
    p.add_argument("--master", default="local[1]")
    p.add_argument("--split-size", help="splitSize option: bytes, or with a k/m/g suffix (default: not set, the "
                                        "source's default)")
    p.add_argument("--table", choices=list(TABLES), default="stream_entries")
    p.add_argument("--store", choices=["s3"],
                   help="read the file from an S3 store: moto's server on 127.0.0.1, the file uploaded first "
                        "(untimed: the queries' times are what the report compares)")
    p.add_argument("--floor", type=int, metavar="ROWS",
                   help="read ROWS rows of the rdb-floor source (copies of the file's first batch) instead")
    args = p.parse_args(argv)
    if args.floor is not None and (args.table != "stream_entries" or args.split_size is None):
        p.error("--floor reads stream_entries, with --split-size")
    print(json.dumps(run(args.file, args.master, args.split_size, args.floor, args.table, args.store)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
