"""The Markdown report: machine, versions, datasets and the results table."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from .contenders import FULL_DECODE, SPARK_BASELINE, labelled
from .datasets import Dataset, server_version, servers
from .runner import REPO, Result
from .targets import RSS_TARGET_MB, TABLE_HEAD
from .targets import section as targets_section


def machine() -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"CPU": cpu, "cores": f"{os.cpu_count()} logical ({affinity} usable)", "RAM": ram,
            "OS": f"{platform.system()} {platform.release()}",
            "load average at report time": " ".join(f"{x:.2f}" for x in os.getloadavg())}


def finished_stamp() -> str:
    """When a section's run finished, and the load then: "2026-11-27 06:21 UTC (load average 1.99 2.84 3.02)"."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC} (load average {load})"


def _dist(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for binary, rdb in servers():
        out[f"redis-server (RDB {rdb})"] = f"{server_version(binary)} ({binary})"
    out["kaitaistruct"] = _dist("kaitaistruct")
    out["rdbtools"] = _dist("rdbtools")
    out["rdbspec"] = _dist("rdbspec")
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=REPO, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, cwd=REPO,
                               timeout=10).stdout.strip()
        out["rdbspec"] += f" (git {commit}{', uncommitted changes' if dirty else ''})"
    except (OSError, subprocess.SubprocessError):
        pass
    return out


def seconds(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:.3f} s" if x < 10 else f"{x:.1f} s"


def _rate(n: float, secs: float | None) -> str:
    if not secs:
        return "—"
    r = n / secs
    if r >= 1e6:
        return f"{r / 1e6:.2f} M"
    if r >= 1e3:
        return f"{r / 1e3:.0f} k"
    return f"{r:.0f}"


def mb(kb: int) -> str:
    return f"{kb / 1024:,.0f}" if kb else "—"


def table(results: list[Result]) -> str:
    reference = labelled(FULL_DECODE, "python")
    base = {r.dataset.name: r.median for r in results if r.contender == reference and r.median}
    lines = ["| contender | file | wall (median) | spread | runs | peak RSS MB | anon MB | MB/s | stream entries/s "
             "| vs rdbspec full | notes |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        size_mb = r.dataset.size / 1e6
        med = r.median
        if r.status in ("skipped",):
            row = [r.contender, r.dataset.name, "n/a", "", "", "", "", "", "", "", r.note]
        elif r.status != "ok":
            row = [r.contender, r.dataset.name, r.status.upper(), "", "", "", mb(r.anon_kb), "", "", "", r.note]
        else:
            ratio = f"{med / base[r.dataset.name]:.2f}×" if med and base.get(r.dataset.name) else "—"
            mbs = f"{size_mb / med:.1f}" if med else "—"
            eps = _rate(r.entries, med) if r.entries else "—"
            row = [r.contender, r.dataset.name, seconds(med), seconds(r.spread), str(len(r.walls)),
                   mb(r.rss_kb), mb(r.anon_kb), mbs, eps, ratio, r.note]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def spark_table(results: list[Result]) -> str:
    """rows/s of the stream_entries query, cold (the session's first) and warm (the same query
    again), timed in the process (JVM start excluded), with the speed-up of each over the baseline
    (local[1] unsplit) of the same backend on the same file."""
    base = {(r.dataset.name, r.backend): r for r in results
            if r.backend and r.contender == labelled(SPARK_BASELINE, r.backend)}
    lines = ["| contender | file | splitSize | partitions | rows | cold query (median) | rows/s (cold) "
             "| speed-up (cold) | warm query (median) | spread (warm) | rows/s (warm) | speed-up (warm) "
             "| warm CPU: JVM / Python workers | session start | process wall | runs | tree RSS MB | tree anon MB "
             "| notes |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        if r.status == "skipped":  # said once above the table
            continue
        if r.status != "ok":
            lines.append(f"| {r.contender} | {r.dataset.name} | | {r.status.upper()} |" + " |" * 14 + f" {r.note} |")
            continue
        sizes = sorted({int(str(e["split_size"])) for e in r.extras if e.get("split_size") is not None})
        split = "/".join(_bytes(n) for n in sizes) or "?"
        parts = sorted({int(e["partitions"]) for e in r.extras if "partitions" in e})  # type: ignore[arg-type]
        rows = r.entries or 0
        note = r.note
        if parts == [1] and sizes and sizes[0] < r.dataset.size:
            note = f"splitSize not applied (1 partition, file > splitSize); {note}".strip("; ")
        baseline = base.get((r.dataset.name, r.backend))
        cells = [r.contender, r.dataset.name, split, "/".join(map(str, parts)) or "?", f"{rows:,}"]
        for query in ("cold_query_s", "warm_query_s"):
            secs = r.extra_median(query)
            cells.append(seconds(secs))
            if query == "warm_query_s":
                cells.append(seconds(_spread([float(e[query]) for e in r.extras if query in e])))
            cells.append(_rate(rows, secs))
            bq = baseline.extra_median(query) if baseline else None
            cells.append(f"{bq / secs:.2f}×" if bq and secs else "—")
        jvm, workers = r.extra_median("warm_jvm_cpu_s"), r.extra_median("warm_worker_cpu_s")
        cells.append(f"{seconds(jvm)} / {seconds(workers)}" if jvm is not None and workers is not None else "—")
        cells += [seconds(r.extra_median("session_s")), seconds(r.median), str(len(r.walls)), mb(r.tree_kb),
                  mb(r.anon_kb), note]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _spread(values: list[float]) -> float | None:
    return max(values) - min(values) if len(values) > 1 else None


def _bytes(n: int) -> str:
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n:,} B"


def _files(datasets: list[Dataset]) -> list[str]:
    out = []
    for ds in datasets:
        line = (f"* `{ds.name}`: RDB {ds.rdb_version} written by {ds.server} — {ds.size / 1e6:.1f} MB, "
                f"one stream of {ds.entries:,} entries (3 fields; SAMEFIELDS and own-field entries) "
                f"+ {ds.keys:,} keys evenly over strings, lists, sets, zsets and hashes")
        if ds.large:
            line += (" (5 keys in 100, one of each type, with 150–400 elements, the rest 1–11; 30% of "
                     "strings integers, 20% long and LZF-compressed; 1 key in 10 with a TTL)")
        info = ds.build_info()
        if info:
            line += (f". Built in {info['build_s']} s ({info['stream_s']} s stream, {info['keys_s']} s keys, "
                     f"{info['save_s']} s SAVE; {info['commands']:,} pipelined commands; server memory "
                     f"{info['server_used_memory'] / 2**30:.2f} GiB)")
        out.append(line)
    return out


def rss_target(results: list[Result]) -> list[str]:
    """Each rdbspec contender's peak RSS on the large file against the target."""
    rows = [r for r in results if r.dataset.large and r.contender.startswith("rdbspec") and r.status != "skipped"]
    if not rows:
        return []
    out = ["## Peak RSS on the large file", "",
           f"Target: rdbspec peak RSS ≤ {RSS_TARGET_MB} MB whatever the file size. Peak RSS counts the pages of "
           "the mmap'ed dump the process has touched; anon is the sampled peak of anonymous memory (heap, "
           "Python objects) summed over the process tree.", ""]
    for r in rows:
        if r.status != "ok":
            out.append(f"* {r.contender}: {r.status} ({r.note})")
            continue
        verdict = "meets" if r.rss_kb / 1024 <= RSS_TARGET_MB else "misses"
        out.append(f"* {r.contender}: {mb(r.rss_kb)} MB peak RSS, {mb(r.anon_kb)} MB anon — {verdict} the target")
    return out + [""]


RESTORE_HEADING = "## Restore into a live server"  # bench/restore.py's section
LIVE_HEADING = "## Reading a live server"  # bench/live.py's section
# The sections a whole report has after the content mix, in order: a mix section merged into a report
# without one goes before the first of them (and so on for the restore's and the live read's).
AFTER_MIX = (RESTORE_HEADING, LIVE_HEADING, "## Memory accuracy", "## Targets", "## Notes")
AFTER_RESTORE = AFTER_MIX[1:]
AFTER_LIVE = AFTER_MIX[2:]


def merge_section(report: str, heading: str, section: list[str], before: tuple[str, ...] = AFTER_MIX) -> str:
    """`report` with its section under `heading` (up to the next "## " heading) replaced by `section`
    (whose first line is that heading), or, when it has none, with `section` inserted before the first
    of the headings `before`, else at the end."""
    lines = report.splitlines()
    if heading in lines:
        start = lines.index(heading)
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    else:
        start = end = next((i for i, line in enumerate(lines) if line in before), len(lines))
    if start == len(lines) and lines and lines[-1]:
        section = ["", *section]
    return "\n".join(lines[:start] + section + lines[end:]) + "\n"


def merge_rows(report: str, heading: str, rows: list[str]) -> str:
    """`report` with each table row of `rows` in the table of the section under `heading` (the Targets one):
    in place of the row that starts with the same two cells (target, backend), else after its last row.
    Unchanged when the report has no such section or table."""
    lines = report.splitlines()
    if heading not in lines or TABLE_HEAD not in lines[lines.index(heading):]:
        return report
    start = lines.index(TABLE_HEAD, lines.index(heading))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("|")), len(lines))
    table = lines[start:end]
    for row in rows:
        key = "|".join(row.split("|")[:3]) + "|"
        at = next((i for i, line in enumerate(table) if line.startswith(key)), None)
        if at is None:
            table.append(row)
        else:
            table[at] = row
    return "\n".join(lines[:start] + table + lines[end:]) + "\n"


def document(results: list[Result], datasets: list[Dataset], notes: list[str], argv: list[str],
             runs: int, timeout: float, memory_limit: int | None = None, memory: list[str] | None = None,
             mix: list[str] | None = None, spark_memory: list[str] | None = None,
             cold_start: list[str] | None = None, restore: list[str] | None = None, live: list[str] | None = None,
             section_results: list[Result] | None = None) -> str:
    """The whole report; `memory` is the memory accuracy section (bench.memory.section), `mix` the
    content mix's (bench.mix.section), `spark_memory` the Spark workers' (bench.spark_memory.section),
    `cold_start` the pipeline's first query's (bench.cold_start.section), `restore` the restore into
    a live server's (bench.restore.section) and `live` the read of a live server's (bench.live.section),
    when they ran; `section_results` are those two's results, which the Targets section judges too."""
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"# rdbspec benchmark ({when})", "", f"Command: `python -m bench {' '.join(argv)}`".rstrip(), "",
             "## Machine", ""]
    parts += [f"* {k}: {v}" for k, v in machine().items()]
    parts += ["", "## Versions", ""]
    parts += [f"* {k}: {v}" for k, v in versions().items()]
    if datasets:
        parts += ["", "## Files", ""]
        parts += _files(datasets)
    cap = f"; data segment capped at {memory_limit / 2**30:.3g} GiB (RLIMIT_DATA)" if memory_limit else ""
    main = [r for r in results if r.group != "spark"]
    spark = [r for r in results if r.group == "spark"]
    if main:
        parts += ["", "## Results", "",
                  f"Each contender is a separate process; {runs} run{'s' if runs != 1 else ''} unless noted, "
                  f"timeout {timeout:.0f} s (4× on the large file){cap}. Wall = median, spread = max − min. "
                  "Peak RSS = the largest process's ru_maxrss (GNU time; redis-server: VmHWM after loading); "
                  "it counts the touched pages of an mmap'ed dump. Anon = sampled peak (every 0.1 s) of the "
                  "anonymous RSS summed over the process tree. \"vs rdbspec full\" = wall ÷ rdbspec "
                  "full-decode wall (Python backend) on the same file (> 1 is slower). Stream entries/s only "
                  "for contenders that decode every entry. rdbspec's contenders run once per backend built "
                  "(RDBSPEC_BACKEND, in brackets), their Python modules byte-compiled first as a wheel's "
                  "install does. librdb and HDT3213/rdb write their JSON to /dev/null; one "
                  "more, untimed run of theirs (and of `rdbspec dump`) writes it to a pipe where the stream "
                  "entries and keys are counted (\"check run\": a miscount is said in the notes and leaves the "
                  "result out of the targets).", "",
                  table(main), ""]
        parts += rss_target(main)
    if any(r.status != "skipped" for r in spark):
        parts += ["", "## Spark: stream_entries", "",
                  "Each run is a whole process: the session is built as `rdbspec pipeline` does "
                  "(`rdbspec.spark.launch.session(master)`), then `spark.read.format(\"rdb\").option(\"table\", "
                  "\"stream_entries\").option(\"splitSize\", S).load(file)` is forced with "
                  "`select(count(*), sum(length(id)))`, twice in the same session. On the RDB 10 dump of the run's "
                  "size only. Unsplit = splitSize 1 TiB (larger than the file), split = 8 MiB (1 MiB on a dump "
                  "under 16 MiB, so that it still makes several splits). Query = seconds from `spark.read` to "
                  "the collected aggregate, timed in the process (JVM start excluded). The cold query is the "
                  "session's first: besides the work it pays the session's one-time costs, the Python worker "
                  "processes Spark starts (the planner's, which runs the source's `partitions()` and the split "
                  "index pass, and the readers') with their imports (pyspark, pyarrow, rdbspec and its native "
                  "modules), and the JVM's class loading and JIT compilation of the query's code paths. The warm "
                  "query is the same query again: Spark reuses the idle Python workers and the compiled code, "
                  "as a session reading many files does; it reads the whole file again (from the page cache, "
                  "as the cold one) but not the split index pass: the planner's worker keeps the plan of a file "
                  "it has planned (`rdbspec.read.splits`), as for a pipeline reading several tables of a file. "
                  "Warm CPU = the CPU seconds the JVM and Spark's Python workers spent in the warm query "
                  "(from /proc; local[1] already keeps both cores busy when their sum exceeds the query's "
                  "time). The floor runs read the `rdb-floor` source (`bench.spark_workload --floor`): the "
                  "same splits and rows, each task yielding one real batch of the file over and over, so the "
                  "reader costs next to nothing and what remains is Spark's own work per row; their "
                  "local[2] ÷ local[1] is the most a second core gives any Python data source here. "
                  "The cluster runs (`bench.spark_cluster`) send the split query to a standalone master with one, "
                  "then two workers of one core each, started from the pyspark wheel on 127.0.0.1: each executor "
                  "a JVM with Python workers of its own, as on a cluster of machines (but sharing this one's "
                  "cores); their query times exclude the cluster's start, which the process wall has "
                  "(docs/spark-scaling.md: the model for N workers). "
                  "Session start = building the session (JVM start); "
                  "process wall = the whole process (both queries), as the runner times it. Speed-up = the "
                  f"`{SPARK_BASELINE}` time of the same backend ÷ this one (> 1 is faster). Partitions = what "
                  "Spark planned (1 for every run means splitSize was not applied). Tree RSS / anon = sampled "
                  "peaks (every 0.1 s) of the RSS / anonymous RSS summed over the driver, the JVM and the Python "
                  "workers (GNU time would see the driver only: the JVM is not its waited-for child).", "",
                  spark_table(spark), ""]
    if spark_memory is not None:
        parts += [""] + spark_memory
    if cold_start is not None:
        parts += [""] + cold_start
    if mix is not None:
        parts += [""] + mix
    if restore is not None:
        parts += [""] + restore
    if live is not None:
        parts += [""] + live
    if memory is not None:
        parts += [""] + memory
    parts += targets_section(results + (section_results or []), notes)
    if notes:
        parts += ["## Notes", ""] + [f"* {n}" for n in notes] + [""]
    return "\n".join(parts)
