"""The Spark workload, run in its own process (JVM included):

    python -m bench.spark_workload FILE --master 'local[2]' --split-size 8388608

Builds the session as ``rdbspec pipeline`` does (``rdbspec.spark.launch.session``), reads
``spark.read.format("rdb").option("table", "stream_entries").option("splitSize", S).load(FILE)``
and forces every row through an aggregate over a real column (``count(*)`` and
``sum(length(id))``: the reader builds whole Arrow batches anyway, and the sum makes Spark read
the ``id`` column of every row rather than answer from a row count). The query runs twice in
the same session: the first ("cold") also pays the session's one-time costs (Python workers
started and their imports, the JVM's class loading and JIT warm-up), the second ("warm") is
the steady state a session reading many files sees.

Prints one JSON line: rows of each query (``entries``, ``warm_entries``: the runner checks
both), the partitions Spark planned, the seconds spent building the session (JVM start) and
running each query, timed in this process (the runner times the whole process as well), and
``RDBSPEC_BACKEND`` as a Python worker sees it (after the queries, untimed), which the runner
checks against the backend asked for.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row, SparkSession


def run(path: str, master: str, split_size: str) -> dict[str, object]:
    t0 = time.perf_counter()
    from pyspark.sql import functions as F  # noqa: N812

    from rdbspec.spark.launch import session as build_session

    spark = build_session(master, "rdbspec-bench")
    t1 = time.perf_counter()
    try:
        def query() -> tuple[DataFrame, Row, float]:
            start = time.perf_counter()
            df = (spark.read.format("rdb").option("table", "stream_entries").option("splitSize", split_size)
                  .load(path))
            row = df.select(F.count("*").alias("rows"), F.sum(F.length("id")).alias("id_chars")).collect()[0]
            return df, row, time.perf_counter() - start

        (_, cold, cold_s), (df, warm, warm_s) = query(), query()
        partitions = df.rdd.getNumPartitions()
        worker_backend = worker_env(spark, "RDBSPEC_BACKEND")
    finally:
        spark.stop()
    return {"entries": int(cold["rows"]), "warm_entries": int(warm["rows"]), "id_chars": int(cold["id_chars"] or 0),
            "partitions": partitions, "master": master, "split_size": split_size, "session_s": round(t1 - t0, 3),
            "cold_query_s": round(cold_s, 3), "warm_query_s": round(warm_s, 3), "worker_backend": worker_backend}


def worker_env(spark: SparkSession, name: str) -> str:
    """The variable as a Python worker sees it ("" when unset): the backend the data source ran on."""
    return spark.sparkContext.parallelize([0], 1).map(lambda _: os.environ.get(name, "")).first()


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.spark_workload")
    p.add_argument("file")
    p.add_argument("--master", default="local[1]")
    p.add_argument("--split-size", default=str(1 << 40), help="splitSize option: bytes, or with a k/m/g suffix")
    args = p.parse_args(argv)
    print(json.dumps(run(args.file, args.master, args.split_size)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
