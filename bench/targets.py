"""The report's "Targets" section: each target of the compiled-backend issue (#14), issue 26's Spark
reader against the floor source, issue 30's restore into a live server against librdb's and issue 31's
read of a live server against redis-cli then rdbspec, per rdbspec backend, with the measured ratio and
whether it is met. Only valid results count (runner.Result.valid: ran to the end and counted every stream
entry; a restore left the server holding the dump's keys; a live read wrote the lines of the server's
SAVE); a target without one says "not measured"."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .contenders import (
    DUMP_CLI,
    FULL_DECODE,
    KEYS_ONLY,
    OFFICIAL,
    REDIS_LOAD,
    SPARK_BASELINE,
    SPARK_CLUSTER_1,
    SPARK_CLUSTER_2,
    SPARK_FLOOR_1,
    SPARK_FLOOR_2,
    SPARK_SPLIT_S3,
    labelled,
)
from .datasets import is_stream_dump
from .peers import PEERS
from .runner import Result

RSS_TARGET_MB = 300  # rdbspec dump's peak RSS, whatever the file size
LOAD_FACTOR_FULL, LOAD_FACTOR_KEYS = 5.0, 2.0  # rdbspec within this many times redis-server's load
SPARK_ROWS_PER_S = 500_000  # stream_entries query rows/s on local[1] (the warm query: see report.py)
SPARK_SPLIT_SPEEDUP = 1.6  # a split file on local[2] against local[1]
SPARK_SPLIT_1, SPARK_SPLIT_2 = "spark local[1] split", "spark local[2] split"
SPARK_FLOOR_SHARE = 0.90  # the rdb source's warm rows/s ÷ the floor source's, on local[1] (issue 26)
SPARK_WORKER_MB = 300  # the peak RSS of each Spark Python worker (issue 26: bench/spark_memory.py)
SPARK_STORE_SHARE = 0.8  # warm stream_entries rows/s from S3 (moto on loopback) ÷ from the file (issue 29)
# The restore's contenders (bench/restore.py, issue 30), as its results name them: rdbspec's against librdb's
# plain commands is the target
RESTORE_OURS = "rdbspec restore"
RESTORE_LIBRDB, RESTORE_LIBRDB_R = "librdb redis", "librdb redis -r"
RESTORE_RESP = "rdbspec dump --format resp → redis-cli --pipe"
# Reading a live server (bench/live.py, issue 31): rdbspec reading the server's RDB as it arrives against
# redis-cli taking it into a file that rdbspec then reads, each under both forms of the server's full sync
LIVE_OURS, LIVE_TWO_STEP = "rdbspec dump redis://", "redis-cli --rdb F, then rdbspec dump F"
LIVE_SYNCS = ("diskless", "disk")  # repl-diskless-sync yes (the RDB ends with a mark) and no ($<length> first)
LIVE_FACTOR = 1.2  # rdbspec's wall within this many times the two steps'


@dataclass
class Measured:
    """One file's figure for a target: what to show and whether it meets the bound (None: no bound)."""

    file: str
    text: str
    met: bool | None


def _by_file(results: list[Result], name: str) -> dict[str, Result]:
    return {r.dataset.name: r for r in results if r.contender == name and r.valid and r.median}


def _pairs(results: list[Result], ours: str, theirs: str) -> list[tuple[str, Result, Result]]:
    """(file, our result, their result) for every file where both are valid."""
    mine, other = _by_file(results, ours), _by_file(results, theirs)
    return [(f, mine[f], other[f]) for f in mine if f in other]


def _ratio(results: list[Result], ours: str, theirs: str, what: str,
           meets: Callable[[float], bool] | None) -> list[Measured]:
    """ours ÷ theirs (wall medians) per file, and whether `meets` says that ratio is good enough."""
    out = []
    for f, a, b in _pairs(results, ours, theirs):
        ratio = a.median / b.median  # type: ignore[operator]
        out.append(Measured(f, f"{ratio:.2f}× ({a.median:.3g} s vs {what} {b.median:.3g} s)",
                            None if meets is None else meets(ratio)))
    return out


def _rss(results: list[Result], ours: str) -> list[Measured]:
    return [Measured(f, f"{r.rss_kb / 1024:,.0f} MB", r.rss_kb / 1024 <= RSS_TARGET_MB)
            for f, r in _by_file(results, ours).items()]


def _spark_rate(results: list[Result], backend: str) -> list[Measured]:
    """rows/s of the warm query (judged) and of the cold one (shown beside it)."""
    out = []
    for f, r in _by_file(results, labelled(SPARK_BASELINE, backend)).items():
        warm, cold = r.extra_median("warm_query_s"), r.extra_median("cold_query_s")
        if warm and r.entries:
            rate = r.entries / warm
            text = f"{rate / 1e3:,.0f}k rows/s warm ({r.entries:,} rows in {warm:.3g} s)"
            if cold:
                text += f"; cold {r.entries / cold / 1e3:,.0f}k rows/s ({cold:.3g} s)"
            out.append(Measured(f, text, rate >= SPARK_ROWS_PER_S))
    return out


def _spark_split(results: list[Result], backend: str) -> list[Measured]:
    """Query time of the split file on local[1] ÷ on local[2], warm (judged) and cold (shown),
    against local[1] unsplit (shown), and the same ratio of the floor source (shown: the most a
    second core gives any reader here)."""
    one, two = _by_file(results, labelled(SPARK_SPLIT_1, backend)), _by_file(results, labelled(SPARK_SPLIT_2, backend))
    unsplit = _by_file(results, labelled(SPARK_BASELINE, backend))
    floor_1, floor_2 = _by_file(results, SPARK_FLOOR_1), _by_file(results, SPARK_FLOOR_2)
    out = []
    for f in one:
        if f not in two:
            continue
        texts, met = [], None
        for query in ("warm_query_s", "cold_query_s"):
            q1, q2 = one[f].extra_median(query), two[f].extra_median(query)
            if not q1 or not q2:
                continue
            text = f"{query.split('_')[0]} {q1 / q2:.2f}× ({q2:.3g} s on local[2] vs {q1:.3g} s on local[1]"
            qu = unsplit[f].extra_median(query) if f in unsplit else None
            texts.append(text + (f"; {qu / q2:.2f}× local[1] unsplit)" if qu else ")"))
            if query == "warm_query_s":
                met = q1 / q2 >= SPARK_SPLIT_SPEEDUP
        f1, f2 = (r[f].extra_median("warm_query_s") if f in r else None for r in (floor_1, floor_2))
        if f1 and f2:
            texts.append(f"floor source warm {f1 / f2:.2f}× ({f2:.3g} s on local[2] vs {f1:.3g} s on local[1])")
        if met is not None:
            out.append(Measured(f, "; ".join(texts), met))
    return out


def _warm_pairs(results: list[Result], first: str, second: str) -> Iterator[tuple[str, int, Result, float, Result,
                                                                                   float]]:
    """(file, rows, first's result, its warm query seconds, second's, its) for every file where both
    read every row and timed a warm query."""
    ones, twos = _by_file(results, first), _by_file(results, second)
    for f, one in ones.items():
        q1, two = one.extra_median("warm_query_s"), twos.get(f)
        q2 = two.extra_median("warm_query_s") if two is not None else None
        if q1 and q2 and one.entries and two is not None:
            yield f, one.entries, one, q1, two, q2


def spark_store_share(results: list[Result], backend: str) -> list[Measured]:
    """Warm rows/s of the split query on local[1] reading the file's copy in S3 ÷ reading the
    file (the same rows: the local query's warm time ÷ the store's)."""
    out = []
    for f, rows, store, q, local, ql in _warm_pairs(results, labelled(SPARK_SPLIT_S3, backend),
                                                    labelled(SPARK_SPLIT_1, backend)):
        cold, cold_local = store.extra_median("cold_query_s"), local.extra_median("cold_query_s")
        out.append(Measured(f, f"{ql / q:.2f} ({rows / q / 1e3:,.0f}k rows/s in {q:.3g} s vs the file's "
                               f"{rows / ql / 1e3:,.0f}k rows/s in {ql:.3g} s; cold {cold:.3g} s vs "
                               f"{cold_local:.3g} s)", ql / q >= SPARK_STORE_SHARE))
    return out


def spark_floor_share(results: list[Result], backend: str) -> list[Measured]:
    """Warm rows/s of the split query on local[1] ÷ the floor source's (same splits and rows, so the
    floor's warm time ÷ ours): how close the reader comes to a source that costs nothing."""
    return [Measured(f, f"{qf / q:.2f} ({rows / q / 1e3:,.0f}k rows/s in {q:.3g} s vs the floor's "
                        f"{rows / qf / 1e3:,.0f}k rows/s in {qf:.3g} s)", qf / q >= SPARK_FLOOR_SHARE)
            for f, rows, _, q, _, qf in _warm_pairs(results, labelled(SPARK_SPLIT_1, backend), SPARK_FLOOR_1)]


def spark_cluster_scaling(results: list[Result], backend: str) -> list[Measured]:
    """Warm rows/s per worker on the standalone cluster of 1 and of 2 one-core workers (same file and
    splits), and the query time on 1 ÷ on 2: the two points docs/spark-scaling.md's model is checked
    against (reported, no bound)."""
    return [Measured(f, f"2 ÷ 1 = {q1 / q2:.2f}× ({rows / q1 / 1e3:,.0f}k rows/s per worker with 1 worker "
                        f"in {q1:.3g} s; {rows / q2 / 2e3:,.0f}k rows/s per worker with 2 in {q2:.3g} s)", None)
            for f, rows, _, q1, _, q2 in _warm_pairs(results, labelled(SPARK_CLUSTER_1, backend),
                                                     labelled(SPARK_CLUSTER_2, backend))]


def restored_keys(r: Result) -> int | None:
    """The median of the keys the server held after each run of a restore (bench/restore.py)."""
    median = r.extra_median("keys")
    return None if median is None else round(median)


def keys_per_s(r: Result) -> float | None:
    """A restore's keys/s: the keys the server held after it ÷ its median wall."""
    keys = restored_keys(r)
    return keys / r.median if keys is not None and r.median else None


def _restore_state(r: Result) -> str | None:
    """Why a restore's result is not a figure (failed, wrong count), or None when it is one."""
    if r.status != "ok":
        return r.status
    return "wrong (the server held other keys than the dump's)" if r.invalid else None


def restore_rate(results: list[Result], backend: str) -> list[Measured]:
    """`rdbspec restore` (on `backend`) against librdb's plain commands per mix dump: keys/s of each and their
    ratio (rdbspec ÷ librdb, ≥ 1 meets it). A file where rdbspec failed or left the server with other keys
    misses it; one where librdb did is shown, not judged; one where librdb did not run is left out."""
    ours = {r.dataset.name: r for r in results if r.contender == RESTORE_OURS and r.backend == backend
            and r.status != "skipped"}
    theirs = {r.dataset.name: r for r in results if r.contender == RESTORE_LIBRDB}
    out = []
    for f, a in ours.items():
        b = theirs.get(f)
        if b is None or b.status == "skipped":
            continue
        why_a, why_b = _restore_state(a), _restore_state(b)
        if why_a is not None:
            out.append(Measured(f, f"rdbspec restore {why_a}", False))
        elif why_b is not None:
            out.append(Measured(f, f"librdb {why_b}: not compared", None))
        else:
            ra, rb = keys_per_s(a), keys_per_s(b)
            if ra and rb:
                out.append(Measured(f, f"{ra / rb:.2f}× ({rate_text(ra)} keys/s in {a.median:.3g} s vs librdb "
                                       f"{rate_text(rb)} keys/s in {b.median:.3g} s)", ra >= rb))
    return out


def rate_text(x: float) -> str:
    """keys/s as the report writes them: 0.52, 38, 4,210, 157k, 1.23M."""
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e5:
        return f"{x / 1e3:,.0f}k"
    return f"{x:,.0f}" if x >= 10 else f"{x:.2g}"


def live_name(contender: str, sync: str) -> str:
    """A live-read contender's name under one sync form: "rdbspec dump redis:// (diskless)"."""
    return f"{contender} ({sync})"


def _live_pairs(results: list[Result], backend: str) -> Iterator[tuple[str, Result, Result | None]]:
    """("file sync", rdbspec's result on `backend`, the two steps' or None) on the run's stream dump (not the
    mix's files: the target is the issue's "the bench's big dump"), for each sync form."""
    for sync in LIVE_SYNCS:
        theirs = {r.dataset.name: r for r in results if r.contender == live_name(LIVE_TWO_STEP, sync)}
        for r in results:
            if r.contender == live_name(LIVE_OURS, sync) and r.backend == backend and is_stream_dump(r.dataset):
                yield f"{r.dataset.name} {sync}", r, theirs.get(r.dataset.name)


def _live_state(r: Result) -> str | None:
    """Why a live read's result is not a figure (failed, its output not the server's keys), or None."""
    if r.status != "ok":
        return r.status
    return "wrong (its output differs from the server's SAVE)" if r.invalid else None


def live_time(results: list[Result], backend: str) -> list[Measured]:
    """rdbspec reading the live server ÷ the two steps (wall medians), ≤ LIVE_FACTOR meets it; rdbspec failed
    or wrong misses it, the two steps failed is shown, not judged."""
    out = []
    for label, a, b in _live_pairs(results, backend):
        why_a, why_b = _live_state(a), None if b is None else _live_state(b)
        if why_a is not None:
            out.append(Measured(label, f"rdbspec {why_a}", False))
        elif b is None or why_b is not None:
            out.append(Measured(label, f"the two steps {why_b or 'did not run'}: not compared", None))
        elif a.median and b.median:
            ratio = a.median / b.median
            out.append(Measured(label, f"{ratio:.2f}× ({a.median:.3g} s vs {b.median:.3g} s)", ratio <= LIVE_FACTOR))
    return out


def live_rss(results: list[Result], backend: str) -> list[Measured]:
    """rdbspec's peak RSS reading the live server (the larger of its process's and its tree's)."""
    out = []
    for label, a, _ in _live_pairs(results, backend):
        why = _live_state(a)
        out.append(Measured(label, f"rdbspec {why}", False) if why is not None else
                   Measured(label, f"{a.peak_kb / 1024:,.0f} MB", a.peak_kb / 1024 <= RSS_TARGET_MB))
    return out


LIVE_TIME_TARGET = (f"`rdbspec dump redis://…` within {LIVE_FACTOR:g}× of `redis-cli --rdb F` then `rdbspec dump F`, "
                    "on the stream dump served by Redis 7.0, each sync form (rdbspec ÷ the two steps)")
LIVE_RSS_TARGET = (f"`rdbspec dump redis://…` peak RSS ≤ {RSS_TARGET_MB} MB on the stream dump served by Redis 7.0, "
                   "each sync form")


RESTORE_TARGET = ("`rdbspec restore` keys/s ≥ librdb's (`rdb-cli … redis`, plain commands) on every mix dump, into "
                  "Redis 7.0 (rdbspec ÷ librdb, keys/s)")


@dataclass(frozen=True)
class Target:
    text: str
    measure: Callable[[list[Result], str], list[Measured]]


def targets() -> list[Target]:
    out = [Target(f"`rdbspec dump FILE > /dev/null` faster than {peer.name}'s JSON export (dump ÷ {peer.binary})",
                  lambda rs, b, peer=peer: _ratio(rs, labelled(DUMP_CLI, b), peer.name, peer.binary,
                                                        lambda x: x < 1))
           for peer in PEERS]
    out += [
        Target(f"`rdbspec dump` peak RSS ≤ {RSS_TARGET_MB} MB whatever the file size",
               lambda rs, b: _rss(rs, labelled(DUMP_CLI, b))),
        Target(f"full decode within {LOAD_FACTOR_FULL:g}× redis-server's load (full decode ÷ load)",
               lambda rs, b: _ratio(rs, labelled(FULL_DECODE, b), REDIS_LOAD, "load", lambda x: x <= LOAD_FACTOR_FULL)),
        Target(f"keys only within {LOAD_FACTOR_KEYS:g}× redis-server's load (keys only ÷ load)",
               lambda rs, b: _ratio(rs, labelled(KEYS_ONLY, b), REDIS_LOAD, "load", lambda x: x <= LOAD_FACTOR_KEYS)),
        Target(f"Spark stream_entries ≥ {SPARK_ROWS_PER_S // 1000}k rows/s query time on local[1] (unsplit; "
               "judged on the warm query, the cold one beside it)", _spark_rate),
        Target(f"Spark: a split file on local[2] ≥ {SPARK_SPLIT_SPEEDUP:g}× local[1] (query time, same splits; "
               "judged on the warm query, the cold one beside it)", _spark_split),
        Target(f"Spark: warm stream_entries rows/s on local[1] ≥ {SPARK_FLOOR_SHARE:.0%} of the floor source's "
               "(rdb ÷ rdb-floor, same splits and rows)", spark_floor_share),
        Target(f"Spark: warm stream_entries rows/s from S3 (moto on 127.0.0.1) ≥ {SPARK_STORE_SHARE:.0%} of the "
               "file's (local[1], split; store ÷ file)", spark_store_share),
        Target("Spark standalone cluster, split file: warm rows/s per one-core worker with 1 and 2 workers, and "
               "2 workers ÷ 1 (reported: docs/spark-scaling.md's model)", spark_cluster_scaling),
        Target("official Kaitai compiler's Python output: its wall ÷ rdbspec full decode (reported, no bound)",
               lambda rs, b: _ratio(rs, OFFICIAL, labelled(FULL_DECODE, b), "full decode", None)),
        Target(RESTORE_TARGET, restore_rate),
        Target(LIVE_TIME_TARGET, live_time),
        Target(LIVE_RSS_TARGET, live_rss),
    ]
    return out


def verdict(measured: list[Measured]) -> str:
    if not measured:
        return "not measured"
    bounded = [m for m in measured if m.met is not None]
    if not bounded:
        return "reported"
    missed = [m.file for m in bounded if not m.met]
    return f"**missed** ({', '.join(missed)})" if missed else "met"


def rows(results: list[Result], chosen: list[Target] | None = None) -> list[str]:
    """The table rows of the `chosen` targets (default: all), one per target and rdbspec backend that ran."""
    backends = list(dict.fromkeys(r.backend for r in results if r.backend))
    out = []
    for t in targets() if chosen is None else chosen:
        for b in backends:
            measured = t.measure(results, b)
            shown = "; ".join(f"{m.file}: {m.text}" for m in measured) or "—"
            out.append(f"| {t.text} | {b} | {shown} | {verdict(measured)} |")
    return out


def restore_rows(results: list[Result]) -> list[str]:
    """The restore target's rows alone (what `python -m bench --restore-only` puts in the Targets section)."""
    return rows(results, [t for t in targets() if t.text == RESTORE_TARGET])


def live_rows(results: list[Result]) -> list[str]:
    """The live read's target rows alone (what `python -m bench --live-only` puts in the Targets section)."""
    return rows(results, [t for t in targets() if t.text in (LIVE_TIME_TARGET, LIVE_RSS_TARGET)])


def section(results: list[Result], notes: list[str]) -> list[str]:
    """The Markdown lines of the Targets section."""
    if not any(r.backend for r in results):
        return []
    out = ["## Targets", "",
           "Issue #14's targets, per rdbspec backend, from this run's medians on each file where both sides ran "
           "and did the whole work (a result with a miscount or a failed check run is left out). Ratios are "
           "rdbspec ÷ the reference unless said otherwise.", ""]
    out += [f"* {n}" for n in notes if n.startswith("native backend not built")]
    out += ["", TABLE_HEAD, "|---|---|---|---|"]
    return out + rows(results) + [""]


TABLE_HEAD = "| target | backend | measured (per file) | verdict |"
