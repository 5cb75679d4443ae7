"""A dump over 4 GiB read by every command (issue 32, part 3): `python -m bench.large`, `make test-large`.

Not part of `make test`: it needs ~25 GB of free disk (the dump, then one command's output at a time) and
~8 GB of RAM (the server holding the data set), and takes ~20 minutes. The dump is written by Debian's
redis-server 7.0 (RDB 10, `rdbcompression yes`, `rdbchecksum yes`) from:

* database 0: `big:text`, one string of 4,400,000,003 random base64 characters (past 2^32: its length is
  stored as a 64-bit RDB length, and what follows it lies past 4 GiB); `big:bin:0..2`, three strings of
  256 MiB of random bytes (written by `rdbspec dump` as {"hex": ...}); 1,000,000 small strings (DEBUG
  POPULATE). Random data: LZF does not shrink it, so the server stores it raw;
* database 1, after all of database 0 in the file (past 4 GiB): `list:big`, one list of 10,000,000
  elements; `stream:big`, one stream of 5,000,000 entries with two consumer groups (one with two
  consumers and entries pending); 100,000 small strings.

Each command runs as its own process (bench.runner.run_process: wall time, peak RSS by GNU time and by
sampling the process tree), on the native backend, its output written to a file beside the dump and
checked against what the server answered before it saved (DBSIZE per database, XLEN, LLEN, STRLEN, the
first and last bytes of the big strings, XRANGE, XREVRANGE, XREAD, XPENDING, XINFO GROUPS as redis-cli
prints them), then removed:

* `info`, `keys`, `keys --memory --top`, `dump` (every line's key and length, the big strings' text and
  hex ends, the list's elements and the stream's entries counted in their lines), `prefixes` (also with
  --jobs 1), `report --json` and its HTML page, the stream commands;
* `rewrite` (the output, over 4 GiB too, compared with the dump byte for byte and loaded by redis-server
  7.0, which must answer the same DBSIZE, XLEN, LLEN, STRLEN and DEBUG DIGEST), `restore` into a fresh
  redis-server 7.0 (which must answer the same), `split` of each database into three nodes (each node's
  file read back by `rdbspec info`);
* Spark (`python -m bench.large spark FILE`: local[2], tables keys, streams, stream_entries and files);
  the JVM, its Python workers and the driver's Python are reported apart.

A command over RSS_TARGET_MB in any one process, or any answer that differs, fails the run (exit 1).
The report goes to bench/results/large.md. The dump is removed at the end unless --keep (then a later run
reuses it); --scale builds a smaller data set of the same shape (a trial of the script: not past 4 GiB
below ~0.98).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from tests.support.binaries import DEBIAN_REDIS_SERVER, debian_binary

from .datasets import CACHE_DIR, Server, server_version
from .report import finished_stamp, machine
from .runner import Measurement, RunFailedError, RunTimeoutError, python, run_process
from .spark_memory import workers
from .targets import RSS_TARGET_MB

RESULTS = Path(__file__).resolve().parent / "results" / "large.md"
DUMP = CACHE_DIR / "large-5g.rdb"
TEXT_KEY, BINARY_KEYS = "big:text", ("big:bin:0", "big:bin:1", "big:bin:2")
LIST_KEY, STREAM_KEY = "list:big", "stream:big"
TEXT_BYTES, BINARY_BYTES = 4_400_000_003, 256 << 20
SMALL_KEYS = (1_000_000, 100_000)  # DEBUG POPULATE in databases 0 and 1
LIST_ITEMS, STREAM_ENTRIES = 10_000_000, 5_000_000
GROUP_READS = (("g1", "alice", 60_000), ("g1", "bob", 40_000))  # XREADGROUP COUNT n, in turn
ACKED = 30_000  # the first entries alice read, acknowledged
FIRST_MS = 1_700_000_000_000  # entry i of the stream has the ID FIRST_MS + i - 0
PIECE = 64 << 20  # bytes a SETRANGE sends
BATCH = 500_000  # list elements or stream entries a script adds
SAMPLE = 64  # the bytes of each big string's ends the checks compare
PAST_32_BITS = 1 << 32
TIMEOUT = 3600.0  # seconds a command may take
REDIS_CLI = "/usr/bin/redis-cli"
# every server here: DEBUG (POPULATE, DIGEST) allowed, and strings up to 8 GB (SETRANGE, APPEND)
SERVER_OPTIONS = ("--enable-debug-command", "yes", "--proto-max-bulk-len", "8gb")
# what a server that loaded or was restored the dump must answer as the source did (`server_facts`)
COMPARED = ("dbsize", "strings", "llen", "xlen", "stream", "pending", "digest")

Log = Callable[[str], None]

# Lua, run by the server: BATCH list elements or stream entries at a time (one round trip each)
PUSH = """local n, first = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = {}
for i = first, first + n - 1 do
  t[#t + 1] = string.format('L%d:%s', i, ARGV[3])
  if #t == 1000 then redis.call('RPUSH', KEYS[1], unpack(t)); t = {} end
end
if #t > 0 then redis.call('RPUSH', KEYS[1], unpack(t)) end
return redis.call('LLEN', KEYS[1])"""
ADD = """local n, first, ms = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
for i = first, first + n - 1 do
  redis.call('XADD', KEYS[1], string.format('%d-0', ms + i), 'sensor', 's' .. (i % 500),
             'reading', tostring(i * 7 % 1000))
end
return redis.call('XLEN', KEYS[1])"""
ACK = """local n, ms = tonumber(ARGV[1]), tonumber(ARGV[2])
for i = 0, n - 1 do redis.call('XACK', KEYS[1], ARGV[3], string.format('%d-0', ms + i)) end
return 1"""

# the stream commands compared with redis-cli's answers: (rdbspec's arguments, FILE where the dump goes;
# the server's command)
FILE = "FILE"
STREAM_COMMANDS = [
    (("xrange", FILE, STREAM_KEY, "-", "+", "COUNT", "10"), ("XRANGE", STREAM_KEY, "-", "+", "COUNT", "10")),
    (("xrevrange", FILE, STREAM_KEY, "+", "-", "COUNT", "10"), ("XREVRANGE", STREAM_KEY, "+", "-", "COUNT", "10")),
    (("xread", FILE, "--count", "10", STREAM_KEY, "0"), ("XREAD", "COUNT", "10", "STREAMS", STREAM_KEY, "0")),
    (("xpending", FILE, STREAM_KEY, "g1"), ("XPENDING", STREAM_KEY, "g1")),
    (("xinfo", "groups", FILE, STREAM_KEY), ("XINFO", "GROUPS", STREAM_KEY)),
]


@dataclass
class Scale:
    """The data set's sizes, `factor` times the full one's."""

    factor: float = 1.0

    def __call__(self, n: int) -> int:
        return max(1, int(n * self.factor))


# -- the dump ---------------------------------------------------------------------------------------


def _fill_string(c: redis.Redis, key: str, size: int, piece: Callable[[int], bytes]) -> None:
    """`key` of `size` bytes, allocated once (SETRANGE at its last byte), then written PIECE bytes at a time."""
    c.setrange(key, size - 1, b"\0")
    for at in range(0, size, PIECE):
        c.setrange(key, at, piece(min(PIECE, size - at)))


def _base64(n: int) -> bytes:
    return base64.b64encode(os.urandom(n // 4 * 3 + 3))[:n]


def _redis_cli(port: int, db: int, command: tuple[str, ...]) -> str:
    """What redis-cli prints for `command` (its formatted output, as on a terminal)."""
    return subprocess.run([REDIS_CLI, "-p", str(port), "-n", str(db), "--no-raw", *command], check=True,
                          capture_output=True, text=True, timeout=600).stdout


def _stream_facts(c: redis.Redis) -> dict[str, Any]:
    info = c.xinfo_stream(STREAM_KEY)
    return {"length": info["length"], "last-generated-id": info["last-generated-id"].decode(),
            "entries-added": info["entries-added"], "groups": info["groups"],
            "first-entry": info["first-entry"][0].decode(), "last-entry": info["last-entry"][0].decode()}


def server_facts(port: int) -> dict[str, Any]:
    """What the server answers about the data set (compared with rdbspec's answers)."""
    db0 = redis.Redis(host="127.0.0.1", port=port, db=0, socket_timeout=3600)
    db1 = redis.Redis(host="127.0.0.1", port=port, db=1, socket_timeout=3600)
    strings = {}
    for key in (TEXT_KEY, *BINARY_KEYS):
        length = db0.strlen(key)
        strings[key] = {"strlen": length, "head": db0.getrange(key, 0, SAMPLE - 1).hex(),
                        "tail": db0.getrange(key, length - SAMPLE, length - 1).hex()}
    return {"dbsize": [db0.dbsize(), db1.dbsize()], "strings": strings, "llen": db1.llen(LIST_KEY),
            "xlen": db1.xlen(STREAM_KEY), "stream": _stream_facts(db1),
            "pending": {g["name"].decode(): g["pending"] for g in db1.xinfo_groups(STREAM_KEY)},
            "digest": db0.execute_command("DEBUG", "DIGEST").decode(),
            "used_memory": int(db0.info("memory")["used_memory"])}


def build(binary: Path, target: Path, scale: Scale, log: Log) -> dict[str, Any]:
    """Fills a fresh server, SAVEs, moves its dump to `target`; returns what the server answered (and the
    build's times), also written beside the dump as `target`.json."""
    server = Server(binary, options=SERVER_OPTIONS)
    server.start()
    t0 = time.monotonic()
    try:
        server.client(timeout=60)  # once it answers
        db0, db1 = (redis.Redis(host="127.0.0.1", port=server.port, db=db, socket_timeout=3600) for db in (0, 1))
        _fill_string(db0, TEXT_KEY, scale(TEXT_BYTES), _base64)
        for key in BINARY_KEYS:
            _fill_string(db0, key, scale(BINARY_BYTES), os.urandom)
        log(f"  strings written, {time.monotonic() - t0:.0f} s")
        db0.execute_command("DEBUG", "POPULATE", scale(SMALL_KEYS[0]), "small", 24)
        db1.execute_command("DEBUG", "POPULATE", scale(SMALL_KEYS[1]), "small1", 24)
        items, entries = scale(LIST_ITEMS), scale(STREAM_ENTRIES)
        for first in range(0, items, BATCH):
            db1.eval(PUSH, 1, LIST_KEY, min(BATCH, items - first), first, "abcdefghij")
        for first in range(0, entries, BATCH):
            db1.eval(ADD, 1, STREAM_KEY, min(BATCH, entries - first), first, FIRST_MS)
        db1.xgroup_create(STREAM_KEY, "g1", id="0")
        db1.xgroup_create(STREAM_KEY, "g2", id="$")
        for group, consumer, count in GROUP_READS:
            db1.xreadgroup(group, consumer, {STREAM_KEY: ">"}, count=scale(count))
        db1.eval(ACK, 1, STREAM_KEY, scale(ACKED), FIRST_MS, "g1")
        t_fill = time.monotonic()
        log(f"  data set written, {t_fill - t0:.0f} s; asking the server about it")
        facts = server_facts(server.port)
        facts["cli"] = [_redis_cli(server.port, 1, command) for _, command in STREAM_COMMANDS]
        t_facts = time.monotonic()
        db0.save()
        t_save = time.monotonic()
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(server.tmp / "dump.rdb", target)
        built = {"server": f"redis-server {server_version(binary)} ({binary})", "size": target.stat().st_size,
                 "scale": scale.factor, "fill_s": round(t_fill - t0, 1), "facts_s": round(t_facts - t_fill, 1),
                 "save_s": round(t_save - t_facts, 1), **facts}
        target.with_suffix(".json").write_text(json.dumps(built, indent=1) + "\n")
        return built
    finally:
        server.stop()


def cached_build(binary: Path, scale: Scale, log: Log) -> dict[str, Any]:
    """The dump's facts: of the dump built before (its .json matching its size and scale), else built now."""
    try:
        built = json.loads(DUMP.with_suffix(".json").read_text())
        if built["size"] == DUMP.stat().st_size and built["scale"] == scale.factor:
            log(f"reusing {DUMP} ({built['size']:,} bytes)")
            return dict(built)
    except (OSError, ValueError, KeyError):
        pass
    log(f"building {DUMP} with {binary} (scale {scale.factor})...")
    t0 = time.monotonic()
    built = build(binary, DUMP, scale, log)
    log(f"  done in {time.monotonic() - t0:.0f} s: {built['size']:,} bytes")
    return built


# -- checking outputs -------------------------------------------------------------------------------


@dataclass
class Line:
    """One line of a JSON Lines file, read a chunk at a time: its first and last bytes, its length
    (without the newline) and how often each pattern occurs in it."""

    head: bytes = b""
    tail: bytes = b""
    length: int = 0
    counts: dict[bytes, int] = field(default_factory=dict)


KEEP = 512  # bytes kept of a line's head and tail
_LINE_KEY = re.compile(rb'^\{"db":(\d+),"key":"((?:[^"\\]|\\.)*)"')


def lines(path: Path, patterns: tuple[bytes, ...], read_size: int = 16 << 20) -> Iterator[Line]:
    """The lines of `path`, each with the counts of `patterns` (patterns that never span a newline nor
    overlap themselves), read `read_size` bytes at a time: a line of any length is never held."""
    line = Line(counts=dict.fromkeys(patterns, 0))
    carry = b""  # the end of the line's bytes so far: a pattern cut by a chunk boundary
    overlap = max(map(len, patterns)) - 1
    with open(path, "rb") as f:
        while chunk := f.read(read_size):
            start = 0
            while start < len(chunk):
                nl = chunk.find(b"\n", start)
                end = len(chunk) if nl < 0 else nl
                part = chunk[start:end]
                window = carry + part
                for p in patterns:
                    line.counts[p] += window.count(p) - carry.count(p)
                carry = window[-overlap:] if overlap else b""
                if len(line.head) < KEEP:
                    line.head += part[:KEEP - len(line.head)]
                line.tail = (line.tail + part)[-KEEP:]
                line.length += len(part)
                if nl < 0:
                    break
                yield line
                line, carry = Line(counts=dict.fromkeys(patterns, 0)), b""
                start = nl + 1
    if line.length:
        yield line


def line_key(line: Line) -> tuple[int, str]:
    match = _LINE_KEY.match(line.head)
    if match is None:
        raise ValueError(f"a line that does not start with its db and key: {line.head[:80]!r}")
    return int(match.group(1)), json.loads(b'"' + match.group(2) + b'"')


class Checks:
    """What differs from the server's answers, said once each."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def equal(self, what: str, got: object, expected: object) -> None:
        if got != expected:
            self.problems.append(f"{what}: {got!r}, the server: {expected!r}")

    def true(self, what: str, ok: bool) -> None:
        if not ok:
            self.problems.append(what)


def check_dump_lines(path: Path, facts: dict[str, Any], checks: Checks) -> str:
    """`rdbspec dump`'s lines: one a key, each database's count, the big strings' lengths and ends, the
    list's elements and the stream's entries."""
    per_db = [0, 0]
    # a list element's text starts with L; an entry is the only object with fields, a group's pending
    # entry the only one with a delivery time
    element, entry, pending = b'"L', b'","fields":[', b'"delivery_time_ms":'
    for line in lines(path, (element, entry, pending)):
        db, key = line_key(line)
        per_db[db] += 1
        strings = facts["strings"]
        if key in strings:
            value_at = line.head.index(b'"value":') + len(b'"value":')
            expected = bytes.fromhex(strings[key]["tail"])
            if key == TEXT_KEY:  # text: base64 needs no escape
                # "value":"TEXT"}
                checks.equal(f"dump: {key}'s text length", line.length - value_at - 3, strings[key]["strlen"])
                checks.equal(f"dump: {key}'s last bytes", line.tail[-2 - SAMPLE:-2], expected)
                checks.equal(f"dump: {key}'s first bytes", line.head[value_at + 1:value_at + 1 + SAMPLE],
                             bytes.fromhex(strings[key]["head"]))
            else:
                # "value":{"hex":"HEX"}}
                checks.equal(f"dump: {key}'s hex length", line.length - value_at - len(b'{"hex":""}}'),
                             2 * strings[key]["strlen"])
                checks.equal(f"dump: {key}'s last bytes", line.tail[-3 - 2 * SAMPLE:-3], expected.hex().encode())
        elif key == LIST_KEY:
            checks.equal("dump: the list's elements", line.counts[element], facts["llen"])
        elif key == STREAM_KEY:
            checks.equal("dump: the stream's entries", line.counts[entry], facts["xlen"])
            checks.equal("dump: the stream's pending entries", line.counts[pending], sum(facts["pending"].values()))
    checks.equal("dump: lines per database", per_db, facts["dbsize"])
    return f"{sum(per_db):,} lines, {path.stat().st_size:,} bytes"


def check_keys(path: Path, facts: dict[str, Any], checks: Checks) -> str:
    rows = [json.loads(line) for line in path.read_bytes().splitlines()]
    checks.equal("keys: rows per database", [sum(r["db"] == db for r in rows) for db in (0, 1)], facts["dbsize"])
    by_key = {r["key"]: r for r in rows if r["key"] in (TEXT_KEY, LIST_KEY, STREAM_KEY)}
    checks.equal("keys: the list's elements", by_key[LIST_KEY]["elements"], facts["llen"])
    checks.equal("keys: the stream's elements", by_key[STREAM_KEY]["elements"], facts["xlen"])
    size = by_key[TEXT_KEY]["size_in_file"]
    # the type byte, the key's length and bytes, the 64-bit length (0x81 and 8 bytes), the text
    expected = 1 + 1 + len(TEXT_KEY) + (9 if facts["strings"][TEXT_KEY]["strlen"] >= PAST_32_BITS else 5) \
        + facts["strings"][TEXT_KEY]["strlen"]
    checks.equal(f"keys: {TEXT_KEY}'s size in the file", size, expected)
    return f"{len(rows):,} rows; {TEXT_KEY} size_in_file {size:,}"


def check_top(path: Path, facts: dict[str, Any], checks: Checks) -> str:
    rows = [json.loads(line) for line in path.read_bytes().splitlines()]
    checks.equal("keys --memory --top 1: the key", rows[0]["key"], TEXT_KEY)
    checks.true(f"keys --memory: {TEXT_KEY}'s memory below its length",
                rows[0]["memory"] >= facts["strings"][TEXT_KEY]["strlen"])
    return f"{TEXT_KEY} memory {rows[0]['memory']:,}"


def check_info(path: Path, facts: dict[str, Any], checks: Checks) -> str:
    info = json.loads(path.read_text())
    checks.equal("info: keys per database", [info["databases"].get(str(db), {}).get("keys") for db in (0, 1)],
                 facts["dbsize"])
    checks.equal("info: checksum", info["checksum"], "ok")
    return f"checksum {info['checksum']}, {info['warnings']} warnings"


def check_prefixes(path: Path, facts: dict[str, Any], checks: Checks) -> str:
    rows = [json.loads(line) for line in path.read_bytes().splitlines()]
    top = [r for r in rows if r["level"] == 1]
    checks.equal("prefixes: keys of the first level's prefixes", sum(r["keys"] for r in top), sum(facts["dbsize"]))
    return f"{len(rows):,} prefixes"


def check_report(path: Path, facts: dict[str, Any], checks: Checks) -> str:
    report = json.loads(path.read_text())
    checks.equal("report: keys", report["totals"]["keys"], sum(facts["dbsize"]))
    checks.equal("report: stream entries", report["streams"]["entries"], facts["xlen"])
    return f"{report['totals']['keys']:,} keys, {report['totals']['size_in_file']:,} bytes in keys"


def check_stream_json(path: Path, facts: dict[str, Any], checks: Checks) -> str:
    got = json.loads(path.read_text())
    expected = facts["stream"]
    checks.equal("xinfo stream", {"length": got["length"], "last-generated-id": got["last-generated-id"],
                                  "entries-added": got["entries-added"], "groups": got["groups"],
                                  "first-entry": got["first-entry"]["id"], "last-entry": got["last-entry"]["id"]},
                 expected)
    return f"length {got['length']:,}"


def check_text(index: int) -> Callable[[Path, dict[str, Any], Checks], str]:
    def check(path: Path, facts: dict[str, Any], checks: Checks) -> str:
        checks.equal(" ".join(STREAM_COMMANDS[index][1][:2]), path.read_text(), facts["cli"][index])
        return "as redis-cli prints it"

    return check


# -- running ------------------------------------------------------------------------------------------


@dataclass
class Run:
    """One command's run: its figures and what it checked."""

    name: str
    wall: float = 0.0
    rss_kb: int = 0  # the largest single process's peak (GNU time, and the sampled VmHWM of each process)
    tree_kb: int = 0  # the sampled peak of the process tree's summed RSS
    processes: int = 0
    note: str = ""
    failed: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _figures(run: Run, m: Measurement) -> None:
    run.wall, run.tree_kb, run.processes = m.wall, m.tree_kb, len(m.processes)
    run.rss_kb = max([m.rss_kb, *(p.hwm_kb for p in m.processes)])


def rdbspec(*args: str) -> list[str]:
    return [python(), "-m", "rdbspec", *args]


def run_command(name: str, argv: list[str], outputs: list[Path], check: Callable[[Path, dict[str, Any], Checks], str]
                | None, facts: dict[str, Any], checks: Checks, log: Log) -> Run:
    """`argv` measured, its first output checked, its outputs removed."""
    run = Run(name)
    log(f"{name}...")
    try:
        _figures(run, run_process(argv, TIMEOUT, env={"RDBSPEC_BACKEND": "native"}, discard_stdout=True))
        if check is not None:
            run.note = check(outputs[0], facts, checks)
    except (RunFailedError, RunTimeoutError, OSError, ValueError, KeyError) as err:
        run.failed = str(err)
        checks.problems.append(f"{name}: {err}")
    finally:
        for out in outputs:
            if out.is_dir():
                shutil.rmtree(out)
            else:
                out.unlink(missing_ok=True)
    log(f"  {run.wall:.1f} s, {run.rss_kb / 1024:.0f} MB{' — ' + run.note if run.note else ''}"
        f"{' FAILED: ' + run.failed if run.failed else ''}")
    return run


def check_rewrite(binary: Path, out: Path, facts: dict[str, Any], checks: Checks, log: Log) -> str:
    """The rewritten dump: compared with the source, read back by `rdbspec info`, loaded by the server."""
    same = subprocess.run(["cmp", "-s", str(DUMP), str(out)], check=False).returncode == 0
    info = subprocess.run(rdbspec("info", "--json", str(out)), check=True, capture_output=True, text=True).stdout
    checks.equal("rewrite: its output's checksum (rdbspec info)", json.loads(info)["checksum"], "ok")
    log("  loading the rewritten dump into redis-server...")
    server = Server(binary, options=[*SERVER_OPTIONS, "--dir", str(out.parent), "--dbfilename", out.name])
    server.start()
    t0 = time.monotonic()
    try:
        server.client(timeout=TIMEOUT)
        loaded_s = time.monotonic() - t0
        got = server_facts(server.port)
    finally:
        server.stop()
    for name in COMPARED:
        checks.equal(f"rewrite: the server's {name} after loading it", got[name], facts[name])
    return (f"{out.stat().st_size:,} bytes, {'identical to' if same else 'not byte for byte'} the source; "
            f"redis-server loaded it in {loaded_s:.0f} s: same DBSIZE, XLEN, LLEN, STRLEN and DEBUG DIGEST")


def restore_run(binary: Path, facts: dict[str, Any], checks: Checks, log: Log) -> Run:
    """`rdbspec restore` into a fresh server (which takes strings as long as the source's), which must
    then answer what the source did."""
    server = Server(binary, options=SERVER_OPTIONS)
    server.start()
    try:
        server.client(timeout=60)
        run = run_command("restore", rdbspec("restore", str(DUMP), "--to", f"redis://127.0.0.1:{server.port}"), [],
                          None, facts, checks, log)
        if not run.failed:
            got = server_facts(server.port)
            for name in COMPARED:
                checks.equal(f"restore: the server's {name}", got[name], facts[name])
            run.note = "the server then answers the same DBSIZE, XLEN, LLEN, STRLEN and DEBUG DIGEST"
    finally:
        server.stop()
    return run


def check_split(directory: Path, db: int, facts: dict[str, Any], checks: Checks) -> str:
    sizes, keys = [], 0
    for node in sorted(directory.glob("node-*.rdb")):
        info = json.loads(subprocess.run(rdbspec("info", "--json", str(node)), check=True, capture_output=True,
                                         text=True).stdout)
        checks.equal(f"split --db {db}: {node.name}'s checksum", info["checksum"], "ok")
        keys += info["databases"].get("0", {}).get("keys", 0)
        sizes.append(node.stat().st_size)
    checks.equal(f"split --db {db}: keys in its nodes", keys, facts["dbsize"][db])
    return f"nodes of {', '.join(f'{s:,}' for s in sizes)} bytes"


def spark_run(facts: dict[str, Any], checks: Checks, log: Log) -> Run:
    run = Run("spark (local[2]): keys, streams, stream_entries, files")
    log(f"{run.name}...")
    try:
        m = run_process([python(), "-m", "bench.large", "spark", str(DUMP)], TIMEOUT, env={"RDBSPEC_BACKEND": "native"})
    except (RunFailedError, RunTimeoutError) as err:
        run.failed = str(err)
        checks.problems.append(f"spark: {err}")
        return run
    got = m.counted()
    run.wall, run.tree_kb, run.processes = m.wall, m.tree_kb, len(m.processes)
    spark_workers = workers(m.processes)
    jvm = [p for p in m.processes if p.command.split(" ", 1)[0].endswith("java")]
    driver = [p for p in m.processes if "bench.large spark" in p.command]
    run.rss_kb = max((w.peak.hwm_kb for w in spark_workers), default=0)  # the Python workers: rdbspec's code
    run.extra = {"jvm_kb": max((p.hwm_kb for p in jvm), default=0), "driver_kb": max((p.hwm_kb for p in driver),
                                                                                      default=0),
                 "workers": len(spark_workers), **got}
    checks.equal("spark keys: rows per database", got["rows_per_db"], facts["dbsize"])
    checks.equal("spark keys: the list's elements", got["list_elements"], facts["llen"])
    checks.equal("spark streams: the stream's length", got["stream_length"], facts["xlen"])
    checks.equal("spark stream_entries: rows", got["entries"], facts["xlen"])
    checks.equal("spark files: checksum", got["checksum"], "ok")
    if facts["size"] > PAST_32_BITS:
        checks.true("spark keys: no offset past 4 GiB", got["offsets_past_4gib"] > 0)
        checks.true("spark keys: the list (database 1) not past 4 GiB", got["list_offset"] >= PAST_32_BITS)
    run.note = (f"{got['partitions']} partitions; keys at offsets past 2^32: {got['offsets_past_4gib']:,} (the "
                f"list's {got['list_offset']:,}), the largest {got['max_offset']:,}; {TEXT_KEY} size_in_file "
                f"{got['text_size']:,}; rows and counts as the server's")
    log(f"  {run.wall:.1f} s; {run.note}")
    return run


def spark_workload(path: str) -> dict[str, Any]:
    """The Spark reads (run in their own process: `python -m bench.large spark FILE`)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import functions as F  # noqa: N812

    from rdbspec.spark.launch import session

    spark = session("local[2]", "rdbspec-large")
    try:
        keys = spark.read.format("rdb").load(path)
        per_db = {r["db"]: r["n"] for r in keys.groupBy("db").agg(F.count("*").alias("n")).collect()}
        past = keys.agg(F.sum((F.col("offset") >= PAST_32_BITS).cast("long")).alias("past"),
                        F.max("offset").alias("max_offset")).collect()[0]
        picked = {r["key_str"]: r for r in keys.filter(F.col("key_str").isin(TEXT_KEY, LIST_KEY)).collect()}
        streams = spark.read.format("rdb").option("table", "streams").load(path).collect()
        entries = spark.read.format("rdb").option("table", "stream_entries").load(path).count()
        files = spark.read.format("rdb").option("table", "files").load(path).collect()
        partitions = keys.rdd.getNumPartitions()
    finally:
        spark.stop()
    return {"rows_per_db": [per_db.get(0, 0), per_db.get(1, 0)], "offsets_past_4gib": past["past"],
            "max_offset": past["max_offset"], "text_size": picked[TEXT_KEY]["size_in_file"],
            "list_elements": picked[LIST_KEY]["elements"], "list_offset": picked[LIST_KEY]["offset"],
            "stream_length": next(s["length"] for s in streams if s["key"] == STREAM_KEY.encode()),
            "entries": entries, "checksum": files[0]["checksum"], "partitions": partitions}


def run_all(binary: Path, facts: dict[str, Any], log: Log) -> tuple[list[Run], Checks]:
    checks = Checks()
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="large-", dir=DUMP.parent) as tmp:
        work = Path(tmp)
        out = work / "out"
        file = str(DUMP)
        plain: list[tuple[str, list[str], Callable[[Path, dict[str, Any], Checks], str]]] = [
            ("info --json", ["info", "--json", file, "-o", str(out)], check_info),
            ("keys", ["keys", file, "-o", str(out)], check_keys),
            ("keys --memory --top 1", ["keys", "--memory", "--top", "1", file, "-o", str(out)], check_top),
            ("dump", ["dump", file, "-o", str(out)], check_dump_lines),
            ("prefixes", ["prefixes", file, "-o", str(out)], check_prefixes),
            ("prefixes --jobs 1", ["prefixes", "--jobs", "1", file, "-o", str(out)], check_prefixes),
            ("report --json", ["report", "--json", file, "-o", str(out)], check_report),
            ("report (HTML)", ["report", file, "-o", str(out)], lambda *_: "written"),
            ("xinfo stream --json", ["xinfo", "stream", file, STREAM_KEY, "--db", "1", "--json", "-o", str(out)],
             check_stream_json),
        ]
        for i, (args, _) in enumerate(STREAM_COMMANDS):
            shown = " ".join(a for a in args if a != FILE)
            plain.append((shown, [file if a == FILE else a for a in args] + ["--db", "1", "-o", str(out)],
                          check_text(i)))
        for name, args, check in plain:
            runs.append(run_command(name, rdbspec(*args), [out], check, facts, checks, log))
        rewritten = work / "rewrite.rdb"
        run = run_command("rewrite", rdbspec("rewrite", file, "-o", str(rewritten)), [], None, facts, checks, log)
        if not run.failed:
            try:
                run.note = check_rewrite(binary, rewritten, facts, checks, log)
            finally:
                rewritten.unlink(missing_ok=True)
        runs.append(run)
        runs.append(restore_run(binary, facts, checks, log))
        for db in (0, 1):
            nodes = work / f"split-{db}"
            slots = ["0-5460", "5461-10922", "10923-16383"]
            runs.append(run_command(f"split --db {db} (3 nodes)",
                                    rdbspec("split", file, "--db", str(db), "-o", str(nodes), "--slots", *slots),
                                    [nodes], lambda path, f, c, db=db: check_split(path, db, f, c), facts, checks, log))
        runs.append(spark_run(facts, checks, log))
    return runs, checks


# -- the report ---------------------------------------------------------------------------------------


def report(runs: list[Run], checks: Checks, facts: dict[str, Any], argv: list[str]) -> str:
    size = facts["size"]
    lines = [
        "# rdbspec on a dump over 4 GiB", "",
        f"Run by `{' '.join(['python -m bench.large', *argv])}`, finished {finished_stamp()}. "
        f"Machine: {', '.join(f'{k} {v}' for k, v in machine().items() if k != 'load average at report time')}.", "",
        f"The dump: {size:,} bytes ({size / 2**30:.2f} GiB), written by {facts['server']} (bench/large.py; "
        f"filled in {facts['fill_s']} s, SAVE {facts['save_s']} s, server memory "
        f"{facts['used_memory'] / 2**30:.2f} GiB). "
        f"The server's answers before SAVE: DBSIZE {facts['dbsize'][0]:,} (db 0) and {facts['dbsize'][1]:,} (db 1); "
        f"STRLEN {TEXT_KEY} {facts['strings'][TEXT_KEY]['strlen']:,}, "
        + ", ".join(f"{k} {facts['strings'][k]['strlen']:,}" for k in BINARY_KEYS)
        + f"; LLEN {LIST_KEY} {facts['llen']:,}; XLEN {STREAM_KEY} {facts['xlen']:,} "
        f"(pending: {', '.join(f'{g} {n:,}' for g, n in facts['pending'].items())}).", "",
        f"Each command ran once as its own process on the native backend (its default --jobs where it has one: "
        f"the usable cores), output to a file beside the dump, checked, removed. Peak RSS: the largest single "
        f"process of the command's tree (GNU time's maximum resident set, and the kernel's VmHWM of each process "
        f"sampled every 0.1 s; the touched pages of the mapped dump count in it, released as the read goes); "
        f"Σ: the sampled peak of the tree's RSS summed (worker processes count the pages they share once each). "
        f"Target: {RSS_TARGET_MB} MB per process.", "",
        "| command | wall | peak RSS | Σ tree | processes | checked |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in runs:
        over = r.rss_kb > RSS_TARGET_MB * 1024
        rss = f"**{r.rss_kb / 1024:,.0f} MB ✗**" if over else f"{r.rss_kb / 1024:,.0f} MB"
        checked = r.note if not r.failed else f"FAILED: {r.failed}"
        lines.append(f"| {r.name} | {r.wall:.1f} s | {rss} | {r.tree_kb / 1024:,.0f} MB | {r.processes} | {checked} |")
    spark = next((r for r in runs if r.name.startswith("spark") and r.extra), None)
    if spark is not None:
        lines += ["", f"Spark: peak RSS above is the largest of its {spark.extra['workers']} Python workers (where "
                      f"rdbspec reads); the JVM (driver and executors in local mode, its heap Spark's own) peaked at "
                      f"{spark.extra['jvm_kb'] / 1024:,.0f} MB and the driver's Python at "
                      f"{spark.extra['driver_kb'] / 1024:,.0f} MB; Σ counts them all."]
    lines += ["", "Every answer equal to the server's." if not checks.problems else "Differences:", ""]
    lines += [f"* {p}" for p in checks.problems]
    over = [r.name for r in runs if r.rss_kb > RSS_TARGET_MB * 1024]
    lines.append(f"Over {RSS_TARGET_MB} MB: {', '.join(over)}." if over else
                 f"Every rdbspec process stayed within {RSS_TARGET_MB} MB.")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if argv[:1] == ["spark"]:
        print(json.dumps(spark_workload(argv[1])), flush=True)
        return 0
    p = argparse.ArgumentParser(prog="python -m bench.large", description=__doc__.split("\n\n")[0])
    p.add_argument("--keep", action="store_true", help="keep the dump (bench/cache/large-5g.rdb) for a later run")
    p.add_argument("--scale", type=float, default=1.0, help="the data set's size, times the full one's (a trial)")
    p.add_argument("--output", type=Path, default=RESULTS, help=f"the report (default {RESULTS})")
    args = p.parse_args(argv)
    binary = debian_binary()
    if binary is None:
        print(f"python -m bench.large: {DEBIAN_REDIS_SERVER} is not installed", file=sys.stderr)
        return 1

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    try:
        facts = cached_build(binary, Scale(args.scale), log)
        runs, checks = run_all(binary, facts, log)
    finally:
        if not args.keep:
            DUMP.unlink(missing_ok=True)
            DUMP.with_suffix(".json").unlink(missing_ok=True)
    text = report(runs, checks, facts, argv)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(text)
    log(f"written to {args.output}")
    over = any(r.rss_kb > RSS_TARGET_MB * 1024 for r in runs)
    return 1 if checks.problems or over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
