"""Reading a live server (issue 31): `python -m bench --live-only`, and part of a plain `python -m bench`
(after the restore into a live server).

rdbspec reads ``redis://host:port`` as FILE: it asks for the server's RDB as a replica does (PSYNC, else
SYNC) and parses it as it arrives (rdbspec/read/arriving.py). Each dump of the content mix
(bench/mix_content.py; ``--quick``: its small files) and the run's stream dump (bench/datasets.py
stream_dump: ``rdb10-1000k``, "the bench's big dump"; ``rdb10-100k`` with ``--quick``) is loaded by
Debian's Redis 7.0 (``/usr/bin/redis-server``) started by the bench on 127.0.0.1 through
``tests/support/servers.py`` (the dump copied into its directory as its dbfilename; one server a dump),
with ``repl-diskless-sync-delay 0`` and active expiry off (``DEBUG SET-ACTIVE-EXPIRE 0``: every run reads
the same keys). Under each form of the full sync the server sends (redis src/replication.c
startBgsaveForReplication), set by ``CONFIG SET repl-diskless-sync``:

* diskless (``yes``): the fork writes the RDB to the socket as it makes it, its length unknown, an end
  mark after it (rdbSaveRioWithEOFMark);
* disk (``no``): the server BGSAVEs to its disk first, then sends ``$<length>`` and the file;

two contenders, each a separate process timed ``--runs`` times by runner.measure (median, spread, peak
RSS of the largest process and of the tree):

* `rdbspec dump redis://127.0.0.1:PORT > /dev/null`;
* `redis-cli -h 127.0.0.1 -p PORT --rdb F && rdbspec dump F > /dev/null`, then F removed: the two steps
  without the live read (F in a temporary directory on the disk of the bench's cache).

librdb's rdb-cli and HDT3213/rdb read files only: they do not run here. rdbspec runs on the native backend
when it is built (RDBSPEC_BACKEND, for both contenders). After the timed runs, one untimed
`rdbspec dump redis://…` of each sync form writes to a pipe: its lines must be those of `rdbspec dump` of
the file the server SAVEs (taken once, before the runs), compared as multisets of lines (the keys' order
is the server's to choose); other lines mark rdbspec's result wrong, out of the targets
(targets.live_time: rdbspec's wall ≤ 1.2× the two steps'; targets.live_rss: its peak RSS ≤ 300 MB; both
on the stream dump).
"""

from __future__ import annotations

import hashlib
import shlex
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import redis

from tests.support.servers import RedisServer, ServerError

from .datasets import Dataset, is_stream_dump
from .mix import ratio_cell, rss_cell, wall_cell
from .report import LIVE_HEADING
from .runner import (
    Contender,
    Result,
    RunFailedError,
    RunOutOfMemoryError,
    RunTimeoutError,
    invalidate,
    measure,
    read_output,
    warm_page_cache,
)
from .server_run import HOST, ServerRun, begin, find_redis_cli, finish
from .targets import (
    LIVE_FACTOR,
    LIVE_OURS,
    LIVE_RSS_TARGET,
    LIVE_SYNCS,
    LIVE_TIME_TARGET,
    LIVE_TWO_STEP,
    RSS_TARGET_MB,
    live_name,
    live_rss,
    live_time,
    verdict,
)

Log = Callable[[str], None]
HEADING = LIVE_HEADING
DISKLESS = {"diskless": "yes", "disk": "no"}  # repl-diskless-sync for each sync form (LIVE_SYNCS)
SERVER_CONFIG = {"repl-diskless-sync-delay": 0}  # the fork starts as soon as a replica asks
LOAD_TIMEOUT = 120.0  # seconds the server may take to load a dump before it answers PING
SHOWN = {LIVE_OURS: "python -m rdbspec dump redis://127.0.0.1:PORT > /dev/null",
         LIVE_TWO_STEP: "redis-cli -h 127.0.0.1 -p PORT --rdb F && python -m rdbspec dump F > /dev/null; rm F"}


def live_read(backend: str, port: int, sync: str) -> Contender:
    """`rdbspec dump redis://127.0.0.1:PORT` to /dev/null."""
    return Contender(live_name(LIVE_OURS, sync), SHOWN[LIVE_OURS],
                     lambda ds: [sys.executable, "-m", "rdbspec", "dump", f"redis://{HOST}:{port}"],
                     backend=backend, discard_stdout=True, group="live")


def two_steps(backend: str, redis_cli: str, port: int, sync: str, rdb: Path) -> Contender:
    """`redis-cli --rdb F && rdbspec dump F`, then F removed, in one shell whose status is the first failure's."""
    take = shlex.join([redis_cli, "-h", HOST, "-p", str(port), "--rdb", str(rdb)])
    read = shlex.join([sys.executable, "-m", "rdbspec", "dump", str(rdb)])
    script = f"{take} && {read}; status=$?; rm -f {shlex.quote(str(rdb))}; exit $status"
    return Contender(live_name(LIVE_TWO_STEP, sync), SHOWN[LIVE_TWO_STEP], lambda ds: ["sh", "-c", script],
                     backend=backend, discard_stdout=True, group="live")


@dataclass(frozen=True)
class Lines:
    """What a command wrote, as a multiset of lines: how many, their bytes (newlines left out) and the sum of
    their SHA-256s modulo 2**256, the same for the same lines in any order."""

    count: int
    size: int
    digest: int

    def differs(self, other: Lines) -> str | None:
        """How these lines differ from `other`'s (the reference), or None when they are the same."""
        if self == other:
            return None
        if self.count == other.count and self.size == other.size:
            return f"other lines ({self.count:,}, as many bytes)"
        return f"{self.count:,} lines ({self.size:,} bytes) against {other.count:,} ({other.size:,} bytes)"


class LineSum:
    """Sums the lines of chunks fed in order (a line may run over several chunks) into `Lines`."""

    def __init__(self) -> None:
        self.count = self.size = self.digest = 0
        self._line = hashlib.sha256()
        self._open = False  # bytes of a line without its newline yet

    def feed(self, chunk: bytes) -> None:
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            self._add(chunk[start:end])
            self._end()
            start = end + 1
        if start < len(chunk):
            self._add(chunk[start:])

    def _add(self, part: bytes) -> None:
        self._line.update(part)
        self.size += len(part)
        self._open = True

    def _end(self) -> None:
        self.digest = (self.digest + int.from_bytes(self._line.digest(), "big")) % (1 << 256)
        self.count += 1
        self._line = hashlib.sha256()
        self._open = False

    def lines(self) -> Lines:
        """The lines so far, a last one without its newline counted."""
        if self._open:
            self._end()
        return Lines(self.count, self.size, self.digest)


def dump_lines(source: str, backend: str, timeout: float) -> Lines:
    """The lines `rdbspec dump SOURCE` writes (a file or a redis:// URL), read from a pipe."""
    total = LineSum()
    read_output([sys.executable, "-m", "rdbspec", "dump", source], timeout, total.feed,
                {"RDBSPEC_BACKEND": backend})
    return total.lines()


@dataclass
class LiveRun(ServerRun):
    """What one run of the live read measured, and how."""

    checks: dict[tuple[str, str], str] = field(default_factory=dict)  # (file, sync) -> what its check found


CheckFailure = (RunTimeoutError, RunOutOfMemoryError, RunFailedError)


def check(got: LiveRun, ds: Dataset, sync: str, url: str, reference: Lines | str, timeout: float) -> None:
    """One untimed live read of `ds` under `sync`, its lines against `reference` (those of the server's SAVE, or
    why they are not known): a difference or a failure marks rdbspec's result wrong."""
    ours = got.get(live_name(LIVE_OURS, sync), ds)
    if ours is None or ours.status != "ok":
        return
    if isinstance(reference, str):
        got.checks[(ds.name, sync)] = f"not checked: {reference}"
        return
    try:
        lines = dump_lines(url, got.backend, timeout)
    except CheckFailure as err:
        got.checks[(ds.name, sync)] = "**check run failed**"
        invalidate(ours, [f"check run: {err}"])
        return
    differs = lines.differs(reference)
    if differs is None:
        got.checks[(ds.name, sync)] = f"the SAVE's lines ({lines.count:,})"
    else:
        got.checks[(ds.name, sync)] = f"**differs**: {differs}"
        invalidate(ours, [f"its output differs from `rdbspec dump` of the server's SAVE: {differs}"])


def read_server(got: LiveRun, ds: Dataset, server: RedisServer, redis_cli: str | None, workdir: Path, runs: int,
                timeout: float, single_run_above: float, log: Log, memory_limit: int | None) -> None:
    """Both contenders on the server loaded with `ds`, under each sync form, and each form's check."""
    assert server.port is not None
    url = f"redis://{HOST}:{server.port}"
    try:
        with server.client(socket_timeout=timeout) as c:
            c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        reference: Lines | str = dump_lines(str(server.save()), got.backend, timeout)
    except (redis.RedisError, OSError, *CheckFailure) as err:
        reference = f"no reference ({str(err)[:200]})"
    for sync in LIVE_SYNCS:
        with server.client(socket_timeout=timeout) as c:
            c.config_set("repl-diskless-sync", DISKLESS[sync])
        contenders = [live_read(got.backend, server.port, sync)]
        if redis_cli is not None:
            contenders.append(two_steps(got.backend, redis_cli, server.port, sync, workdir / f"{ds.name}.rdb"))
        for c in contenders:
            log(f"{c.name} on {ds.name} ({c.description})")
            got.results[(c.name, ds.name)] = measure(c, ds, runs, timeout, single_run_above, log, memory_limit)
        check(got, ds, sync, url, reference, timeout)


def run(files: list[Dataset], runs: int, timeout: float, single_run_above: float, log: Log,
        memory_limit: int | None = None, argv: list[str] | None = None) -> LiveRun:
    """Both contenders on every file, served by a server of its own a file."""
    got = LiveRun([], [], runs=runs, timeout=timeout, argv=argv or [])
    binary = begin(got, "the live read")
    if binary is None:
        finish(got)
        return got
    redis_cli = find_redis_cli(binary)
    got.contenders = [LIVE_OURS] if redis_cli is None else [LIVE_OURS, LIVE_TWO_STEP]
    got.shown = {name: SHOWN[name] for name in got.contenders}
    if redis_cli is None:
        got.notes.append(f"`{LIVE_TWO_STEP}` not run: no redis-cli found")
    with tempfile.TemporaryDirectory(prefix="rdbspec-bench-live-") as workdir:
        for ds in files:
            warm_page_cache(ds.path)
            server = RedisServer(binary, SERVER_CONFIG, rdb=ds.path, start_timeout=LOAD_TIMEOUT)
            try:
                server.start()
            except ServerError as err:
                got.notes.append(f"{ds.name} skipped: the server did not start ({str(err)[:200]})")
                continue
            got.datasets.append(ds)
            try:
                read_server(got, ds, server, redis_cli, Path(workdir), runs, timeout, single_run_above, log,
                            memory_limit)
            finally:
                server.stop()
    finish(got)
    return got


# -- the report ---------------------------------------------------------------------------------


def ratio(ours: Result | None, theirs: Result | None) -> str:
    """rdbspec's wall ÷ the two steps', both valid; over LIVE_FACTOR in bold and marked ✗."""
    text = ratio_cell(ours, theirs)
    if ours is None or theirs is None or text == "—":
        return text
    return f"**{text}** ✗" if ours.median / theirs.median > LIVE_FACTOR else text  # type: ignore[operator]


def table(got: LiveRun) -> list[str]:
    """A row per file and sync form: each contender's wall, the ratio, their peak RSS and the check."""
    two = LIVE_TWO_STEP in got.contenders
    head = ["file", "MB", "sync", LIVE_OURS, *([LIVE_TWO_STEP, "rdbspec ÷ two steps"] if two else []),
            "peak RSS: rdbspec", *(["peak RSS: two steps"] if two else []), "output"]
    lines = ["| " + " | ".join(head) + " |", "|---|---:|---|" + "---:|" * (len(head) - 4) + "---|"]
    for ds in got.datasets:
        for sync in LIVE_SYNCS:
            ours, theirs = got.get(live_name(LIVE_OURS, sync), ds), got.get(live_name(LIVE_TWO_STEP, sync), ds)
            name = f"`{ds.name}`" + (" (stream dump)" if is_stream_dump(ds) else "")
            cells = [name, f"{ds.size / 1e6:,.1f}", sync, wall_cell(ours)]
            cells += [wall_cell(theirs), ratio(ours, theirs)] if two else []
            cells += [rss_cell(ours, True)] + ([rss_cell(theirs, False)] if two else [])
            cells.append(got.checks.get((ds.name, sync), "—"))
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def target_lines(got: LiveRun) -> list[str]:
    """The two targets' verdicts on this run, as the Targets section gives them."""
    out = []
    for text, judge in ((LIVE_TIME_TARGET, live_time), (LIVE_RSS_TARGET, live_rss)):
        measured = judge(got.all_results, got.backend)
        shown = "; ".join(f"{m.file}: {m.text}" for m in measured)
        out.append(f"* Target: {text}, {got.backend} backend: {verdict(measured)}." + (f" {shown}." if shown else ""))
    return out


def _stream_dumps(got: LiveRun) -> str:
    """What the stream dumps of the run hold: "`rdb10-1000k`: one stream of 1,000,000 entries and 200,000 other
    keys, 64.4 MB", or where they are described when none ran."""
    shown = [f"`{ds.name}`: one stream of {ds.entries:,} entries and {ds.keys:,} other keys, {ds.size / 1e6:.1f} MB"
             for ds in got.datasets if is_stream_dump(ds)]
    return "; ".join(shown) or "bench/datasets.py"


def section(got: LiveRun) -> list[str]:
    """The report's live-read section (Markdown lines)."""
    out = [HEADING, "",
           f"{got.ran_by()} Each dump of the content mix (its section above says what each holds) and the stream "
           f"dump of the run's size ({_stream_dumps(got)}) served by {got.server or 'Redis 7.0'} started by the "
           "bench on 127.0.0.1 (tests/support/servers.py), one server a dump loading it as its dbfilename, "
           "`repl-diskless-sync-delay 0`, active expiry off (`DEBUG SET-ACTIVE-EXPIRE 0`: every run reads the "
           "same keys). Each sync form is set by `CONFIG SET repl-diskless-sync`: diskless (`yes`: the fork "
           "writes the RDB to the socket as it makes it, an end mark after it) and disk (`no`: the server "
           "BGSAVEs to its disk, then sends `$<length>` and the file; its BGSAVE is in both walls). "
           f"rdbspec {got.rdbspec} runs on the {got.backend} backend (RDBSPEC_BACKEND={got.backend}) in both "
           "contenders, each a separate process:", ""]
    out += [f"* {name}: `{got.shown[name]}`" for name in got.contenders]
    out += ["", "librdb's rdb-cli and HDT3213/rdb read files only: they do not run here."]
    if not got.datasets or not got.contenders:
        return out + ["", "Nothing read."] + [""] + [f"* {n}" for n in got.notes] + [""]
    out += ["", "### Wall time and peak RSS", "",
            f"Each wall: median of {got.runs} run{'s' if got.runs != 1 else ''} (spread = max − min in brackets; "
            "1 run when the first took longer than --single-run-above), timeout "
            f"{got.timeout:.0f} s a run, from the process's start to its exit. The live read receives the RDB in "
            "one thread and parses it in the process's main thread as it comes; `rdbspec dump F` of the two "
            "steps reads a file, with its default `--jobs` (the cores it may use). redis-cli fsyncs F before "
            "it exits (redis src/redis-cli.c getRDB). Ratio = rdbspec's wall ÷ the two steps' (over "
            f"{LIVE_FACTOR:g}: **bold** ✗). Peak RSS · median wall: GNU time's maximum resident set, that of the "
            "largest single process; Σ = the sampled peak (every 0.1 s) of the RSS summed over the process "
            f"tree, shown when larger; rdbspec's over {RSS_TARGET_MB} MB: **bold** ✗. The server's memory is not "
            "counted. Output: the lines of one more, untimed "
            "`rdbspec dump redis://…` against those of `rdbspec dump` of the file the server SAVEs before the "
            "runs, as multisets of lines; a difference marks rdbspec's result wrong, out of the targets.", ""]
    out += table(got)
    out += ["", *target_lines(got), ""]
    return out + got.closing_lines("wrong output")
