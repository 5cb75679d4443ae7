"""The memory of Spark's Python workers, and the reader against the floor source (issue 26):
`python -m bench --spark-memory-only`, and part of a plain `python -m bench`.

Two reads, each a whole process (bench.spark_workload: the session built as `rdbspec pipeline` builds it,
the query run twice in it, cold then warm) on local[1] with the source's default options (splitSize
64 MiB, batchSize...), rdbspec on the native backend when it is built:

* table `keys` of the content mix's big hash (bench/mix_content.py: one hash of 3,000,000 fields);
* table `stream_entries` of a dump holding one stream of 10,000,000 entries and nothing else
  (bench/datasets.py's stream: three fields, explicit increasing IDs), cached as
  bench/cache/stream-10000k.rdb.

While each runs, the runner samples its process tree every 0.1 s (runner.TreeSampler). The JVM starts one
PySpark daemon (`python -m pyspark.daemon MODULE`) per kind of Python worker (`pyspark.worker` runs the
tasks, the source's `read`; `pyspark.sql.worker.plan_data_source_read` its `partitions()`, the split index
pass included; others look the source up and make its instance); the Python workers are the processes the
daemons fork. A worker's peak RSS is the kernel's VmHWM (so no peak between two samples is missed); the
largest worker's is judged against targets.SPARK_WORKER_MB.

Beside them, the warm stream_entries rows/s of the `rdb` source ÷ the `rdb-floor` source's on local[1]
(targets.spark_floor_share): from the Spark group's results on a plain run, measured here with
``--spark-memory-only`` (the Spark group's `local[1] split` runs of both, on the RDB 10 dump of the run's size).

``--quick`` reads the quick mix's big hash and a stream of a tenth of the entries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tests.support.binaries import DEBIAN_REDIS_SERVER, debian_binary

from . import datasets as ds_mod
from . import mix_content
from .contenders import (
    SPARK_FLOOR_1,
    labelled,
    section_backend,
    spark_available,
    spark_contenders,
    spark_floor_contenders,
)
from .datasets import Dataset
from .report import AFTER_MIX, finished_stamp, mb, seconds
from .runner import Contender, ProcessPeak, Result, invalidate, measure, python, warm_page_cache
from .targets import SPARK_FLOOR_SHARE, SPARK_SPLIT_1, SPARK_WORKER_MB, Measured, spark_floor_share, verdict

Log = Callable[[str], None]
HEADING = "## Spark: Python worker memory"
# Where the section goes in a report that has none: after the Spark group's section
BEFORE = ("## Content mix", *AFTER_MIX)
STREAM_ENTRIES = 10_000_000
MASTER = "local[1]"
DAEMON = "-m pyspark.daemon"


@dataclass(frozen=True)
class Worker:
    """A process a PySpark daemon forked, with the module that daemon runs its workers with."""

    kind: str  # "pyspark.worker", "pyspark.sql.worker.plan_data_source_read"...
    peak: ProcessPeak

    @property
    def short(self) -> str:
        return self.kind.rsplit(".", 1)[-1]


def workers(processes: list[ProcessPeak]) -> list[Worker]:
    """The Python workers among one run's processes: those whose parent is a PySpark daemon."""
    by_pid = {p.pid: p for p in processes}
    out = []
    for p in processes:
        parent = by_pid.get(p.parent)
        if parent is not None and DAEMON in parent.command:
            out.append(Worker(parent.command.split(DAEMON, 1)[1].strip() or "pyspark.worker", p))
    return out


def _jvm_and_driver(processes: list[ProcessPeak]) -> tuple[ProcessPeak | None, ProcessPeak | None]:
    """The session's JVM (the daemons' parent) and the driver (the JVM's parent) of one run."""
    by_pid = {p.pid: p for p in processes}
    jvm = next((by_pid[p.parent] for p in processes if DAEMON in p.command and p.parent in by_pid
                and DAEMON not in by_pid[p.parent].command), None)
    return jvm, by_pid.get(jvm.parent) if jvm is not None else None


@dataclass
class Read:
    """One read measured: its table, file and the runner's result (each run's processes in it)."""

    table: str
    dataset: Dataset
    result: Result

    def workers(self) -> list[Worker]:
        return [w for run in self.result.processes for w in workers(run)]

    def largest(self) -> Worker | None:
        return max(self.workers(), key=lambda w: w.peak.hwm_kb, default=None)

    @property
    def rows(self) -> int:
        return self.dataset.entries if self.table == "stream_entries" else self.dataset.keys + self.dataset.streams


@dataclass
class SparkMemoryRun:
    reads: list[Read] = field(default_factory=list)
    floor: dict[str, list[Measured]] = field(default_factory=dict)  # backend -> rdb ÷ floor per file
    floor_results: list[Result] = field(default_factory=list)  # the runs measured here for it (--spark-memory-only)
    notes: list[str] = field(default_factory=list)
    backend: str = "native"
    runs: int = 3
    argv: list[str] = field(default_factory=list)
    finished: str = ""


def stream_dataset(quick: bool, rebuild: bool, log: Log) -> Dataset | None:
    """bench/cache/stream-<N>k.rdb: one stream of STREAM_ENTRIES entries (a tenth with `quick`), written by
    Debian's server (datasets.build, no other key); None without that server."""
    binary = debian_binary()
    if binary is None:
        return None
    entries = round(STREAM_ENTRIES * (mix_content.QUICK_SCALE if quick else 1))
    return ds_mod.cached_dataset(binary, 10, entries, 0, f"stream-{entries // 1000}k", rebuild, log, progress=True)


def read_files(quick: bool, rebuild: bool, log: Log) -> tuple[list[tuple[str, Dataset]], list[str]]:
    """(table, dump) of each read, the dumps built when missing, and notes on those that could not be."""
    hashes, notes = mix_content.datasets(quick, rebuild, log, names=["big-hash"])
    out = [("keys", ds) for ds in hashes]
    stream = stream_dataset(quick, rebuild, log)
    if stream is None:
        notes.append(f"no stream_entries read: {DEBIAN_REDIS_SERVER} is not installed to write the stream")
    else:
        out.append(("stream_entries", stream))
    return out, notes


def contender(table: str, backend: str) -> Contender:
    return Contender(labelled(f"spark {table} {MASTER}", backend),
                     f"table {table}, the source's default options, under {MASTER}: count(*), sum(length(...))",
                     lambda ds: [python(), "-m", "bench.spark_workload", str(ds.path), "--table", table,
                                 "--master", MASTER],
                     decodes_entries=table == "stream_entries", reports=True, group="spark", memory_capped=False,
                     backend=backend)


def _check(read: Read) -> None:
    """Leaves a read out of the verdict when it did not count every row (the runner checks the stream's
    entries) or no Python worker was seen."""
    r = read.result
    if r.status != "ok":
        return
    if read.table == "keys":
        invalidate(r, [f"counted {e.get(name)} {name}, expected {read.rows}" for e in r.extras
                       for name in ("keys", "warm_keys") if e.get(name) != read.rows])
    if not read.workers():
        invalidate(r, ["no Python worker seen in the process tree"])


def floor_runs(quick: bool, rebuild: bool, backend: str, runs: int, timeout: float, single_run_above: float,
               log: Log) -> list[Result]:
    """The Spark group's local[1] split runs of the rdb source (`backend`) and of the floor source, on the
    RDB 10 dump of the run's size."""
    files = [d for d in ds_mod.datasets(quick, rebuild, log) if d.rdb_version == 10]
    pair = [c for c in spark_contenders(backend) + spark_floor_contenders()
            if c.name in (labelled(SPARK_SPLIT_1, backend), SPARK_FLOOR_1)]
    out = []
    for ds in files:
        warm_page_cache(ds.path)
        for c in pair:
            log(f"{c.name} on {ds.name} ({c.description})")
            out.append(measure(c, ds, runs, timeout, single_run_above, log))
    return out


def run(quick: bool, rebuild: bool, runs: int, timeout: float, single_run_above: float, log: Log,
        spark_results: list[Result] | None = None, argv: list[str] | None = None) -> SparkMemoryRun:
    """Both reads, and the rdb ÷ floor share: from `spark_results` (the Spark group of this run) when
    given, else measured here."""
    got = SparkMemoryRun(runs=runs, argv=argv or [])
    why = spark_available()
    if why is not None:
        got.notes.append(f"not run: {why}")
        return got
    got.backend, notes = section_backend()
    got.notes += notes
    files, notes = read_files(quick, rebuild, log)
    got.notes += notes
    for table, ds in files:
        warm_page_cache(ds.path)
        c = contender(table, got.backend)
        log(f"{c.name} on {ds.name} ({c.description})")
        read = Read(table, ds, measure(c, ds, runs, timeout, single_run_above, log))
        _check(read)
        got.reads.append(read)
    if spark_results is None:
        got.floor_results = floor_runs(quick, rebuild, got.backend, runs, timeout, single_run_above, log)
        spark_results = got.floor_results
    for backend in dict.fromkeys(r.backend for r in spark_results if r.backend):
        got.floor[backend] = spark_floor_share(spark_results, backend)
    got.finished = finished_stamp()
    return got


# -- the report ---------------------------------------------------------------------------------


def _peak(p: ProcessPeak | None) -> str:
    return f"{mb(p.hwm_kb)} MB (sampled {mb(p.rss_kb)}, anon {mb(p.anon_kb)})" if p is not None else "—"


def _kinds(read: Read) -> str:
    """Each kind of worker: how many there were in a run (the most of any run) and the largest peak."""
    per_run: dict[str, int] = {}
    largest: dict[str, Worker] = {}
    for run in read.result.processes:
        found = workers(run)
        for w in found:
            if w.kind not in largest or w.peak.hwm_kb > largest[w.kind].peak.hwm_kb:
                largest[w.kind] = w
        for kind in {w.kind for w in found}:
            per_run[kind] = max(per_run.get(kind, 0), sum(w.kind == kind for w in found))
    return "; ".join(f"{w.short} ×{per_run[kind]}: {mb(w.peak.hwm_kb)} MB"
                     for kind, w in sorted(largest.items(), key=lambda kw: -kw[1].peak.hwm_kb))


def _verdict(read: Read) -> str:
    r = read.result
    if r.status != "ok":
        return r.status.upper()
    if r.invalid:
        return "not judged"
    largest = read.largest()
    assert largest is not None  # _check invalidates a read without workers
    return "meets" if largest.peak.hwm_kb / 1024 <= SPARK_WORKER_MB else f"**misses** ({mb(largest.peak.hwm_kb)} MB)"


def table(reads: list[Read]) -> list[str]:
    lines = ["| read | file | MB | rows | partitions | cold query | warm query (spread) | largest worker: peak RSS "
             "| workers: count, largest peak | driver · JVM peak RSS | runs | verdict |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|"]
    for read in reads:
        r = read.result
        parts = sorted({int(e["partitions"]) for e in r.extras if "partitions" in e})  # type: ignore[arg-type]
        warm = [float(e["warm_query_s"]) for e in r.extras if "warm_query_s" in e]
        spread = f" ({seconds(max(warm) - min(warm))})" if len(warm) > 1 else ""
        largest = read.largest()
        jvms = [_jvm_and_driver(run) for run in r.processes]
        jvm = max((j for j, _ in jvms if j is not None), key=lambda p: p.hwm_kb, default=None)
        driver = max((d for _, d in jvms if d is not None), key=lambda p: p.hwm_kb, default=None)
        cells = [f"`{read.table}`", f"`{read.dataset.name}`", f"{read.dataset.size / 1e6:,.1f}", f"{read.rows:,}",
                 "/".join(map(str, parts)) or "—", seconds(r.extra_median("cold_query_s")),
                 seconds(r.extra_median("warm_query_s")) + spread,
                 f"{largest.short}: {_peak(largest.peak)}" if largest else "—", _kinds(read) or "—",
                 f"{mb(driver.hwm_kb) if driver else '—'} · {mb(jvm.hwm_kb) if jvm else '—'} MB",
                 str(len(r.walls)), _verdict(read)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _floor_lines(got: SparkMemoryRun) -> list[str]:
    out = [f"* {backend}: " + ("; ".join(f"{m.file}: {m.text}" for m in measured) + f" — {verdict(measured)}"
                               if measured else "not measured (no file where both ran and counted every row)")
           for backend, measured in got.floor.items()]
    return (out or ["* not measured: no Spark group result"]) + _problems(got.floor_results)


def _problems(results: list[Result]) -> list[str]:
    return [f"* {r.contender} on {r.dataset.name}: {r.status.upper() if r.status != 'ok' else 'left out'}: {r.note}"
            for r in results if r.status != "ok" or r.invalid]


def section(got: SparkMemoryRun) -> list[str]:
    """The report's section (Markdown lines)."""
    out = [HEADING, "",
           f"Run by `python -m bench {' '.join(got.argv)}`".rstrip() + f", finished {got.finished}; the machine "
           "and versions above may describe another run. Target (issue 26): a `keys` read of the big-hash dump and "
           f"a `stream_entries` read of a stream of {STREAM_ENTRIES:,} entries each run in Python workers of at most "
           f"{SPARK_WORKER_MB} MB peak RSS. Each read is a whole process (`bench.spark_workload --table T`): the "
           f"session built as `rdbspec pipeline` does on {MASTER}, then `spark.read.format(\"rdb\").option(\"table\", "
           "T).load(file)` with the source's default options (splitSize 64 MiB) forced with `select(count(*), "
           "sum(length(C)))` (C = `key`, `id`), twice: cold (the session's first query) and warm (the same "
           f"Python workers again). rdbspec on the {got.backend} backend (RDBSPEC_BACKEND={got.backend}); "
           f"{got.runs} run{'s' if got.runs != 1 else ''} a read unless the first took longer than "
           "--single-run-above (query times: medians). The runner samples the process tree every 0.1 s; the "
           "Python workers are the processes the PySpark daemons fork (`python -m pyspark.daemon MODULE`, one "
           "daemon per kind of worker: `worker` runs the tasks, the source's `read`; `plan_data_source_read` "
           "its `partitions()` with the split index pass; `create_data_source` and `lookup_data_sources` make "
           "and find the source; ×N = the most workers of that kind seen in one run). A worker's peak RSS is "
           "the kernel's high-water mark (VmHWM: nothing between two samples is missed); it counts the pages it "
           "shares with the daemon it was forked from and the pages of the mapped dump it has touched; sampled = "
           "the largest RSS the samples saw (lower when the peak came and went between two), anon = the sampled "
           "peak of its anonymous RSS. The driver (the workload's Python) and the JVM are shown "
           "beside, not judged.", ""]
    for read in got.reads:
        info = ds_mod.read_build_info(read.dataset.path)
        what = info.get("what") or f"one stream of {read.dataset.entries:,} entries (3 fields), no other key"
        out.append(f"* `{read.dataset.name}` ({read.dataset.path.name}): {what} — "
                   f"{read.dataset.size / 1e6:.1f} MB")
    out += [""] + (table(got.reads) if got.reads else ["No read ran."]) + [""]
    problems = _problems([r.result for r in got.reads])
    out += [f"* {n}" for n in got.notes] + problems + ([""] if got.notes or problems else [])
    out += ["### The reader against the floor source", "",
            f"Target (issue 26): warm stream_entries rows/s of the `rdb` source ≥ {SPARK_FLOOR_SHARE:.0%} of the "
            f"bench's `rdb-floor` source on the same master: the Spark group's `{SPARK_SPLIT_1}` and "
            f"`{SPARK_FLOOR_1}` runs (same splits and rows; the floor yields copies of one real batch, so what "
            "it costs is Spark's own work per row), warm query medians; the share is the floor's time ÷ the "
            "reader's." + (" Measured for this section on the RDB 10 dump of the run's size." if got.floor_results
                           else " From the Spark group's results above."), ""]
    return out + _floor_lines(got) + [""]
