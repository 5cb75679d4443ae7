"""Restoring dumps into a live server (issue 30): `python -m bench --restore-only`, and part of a plain
`python -m bench` (after the content mix).

Each dump of the content mix (bench/mix_content.py; ``--quick``: its small files) goes into Debian's
Redis 7.0 (``/usr/bin/redis-server``), started by the bench on 127.0.0.1 through the test suite's
``tests/support/servers.py`` (one server a dump, ``FLUSHALL SYNC`` before every run, untimed). Each
contender is a separate process timed ``--runs`` times by runner.measure (median, spread, peak RSS of
its largest process and of its process tree):

* `rdbspec restore FILE --to redis://127.0.0.1:PORT`: RESTORE with the payloads DUMP writes;
* librdb's `librdb-cli FILE -l /dev/null redis -h 127.0.0.1 -p PORT`: its default, plain commands (SET,
  RPUSH, HSET, XADD...), and the same with ``-r``: RESTORE where it can (../shared/bench-peers, peers.py);
* `rdbspec dump FILE --format resp | redis-cli -h 127.0.0.1 -p PORT --pipe`: the commands rdbspec writes,
  replayed by redis-cli (the pipeline's status is redis-cli's: it exits 1 on an error reply). Only when
  `rdbspec dump --help` lists ``--format`` with ``resp``; otherwise a note says why it did not run.

rdbspec runs on the native backend when it is built (RDBSPEC_BACKEND), as in the mix. After each run
the server's keys (INFO keyspace, every database) are counted: they must be the dump's keys less those
expired by then (the dump's expiry times are read once with rdbspec; a key expiring during the run may
be there or not). A run that leaves any other count marks its contender's result wrong: shown as such,
left out of the ratio and of the target (targets.restore_rate: rdbspec's keys/s ≥ librdb's plain
commands' on every mix dump).
"""

from __future__ import annotations

import bisect
import json
import math
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import redis

from tests.support.servers import RedisServer, ServerError

from .contenders import dump_help
from .datasets import Dataset, read_build_info
from .mix import option_help
from .mix_content import MIX_FIELDS
from .peers import PEERS_ENV, peers_dir
from .report import RESTORE_HEADING, mb, seconds
from .runner import (
    REPO,
    Contender,
    Measurement,
    Result,
    RunFailedError,
    invalidate,
    measure,
    run_process,
    warm_page_cache,
)
from .server_run import HOST, ServerRun, begin, find_redis_cli, finish
from .targets import (
    RESTORE_LIBRDB,
    RESTORE_LIBRDB_R,
    RESTORE_OURS,
    RESTORE_RESP,
    RESTORE_TARGET,
    keys_per_s,
    rate_text,
    restore_rate,
    restored_keys,
    verdict,
)

Log = Callable[[str], None]
HEADING = RESTORE_HEADING


@dataclass(frozen=True)
class KeyCount:
    """A dump's keys and the expiry times (Unix ms, sorted) of those that have one: how many keys a server
    sent every key holds at a given time."""

    total: int
    expiries: tuple[int, ...]

    def unexpired(self, at_ms: int) -> int:
        """The keys not expired at `at_ms`: the server takes a key for expired once the time is past its expiry."""
        return self.total - bisect.bisect_left(self.expiries, at_ms)


def count_keys(path: Path) -> KeyCount:
    """Every key of the dump at `path` and its expiry, read with rdbspec (keys only, values skipped)."""
    import rdbspec.read.dumpfile as api

    total, expiries = 0, []
    with api.open(path) as d:
        for k in d.keys():
            total += 1
            if k.expire_at_ms is not None:
                expiries.append(k.expire_at_ms)
    return KeyCount(total, tuple(sorted(expiries)))


def server_keys(client: redis.Redis) -> int:
    """The keys the server holds, over every database (INFO keyspace)."""
    return sum(int(db["keys"]) for name, db in client.info("keyspace").items() if name.startswith("db"))


@dataclass(frozen=True)
class Restorer:
    """One way of putting a dump into the server: its command line for a dump and the server's port."""

    name: str
    shown: str  # the command as the report shows it
    argv: Callable[[Path, int], list[str]]  # (dump, port) -> command line
    backend: str | None = None  # rdbspec's (RDBSPEC_BACKEND); None for a peer
    note: str = ""

    @property
    def env(self) -> dict[str, str] | None:
        return {"RDBSPEC_BACKEND": self.backend} if self.backend else None


def rdbspec_restore(backend: str) -> Restorer:
    return Restorer(RESTORE_OURS, "python -m rdbspec restore FILE --to redis://127.0.0.1:PORT",
                    lambda dump, port: [sys.executable, "-m", "rdbspec", "restore", str(dump), "--to",
                                        f"redis://{HOST}:{port}"], backend=backend)


def librdb_restorers(binary: Path) -> list[Restorer]:
    """librdb's rdb-cli writing into the server: plain commands (its default) and RESTORE (-r)."""
    def argv(restore: bool) -> Callable[[Path, int], list[str]]:
        return lambda dump, port: [str(binary), str(dump), "-l", os.devnull, "redis", *(["-r"] if restore else []),
                                   "-h", HOST, "-p", str(port)]

    return [Restorer(RESTORE_LIBRDB, "librdb-cli FILE -l /dev/null redis -h 127.0.0.1 -p PORT", argv(False),
                     note="plain commands"),
            Restorer(RESTORE_LIBRDB_R, "librdb-cli FILE -l /dev/null redis -r -h 127.0.0.1 -p PORT", argv(True),
                     note="RESTORE where it can")]


def resp_pipe(backend: str, redis_cli: str) -> Restorer:
    """`rdbspec dump FILE --format resp | redis-cli --pipe` in bash with pipefail: either side failing fails
    the run; redis-cli's report (errors, replies) goes to stderr, where a failure's message is taken from."""
    def argv(dump: Path, port: int) -> list[str]:
        ours = shlex.join([sys.executable, "-m", "rdbspec", "dump", str(dump), "--format", "resp"])
        theirs = shlex.join([redis_cli, "-h", HOST, "-p", str(port), "--pipe"])
        return ["bash", "-c", f"set -o pipefail; {ours} | {theirs} >&2"]

    return Restorer(RESTORE_RESP, "python -m rdbspec dump FILE --format resp | redis-cli -h 127.0.0.1 -p PORT --pipe",
                    argv, backend=backend)


def dump_writes_resp(help_text: str) -> bool:
    """Whether `rdbspec dump --help` lists --format with a resp choice."""
    shown = option_help(help_text, "--format")
    return shown is not None and re.search(r"\bresp\b", shown) is not None


def restore_help() -> str | None:
    """None when `python -m rdbspec restore --help` works here, else why not."""
    proc = subprocess.run([sys.executable, "-m", "rdbspec", "restore", "--help"], capture_output=True, text=True,
                          cwd=REPO, timeout=60)
    return None if proc.returncode == 0 else (proc.stderr.strip().splitlines() or ["failed"])[-1][:200]


def restorers(backend: str, restore_why: str | None, dump_text: str, redis_cli: str | None,
              peers: Path) -> tuple[list[Restorer], list[str]]:
    """The contenders that can run here, in the report's order, and a note for each one that cannot:
    `restore_why` (why `rdbspec restore` does not run, or None), `dump_text` (`rdbspec dump --help`, "" when
    it fails), `redis_cli` (its path, or None) and `peers` (the directory of librdb-cli)."""
    out: list[Restorer] = []
    notes: list[str] = []
    if restore_why is None:
        out.append(rdbspec_restore(backend))
    else:
        notes.append(f"{RESTORE_OURS} skipped: `python -m rdbspec restore` fails here ({restore_why})")
    librdb = peers / "librdb-cli"
    if os.access(librdb, os.X_OK):
        out += librdb_restorers(librdb)
    else:
        notes.append(f"librdb skipped: no executable {librdb} (set {PEERS_ENV} to the directory holding librdb-cli)")
    if not dump_writes_resp(dump_text):
        notes.append(f"`{RESTORE_RESP}` not run: this rdbspec's `dump --help` lists no `--format resp`")
    elif redis_cli is None:
        notes.append(f"`{RESTORE_RESP}` not run: no redis-cli found")
    else:
        out.append(resp_pipe(backend, redis_cli))
    return out, notes


def timed_run(r: Restorer, flush: Callable[[float], None], held: Callable[[float], int], counts: KeyCount,
              port: int, memory_limit: int | None) -> Callable[[Dataset, float], Measurement]:
    """One run of `r` as runner.measure calls it: `flush` empties the server (untimed), then the process
    runs (timed), then `held` counts the server's keys. What it counted goes in the measurement's output
    as the JSON line measure reads: the keys held and the range expected (the dump's keys not expired at
    the run's end, at its start)."""
    def run(ds: Dataset, timeout: float) -> Measurement:
        try:
            flush(timeout)
        except (redis.RedisError, OSError) as err:
            raise RunFailedError(f"emptying the server: {err}") from err
        start = time.time()
        m = run_process(r.argv(ds.path, port), timeout, memory_limit=memory_limit, env=r.env, discard_stdout=True)
        try:
            keys = held(timeout)
        except (redis.RedisError, OSError) as err:
            raise RunFailedError(f"counting the server's keys: {err}") from err
        end = time.time()
        m.output = json.dumps({"keys": keys, "expected_low": counts.unexpired(math.ceil(end * 1000) + 1),
                               "expected_high": counts.unexpired(math.floor(start * 1000))})
        return m

    return run


def wrong_counts(res: Result, total: int) -> list[str]:
    """A line for each run that left the server with keys other than the dump's unexpired ones."""
    out = []
    for i, e in enumerate(res.extras, 1):
        keys, low, high = (int(str(e[k])) for k in ("keys", "expected_low", "expected_high"))
        if not low <= keys <= high:
            expected = f"{low:,}" if low == high else f"{low:,} to {high:,}"
            out.append(f"run {i}: the server held {keys:,} keys, expected {expected} (the dump's {total:,} "
                       "less those expired)")
    return out


def server_session(binary: Path) -> tuple[RedisServer, Callable[[float], None], Callable[[float], int]]:
    """A server (not started) and its flush and key count, each with a socket timeout."""
    server = RedisServer(binary)

    def flush(timeout: float) -> None:
        with server.client(socket_timeout=timeout) as c:
            c.execute_command("FLUSHALL", "SYNC")
            left = server_keys(c)
        if left:
            raise RunFailedError(f"FLUSHALL SYNC left {left} keys")

    def held(timeout: float) -> int:
        with server.client(socket_timeout=timeout) as c:
            return server_keys(c)

    return server, flush, held


@dataclass
class RestoreRun(ServerRun):
    """What one run of the restore section measured, and how."""

    expired: dict[str, int] = field(default_factory=dict)  # file -> its keys already expired when its runs began


def run(files: list[Dataset], runs: int, timeout: float, single_run_above: float, log: Log,
        memory_limit: int | None = None, argv: list[str] | None = None) -> RestoreRun:
    """Every contender on every file, into a server of its own a file."""
    got = RestoreRun([], [], runs=runs, timeout=timeout, argv=argv or [])
    binary = begin(got, "restore")
    if binary is None:
        finish(got)
        return got
    why, help_text = dump_help()
    contenders, notes = restorers(got.backend, restore_help(), help_text if why is None else "",
                                  find_redis_cli(binary), peers_dir())
    got.notes += notes
    got.contenders = [c.name for c in contenders]
    got.shown = {c.name: c.shown for c in contenders}
    for ds in files:
        counts = count_keys(ds.path)
        if counts.total != ds.keys + ds.streams:
            got.notes.append(f"{ds.name}: rdbspec reads {counts.total:,} keys, its build record says "
                             f"{ds.keys + ds.streams:,}")
        got.expired[ds.name] = counts.total - counts.unexpired(int(time.time() * 1000))
        got.datasets.append(ds)
        warm_page_cache(ds.path)
        server, flush, held = server_session(binary)
        try:
            server.start()
        except ServerError as err:
            got.notes.append(f"{ds.name} skipped: the server did not start ({str(err)[:200]})")
            continue
        assert server.port is not None
        try:
            for r in contenders:
                c = Contender(r.name, r.shown, custom=timed_run(r, flush, held, counts, server.port, memory_limit),
                              note=r.note, reports=True, group="restore", backend=r.backend)
                log(f"{r.name} on {ds.name} ({r.shown})")
                res = measure(c, ds, runs, timeout, single_run_above, log)
                invalidate(res, wrong_counts(res, counts.total))
                got.results[(r.name, ds.name)] = res
        finally:
            server.stop()
    finish(got)
    return got


# -- the report ---------------------------------------------------------------------------------


def _cell(r: Result | None) -> str:
    """Median wall (spread) · keys/s, or what stopped it, or the keys of a run that left the server wrong."""
    if r is None:
        return "—"
    if r.status != "ok":
        return r.status.upper()
    spread = f" ({seconds(r.spread)})" if r.spread is not None else ""
    keys = restored_keys(r)
    if r.invalid:
        return f"**wrong**: {keys:,} keys · {seconds(r.median)}" if keys is not None else "**wrong**"
    per_s = keys_per_s(r)
    return f"{seconds(r.median)}{spread} · {rate_text(per_s) if per_s is not None else '—'} keys/s"


def _ratio(ours: Result | None, theirs: Result | None) -> str:
    """rdbspec's keys/s ÷ librdb's, both valid."""
    if ours is None or theirs is None or not ours.valid or not theirs.valid:
        return "—"
    a, b = keys_per_s(ours), keys_per_s(theirs)
    return f"{a / b:.2f}×" if a and b else "—"


def _rss(r: Result | None) -> str:
    """Peak RSS of the largest process (GNU time), the tree's sampled sum when larger, and the median wall."""
    if r is None:
        return "—"
    if r.status != "ok":
        return r.status.upper()
    tree = f" (Σ {mb(r.tree_kb)})" if r.tree_kb // 1024 > r.rss_kb // 1024 else ""
    return f"{f'{mb(r.rss_kb)} MB' if r.rss_kb else '—'}{tree} · {seconds(r.median)}"


def _keys(got: RestoreRun, ds: Dataset) -> str:
    info = read_build_info(ds.path, MIX_FIELDS)
    total = info["keys"] + info["streams"] if info else ds.keys + ds.streams
    expired = got.expired.get(ds.name, 0)
    return f"{total:,}" + (f" ({expired:,} expired)" if expired else "")


def wall_table(got: RestoreRun) -> list[str]:
    """Per file: each contender's wall and keys/s, and rdbspec restore's keys/s ÷ librdb's (plain commands)."""
    ratio = RESTORE_OURS in got.contenders and RESTORE_LIBRDB in got.contenders
    head = ["file", "MB", "keys", "elements", *got.contenders]
    head += [f"{RESTORE_OURS} ÷ {RESTORE_LIBRDB} (keys/s)"] if ratio else []
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for ds in got.datasets:
        info = read_build_info(ds.path, MIX_FIELDS)
        cells = [f"`{ds.name}`", f"{ds.size / 1e6:,.1f}", _keys(got, ds), f"{info['elements']:,}" if info else "—"]
        cells += [_cell(got.get(c, ds)) for c in got.contenders]
        if ratio:
            cells.append(_ratio(got.get(RESTORE_OURS, ds), got.get(RESTORE_LIBRDB, ds)))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def rss_table(got: RestoreRun) -> list[str]:
    head = ["file", *got.contenders]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for ds in got.datasets:
        lines.append("| " + " | ".join([f"`{ds.name}`"] + [_rss(got.get(c, ds)) for c in got.contenders]) + " |")
    return lines


def target_lines(got: RestoreRun) -> list[str]:
    """The target's verdict on this run, as the Targets section gives it."""
    measured = restore_rate(got.all_results, got.backend)
    shown = "; ".join(f"{m.file}: {m.text}" for m in measured) or "—"
    return [f"Target: {RESTORE_TARGET}, {got.backend} backend: {verdict(measured)}. {shown}."]


def section(got: RestoreRun) -> list[str]:
    """The report's restore section (Markdown lines)."""
    out = [HEADING, "",
           f"{got.ran_by()} Each dump of the content mix (its section above says "
           f"what each holds) restored into {got.server or 'Redis 7.0'} started by the bench on 127.0.0.1 "
           "(tests/support/servers.py: no persistence), one server a dump, emptied by `FLUSHALL SYNC` before "
           f"every run (untimed). rdbspec {got.rdbspec} runs on the {got.backend} backend "
           f"(RDBSPEC_BACKEND={got.backend}). "
           "The contenders, each a separate process:", ""]
    out += [f"* {name}: `{got.shown[name]}`" for name in got.contenders]
    if not got.datasets or not got.contenders:
        return out + ["", "Nothing restored."] + [""] + [f"* {n}" for n in got.notes] + [""]
    out += ["", "### Wall time and keys/s", "",
            f"Each cell: median of {got.runs} run{'s' if got.runs != 1 else ''} (spread = max − min in brackets; "
            "1 run when the first took longer than --single-run-above) · keys/s = the keys the server held after "
            f"the run ÷ that median; timeout {got.timeout:.0f} s a run. The wall runs from the process's start to "
            "its exit, the server having answered every command. After each run the server's keys (INFO "
            "keyspace) are counted: they must be the dump's keys less those expired by then (keys: the dump's, "
            "and how many of them had expired when its runs began); a contender that leaves any other count is "
            "marked **wrong** with the keys it left, and is out of the ratio and the target. Ratio: rdbspec's "
            "keys/s ÷ librdb's with plain commands (≥ 1: rdbspec restores faster).", ""]
    out += wall_table(got)
    out += ["", "### Peak RSS", "",
            "Each cell: peak RSS · median wall. Peak RSS = GNU time's maximum resident set, that of the largest "
            "single process (for the pipe: the larger of `rdbspec dump` and redis-cli); Σ = the sampled peak "
            "(every 0.1 s) of the RSS summed over the process tree, shown when larger. The server's memory is "
            "not counted.", ""]
    out += rss_table(got)
    out += ["", *target_lines(got), ""]
    return out + got.closing_lines("wrong key count")
