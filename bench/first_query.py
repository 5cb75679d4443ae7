"""The pipeline's first query and where its time goes, run in its own process (JVM included):

    python -m bench.first_query FILE [--master 'local[*]'] [--table files]

Builds the session as ``rdbspec pipeline`` does (``rdbspec.spark.launch.session``; Spark bound to
the loopback interface), then writes table T (default ``files``, the pipeline's first) of FILE as
Parquet, as the pipeline writes a table: the cold query, the session's first; then the same again,
the warm query (Spark reuses its Python workers and its compiled code). Each query is timed to its
end and to its first row (the first batch the source yields in the task's worker).

The cold query's time line comes from marks: the source is the ``rdb`` one with each of its steps
marked (`TimedSource`: ``schema()`` in the worker that makes the source, ``partitions()`` in the one
that plans the read, ``read()`` and its first batch in the task's), written to a file the workers
find through RDBSPEC_BENCH_MARKS; the process starts (the JVM, each PySpark daemon: one per kind
of Python worker, the workers it forks) are read from /proc. All times are seconds from the start
of this process (its /proc start time, before the interpreter ran).

Prints one JSON line: ``session_s`` (building the session: Java check, JVM, SparkContext),
``cold_query_s``, ``cold_first_row_s``, ``warm_query_s``, ``warm_first_row_s``, ``java_check_s``
(the check before the JVM starts, timed again after the queries), ``rows`` (of each query, which
must agree) and ``marks`` (name -> seconds from the process start, the cold query's).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
MARKS = "RDBSPEC_BENCH_MARKS"  # the file the workers append their marks to
DAEMON = "pyspark.daemon"


def now() -> float:
    """Seconds since boot: the clock of /proc's process start times."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def mark(name: str) -> None:
    """Appends `name` and the time to the marks file (any process of the run)."""
    with open(os.environ[MARKS], "a") as f:
        f.write(f"{now():.6f} {name}\n")


def _stat(pid: int | str) -> tuple[int, float] | None:
    """(parent, start in seconds since boot) of a process, None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), int(fields[19]) / CLOCK_TICKS


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def process_starts() -> dict[str, float]:
    """The start of the JVM this process started (of spark-submit, whose process becomes the JVM), of
    each PySpark daemon (named by the kind of worker it forks) and of the first worker it forked,
    from /proc (10 ms resolution)."""
    stats = {int(p): s for p in os.listdir("/proc") if p.isdigit() and (s := _stat(p)) is not None}
    me = os.getpid()

    def descends(pid: int) -> bool:
        while pid and pid != me:
            pid = stats[pid][0] if pid in stats else 0
        return pid == me

    out: dict[str, float] = {}
    daemons: dict[int, str] = {}
    for pid, (parent, start) in sorted(stats.items(), key=lambda item: item[1][1]):
        if pid == me or not descends(pid):
            continue
        command = _command(pid)
        if parent in daemons:  # a worker: forked, not exec'd (the daemon's command line)
            out.setdefault(f"{daemons[parent]} forked", start)
        elif DAEMON in command:
            kind = command.split(DAEMON, 1)[1].strip().rsplit(".", 1)[-1] or "worker"
            daemons[pid] = kind
            out.setdefault(f"daemon {kind} started", start)
        elif command.split(" ", 1)[0].endswith("java"):  # spark-submit, which execs the JVM in the end
            out.setdefault("spark-submit started", start)
    return out


def run(path: str, master: str, table: str) -> dict[str, Any]:
    started = _stat(os.getpid())
    assert started is not None
    origin = started[1]
    marks = tempfile.NamedTemporaryFile(prefix="rdbspec-marks-", suffix=".txt", delete=False)
    marks.close()
    os.environ[MARKS] = marks.name  # the JVM, and so the Python workers, inherit it
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    out_dir = tempfile.mkdtemp(prefix="rdbspec-first-query-")
    try:
        mark("interpreter up")
        from rdbspec.spark import launch, source

        class TimedReader(source.RdbReader):
            def partitions(self) -> list[source.RdbPartition]:
                mark(f"partitions() {self.opts.table}")
                return super().partitions()

            def read(self, partition: source.RdbPartition) -> Iterator[Any]:  # type: ignore[override]
                mark(f"read() {self.opts.table}")
                batches = super().read(partition)
                for batch in batches:
                    mark(f"first batch {self.opts.table}")
                    yield batch
                    break
                yield from batches

        class TimedSource(source.RdbDataSource):
            def schema(self) -> Any:
                mark("schema()")
                return super().schema()

            def reader(self, schema: Any) -> TimedReader:
                plain = super().reader(schema)
                return TimedReader(plain.files, plain.opts)

        mark("imports done")
        t0 = now()
        spark = launch.session(master, "rdbspec-bench-first-query")
        session_s = now() - t0
        mark("session ready")
        spark.dataSource.register(TimedSource)  # under the name "rdb", in place of the plain source

        def query(name: str) -> tuple[float, int]:
            mark(f"{name} query")
            start = now()
            spark.read.format("rdb").option("table", table).load([path]).write.mode("overwrite") \
                .format("parquet").save(os.path.join(out_dir, name))
            elapsed = now() - start
            mark(f"{name} done")
            return elapsed, spark.read.parquet(os.path.join(out_dir, name)).count()

        (cold_s, cold_rows), (warm_s, warm_rows) = query("cold"), query("warm")
        starts = process_starts()
        spark.stop()
        t0 = now()
        launch.require_java()
        java_check_s = now() - t0
        with open(marks.name) as f:
            timeline = [(float(at), name) for at, name in (line.rstrip("\n").split(" ", 1) for line in f)]
    finally:
        os.unlink(marks.name)
    first = {name: at for at, name in reversed(timeline)}  # the first time of each mark

    def first_row(name: str) -> float:
        after = [at for at, what in timeline if what == f"first batch {table}" and at >= first[f"{name} query"]]
        return min(after) - first[f"{name} query"]

    cold_end = first["warm query"]
    events = {name: at for name, at in first.items() if at <= cold_end and name != "warm query"}
    events.update((name, at) for name, at in starts.items() if at <= cold_end)
    return {"table": table, "master": master, "session_s": round(session_s, 3), "cold_query_s": round(cold_s, 3),
            "cold_first_row_s": round(first_row("cold"), 3), "warm_query_s": round(warm_s, 3),
            "warm_first_row_s": round(first_row("warm"), 3), "java_check_s": round(java_check_s, 4),
            "rows": cold_rows, "warm_rows": warm_rows,
            "marks": {name: round(at - origin, 3) for name, at in sorted(events.items(), key=lambda kv: kv[1])}}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.first_query")
    p.add_argument("file")
    p.add_argument("--master", default="local[*]", help="the pipeline's default")
    p.add_argument("--table", default="files", help="the table written (default: files, the pipeline's first)")
    args = p.parse_args(argv)
    print(json.dumps(run(args.file, args.master, args.table)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
