"""The contenders and how each one is started."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from .datasets import Dataset
from .runner import REPO, Contender, run_redis_load
from .workloads import KAITAI_BUILD

SPEC_DIR = REPO / "spec"
KSC = REPO / "tests" / "conformance" / "ksc.js"


def _workload(name: str) -> Callable[[Dataset], list[str]]:
    return lambda ds: [sys.executable, "-m", "bench.workloads", name, str(ds.path)]


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


def cli_dump_available() -> str | None:
    """None when `python -m rdbspec dump` works, else why not."""
    proc = subprocess.run([sys.executable, "-m", "rdbspec", "dump", "--help"], capture_output=True, text=True,
                          cwd=REPO, timeout=60)
    if proc.returncode != 0:
        return (proc.stderr.strip().splitlines() or ["failed"])[-1][:200]
    return None


def rdbtools_binary() -> str | None:
    candidate = Path(sys.executable).parent / "rdb"
    return str(candidate) if candidate.is_file() else shutil.which("rdb")


def contenders(log: Callable[[str], None]) -> tuple[list[Contender], list[str]]:
    """The contenders in table order, and notes on the ones that cannot run here."""
    notes: list[str] = []
    out = [
        Contender("rdbspec full decode", "api.open(path); k.value for every key", _workload("rdbspec-full"),
                  decodes_entries=True),
        Contender("rdbspec keys only", "for k in d.keys(): pass (values skipped)", _workload("rdbspec-keys"),
                  note="values not decoded"),
        Contender("rdbspec stream only", "decodes only the stream key's value", _workload("rdbspec-stream"),
                  decodes_entries=True, note="other values skipped"),
    ]
    why = cli_dump_available()
    if why is None:
        out.append(Contender("rdbspec dump CLI", "python -m rdbspec dump FILE -o /dev/null",
                             lambda ds: [sys.executable, "-m", "rdbspec", "dump", str(ds.path), "-o", "/dev/null"],
                             decodes_entries=True))
    else:
        notes.append(f"rdbspec dump CLI skipped: `python -m rdbspec dump` fails here ({why}).")
    why = compile_official(log)
    if why is None:
        out.append(Contender("official Kaitai (Python)", "ksc 0.11 Python output of spec/*.ksy, kaitaistruct",
                             _workload("kaitai-official"), decodes_entries=True))
    else:
        notes.append(f"official Kaitai Python skipped: {why}.")
    rdb = rdbtools_binary()
    if rdb is not None:
        out.append(Contender("rdbtools", "rdb --command json FILE > /dev/null",
                             lambda ds: [rdb, "--command", "json", str(ds.path)] if ds.rdb_version <= 9 else None,
                             note="node listpacks read as raw strings, stream entries not decoded",
                             not_applicable="reads RDB <= 9 only"))
    else:
        notes.append("rdbtools skipped: the `rdb` command is not installed.")
    out.append(Contender("redis-server load", "the server that wrote the dump, loading it at startup",
                         custom=run_redis_load,
                         note="server's own 'DB loaded from disk' time; keeps node listpacks as blobs"))
    out.append(Contender("cat (floor)", "cat FILE > /dev/null (page cache warm)",
                         lambda ds: ["cat", str(ds.path)]))
    return out, notes
