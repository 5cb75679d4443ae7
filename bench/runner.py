"""Runs contenders as separate processes: wall time, peak RSS, timeouts."""

from __future__ import annotations

import json
import os
import re
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

from .datasets import Dataset, Server

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Measurement:
    wall: float  # seconds
    rss_kb: int  # peak resident set size
    output: str = ""


@dataclass
class Result:
    contender: str
    dataset: Dataset
    walls: list[float] = field(default_factory=list)
    rss_kb: int = 0
    status: str = "ok"  # ok | timeout | failed | skipped
    note: str = ""
    entries: int | None = None  # stream entries the contender decoded, when it decodes them

    @property
    def median(self) -> float | None:
        return statistics.median(self.walls) if self.walls else None

    @property
    def spread(self) -> float | None:
        return max(self.walls) - min(self.walls) if len(self.walls) > 1 else None


class RunTimeoutError(Exception):
    pass


class RunFailedError(Exception):
    pass


GNU_TIME = "/usr/bin/time"


def run_process(argv: list[str], timeout: float, cwd: Path = REPO) -> Measurement:
    """One run of `argv` (stdout captured, stderr kept for errors): its wall time and peak RSS.
    Killed with its process group after `timeout` seconds.

    The RSS comes from GNU time (`%M`) when it is installed: the child's ru_maxrss as seen by
    os.wait4 also counts the memory of the (v)forked Python parent before exec, which would give
    even `cat` 40 MB. Without GNU time, that inflated ru_maxrss is what is reported."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".rss") as rss_file:
        use_time = os.access(GNU_TIME, os.X_OK)
        full = [GNU_TIME, "-f", "%M", "-o", rss_file.name, *argv] if use_time else argv
        t0 = time.perf_counter()
        proc = subprocess.Popen(full, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd,
                                start_new_session=True)
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # already reaped by wait4
        if killed.is_set():
            raise RunTimeoutError(f"killed after {timeout:.0f} s")
        out.seek(0)
        err.seek(0)
        text = out.read(1 << 20).decode(errors="replace")
        if proc.returncode != 0:
            lines = [ln for ln in err.read().decode(errors="replace").strip().splitlines()
                     if not ln.startswith("Command exited with non-zero status")]
            raise RunFailedError(f"exit {proc.returncode}: {' | '.join(lines[-3:])[:300]}")
        rss_kb = usage.ru_maxrss
        if use_time:
            words = rss_file.read().split()
            if words and words[-1].isdigit():
                rss_kb = int(words[-1])
        return Measurement(wall, rss_kb, text)


_LOADED = re.compile(r"DB loaded from disk: ([0-9.]+) seconds")


def run_redis_load(ds: Dataset, timeout: float) -> Measurement:
    """Starts the server that wrote the dump on a copy of it; the time is the one the server logs
    ("DB loaded from disk: X seconds"), the RSS its VmHWM once loaded."""
    server = Server(ds.server, rdb=ds.path)
    proc = server.start()
    try:
        deadline = time.monotonic() + timeout
        while True:
            m = _LOADED.search(server.log_text())
            if m:
                break
            if proc.poll() is not None:
                raise RunFailedError(f"server exited {proc.returncode}: {server.log_text()[-300:]}")
            if "Ready to accept connections" in server.log_text():
                raise RunFailedError("server ready without a 'DB loaded from disk' line")
            if time.monotonic() > deadline:
                raise RunTimeoutError(f"not loaded after {timeout:.0f} s")
            time.sleep(0.02)
        rss_kb = 0
        with open(f"/proc/{proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    rss_kb = int(line.split()[1])
        return Measurement(float(m.group(1)), rss_kb)
    finally:
        server.stop()


@dataclass
class Contender:
    name: str
    description: str
    # argv for a dataset, or None when the contender does not apply to it
    argv: Callable[[Dataset], list[str] | None] | None = None
    decodes_entries: bool = False  # stream entries/s is meaningful
    note: str = ""
    custom: Callable[[Dataset, float], Measurement] | None = None
    not_applicable: str = ""


def measure(c: Contender, ds: Dataset, runs: int, timeout: float, single_run_above: float,
            log: Callable[[str], None]) -> Result:
    res = Result(c.name, ds, note=c.note)
    for i in range(runs):
        try:
            if c.custom is not None:
                m = c.custom(ds, timeout)
            else:
                assert c.argv is not None
                argv = c.argv(ds)
                assert argv is not None
                m = run_process(argv, timeout)
        except RunTimeoutError as err:
            res.status, res.note = "timeout", f"{err}; {c.note}".strip("; ")
            log(f"  {c.name} on {ds.name}: TIMEOUT ({err})")
            return res
        except RunFailedError as err:
            res.status, res.note = "failed", str(err)
            log(f"  {c.name} on {ds.name}: FAILED ({err})")
            return res
        res.walls.append(m.wall)
        res.rss_kb = max(res.rss_kb, m.rss_kb)
        if m.output.strip().startswith("{"):
            counted = json.loads(m.output.strip().splitlines()[-1])
            if c.decodes_entries:
                res.entries = counted.get("entries")
                if res.entries != ds.entries:
                    res.note = f"counted {res.entries} entries, expected {ds.entries}; {res.note}"
        log(f"  {c.name} on {ds.name}: run {i + 1}/{runs} {m.wall:.2f} s, {m.rss_kb / 1024:.0f} MB")
        if m.wall > single_run_above and i == 0 and runs > 1:
            res.note = f"1 run only (first run > {single_run_above:.0f} s); {res.note}".strip("; ")
            break
    if c.decodes_entries and res.entries is None:
        res.entries = ds.entries
    return res


def python() -> str:
    return sys.executable
