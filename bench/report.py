"""The Markdown report: machine, versions, datasets and the results table."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from .datasets import Dataset, server_version, servers
from .runner import REPO, Result


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


def _secs(x: float | None) -> str:
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


def table(results: list[Result]) -> str:
    base = {r.dataset.name: r.median for r in results if r.contender == "rdbspec full decode" and r.median}
    lines = ["| contender | file | wall (median) | spread | runs | peak RSS MB | MB/s | stream entries/s "
             "| vs rdbspec full | notes |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        size_mb = r.dataset.size / 1e6
        med = r.median
        if r.status in ("skipped",):
            row = [r.contender, r.dataset.name, "n/a", "", "", "", "", "", "", r.note]
        elif r.status != "ok":
            row = [r.contender, r.dataset.name, r.status.upper(), "", "", "", "", "", "", r.note]
        else:
            ratio = f"{med / base[r.dataset.name]:.2f}×" if med and base.get(r.dataset.name) else "—"
            mbs = f"{size_mb / med:.1f}" if med else "—"
            eps = _rate(r.entries, med) if r.entries else "—"
            row = [r.contender, r.dataset.name, _secs(med), _secs(r.spread), str(len(r.walls)),
                   f"{r.rss_kb / 1024:.0f}", mbs, eps, ratio, r.note]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def document(results: list[Result], datasets: list[Dataset], notes: list[str], argv: list[str],
             runs: int, timeout: float) -> str:
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"# rdbspec benchmark ({when})", "", f"Command: `python -m bench {' '.join(argv)}`".rstrip(), "",
             "## Machine", ""]
    parts += [f"* {k}: {v}" for k, v in machine().items()]
    parts += ["", "## Versions", ""]
    parts += [f"* {k}: {v}" for k, v in versions().items()]
    parts += ["", "## Files", ""]
    for ds in datasets:
        parts.append(f"* `{ds.name}`: RDB {ds.rdb_version} written by {ds.server} — {ds.size / 1e6:.1f} MB, "
                     f"one stream of {ds.entries:,} entries (3 fields; SAMEFIELDS and own-field entries) "
                     f"+ {ds.keys:,} keys evenly over strings, lists, sets, zsets and hashes")
    parts += ["", "## Results", "",
              f"Each contender is a separate process; {runs} runs unless noted, timeout {timeout:.0f} s. "
              "Wall = median, spread = max − min; peak RSS = the child's ru_maxrss (redis-server: VmHWM "
              "after loading). \"vs rdbspec full\" = wall ÷ rdbspec full-decode wall on the same file "
              "(> 1 is slower). Stream entries/s only for contenders that decode every entry.", "",
              table(results), ""]
    if notes:
        parts += ["## Notes", ""] + [f"* {n}" for n in notes] + [""]
    return "\n".join(parts)
