"""The benchmark's bookkeeping (bench/): the check run that proves a contender did the work, the
peers' lookup, and the Targets section's verdicts. Nothing here is timed: the walls in the
Targets tests are given, and only what the report says about them is checked."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from pathlib import Path

import pytest

from bench import cold_start
from bench.__main__ import live_only, parse_args, restore_only, wants_live, wants_restore
from bench.contenders import (
    DUMP_CLI,
    FULL_DECODE,
    KEYS_ONLY,
    REDIS_LOAD,
    SPARK_BASELINE,
    SPARK_FLOOR_1,
    SPARK_FLOOR_2,
    labelled,
    rdbspec_contenders,
)
from bench.datasets import Dataset
from bench.large import line_key
from bench.large import lines as scanned_lines
from bench.live import Lines, LineSum, LiveRun, live_read, two_steps
from bench.live import section as live_section
from bench.memory import Target, Tool, Truth, accuracy, rdbspec_key, run_tool
from bench.memory import table as memory_table
from bench.mix import MixRun, same_output
from bench.peers import PEERS_ENV, peer_contenders
from bench.report import merge_rows, spark_table
from bench.restore import KeyCount, Restorer, RestoreRun, resp_pipe, restorers, section, timed_run, wrong_counts
from bench.runner import (
    Contender,
    OutputCheck,
    Result,
    RunFailedError,
    invalidate,
    measure,
    run_check,
    run_process,
)
from bench.targets import (
    LIVE_OURS,
    LIVE_TIME_TARGET,
    LIVE_TWO_STEP,
    RESTORE_LIBRDB,
    RESTORE_LIBRDB_R,
    RESTORE_OURS,
    RESTORE_RESP,
    RESTORE_TARGET,
    SPARK_SPLIT_1,
    SPARK_SPLIT_2,
    TABLE_HEAD,
    live_name,
)
from bench.targets import section as targets_section

ENTRY, KEY = b'{ "id":"', b'\n    "'  # librdb's markers: 8 and 6 bytes long


def dataset(tmp_path: Path, entries: int, keys: int) -> Dataset:
    dump = tmp_path / "dump.rdb"
    dump.write_bytes(b"REDIS0010")
    return Dataset("rdb10-test", dump, Path("/usr/bin/redis-server"), 10, entries, keys)


def writer(tmp_path: Path, name: str, data: bytes) -> list[str]:
    """A real child process writing `data` to its stdout."""
    out = tmp_path / name
    out.write_bytes(data)
    return ["cat", str(out)]


def test_check_run_counts_markers_cut_by_the_read_size(tmp_path: Path) -> None:
    # It reads 1 MiB at a time and keeps the last 7 bytes (the longer marker's length - 1) for the next
    # read: a key marker wholly inside those 7 bytes (counted once, not twice), an entry marker across
    # the first boundary, a key marker across the second.
    first = b"x" * ((1 << 20) - 7) + KEY + ENTRY[:1]
    second = ENTRY[1:] + b"z" * ((1 << 20) - 10) + KEY[:3]
    third = KEY[3:] + ENTRY * 5 + KEY * 2
    data = first + second + third
    assert (len(first), len(second), data.count(ENTRY), data.count(KEY)) == (1 << 20, 1 << 20, 6, 4)
    argv = writer(tmp_path, "out.json", data)
    counted = run_check(OutputCheck(lambda ds: argv, ENTRY, KEY), dataset(tmp_path, 0, 0), 60)
    assert counted == {"entries": 6, "keys": 4, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def test_check_run_that_fails_raises(tmp_path: Path) -> None:
    check = OutputCheck(lambda ds: [sys.executable, "-c", "import sys; sys.exit('no such file')"], ENTRY, KEY)
    with pytest.raises(RunFailedError, match="exit 1: no such file"):
        run_check(check, dataset(tmp_path, 0, 0), 60)


def contender(tmp_path: Path, name: str, out: bytes) -> Contender:
    argv = writer(tmp_path, name, out)
    return Contender(name, "test", lambda ds: ["true"], decodes_entries=True,
                     check=OutputCheck(lambda ds: argv, ENTRY, KEY))


def test_a_contender_that_skips_entries_is_left_out(tmp_path: Path) -> None:
    ds = dataset(tmp_path, entries=3, keys=1)  # 3 entries, 2 keys with the stream
    done = measure(contender(tmp_path, "all", KEY + ENTRY * 3 + KEY), ds, 1, 60, 100, lambda msg: None)
    short = measure(contender(tmp_path, "short", KEY + ENTRY * 2 + KEY), ds, 1, 60, 100, lambda msg: None)
    assert done.valid and done.entries == 3
    assert not short.valid and short.invalid == ["check run counted 2 entries, expected 3"]
    assert short.status == "ok" and "check run counted 2 entries, expected 3" in short.note


def test_absent_peers_are_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PEERS_ENV, str(tmp_path))
    found, notes = peer_contenders()
    assert found == []
    assert [n.split(" skipped: ")[0] for n in notes] == ["librdb rdb-cli (C)", "HDT3213/rdb (Go)"]
    assert all(f"no executable {tmp_path}/" in n for n in notes)


def result(tmp_path: Path, name: str, wall: float, rss_mb: int = 50, backend: str | None = "python",
           invalid: list[str] | None = None) -> Result:
    return Result(name, dataset(tmp_path, 3, 1), walls=[wall], rss_kb=rss_mb * 1024, backend=backend,
                  invalid=invalid or [])


def row(lines: list[str], start: str) -> str:
    (found,) = [ln for ln in lines if ln.startswith(f"| {start}")]
    return found


def test_targets_section_says_met_missed_and_not_measured(tmp_path: Path) -> None:
    results = [
        result(tmp_path, labelled(DUMP_CLI, "python"), 1.0, rss_mb=301),
        result(tmp_path, "librdb rdb-cli (C)", 1.25, backend=None),
        result(tmp_path, "HDT3213/rdb (Go)", 0.5, backend=None),
        result(tmp_path, labelled(FULL_DECODE, "python"), 2.0),
        result(tmp_path, labelled(KEYS_ONLY, "python"), 0.5, invalid=["counted 1 keys, expected 2"]),
        result(tmp_path, REDIS_LOAD, 0.4, backend=None),
    ]
    lines = targets_section(results, ["native backend not built: ..."])
    assert "* native backend not built: ..." in lines
    librdb = row(lines, "`rdbspec dump FILE > /dev/null` faster than librdb")
    assert "rdb10-test: 0.80× (1 s vs librdb-cli 1.25 s)" in librdb and librdb.endswith("| met |")
    assert row(lines, "`rdbspec dump FILE > /dev/null` faster than HDT").endswith("| **missed** (rdb10-test) |")
    assert row(lines, "`rdbspec dump` peak RSS").endswith("| rdb10-test: 301 MB | **missed** (rdb10-test) |")
    full = row(lines, "full decode within 5×")
    assert "5.00× (2 s vs load 0.4 s)" in full and full.endswith("| met |")
    assert row(lines, "keys only within 2×").endswith("| — | not measured |")  # its count was wrong
    assert row(lines, "Spark stream_entries").endswith("| — | not measured |")


def test_rdbspec_contenders_run_once_per_backend() -> None:
    made = rdbspec_contenders(["python", "native"], dump=True)
    assert [(c.name, c.env) for c in made if c.name.startswith(DUMP_CLI)] == [
        ("rdbspec dump CLI (python)", {"RDBSPEC_BACKEND": "python"}),
        ("rdbspec dump CLI (native)", {"RDBSPEC_BACKEND": "native"})]
    assert len(made) == 8 and {c.backend for c in made} == {"python", "native"}


def test_a_native_run_that_loaded_no_native_module_is_left_out(tmp_path: Path) -> None:
    # what bench.workloads prints when RDBSPEC_BACKEND=native was ignored: no rdbspec_generated.native.* module
    line = '{"keys": 2, "entries": 3, "native_modules": 0}'
    c = Contender(labelled(FULL_DECODE, "native"), "test", lambda ds: [sys.executable, "-c", f"print({line!r})"],
                  decodes_entries=True, reports=True, backend="native")
    got = measure(c, dataset(tmp_path, entries=3, keys=1), 1, 60, 100, lambda msg: None)
    assert got.entries == 3 and got.backend == "native"
    assert got.invalid == ["RDBSPEC_BACKEND=native but no rdbspec_generated.native module was loaded"]


def spark_result(tmp_path: Path, name: str, cold: float, warm: float, backend: str | None = "native") -> Result:
    """A Spark workload's result on a file of a million entries: one run, both queries counted them all."""
    ds = dataset(tmp_path, 1_000_000, 1)
    counted = {"entries": 1_000_000, "warm_entries": 1_000_000, "partitions": 4, "split_size": 1 << 20,
               "session_s": 6.0, "cold_query_s": cold, "warm_query_s": warm, "warm_jvm_cpu_s": 1.5,
               "warm_worker_cpu_s": 0.25}
    return Result(labelled(name, backend) if backend else name, ds, walls=[20.0], entries=1_000_000,
                  extras=[counted], group="spark", backend=backend)


def test_spark_targets_are_judged_on_the_warm_query_with_the_cold_one_beside(tmp_path: Path) -> None:
    results = [spark_result(tmp_path, SPARK_BASELINE, cold=5.0, warm=1.6),
               spark_result(tmp_path, SPARK_SPLIT_1, cold=6.0, warm=2.0),
               spark_result(tmp_path, SPARK_SPLIT_2, cold=5.0, warm=1.0),
               spark_result(tmp_path, SPARK_FLOOR_1, cold=5.0, warm=1.2, backend=None),
               spark_result(tmp_path, SPARK_FLOOR_2, cold=5.0, warm=1.0, backend=None)]
    lines = targets_section(results, [])
    rate = row(lines, "Spark stream_entries")
    assert "rdb10-test: 625k rows/s warm (1,000,000 rows in 1.6 s); cold 200k rows/s (5 s)" in rate
    assert rate.endswith("| met |")  # 625k warm, although 200k cold
    split = row(lines, "Spark: a split file")
    assert ("warm 2.00× (1 s on local[2] vs 2 s on local[1]; 1.60× local[1] unsplit); "
            "cold 1.20× (5 s on local[2] vs 6 s on local[1]; 1.00× local[1] unsplit); "
            "floor source warm 1.20× (1 s on local[2] vs 1.2 s on local[1])") in split
    assert split.endswith("| met |")
    table = spark_table(results).splitlines()
    assert len({line.count("|") for line in table}) == 1  # every row has the header's cells
    assert "| 5.000 s | 200 k | 1.00× | 1.600 s | — | 625 k | 1.00× |" in table[2]
    assert "| 5.000 s | 200 k | 1.00× | 1.000 s | — | 1.00 M | 1.60× | 1.500 s / 0.250 s |" in table[4]
    assert table[5].startswith(f"| {SPARK_FLOOR_1} |") and "| 1.200 s | — | 833 k | — |" in table[5]


def test_a_spark_run_whose_warm_query_missed_rows_is_left_out(tmp_path: Path) -> None:
    line = '{"entries": 3, "warm_entries": 2, "worker_backend": "native"}'
    c = Contender(labelled(SPARK_BASELINE, "native"), "test", lambda ds: [sys.executable, "-c", f"print({line!r})"],
                  decodes_entries=True, reports=True, backend="native", group="spark")
    got = measure(c, dataset(tmp_path, entries=3, keys=1), 1, 60, 100, lambda msg: None)
    assert got.invalid == ["counted 2 warm_entries, expected 3"]


def test_cold_start_figures_and_steps_are_medians_over_the_runs() -> None:
    """The section shows each figure's median and spread, and each step of the cold path from the
    marks of every run that has both of its ends."""
    marks = [{"imports done": 0.1, "daemon lookup_data_sources started": 4.1, "session ready": 5.0, "cold query": 5.0,
              "read() files": 9.0 + extra, "first batch files": 9.2 + 2 * extra} for extra in (0.0, 0.1, 0.5)]
    runs = [{"session_s": 5.0 + i, "cold_query_s": 6.0, "cold_first_row_s": 4.2, "warm_query_s": 0.3,
             "warm_first_row_s": 0.2, "java_check_s": 0.0004, "rows": 1, "warm_rows": 1, "marks": m}
            for i, m in enumerate(marks)]
    result = Result("spark first query", cold_start.sample_dataset(), walls=[12.0, 13.0, 14.0], extras=runs)
    lines = cold_start.section(cold_start.ColdStartRun(result=result, finished="now"))
    assert "| session start | 6.000 s | 2.000 s |" in lines
    assert "| Java check | 0.000 s | 0.000 s |" in lines
    steps = [line for line in lines if line.startswith("| the ")]
    assert steps[0].startswith("| the Java check (its figure above), then spark-submit")
    assert "| 4.000 s | 0.000 s |" in steps[0]
    assert any("first Arrow batch" in line and "| 0.300 s | 0.500 s |" in line for line in steps)
    assert not any("Parquet" in line for line in steps)  # no run has the mark its end needs


def truth(tmp_path: Path, rdb_version: int) -> Truth:
    """What a server answered to MEMORY USAGE for the five keys of its dump."""
    keys = {(0, "a"): ("string", 100), (0, "b"): ("string", 200), (0, "c"): ("string", 100),
            (0, "h"): ("hash", 1000), (1, "a"): ("list", 50)}
    return Truth(Target("redis 7.0.15 (jemalloc)", Path("/usr/bin/redis-server"), "jemalloc"),
                 tmp_path / "dump.rdb", rdb_version, keys, size=1000)


def test_memory_accuracy_per_type_and_for_the_whole_dump(tmp_path: Path) -> None:
    # ratios: strings 1.05, 1.5 and 0.91 (two within ±10%: 66.6%, rounded down), the hash 0.8; (1, "a") not
    # reported, (2, "x") extra
    got = accuracy("t", truth(tmp_path, 10), {(0, "a"): 105, (0, "b"): 300, (0, "c"): 91, (0, "h"): 800, (2, "x"): 5})
    strings, hashes = got.per_type["string"], got.per_type["hash"]
    assert (strings.keys, strings.within, strings.median) == (3, 2, 1.05)
    assert (hashes.keys, hashes.within, hashes.median) == (1, 0, 0.8)
    assert "list" not in got.per_type and got.not_read == 1
    assert got.overall is not None and (got.overall.keys, got.overall.within) == (4, 2)
    assert got.sum_ratio == (105 + 300 + 91 + 800) / (100 + 200 + 100 + 1000)
    lines = memory_table([got]).splitlines()
    assert lines[0] == "| dump | tool | string | list | hash | all keys | exact | sum ratio | not read | wall | notes |"
    assert lines[2] == ("| RDB 10, redis 7.0.15 (jemalloc) | t | 66.6% · 1.05× | — | 0% · 0.80× | 50% · 0.98× | 0% "
                        "| 0.926 | 1 | — |  |")


def test_a_memory_tool_past_its_rdb_version_cannot_read_and_one_that_exits_failed(tmp_path: Path) -> None:
    def tool(code: str) -> Tool:
        return Tool("t", lambda dump, out, alloc: [sys.executable, "-c", code, str(out)], "db", "key", "memory",
                    max_rdb=9)

    refused = tool("import sys; sys.exit('Invalid RDB version number 10')")
    got = run_tool(refused, truth(tmp_path, 10), tmp_path, lambda msg: None)
    assert (got.status, got.note, got.not_read) == ("cannot read", "reads RDB ≤ 9 only", 5)
    got = run_tool(refused, truth(tmp_path, 9), tmp_path, lambda msg: None)
    assert (got.status, got.note) == ("failed", "exit 1: Invalid RDB version number 10")
    writes = tool("import sys; open(sys.argv[1], 'w').write('db,key,memory\\n0,a,100\\n1,a,60\\n')")
    got = run_tool(writes, truth(tmp_path, 9), tmp_path, lambda msg: None)
    assert got.status == "ok" and got.not_read == 3 and got.per_type["list"].median == 1.2
    assert got.overall is not None and got.overall.exact == 1


def test_rdbspec_hex_keys_are_matched_to_the_servers_bytes() -> None:
    # the server's key b"k:\x00\xff" as bench.memory spells it: UTF-8, the other bytes as \xNN
    assert rdbspec_key('{"hex": "6b3a00ff"}') == "k:\x00\\xff" and rdbspec_key("k:1") == "k:1"


def test_the_mix_compares_what_each_dump_row_wrote(tmp_path: Path) -> None:
    """The content mix says, per file, whether `rdbspec dump`'s rows (defaults, --jobs 1, --jobs 2)
    wrote the same bytes, from their check runs' digests: a difference is flagged with each row's."""
    ds = dataset(tmp_path, 0, 0)
    rows = ["rdbspec dump", "rdbspec dump --jobs 1", "rdbspec dump --jobs 2"]

    def run_of(*digests: str) -> MixRun:
        got = MixRun([ds], rows, [], [])
        for name, digest in zip(rows, digests):
            got.results[(name, ds.name)] = Result(name, ds, extras=[{"check": {"bytes": 1, "sha256": digest}}])
        return got

    same = same_output(run_of("ab" * 32, "ab" * 32, "ab" * 32))
    assert same[2] == f"* `{ds.name}`: {', '.join(rows)} wrote the same bytes (sha256 {'ab' * 8}…)"
    differ = same_output(run_of("ab" * 32, "cd" * 32, "ab" * 32))
    assert differ[2] == (f"* `{ds.name}`: **the outputs differ**: rdbspec dump {'ab' * 8}; "
                         f"rdbspec dump --jobs 1 {'cd' * 8}; rdbspec dump --jobs 2 {'ab' * 8}")


# -- the restore into a live server (bench/restore.py): its bookkeeping, with a fake server ----------


def test_a_dumps_keys_expire_once_the_time_is_past_their_expiry() -> None:
    counts = KeyCount(5, (100, 200, 200, 300))  # one key without a TTL
    assert [counts.unexpired(t) for t in (99, 100, 101, 200, 201, 300, 301)] == [5, 5, 4, 4, 2, 2, 1]


def restore_contender(tmp_path: Path, held: list[int], counts: KeyCount, flushed: list[float]) -> Contender:
    """A restore whose process does nothing, on a fake server whose key count after run i is held[i]."""
    runs = iter(held)
    nothing = Restorer("restore", "true", lambda dump, port: ["true"])
    custom = timed_run(nothing, flushed.append, lambda timeout: next(runs), counts, 1, None)
    return Contender("restore", "test", custom=custom, reports=True, group="restore")


def test_a_restore_that_leaves_other_keys_than_the_dumps_is_wrong(tmp_path: Path) -> None:
    ds = dataset(tmp_path, 0, 3)
    far = 1 << 60  # a TTL that will not run out; 1: long expired
    for held, counts, wrong in (
        ([3, 3], KeyCount(3, (far,)), []),
        ([3, 2], KeyCount(3, (far,)), ["run 2: the server held 2 keys, expected 3 (the dump's 3 less those expired)"]),
        ([3, 3], KeyCount(3, (1,)), ["run 1: the server held 3 keys, expected 2 (the dump's 3 less those expired)",
                                     "run 2: the server held 3 keys, expected 2 (the dump's 3 less those expired)"]),
    ):
        flushed: list[float] = []
        got = measure(restore_contender(tmp_path, held, counts, flushed), ds, 2, 60, 100, lambda msg: None)
        invalidate(got, wrong_counts(got, counts.total))
        assert len(flushed) == 2 and len(got.walls) == 2  # the server emptied before each run
        assert got.invalid == wrong and got.valid == (not wrong)


def restore_result(tmp_path: Path, name: str, walls: list[float], keys: int, backend: str | None = None,
                   wrong: bool = False) -> Result:
    ds = dataset(tmp_path, 0, keys)
    extras: list[dict[str, object]] = [{"keys": keys - wrong, "expected_low": keys, "expected_high": keys}
                                       for _ in walls]
    got = Result(name, ds, walls=walls, extras=extras, group="restore", backend=backend)
    invalidate(got, wrong_counts(got, keys))
    return got


def test_the_restore_section_gives_keys_per_second_the_ratio_and_the_target(tmp_path: Path) -> None:
    ds = dataclasses.replace(dataset(tmp_path, 0, 1000), streams=0)
    got = RestoreRun([ds], [RESTORE_OURS, RESTORE_LIBRDB, RESTORE_LIBRDB_R], backend="native",
                     shown={RESTORE_OURS: "ours", RESTORE_LIBRDB: "theirs", RESTORE_LIBRDB_R: "theirs -r"},
                     expired={ds.name: 7})
    for r in (restore_result(tmp_path, RESTORE_OURS, [0.5, 0.4, 0.6], 1000, backend="native"),
              restore_result(tmp_path, RESTORE_LIBRDB, [2.0], 1000),
              restore_result(tmp_path, RESTORE_LIBRDB_R, [0.1], 1000, wrong=True)):
        got.results[(r.contender, ds.name)] = r
    lines = section(got)
    walls, rss = [line for line in lines if line.startswith(f"| `{ds.name}`")]
    assert walls.endswith("| 1,000 (7 expired) | — | 0.500 s (0.200 s) · 2,000 keys/s | 2.000 s · 500 keys/s "
                          "| **wrong**: 999 keys · 0.100 s | 4.00× |")
    assert rss == f"| `{ds.name}` | — · 0.500 s | — · 2.000 s | — · 0.100 s |"
    head = lines[lines.index("### Wall time and keys/s") + 4]
    assert head.endswith(f"| {RESTORE_OURS} ÷ {RESTORE_LIBRDB} (keys/s) |")
    assert f"Target: {RESTORE_TARGET}, native backend: met. rdb10-test: 4.00× (2,000 keys/s in 0.5 s vs librdb " \
           "500 keys/s in 2 s)." in lines
    assert any(line.startswith(f"* {RESTORE_LIBRDB_R} on rdb10-test: ok (wrong key count): run 1: the server held "
                               "999 keys") for line in lines)
    # rdbspec's own count wrong: the target is missed on that file, whatever its time
    got.results[(RESTORE_OURS, ds.name)] = restore_result(tmp_path, RESTORE_OURS, [0.1], 1000, "native", wrong=True)
    measured = row(targets_section(got.all_results, []), RESTORE_TARGET.split(" (")[0])
    assert measured.endswith("| native | rdb10-test: rdbspec restore wrong (the server held other keys than the "
                             "dump's) | **missed** (rdb10-test) |")
    del got.results[(RESTORE_LIBRDB, ds.name)]  # no librdb: nothing to judge against
    assert row(targets_section(got.all_results, []), RESTORE_TARGET.split(" (")[0]).endswith(
        "| native | — | not measured |")


def test_the_restores_contenders_are_those_that_can_run(tmp_path: Path) -> None:
    librdb = tmp_path / "librdb-cli"
    librdb.write_text("#!/bin/sh\n")
    librdb.chmod(0o755)
    without = "usage: rdbspec dump [--jobs N] file\n  --jobs N    decode the file in N processes\n"
    made, notes = restorers("native", None, without, "/usr/bin/redis-cli", tmp_path)
    assert [r.name for r in made] == [RESTORE_OURS, RESTORE_LIBRDB, RESTORE_LIBRDB_R]
    assert notes == [f"`{RESTORE_RESP}` not run: this rdbspec's `dump --help` lists no `--format resp`"]
    assert made[0].argv(Path("d.rdb"), 7) == [sys.executable, "-m", "rdbspec", "restore", "d.rdb", "--to",
                                              "redis://127.0.0.1:7"]
    assert made[0].env == {"RDBSPEC_BACKEND": "native"} and made[1].env is None
    assert made[2].argv(Path("d.rdb"), 7) == [str(librdb), "d.rdb", "-l", os.devnull, "redis", "-r", "-h",
                                              "127.0.0.1", "-p", "7"]
    with_resp = without + ("  --format {json,resp}  json: JSON Lines (the default); resp: the commands\n"
                           "                        redis-cli --pipe replays\n")
    made, notes = restorers("native", "no such command", with_resp, "/usr/bin/redis-cli", tmp_path / "none")
    assert [r.name for r in made] == [RESTORE_RESP] and len(notes) == 2
    shell = made[0].argv(Path("a dump.rdb"), 7)
    assert shell[:2] == ["bash", "-c"] and shell[2].startswith("set -o pipefail; ")
    assert f"{sys.executable} -m rdbspec dump 'a dump.rdb' --format resp | /usr/bin/redis-cli -h 127.0.0.1 -p 7 " \
           "--pipe >&2" in shell[2]


def test_the_pipe_fails_when_rdbspec_dump_does_although_redis_cli_exits_0(tmp_path: Path) -> None:
    cli = tmp_path / "redis-cli"
    cli.write_text("#!/bin/sh\ncat > /dev/null\necho 'errors: 0, replies: 0'\n")
    cli.chmod(0o755)
    pipe = resp_pipe("native", str(cli))
    with pytest.raises(RunFailedError):  # the dump is 9 bytes: not a dump
        run_process(pipe.argv(dataset(tmp_path, 0, 0).path, 7), 60, env=pipe.env, discard_stdout=True)


def test_a_restore_only_run_puts_its_target_rows_in_the_reports_table() -> None:
    report = "\n".join(["# r", "", "## Targets", "", TABLE_HEAD, "|---|---|---|---|", "| a | native | 1 | met |",
                        "| b | native | 2 | met |", "", "## Notes", ""]) + "\n"
    merged = merge_rows(report, "## Targets", ["| b | native | 3 | **missed** (x) |", "| c | native | 4 | met |"])
    assert merged.splitlines()[6:10] == ["| a | native | 1 | met |", "| b | native | 3 | **missed** (x) |",
                                         "| c | native | 4 | met |", ""]
    assert merge_rows("# r\n\n## Notes\n", "## Targets", ["| c | native | 4 | met |"]) == "# r\n\n## Notes\n"
    args = parse_args(["--only", "restore"])
    assert restore_only(args) and not wants_restore(args)
    assert wants_restore(parse_args([])) and not wants_restore(parse_args(["--no-restore"]))


def test_the_live_reads_check_compares_lines_in_any_order_across_chunks() -> None:
    def lines(*chunks: bytes) -> Lines:
        total = LineSum()
        for chunk in chunks:
            total.feed(chunk)
        return total.lines()

    reference = lines(b'{"key":"a"}\n{"key":"b"}\n{"key":"c"}\n')
    assert lines(b'{"key":"c"}\n{"ke', b'y":"a"}', b'\n{"key":"b"}\n') == reference  # another order, lines cut
    assert lines(b'{"key":"b"}\n{"key":"c"}\n{"key":"a"}') == reference  # the last line without its newline
    assert reference.differs(reference) is None
    assert lines(b'{"key":"a"}\n{"key":"b"}\n{"key":"d"}\n').differs(reference) == "other lines (3, as many bytes)"
    assert lines(b'{"key":"a"}\n{"key":"b"}\n').differs(reference) == "2 lines (22 bytes) against 3 (33 bytes)"
    assert lines(b'{"key":"a"}\n{"key":"a"}\n{"key":"b"}\n').differs(reference) is not None  # a multiset


def live_result(ds: Dataset, name: str, sync: str, wall: float, rss_mb: int, wrong: bool = False) -> Result:
    got = Result(live_name(name, sync), ds, walls=[wall, wall + 0.1, wall + 0.2], rss_kb=rss_mb * 1024,
                 group="live", backend="native")
    invalidate(got, ["its output differs from `rdbspec dump` of the server's SAVE: 2 lines"] if wrong else [])
    return got


def test_the_live_section_gives_the_ratio_the_peak_rss_and_the_targets(tmp_path: Path) -> None:
    stream, mix_file = tmp_path / "rdb10-1000k.rdb", tmp_path / "mix-big-list-200k.rdb"
    stream.write_bytes(b"x" * 2_000_000)
    mix_file.write_bytes(b"x" * 500_000)
    big = Dataset("rdb10-1000k", stream, Path("/usr/bin/redis-server"), 10, 1_000_000, 200_000)
    small = Dataset("big-list-200k", mix_file, Path("/usr/bin/redis-server"), 10, 0, 1, streams=0)
    got = LiveRun([small, big], [LIVE_OURS, LIVE_TWO_STEP], backend="native",
                  shown={LIVE_OURS: "ours", LIVE_TWO_STEP: "theirs"},
                  checks={(big.name, "diskless"): "the SAVE's lines (200,001)", (big.name, "disk"): "**differs**: 2"})
    for r in (live_result(big, LIVE_OURS, "diskless", 1.2, 90), live_result(big, LIVE_TWO_STEP, "diskless", 1.0, 40),
              live_result(big, LIVE_OURS, "disk", 1.3, 320, wrong=True),
              live_result(big, LIVE_TWO_STEP, "disk", 1.0, 40),
              live_result(small, LIVE_OURS, "diskless", 0.5, 45),
              live_result(small, LIVE_TWO_STEP, "diskless", 0.3, 36)):
        got.results[(r.contender, r.dataset.name)] = r
    lines = live_section(got)
    rows = [line for line in lines if line.startswith("| `")]
    assert rows == [
        "| `big-list-200k` | 0.5 | diskless | 0.600 s (0.200 s) | 0.400 s (0.200 s) | **1.50×** ✗ | 45 MB · 0.600 s "
        "| 36 MB · 0.400 s | — |",
        "| `big-list-200k` | 0.5 | disk | — | — | — | — | — | — |",
        "| `rdb10-1000k` (stream dump) | 2.0 | diskless | 1.300 s (0.200 s) | 1.100 s (0.200 s) | 1.18× "
        "| 90 MB · 1.300 s | 40 MB · 1.100 s | the SAVE's lines (200,001) |",
        "| `rdb10-1000k` (stream dump) | 2.0 | disk | 1.400 s (0.200 s) † | 1.100 s (0.200 s) | — "
        "| **320 MB** ✗ · 1.400 s | 40 MB · 1.100 s | **differs**: 2 |",
    ]
    assert "(`rdb10-1000k`: one stream of 1,000,000 entries and 200,000 other keys, 2.0 MB)" in lines[2]
    # the targets: on the stream dump only (the mix file's 1.5× is shown, not judged); a wrong output misses both
    assert "* Target: " + LIVE_TIME_TARGET + ", native backend: **missed** (rdb10-1000k disk). rdb10-1000k " \
           "diskless: 1.18× (1.3 s vs 1.1 s); rdb10-1000k disk: rdbspec wrong (its output differs from the " \
           "server's SAVE)." in lines
    assert any(line.endswith("native backend: **missed** (rdb10-1000k disk). rdb10-1000k diskless: 90 MB; "
                             "rdb10-1000k disk: rdbspec wrong (its output differs from the server's SAVE).")
               for line in lines)
    assert row(targets_section(got.all_results, []), LIVE_TIME_TARGET.split(",")[0]).endswith(
        "| **missed** (rdb10-1000k disk) |")
    assert any(line.startswith(f"* {live_name(LIVE_OURS, 'disk')} on rdb10-1000k: ok (wrong output): its output "
                               "differs") for line in lines)


def test_the_live_reads_contenders_and_options(tmp_path: Path) -> None:
    ours = live_read("native", 7, "disk")
    assert ours.name == "rdbspec dump redis:// (disk)" and ours.env == {"RDBSPEC_BACKEND": "native"}
    assert ours.argv is not None and ours.argv(dataset(tmp_path, 0, 0)) == [
        sys.executable, "-m", "rdbspec", "dump", "redis://127.0.0.1:7"]
    assert ours.discard_stdout and ours.memory_capped
    # a redis-cli that writes a file that is no dump: the shell fails as rdbspec dump does, and F is removed
    cli = tmp_path / "redis-cli"
    cli.write_text('#!/bin/sh\n[ "$1 $2 $3 $4 $5" = "-h 127.0.0.1 -p 7 --rdb" ] && printf REDIS0010 > "$6"\n')
    cli.chmod(0o755)
    taken = tmp_path / "taken dump.rdb"
    theirs = two_steps("native", str(cli), 7, "diskless", taken)
    assert theirs.name == f"{LIVE_TWO_STEP} (diskless)" and theirs.env == {"RDBSPEC_BACKEND": "native"}
    assert theirs.argv is not None
    with pytest.raises(RunFailedError, match="exit 3"):
        run_process(theirs.argv(dataset(tmp_path, 0, 0)), 60, env=theirs.env, discard_stdout=True)
    assert not taken.exists()
    args = parse_args(["--only", "live"])
    assert live_only(args) and not wants_live(args) and live_only(parse_args(["--live-only"]))
    assert wants_live(parse_args([])) and not wants_live(parse_args(["--no-live"]))
    assert not wants_live(parse_args(["--file", "rdb10"]))


def test_the_large_runs_line_scan_counts_patterns_cut_by_the_read_size(tmp_path: Path) -> None:
    """bench/large.py reads `rdbspec dump`'s lines a few bytes at a time here: each line's head, tail,
    length and patterns (one cut by every read) are those of the line read whole."""
    text = [b'{"db":1,"key":"a\\"b","value":["La","Lb","Lc"]}', b"",
            b'{"db":0,"key":"k","value":"' + b"xy" * 350 + b'"}']
    path = tmp_path / "out.jsonl"
    path.write_bytes(b"\n".join(text) + b"\n")
    for read_size in (1, 2, 3, 7, 1 << 20):
        got = list(scanned_lines(path, (b'"L', b"xy"), read_size))
        assert [(g.length, g.counts) for g in got] == [(len(t), {b'"L': t.count(b'"L'), b"xy": t.count(b"xy")})
                                                        for t in text]
        assert [(g.head, g.tail) for g in got] == [(t[:512], t[-512:]) for t in text]
    assert line_key(next(scanned_lines(path, (b"x",)))) == (1, 'a"b')
