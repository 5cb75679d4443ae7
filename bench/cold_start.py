"""The pipeline's first query, cold and warm, and where the cold one's time goes (issue 29):
`python -m bench --cold-start-only`, and part of a plain `python -m bench`.

Each run is a whole process (bench.first_query): the session built as `rdbspec pipeline` builds it
(local[*]), then table `files` of the bundled sample dump (examples/sample.rdb, 60 kB: what costs
here is starting, not reading) written as Parquet, as the pipeline writes its first table; then the
same again in the same session. Cold = the session's first query, warm = the second (Spark's Python
workers and compiled code reused). Each is timed to its end and to its first row (the first batch
the source yields). The cold query's steps come from marks the source's methods write from Spark's
Python workers and from the start times of the JVM and of the PySpark daemons (/proc); a step's
figure is the median of its duration over the runs.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .contenders import spark_available
from .datasets import Dataset
from .report import AFTER_MIX, finished_stamp, seconds
from .runner import REPO, Contender, Result, invalidate, measure, python

Log = Callable[[str], None]
HEADING = "## Spark: cold start"
# Where the section goes in a report that has none: after the Spark sections
BEFORE = ("## Content mix", *AFTER_MIX)
SAMPLE = REPO / "examples" / "sample.rdb"
TABLE = "files"
# The cold path, step by step: (first mark, last mark, what happens between them, whose time it is)
STEPS = [
    ("interpreter up", "imports done", "the driver's imports: rdbspec's command line and Spark modules, "
     "pyspark", "rdbspec, pyspark"),
    ("imports done", "daemon lookup_data_sources started", "the Java check (its figure above), then "
     "spark-submit: the launcher's JVM, the driver's JVM and its SparkContext", "Spark"),
    ("daemon lookup_data_sources started", "session ready", "Spark's lookup of installed Python data sources "
     "(`pyspark_*` modules), in a Python worker of its own, at the first data source call: `register`",
     "Spark"),
    ("cold query", "daemon create_data_source started", "the JVM resolves the format", "Spark"),
    ("daemon create_data_source started", "schema()", "a Python worker starts (interpreter, pyspark), "
     "unpickles the source class (imports rdbspec.spark.source) and makes the source", "Spark (rdbspec: its "
     "import)"),
    ("schema()", "daemon plan_data_source_read started", "the JVM analyses and plans the write", "Spark"),
    ("daemon plan_data_source_read started", "partitions() files", "the planner's Python worker starts",
     "Spark (rdbspec: its import)"),
    ("partitions() files", "daemon worker started", "the planner's answer (`partitions()`: the split index "
     "pass of files over splitSize), then the JVM makes the job, its stage and task", "Spark (rdbspec: the "
     "plan)"),
    ("daemon worker started", "read() files", "the task's Python worker starts (pyspark.worker) and "
     "unpickles the reader", "Spark (rdbspec: its import)"),
    ("read() files", "first batch files", "the source reads the dump to its first Arrow batch (pyarrow's "
     "first conversion imports pandas, as in any process)", "rdbspec (pandas: pyarrow)"),
    ("first batch files", "cold done", "the rest of the task and the Parquet write and commit", "Spark"),
]
FIGURES = [("session start", "session_s"), ("cold query", "cold_query_s"),
           ("cold: first row", "cold_first_row_s"), ("warm query", "warm_query_s"),
           ("warm: first row", "warm_first_row_s"), ("Java check", "java_check_s")]


@dataclass
class ColdStartRun:
    result: Result | None = None
    notes: list[str] = field(default_factory=list)
    runs: int = 3
    argv: list[str] = field(default_factory=list)
    finished: str = ""


def sample_dataset() -> Dataset:
    """The bundled sample as the runner's dataset (no server wrote it here: it is in the repository)."""
    return Dataset("sample", SAMPLE, Path(), rdb_version=0, entries=0, keys=0, streams=0)


def contender() -> Contender:
    return Contender("spark first query", f"bench.first_query: table {TABLE} of the sample, as Parquet, twice",
                     lambda ds: [python(), "-m", "bench.first_query", str(ds.path), "--table", TABLE],
                     reports=True, group="cold-start", memory_capped=False)


def run(runs: int, timeout: float, log: Log, argv: list[str] | None = None) -> ColdStartRun:
    got = ColdStartRun(runs=runs, argv=argv or [])
    why = spark_available()
    if why is not None:
        got.notes.append(f"not run: {why}")
        return got
    c, ds = contender(), sample_dataset()
    log(f"{c.name} on {ds.name} ({c.description})")
    got.result = measure(c, ds, runs, timeout, float("inf"), log)
    invalidate(got.result, [f"the warm query wrote {e.get('warm_rows')} rows, the cold one {e.get('rows')}"
                            for e in got.result.extras if e.get("rows") != e.get("warm_rows")])
    got.finished = finished_stamp()
    return got


def _step(result: Result, first: str, last: str) -> tuple[float, float] | None:
    """(median, spread) of the seconds from mark `first` to mark `last` over the runs that have both."""
    spans = [float(marks[last]) - float(marks[first]) for e in result.extras
             if isinstance(marks := e.get("marks"), dict) and first in marks and last in marks]
    return (statistics.median(spans), max(spans) - min(spans)) if spans else None


def section(got: ColdStartRun) -> list[str]:
    """The report's section (Markdown lines)."""
    out = [HEADING, "", f"Run by `python -m bench {' '.join(got.argv)}`".rstrip() + f", finished {got.finished}; "
           "the machine and versions above may describe another run. " + " ".join(__doc__.split("\n\n")[1].split()),
           ""]
    r = got.result
    if r is None or r.status != "ok":
        return out + [f"* {n}" for n in got.notes] + ([f"* {r.status.upper()}: {r.note}"] if r else []) + [""]
    out += [f"{len(r.walls)} runs; medians (spread = max − min):", "", "| figure | median | spread |",
            "|---|---:|---:|"]
    for label, name in FIGURES:
        values = [float(e[name]) for e in r.extras if isinstance(e.get(name), (int, float))]
        spread = seconds(max(values) - min(values)) if len(values) > 1 else "—"
        out.append(f"| {label} | {seconds(statistics.median(values)) if values else '—'} | {spread} |")
    out += ["", "The cold path, from the start of the process:", "",
            "| step | median | spread | whose |", "|---|---:|---:|---|"]
    for first, last, what, whose in STEPS:
        found = _step(r, first, last)
        if found is not None:
            out.append(f"| {what} | {seconds(found[0])} | {seconds(found[1])} | {whose} |")
    notes = got.notes + ([r.note] if r.note else [])
    return out + [""] + [f"* {n}" for n in notes] + ([""] if notes else [])
