"""Runs contenders as separate processes: wall time, peak RSS, timeouts, a memory cap."""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from .datasets import Dataset, Server

REPO = Path(__file__).resolve().parent.parent


@dataclass
class ProcessPeak:
    """One process of a sampled tree: what it ran and its peaks."""

    pid: int
    parent: int
    command: str  # its command line (arguments joined by spaces), as last seen
    hwm_kb: int = 0  # its peak RSS as the kernel keeps it (VmHWM), at the last sample that saw it
    rss_kb: int = 0  # sampled peak of its RSS (VmRSS): below hwm_kb when it peaked between two samples
    anon_kb: int = 0  # sampled peak of its anonymous RSS


@dataclass
class Measurement:
    wall: float  # seconds
    rss_kb: int  # peak resident set size (GNU time: of the largest single process)
    output: str = ""
    anon_kb: int = 0  # sampled peak of the anonymous RSS summed over the process tree
    tree_kb: int = 0  # sampled peak of the whole RSS summed over the process tree
    processes: list[ProcessPeak] = field(default_factory=list)  # each process of the tree seen by the sampler

    def counted(self) -> dict[str, object]:
        """The JSON object on the last line of a workload's output (what it counted)."""
        lines = self.output.strip().splitlines()
        try:
            counted = json.loads(lines[-1]) if lines else None
        except ValueError:
            counted = None
        if not isinstance(counted, dict):
            raise RunFailedError(f"no JSON line at the end of the output: {self.output[-200:]!r}")
        return counted


@dataclass
class Result:
    contender: str
    dataset: Dataset
    walls: list[float] = field(default_factory=list)
    rss_kb: int = 0
    anon_kb: int = 0
    tree_kb: int = 0
    status: str = "ok"  # ok | timeout | failed | out of memory | skipped
    note: str = ""
    entries: int | None = None  # stream entries the contender decoded, when it decodes them
    extras: list[dict[str, object]] = field(default_factory=list)  # each run's JSON line
    group: str = "parse"  # the contender's group (which report table)
    backend: str | None = None  # rdbspec's backend (RDBSPEC_BACKEND) the contender ran with
    invalid: list[str] = field(default_factory=list)  # why its figures do not count: the work was not all done
    processes: list[list[ProcessPeak]] = field(default_factory=list)  # each run's processes (Measurement.processes)

    @property
    def valid(self) -> bool:
        """Ran to the end and did the whole work: the only results the targets are judged on."""
        return self.status == "ok" and not self.invalid

    def extra_median(self, name: str) -> float | None:
        values = [float(e[name]) for e in self.extras if isinstance(e.get(name), (int, float))]
        return statistics.median(values) if values else None

    @property
    def median(self) -> float | None:
        return statistics.median(self.walls) if self.walls else None

    @property
    def spread(self) -> float | None:
        return max(self.walls) - min(self.walls) if len(self.walls) > 1 else None

    @property
    def peak_kb(self) -> int:
        """The larger of the largest single process's peak RSS (GNU time) and the sampled peak of the RSS
        summed over the process tree: what worker processes (`dump --jobs N`) add."""
        return max(self.rss_kb, self.tree_kb)


class RunTimeoutError(Exception):
    pass


class RunFailedError(Exception):
    pass


class RunOutOfMemoryError(Exception):
    pass


# Go prints its "fatal error: runtime: cannot allocate memory" first, then a long stack trace
_MEMORY_ERRORS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "OutOfMemoryError",
                  "runtime: cannot allocate memory", "runtime: out of memory")


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out.extend(int(c) for c in f.read().split())
    except (OSError, ValueError):
        pass
    return out


def _status_kb(pid: int) -> dict[str, int]:
    """The kB figures of one process's /proc status (VmRSS, VmHWM, RssAnon...); {} once it is gone
    (a zombie has none)."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.endswith(" kB\n"):
                    name, value, _ = line.split()
                    out[name.rstrip(":")] = int(value)
    except (OSError, ValueError):
        pass
    return out


def _rss(pid: int) -> tuple[int, int]:
    """(anonymous RSS, whole RSS) of one process in kB; (0, 0) once it is gone."""
    status = _status_kb(pid)
    return status.get("RssAnon", 0), status.get("VmRSS", 0)


def _command(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None


class TreeSampler(threading.Thread):
    """Polls the RSS of a process tree (the root excluded: GNU time) every `interval` seconds and
    keeps the peaks of its sums: anonymous memory (heap, Python objects, the JVM's heap) apart from
    the whole RSS, which also counts the pages of an mmap'ed dump the process has touched; and,
    per process, its command line and peaks (`processes`). A process's peak RSS is the kernel's
    VmHWM, exact whenever the process lived through one sample, however short the peak; a process
    that lived less than `interval` may not be seen at all."""

    def __init__(self, root: int, include_root: bool, interval: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.root, self.include_root, self.interval = root, include_root, interval
        self.anon_kb = self.tree_kb = 0
        self.processes: dict[int, ProcessPeak] = {}
        self.done = threading.Event()

    def sample(self) -> None:
        pids = [(self.root, 0)] if self.include_root else [(c, self.root) for c in _children(self.root)]
        anon = total = 0
        seen: set[int] = set()
        while pids:
            pid, parent = pids.pop()
            if pid in seen:
                continue
            seen.add(pid)
            status = _status_kb(pid)
            anon, total = anon + status.get("RssAnon", 0), total + status.get("VmRSS", 0)
            self._note(pid, parent, status)
            pids.extend((c, pid) for c in _children(pid))
        self.anon_kb, self.tree_kb = max(self.anon_kb, anon), max(self.tree_kb, total)

    def _note(self, pid: int, parent: int, status: dict[str, int]) -> None:
        """Keeps one process's command line (re-read: a fork may exec after a sample) and peaks."""
        peak = self.processes.get(pid)
        if peak is None or peak.parent != parent:  # new, or its pid reused
            peak = self.processes[pid] = ProcessPeak(pid, parent, "")
        command = _command(pid)
        if command:
            peak.command = command
        peak.hwm_kb = max(peak.hwm_kb, status.get("VmHWM", 0))
        peak.rss_kb = max(peak.rss_kb, status.get("VmRSS", 0))
        peak.anon_kb = max(peak.anon_kb, status.get("RssAnon", 0))

    def run(self) -> None:
        while not self.done.wait(self.interval):
            self.sample()


def _limit_data(limit_bytes: int | None) -> Callable[[], None] | None:
    """A preexec_fn capping the child's data segment (RLIMIT_DATA: heap and private anonymous
    mappings, not a read-only mmap of the dump), so a contender that would eat the machine fails
    with MemoryError instead."""
    if not limit_bytes:
        return None

    def apply() -> None:  # pragma: no cover - runs in the child
        resource.setrlimit(resource.RLIMIT_DATA, (limit_bytes, limit_bytes))

    return apply


GNU_TIME = "/usr/bin/time"


def run_process(argv: list[str], timeout: float, cwd: Path = REPO, memory_limit: int | None = None,
                env: dict[str, str] | None = None, discard_stdout: bool = False) -> Measurement:
    """One run of `argv` (stdout captured, or sent to /dev/null with `discard_stdout`; stderr kept
    for errors): its wall time and peak RSS. `env` is added to this process's environment. Killed
    with its process group after `timeout` seconds; with `memory_limit` (bytes), its data segment
    is capped (RLIMIT_DATA) and a MemoryError is reported as RunOutOfMemoryError.

    The RSS comes from GNU time (`%M`) when it is installed: the child's ru_maxrss as seen by
    os.wait4 also counts the memory of the (v)forked Python parent before exec, which would give
    even `cat` 40 MB. Without GNU time, that inflated ru_maxrss is what is reported."""
    with (open(os.devnull, "wb") if discard_stdout else tempfile.TemporaryFile()) as out, \
            tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r", suffix=".rss") as rss_file:
        use_time = os.access(GNU_TIME, os.X_OK)
        full = [GNU_TIME, "-f", "%M", "-o", rss_file.name, *argv] if use_time else argv
        t0 = time.perf_counter()
        proc = subprocess.Popen(full, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd,
                                env=_environment(env), start_new_session=True,
                                preexec_fn=_limit_data(memory_limit))
        sampler = TreeSampler(proc.pid, include_root=not use_time)
        sampler.start()
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            _kill_group(proc.pid)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
            sampler.done.set()
        wall = time.perf_counter() - t0
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)  # already reaped by wait4
        if killed.is_set():
            raise RunTimeoutError(f"killed after {timeout:.0f} s")
        err.seek(0)
        text = ""
        if not discard_stdout:
            out.seek(0)
            text = out.read(1 << 20).decode(errors="replace")
        if proc.returncode != 0:
            _fail(proc.returncode, err.read().decode(errors="replace"), wall, memory_limit, sampler.anon_kb)
        rss_kb = usage.ru_maxrss
        if use_time:
            words = rss_file.read().split()
            if words and words[-1].isdigit():
                rss_kb = int(words[-1])
        return Measurement(wall, rss_kb, text, sampler.anon_kb, sampler.tree_kb, list(sampler.processes.values()))


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _environment(extra: dict[str, str] | None) -> dict[str, str] | None:
    return {**os.environ, **extra} if extra else None


def _fail(returncode: int, stderr: str, wall: float, memory_limit: int | None, anon_kb: int) -> NoReturn:
    """Raises what a failed run means: out of memory under the cap, or failed (stderr's last lines)."""
    lines = [ln for ln in stderr.strip().splitlines() if not ln.startswith("Command exited with non-zero status")]
    if memory_limit and any(m in ln for ln in lines[:5] + lines[-20:] for m in _MEMORY_ERRORS):
        raise RunOutOfMemoryError(f"over the {memory_limit / 2**30:.3g} GiB data limit after "
                                  f"{wall:.0f} s (anon RSS {anon_kb / 1024:.0f} MB)")
    raise RunFailedError(f"exit {returncode}: {' | '.join(lines[-3:])[:300]}")


@dataclass(frozen=True)
class OutputCheck:
    """An untimed run that proves a contender did the work: the same command writing its JSON to
    stdout (a pipe), whose bytes are counted here: `entries` and `keys` are byte strings that occur
    once per stream entry and once per key in that contender's JSON."""

    argv: Callable[[Dataset], list[str]]
    entries: bytes
    keys: bytes


def read_output(argv: list[str], timeout: float, each: Callable[[bytes], None], env: dict[str, str] | None = None,
                memory_limit: int | None = None) -> None:
    """Runs `argv` (untimed), handing what it writes to stdout to `each`, a chunk at a time; killed with its
    process group after `timeout` seconds (RunTimeoutError), a non-zero exit raised as `_fail` says."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, cwd=REPO,
                                env=_environment(env), start_new_session=True, preexec_fn=_limit_data(memory_limit))
        timer = threading.Timer(timeout, _kill_group, (proc.pid,))
        timer.start()
        try:
            assert proc.stdout is not None
            while chunk := proc.stdout.read(1 << 20):
                each(chunk)
            proc.wait()
        finally:
            timer.cancel()
        if proc.returncode == -signal.SIGKILL:
            raise RunTimeoutError(f"check run killed after {timeout:.0f} s")
        if proc.returncode != 0:
            err.seek(0)
            _fail(proc.returncode, err.read().decode(errors="replace"), time.perf_counter() - t0, memory_limit, 0)


def run_check(check: OutputCheck, ds: Dataset, timeout: float, env: dict[str, str] | None = None,
              memory_limit: int | None = None) -> dict[str, int | str]:
    """Runs `check` on `ds`: {"entries", "keys", "bytes"} counted in what it wrote, and "sha256",
    its digest (what tells two runs wrote the same bytes)."""
    counts = {"entries": 0, "keys": 0, "bytes": 0}
    digest = hashlib.sha256()
    keep = max(len(check.entries), len(check.keys)) - 1  # a pattern cut by a chunk boundary
    tail = b""

    def count(chunk: bytes) -> None:
        nonlocal tail
        counts["bytes"] += len(chunk)
        digest.update(chunk)
        window = tail + chunk
        for name, pattern in (("entries", check.entries), ("keys", check.keys)):
            # from the first place a match can cross the boundary: those wholly in `tail` were counted
            counts[name] += window.count(pattern, max(0, len(tail) - len(pattern) + 1))
        tail = window[-keep:] if keep else b""

    read_output(check.argv(ds), timeout, count, env, memory_limit)
    return {**counts, "sha256": digest.hexdigest()}


_LOADED = re.compile(r"DB loaded from disk: ([0-9.]+) seconds")


def run_redis_load(ds: Dataset, timeout: float) -> Measurement:
    """Starts the server that wrote the dump on a copy of it; the time is the one the server logs
    ("DB loaded from disk: X seconds"), the RSS its VmHWM once loaded."""
    server = Server(ds.server, rdb=ds.path)
    proc = server.start()
    try:
        deadline = time.monotonic() + timeout
        while True:
            log = server.log_text()  # one read: the two lines below may be written between two reads
            m = _LOADED.search(log)
            if m:
                break
            if proc.poll() is not None:
                raise RunFailedError(f"server exited {proc.returncode}: {server.log_text()[-300:]}")
            if "Ready to accept connections" in log:
                raise RunFailedError("server ready without a 'DB loaded from disk' line")
            if time.monotonic() > deadline:
                raise RunTimeoutError(f"not loaded after {timeout:.0f} s")
            time.sleep(0.02)
        rss_kb = 0
        with open(f"/proc/{proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    rss_kb = int(line.split()[1])
        anon, total = _rss(proc.pid)  # once loaded (not a peak)
        return Measurement(float(m.group(1)), rss_kb, anon_kb=anon, tree_kb=total)
    finally:
        server.stop()


@dataclass
class Contender:
    name: str
    description: str
    argv: Callable[[Dataset], list[str]] | None = None
    decodes_entries: bool = False  # stream entries/s is meaningful
    note: str = ""
    custom: Callable[[Dataset, float], Measurement] | None = None
    # why the contender does not run on a dataset, or None when it does
    skip: Callable[[Dataset], str | None] | None = None
    group: str = "parse"  # "parse": the main table; "spark": the Spark table
    reports: bool = False  # prints a JSON line of what it counted (bench.workloads, bench.spark_workload)
    memory_capped: bool = True  # run under --max-memory (not the JVM, which reserves its heap up front)
    backend: str | None = None  # rdbspec's backend, passed as RDBSPEC_BACKEND
    discard_stdout: bool = False  # stdout to /dev/null (`rdbspec dump FILE > /dev/null`)
    check: OutputCheck | None = None  # an untimed run counting what it wrote, after the timed ones

    def skip_reason(self, ds: Dataset) -> str | None:
        return self.skip(ds) if self.skip is not None else None

    @property
    def env(self) -> dict[str, str] | None:
        return {"RDBSPEC_BACKEND": self.backend} if self.backend else None


def _miscounts(counted: dict[str, object], ds: Dataset, keys: bool) -> list[str]:
    """What a contender counted that is not what the dump holds (every stream entry, by each query
    of the Spark workload; with `keys`, every key, the streams' included)."""
    expected = {"entries": ds.entries, **({"warm_entries": ds.entries} if "warm_entries" in counted else {}),
                **({"keys": ds.keys + ds.streams} if keys else {})}
    return [f"counted {counted.get(name)} {name}, expected {n}" for name, n in expected.items()
            if counted.get(name) != n]


def _backend_mismatch(c: Contender, counted: dict[str, object]) -> list[str]:
    """A workload asked for the native backend that loaded no native module ran the Python one; Spark's
    Python workers must see the RDBSPEC_BACKEND the contender set."""
    wrong = []
    if c.backend == "native" and counted.get("native_modules") == 0:
        wrong.append("RDBSPEC_BACKEND=native but no rdbspec_generated.native module was loaded")
    if c.backend and "worker_backend" in counted and counted["worker_backend"] != c.backend:
        wrong.append(f"Spark's Python workers saw RDBSPEC_BACKEND={counted['worker_backend']!r}, not {c.backend!r}")
    return wrong


def measure(c: Contender, ds: Dataset, runs: int, timeout: float, single_run_above: float,
            log: Callable[[str], None], memory_limit: int | None = None) -> Result:
    res = Result(c.name, ds, note=c.note, group=c.group, backend=c.backend)
    limit = memory_limit if c.memory_capped else None
    for i in range(runs):
        try:
            if c.custom is not None:
                m = c.custom(ds, timeout)
            else:
                assert c.argv is not None
                m = run_process(c.argv(ds), timeout, memory_limit=limit, env=c.env, discard_stdout=c.discard_stdout)
            counted = m.counted() if c.reports else None
        except RunTimeoutError as err:
            res.status, res.note = "timeout", f"{err}; {c.note}".strip("; ")
            log(f"  {c.name} on {ds.name}: TIMEOUT ({err})")
            return res
        except RunOutOfMemoryError as err:
            res.status, res.note = "out of memory", f"{err}; {c.note}".strip("; ")
            log(f"  {c.name} on {ds.name}: OUT OF MEMORY ({err})")
            return res
        except RunFailedError as err:
            res.status, res.note = "failed", str(err)
            log(f"  {c.name} on {ds.name}: FAILED ({err})")
            return res
        res.walls.append(m.wall)
        res.rss_kb = max(res.rss_kb, m.rss_kb)
        res.anon_kb = max(res.anon_kb, m.anon_kb)
        res.tree_kb = max(res.tree_kb, m.tree_kb)
        res.processes.append(m.processes)
        if counted is not None:
            res.extras.append(counted)
            if c.decodes_entries:
                res.entries = counted.get("entries")  # type: ignore[assignment]
                invalidate(res, _miscounts(counted, ds, keys=False))
            invalidate(res, _backend_mismatch(c, counted))
        log(f"  {c.name} on {ds.name}: run {i + 1}/{runs} {m.wall:.2f} s, {m.rss_kb / 1024:.0f} MB "
            f"(anon {m.anon_kb / 1024:.0f} MB){'' if counted is None else ' ' + json.dumps(counted)}")
        if m.wall > single_run_above and i == 0 and runs > 1:
            res.note = f"1 run only (first run > {single_run_above:.0f} s); {res.note}".strip("; ")
            break
    if c.check is not None:
        try:
            counted = run_check(c.check, ds, timeout, c.env, limit)
        except (RunTimeoutError, RunOutOfMemoryError, RunFailedError) as err:
            invalidate(res, [f"check run: {err}"])
        else:
            log(f"  {c.name} on {ds.name}: check run {json.dumps(counted)}")
            res.extras.append({"check": counted})
            res.entries = counted["entries"]
            invalidate(res, [f"check run {w}" for w in _miscounts(counted, ds, keys=True)])
            res.note = f"check run: {counted['bytes'] / 1e6:,.1f} MB of JSON; {res.note}".strip("; ")
    if c.decodes_entries and res.entries is None:
        res.entries = ds.entries
    return res


def invalidate(res: Result, why: list[str]) -> None:
    """Marks `res` as not counting for the targets, each reason said once in its notes."""
    for w in why:
        if w not in res.invalid:
            res.invalid.append(w)
            res.note = f"{w}; {res.note}".strip("; ")


def warm_page_cache(path: Path) -> None:
    """Reads `path` once so that every contender reads it from memory."""
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def python() -> str:
    return sys.executable
