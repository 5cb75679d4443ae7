"""The contenders and how each one is started."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from .datasets import Dataset
from .peers import peer_contenders
from .runner import REPO, Contender, OutputCheck, run_redis_load
from .workloads import KAITAI_BUILD

SPEC_DIR = REPO / "spec"
KSC = REPO / "tests" / "conformance" / "ksc.js"


def _workload(name: str) -> Callable[[Dataset], list[str]]:
    return lambda ds: [sys.executable, "-m", "bench.workloads", name, str(ds.path)]


def _not_large(why: str) -> Callable[[Dataset], str | None]:
    return lambda ds: why if ds.large else None


# The Spark group: stream_entries of the RDB 10 dump of the run's size, unsplit and split, under
# one and two local cores. "Unsplit" asks for splits larger than any file (1 TiB); "split" for
# 8 MiB ones, or 1 MiB on a dump under 16 MiB (the --quick one) so that it still makes several.
SPARK_UNSPLIT = 1 << 40
SPARK_SPLIT, SPARK_SPLIT_SMALL = 8 << 20, 1 << 20
SPARK_RUNS = [("local[1]", False), ("local[1]", True), ("local[2]", False), ("local[2]", True)]
SPARK_BASELINE = "spark local[1] unsplit"
# The split query on a standalone cluster of one, then two workers of one core each (bench.spark_cluster)
SPARK_CLUSTER_1, SPARK_CLUSTER_2 = "spark cluster 1 worker split", "spark cluster 2 workers split"
# The same split query on the rdb-floor source (bench.spark_workload --floor): Spark's own cost
SPARK_FLOOR_1, SPARK_FLOOR_2 = "spark local[1] split floor", "spark local[2] split floor"
# The split query on local[1] reading the file's copy in an S3 store (bench.spark_workload --store s3)
SPARK_SPLIT_S3 = "spark local[1] split s3"

# Names the report's tables and targets look results up by (rdbspec's get " (backend)" appended).
FULL_DECODE, KEYS_ONLY, DUMP_CLI = "rdbspec full decode", "rdbspec keys only", "rdbspec dump CLI"
OFFICIAL, REDIS_LOAD = "official Kaitai (Python)", "redis-server load"

# rdbspec's backends (RDBSPEC_BACKEND): every rdbspec contender runs once per backend built here.
BACKENDS = ("python", "native")
NATIVE_PROBE = "import rdbspec_generated.native, rdbspec_generated.native.rdb"


def labelled(name: str, backend: str) -> str:
    """A contender's name with the backend it runs on: "rdbspec full decode (native)"."""
    return f"{name} ({backend})"


def native_available() -> str | None:
    """None when the compiled backend imports (the package and its rdb module), else why not."""
    env = {k: v for k, v in os.environ.items() if k != "RDBSPEC_BACKEND"}
    proc = subprocess.run([sys.executable, "-c", NATIVE_PROBE], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=60)
    if proc.returncode != 0:
        return (proc.stderr.strip().splitlines() or ["failed"])[-1][:200]
    return None


def section_backend() -> tuple[str, list[str]]:
    """The backend the sections after the main table run rdbspec on, the one a user gets: native when it is
    built, else python, with a note saying so."""
    if native_available() is None:
        return "native", []
    return "python", ["native backend not built: rdbspec ran on the Python backend"]


def spark_split_size(ds: Dataset, split: bool) -> int:
    if not split:
        return SPARK_UNSPLIT
    return SPARK_SPLIT if ds.size >= 2 * SPARK_SPLIT else SPARK_SPLIT_SMALL


def spark_available() -> str | None:
    """None when pyspark, pyarrow and a Java runtime are there, else what is missing."""
    missing = [m for m in ("pyspark", "pyarrow") if importlib.util.find_spec(m) is None]
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        missing.append("java")
    return f"{', '.join(missing)} missing (make setup installs the Python ones)" if missing else None


def _spark_skip(ds: Dataset) -> str | None:
    if ds.large:
        return "Spark runs on the default-size RDB 10 dump only (15M rows: by hand, python -m bench.spark_workload)"
    if ds.rdb_version != 10:
        return "Spark runs on the RDB 10 dump only (same reader; RDB 9 adds nothing to the split comparison)"
    return None


def spark_contenders(backend: str) -> list[Contender]:
    return [Contender(labelled(f"spark {master} {'split' if split else 'unsplit'}", backend),
                      f"stream_entries, splitSize {'8 MiB (1 MiB under 16 MiB)' if split else '1 TiB'}, "
                      f"under {master}: count(*), sum(length(id))",
                      (lambda ds, master=master, split=split:
                       [sys.executable, "-m", "bench.spark_workload", str(ds.path), "--master", master,
                        "--split-size", str(spark_split_size(ds, split))]),
                      decodes_entries=True, reports=True, skip=_spark_skip, group="spark", memory_capped=False,
                      backend=backend)
            for master, split in SPARK_RUNS]


def spark_store_contenders(backend: str) -> list[Contender]:
    """The split query on local[1] with the file in an S3 store (moto on 127.0.0.1): what reading
    through the store costs beside reading the file (`SPARK_SPLIT_S3` against "spark local[1] split")."""
    return [Contender(labelled(SPARK_SPLIT_S3, backend),
                      "stream_entries of the file's s3:// URL (moto's server on 127.0.0.1), splitSize as split, "
                      "under local[1]: count(*), sum(length(id))",
                      (lambda ds: [sys.executable, "-m", "bench.spark_workload", str(ds.path), "--master", "local[1]",
                                   "--split-size", str(spark_split_size(ds, True)), "--store", "s3"]),
                      decodes_entries=True, reports=True, skip=_spark_skip, group="spark", memory_capped=False,
                      backend=backend)]


def spark_floor_contenders() -> list[Contender]:
    """The split query under one and two cores on a source whose batches cost nothing to make."""
    return [Contender(name, f"rdb-floor source (copies of one real batch, same rows and splits) under {master}",
                      (lambda ds, master=master: [sys.executable, "-m", "bench.spark_workload", str(ds.path),
                                                  "--master", master, "--split-size", str(spark_split_size(ds, True)),
                                                  "--floor", str(ds.entries)]),
                      decodes_entries=True, reports=True, skip=_spark_skip, group="spark", memory_capped=False,
                      note="Spark's own cost per row: the Python side yields cached batches")
            for name, master in ((SPARK_FLOOR_1, "local[1]"), (SPARK_FLOOR_2, "local[2]"))]


def spark_cluster_contenders(backend: str) -> list[Contender]:
    """The split query on a standalone cluster of 1 and 2 one-core workers (their executors in JVMs
    and Python workers of their own), on one backend: the native one where it is built."""
    return [Contender(labelled(name, backend),
                      f"stream_entries, splitSize 8 MiB (1 MiB under 16 MiB), on a standalone master and {workers} "
                      "worker(s) of one core (127.0.0.1): count(*), sum(length(id))",
                      (lambda ds, workers=workers: [sys.executable, "-m", "bench.spark_cluster", str(ds.path),
                                                    "--workers", str(workers),
                                                    "--split-size", str(spark_split_size(ds, True))]),
                      decodes_entries=True, reports=True, skip=_spark_skip, group="spark", memory_capped=False,
                      backend=backend, note="query times exclude the cluster's start (in the process wall)")
            for name, workers in ((SPARK_CLUSTER_1, 1), (SPARK_CLUSTER_2, 2))]


def compile_official(log: Callable[[str], None]) -> str | None:
    """Compiles spec/*.ksy to Python with the official compiler into bench/cache/kaitai_py
    (again when a spec is newer). Returns why it is unavailable, or None."""
    specs = sorted(SPEC_DIR.glob("*.ksy"))
    marker = KAITAI_BUILD / "rdb.py"
    if marker.is_file() and all(s.stat().st_mtime <= marker.stat().st_mtime for s in specs):
        return None
    if shutil.which("node") is None or not (KSC.parent / "node_modules").is_dir():
        return "node or tests/conformance/node_modules missing (make setup)"
    log("compiling spec/*.ksy with the official Kaitai compiler (Python target)...")
    shutil.rmtree(KAITAI_BUILD, ignore_errors=True)
    proc = subprocess.run(["node", str(KSC), "python", str(KAITAI_BUILD), *map(str, specs)],
                          capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0 or not marker.is_file():
        return f"official compile failed: {proc.stderr.strip()[-300:]}"
    return None


def dump_help() -> tuple[str | None, str]:
    """(None when `python -m rdbspec dump` works, else why not; its --help text)."""
    proc = subprocess.run([sys.executable, "-m", "rdbspec", "dump", "--help"], capture_output=True, text=True,
                          cwd=REPO, timeout=60)
    if proc.returncode != 0:
        return (proc.stderr.strip().splitlines() or ["failed"])[-1][:200], ""
    return None, proc.stdout


def cli_dump_available() -> str | None:
    """None when `python -m rdbspec dump` works, else why not."""
    return dump_help()[0]


def rdbtools_binary() -> str | None:
    candidate = Path(sys.executable).parent / "rdb"
    return str(candidate) if candidate.is_file() else shutil.which("rdb")


def rdbspec_argv(command: str, *args: str) -> Callable[[Dataset], list[str]]:
    """`python -m rdbspec COMMAND FILE ARGS...` for a dataset."""
    return lambda ds: [sys.executable, "-m", "rdbspec", command, str(ds.path), *args]


def dump_contender(name: str, backend: str | None, *args: str) -> Contender:
    """`python -m rdbspec dump FILE ARGS... > /dev/null`, with its check run."""
    argv = rdbspec_argv("dump", *args)
    # its JSON Lines: one {"db":...} object per key, stream entries as {"id":"...","fields":[...]}, counted
    # by their `","fields":[` (a pending entry is a {"id":"...","consumer":...})
    check = OutputCheck(argv, entries=b'","fields":[', keys=b'{"db":')
    return Contender(name, " ".join(["python -m rdbspec dump FILE", *args, "> /dev/null"]), argv,
                     decodes_entries=True, backend=backend, discard_stdout=True, check=check)


def rdbspec_contenders(backends: list[str], dump: bool) -> list[Contender]:
    """rdbspec's workloads, each once per backend; the dump CLI when it runs here (`dump`)."""
    workloads = [
        (FULL_DECODE, "api.open(path); k.value for every key", "rdbspec-full", True, ""),
        (KEYS_ONLY, "for k in d.keys(): pass (values skipped)", "rdbspec-keys", False, "values not decoded"),
        ("rdbspec stream only", "decodes only the stream key's value", "rdbspec-stream", True,
         "other values skipped"),
    ]
    out = [Contender(labelled(name, b), what, _workload(workload), decodes_entries=entries, note=note, reports=True,
                     backend=b)
           for name, what, workload, entries, note in workloads for b in backends]
    if dump:
        out += [dump_contender(labelled(DUMP_CLI, b), b) for b in backends]
    return out


def contenders(log: Callable[[str], None]) -> tuple[list[Contender], list[str]]:
    """The contenders in table order, and notes on the ones that cannot run here."""
    notes: list[str] = []
    backends = list(BACKENDS)
    why = native_available()
    if why is not None:
        backends.remove("native")
        notes.append(f"native backend not built: rdbspec contenders ran on the Python backend only "
                     f"(`python -c \"{NATIVE_PROBE}\"`: {why}).")
    why = cli_dump_available()
    if why is not None:
        notes.append(f"rdbspec dump CLI skipped: `python -m rdbspec dump` fails here ({why}).")
    out = rdbspec_contenders(backends, dump=why is None)
    peers, peer_notes = peer_contenders()
    out += peers
    notes += peer_notes
    why = compile_official(log)
    if why is None:
        out.append(Contender(OFFICIAL, "ksc 0.11 Python output of spec/*.ksy, kaitaistruct",
                             _workload("kaitai-official"), decodes_entries=True, reports=True,
                             skip=_not_large("not run on the ~1 GB file: it builds every record as objects up "
                                             "front (8.7 GB peak RSS on the 64 MB dump, bench/results/latest.md); "
                                             "1 GB would need > 100 GB")))
    else:
        notes.append(f"official Kaitai Python skipped: {why}.")
    rdb = rdbtools_binary()
    if rdb is not None:
        out.append(Contender("rdbtools", "rdb --command json FILE > /dev/null",
                             lambda ds: [rdb, "--command", "json", str(ds.path)],
                             note="node listpacks read as raw strings, stream entries not decoded",
                             skip=lambda ds: "reads RDB <= 9 only" if ds.rdb_version > 9 else None))
    else:
        notes.append("rdbtools skipped: the `rdb` command is not installed.")
    out.append(Contender(REDIS_LOAD, "the server that wrote the dump, loading it at startup",
                         custom=run_redis_load,
                         note="server's own 'DB loaded from disk' time; keeps node listpacks as blobs"))
    out.append(Contender("cat (floor)", "cat FILE > /dev/null (page cache warm)",
                         lambda ds: ["cat", str(ds.path)]))
    why = spark_available()
    if why is None:
        out += [c for b in backends for c in spark_contenders(b) + spark_store_contenders(b)]
        out += spark_floor_contenders() + spark_cluster_contenders(backends[-1])
    else:
        notes.append(f"Spark group skipped: {why}.")
    return out, notes
