"""The `rdb` Spark data source and the pipeline command, against the single-process library.

One local[2] SparkSession is shared by the whole module (starting one costs seconds)."""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import signal
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

import rdbspec  # noqa: E402
from rdbspec import memory
from rdbspec.atomic import TEMP_MARK
from rdbspec.read.splits import plan
from rdbspec.server.streams import group_lag, stream_version
from rdbspec.spark.source import SCHEMAS, STREAM_PARTS, TABLES
from tests.support import dragonfly_dumps as dragonfly_build  # noqa: E402
from tests.support import (
    servers,  # noqa: E402
    sparse_dump,  # noqa: E402
    split_dump,  # noqa: E402
    template_dump,  # noqa: E402
)
from tests.support.populate import populate  # noqa: E402
from tests.support.valkey_dumps import vcs_lz4, write_valkey081  # noqa: E402

redis_server_factory = servers.redis_server_factory  # the fixture the --dumps test uses

REAL = Path(__file__).parents[1] / "corpus" / "real"
DUMPS = sorted(REAL.glob("*/*.rdb"))


@pytest.fixture(scope="module")
def spark():
    """One local[2] session for every test here, built the way the pipeline builds its own."""
    from rdbspec.spark.launch import session as start

    session = start("local[2]", "rdbspec-tests")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Every real-server dump, copied flat into one directory (plus a file to be ignored), and
    Valkey 9.2's: a VALKEY081 dump with path hashes, plain and compressed (`rdbcompression lz4`)."""
    d = tmp_path_factory.mktemp("corpus")
    for p in DUMPS:
        shutil.copy(p, d / f"{p.parent.name}__{p.name}")
    plain = write_valkey081(d / "valkey-9.2__path_hash.rdb")
    (d / "valkey-9.2__path_hash_lz4.rdb").write_bytes(vcs_lz4(plain.read_bytes()))
    (d / "README.txt").write_text("not a dump; the directory filter skips it")
    return d


def _files(directory: Path) -> list[str]:
    return sorted(str(p) for p in directory.glob("*.rdb"))


def _load(spark, table: str, path, **options):
    r = spark.read.format("rdb").option("table", table)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load(str(path))


def b(v):
    """A binary column's value as bytes (null stays None)."""
    return bytes(v) if v is not None else None


def _elements(value) -> int | None:
    if isinstance(value, rdbspec.Stream):
        return value.length
    return len(value) if isinstance(value, list) else None


def _library_keys(files: list[str]) -> list[tuple]:
    rows = []
    for f in files:
        with rdbspec.open(f) as dump:
            model = memory.model_for(dump)
            for k in dump.keys():
                rows.append((f, k.db, k.key, k.type_name, k.rdb_type, k.encoding, k.expire_at_ms, k.idle,
                             k.freq, k.offset, k.size, _elements(k.value), model.usage(k)))
    return sorted(rows, key=repr)


def _library_streams(files: list[str]):
    for f in files:
        with rdbspec.open(f) as dump:
            for k in dump.keys():
                if k.type_name == "stream":
                    yield f, k, k.value


def _library_entries(files: list[str], include_deleted: bool) -> list[tuple]:
    rows = []
    for f, k, s in _library_streams(files):
        for e in s.entries(include_deleted):
            rows.append((f, k.db, k.key, f"{e.id[0]}-{e.id[1]}", e.id[0], e.id[1],
                         [tuple(x) for x in e.fields], e.deleted))
    return sorted(rows, key=repr)


def test_corpus_is_there():
    assert len(DUMPS) >= 7


def test_keys_match_library(spark, corpus):
    files = _files(corpus)
    got = _load(spark, "keys", corpus).collect()
    assert {r["file"] for r in got} == set(files)
    rows = sorted(((r["file"], r["db"], bytes(r["key"]), r["type"], r["rdb_type"], r["encoding"],
                    r["expire_at_ms"], r["idle"], r["freq"], r["offset"], r["size_in_file"], r["elements"],
                    r["memory"]) for r in got), key=repr)
    assert rows == _library_keys(files)
    for r in got:
        key = bytes(r["key"])
        try:
            assert r["key_str"] == key.decode("utf-8")
        except UnicodeDecodeError:
            assert r["key_str"] is None


@pytest.mark.parametrize("include_deleted", [False, True])
def test_stream_entries_match_library(spark, corpus, include_deleted):
    files = _files(corpus)
    got = _load(spark, "stream_entries", corpus, includeDeleted=str(include_deleted).lower()).collect()
    rows = []
    for r in got:
        assert isinstance(r["ms"], Decimal) and isinstance(r["seq"], Decimal)
        rows.append((r["file"], r["db"], bytes(r["key"]), r["id"], int(r["ms"]), int(r["seq"]),
                     [(bytes(f["field"]), bytes(f["value"])) for f in r["fields"]], r["deleted"]))
    expected = _library_entries(files, include_deleted)
    assert len(rows) == len(expected) > 0
    assert sorted(rows, key=repr) == expected


def test_stream_group_tables_match_library(spark, corpus):
    files = _files(corpus)
    groups, pending, consumers = set(), set(), set()
    for f, k, s in _library_streams(files):
        for g in s.groups:
            lag = group_lag(s, g, stream_version(s))  # what XINFO GROUPS answers
            groups.add((f, k.key, g.name, f"{g.last_delivered_id[0]}-{g.last_delivered_id[1]}",
                        g.entries_read, lag, len(g.pending), len(g.consumers)))
            for p in g.pending:
                pending.add((f, k.key, g.name, f"{p.id[0]}-{p.id[1]}", p.consumer, p.delivery_time_ms,
                             p.delivery_count, p.id in g.nacked_ids()))
            for c in g.consumers:
                consumers.add((f, k.key, g.name, c.name, c.seen_time_ms, c.active_time_ms, len(c.pending)))
    assert groups and pending and consumers

    got = {(r["file"], bytes(r["key"]), bytes(r["group"]), r["last_delivered_id"], r["entries_read"], r["lag"],
            r["pel_count"], r["consumers"]) for r in _load(spark, "stream_groups", corpus).collect()}
    assert got == groups
    got = {(r["file"], bytes(r["key"]), bytes(r["group"]), r["id"], b(r["consumer"]), r["delivery_time_ms"],
            r["delivery_count"], r["nacked"]) for r in _load(spark, "stream_pending", corpus).collect()}
    assert got == pending
    got = {(r["file"], bytes(r["key"]), bytes(r["group"]), bytes(r["consumer"]), r["seen_time_ms"],
            r["active_time_ms"], r["pel_count"]) for r in _load(spark, "stream_consumers", corpus).collect()}
    assert got == consumers


def test_rdb14_tables(spark, tmp_path):
    """Redis 8.8's types: a NACKed entry is a stream_pending row with a null consumer and `nacked`
    true (the golden file of librdb's stream_v14_xnack content); a sparse array a keys row of type
    array with its element count and a null memory (not derived)."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "conformance"))
    from golden import load_fixture

    for name in ("stream_rdb_t27_xnack", "rdb_redis14_array_basic"):
        (tmp_path / f"{name}.rdb").write_bytes(load_fixture(name).data)
    pending = sorted((r["id"], b(r["consumer"]), r["delivery_time_ms"], r["nacked"])
                     for r in _load(spark, "stream_pending", tmp_path).collect())
    first, sent = 1779170191996, 1779170192004
    assert pending == [(f"{first}-0", b"consumer1", sent, False), (f"{first + 2}-0", None, 0, True),
                       (f"{first + 4}-0", None, 0, True), (f"{first + 5}-0", b"consumer1", sent, False)]
    keys = {bytes(r["key"]): (r["type"], r["rdb_type"], r["elements"], r["memory"])
            for r in _load(spark, "keys", tmp_path).collect()}
    assert keys[b"arr"] == ("array", 28, 100, None)
    assert keys[b"mystream"][:3] == ("stream", 27, 4)


def test_every_table_schema(spark, corpus):
    sample = _files(corpus)[0]
    for table in TABLES:
        df = _load(spark, table, sample)
        assert df.schema == SCHEMAS[table], table
        assert df.columns[:2] == ["file", "db"]
        df.collect()  # the batches the worker yields fit the declared schema
    assert set(TABLES) == {"keys", "streams", "stream_entries", "stream_groups", "stream_pending",
                           "stream_consumers", "aux", "files"}


def test_streams_and_aux(spark, corpus):
    files = _files(corpus)
    streams = {(f, k.key): s for f, k, s in _library_streams(files)}
    got = _load(spark, "streams", corpus).collect()
    assert len(got) == len(streams)
    for r in got:
        s = streams[(r["file"], bytes(r["key"]))]
        assert (r["length"], r["nodes"], r["groups"], r["entries_added"]) == (
            s.length, len(s.nodes), len(s.groups), s.entries_added)
        assert r["last_id"] == f"{s.last_id[0]}-{s.last_id[1]}"
    aux = _load(spark, "aux", corpus).collect()
    expected = []
    for f in files:
        with rdbspec.open(f) as dump:
            list(dump.keys())
            expected += [(f, n.decode(), v.decode()) for n, v in dump.aux]
    assert sorted((r["file"], r["name"], r["value"]) for r in aux) == sorted(expected)


def test_memory_options(spark, corpus):
    """The `memory` column counts for the dump's own server version, or `memoryVersion` and
    `allocator`; a bad value is refused naming the option."""
    path = str(corpus / "redis-6.2.14__mixed_types.rdb")
    with rdbspec.open(path) as dump:
        model = memory.model(memory.Server("redis", (7, 0)), "libc")
        expected = sorted((k.key, model.usage(k)) for k in dump.keys())
    got = _load(spark, "keys", path, memoryVersion="7.0", allocator="libc").collect()
    assert sorted((bytes(r["key"]), r["memory"]) for r in got) == expected
    with pytest.raises(Exception, match="option memoryVersion"):
        _load(spark, "keys", path, memoryVersion="seven").collect()
    with_valkey = sorted((bytes(r["key"]), r["memory"])
                         for r in _load(spark, "keys", path, memoryVersion="valkey-9.1", allocator="libc").collect())
    with rdbspec.open(path) as dump:
        valkey = memory.model(memory.Server("valkey", (9, 1)), "libc")
        assert with_valkey == sorted((k.key, valkey.usage(k)) for k in dump.keys())
    with pytest.raises(Exception, match="option allocator"):
        _load(spark, "keys", path, allocator="tcmalloc").collect()


def test_options_filter(spark, corpus):
    files = _files(corpus)
    got = _load(spark, "keys", ",".join(files[:2]), db="0", types="hash,stream", keyPattern="*:*").collect()
    expected = [r for r in _library_keys(files[:2])
                if r[1] == 0 and r[3] in ("hash", "stream") and b":" in r[2]]
    assert len(got) == len(expected) > 0
    matched = sorted(str(p) for p in corpus.glob("redis-7.4.1__*.rdb"))
    assert _load(spark, "keys", corpus / "redis-7.4.1__*.rdb").count() == len(_library_keys(matched))


@pytest.fixture(scope="module")
def with_corrupt(tmp_path_factory) -> tuple[Path, str, str]:
    d = tmp_path_factory.mktemp("corrupt")
    good = d / "a_good.rdb"
    bad = d / "b_truncated.rdb"
    shutil.copy(REAL / "redis-7.4.1" / "mixed_types.rdb", good)
    data = (REAL / "redis-7.4.1" / "stream_groups.rdb").read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    return d, str(good), str(bad)


def test_ignore_corrupt_files(spark, with_corrupt):
    d, good, bad = with_corrupt
    rows = _load(spark, "keys", d, ignoreCorruptFiles="true").collect()
    good_rows = [r for r in rows if r["file"] == good]
    assert len(good_rows) == len(_library_keys([good]))
    files = {r["file"]: r for r in _load(spark, "files", d, ignoreCorruptFiles="true").collect()}
    assert files[good]["error"] is None and files[good]["checksum"] == "ok"
    assert bad in files[bad]["error"] and "byte" in files[bad]["error"]


def test_corrupt_file_fails_naming_it(spark, with_corrupt):
    d, _good, bad = with_corrupt
    with pytest.raises(Exception) as info:
        _load(spark, "keys", d, ignoreCorruptFiles="false").collect()
    assert bad in str(info.value)
    assert "at byte" in str(info.value)


@pytest.fixture(scope="module")
def big_dump(tmp_path_factory) -> Path:
    return split_dump.build(tmp_path_factory.mktemp("split") / "big.rdb")


@pytest.mark.parametrize("table", ["keys", "stream_entries", "stream_pending", "stream_consumers"])
def test_split_read_equals_unsplit_read(spark, big_dump, table):
    unsplit = _load(spark, table, big_dump, includeDeleted="true")
    split = _load(spark, table, big_dump, includeDeleted="true", splitSize="16k")
    assert unsplit.rdd.getNumPartitions() == 1
    parts = STREAM_PARTS if table == "stream_entries" else 0
    planned = plan(str(big_dump), 16 << 10, parts, streams_only=table != "keys")
    assert split.rdd.getNumPartitions() == len(planned) > 4
    expected = unsplit.collect()
    assert expected and split.collect() == expected  # the same rows, in the same order


def test_template_hashes_in_the_keys_table(spark, tmp_path):
    """Redis 8.10's template hashes are rows of type hash (encoding template-listpack or
    template-array, memory null), as the library reads them, whether the file is read whole or in
    splits (each reads the templates at the start of the file first; one among the keys ends the
    cutting)."""
    path = tmp_path / "templates.rdb"
    template_dump.build(path, keys=400, late=True)
    got = _load(spark, "keys", path).collect()
    rows = sorted(((r["file"], r["db"], bytes(r["key"]), r["type"], r["rdb_type"], r["encoding"],
                    r["expire_at_ms"], r["idle"], r["freq"], r["offset"], r["size_in_file"], r["elements"],
                    r["memory"]) for r in got), key=repr)
    assert rows == _library_keys([str(path)])
    assert {r["encoding"] for r in got if bytes(r["key"]) != b"plain"} == {"template-listpack", "template-array"}
    assert {r["memory"] for r in got if bytes(r["key"]) != b"plain"} == {None}
    split = _load(spark, "keys", path, splitSize="2k")
    assert split.rdd.getNumPartitions() > 1 and split.collect() == got


def test_a_dump_over_4_gib(spark, tmp_path):
    """A sparse file over 4 GiB (tests/support/sparse_dump.py: a string of more than 2^32 bytes, then
    keys past 2^32), read split: the keys' offsets and sizes past 32 bits as the library reads them,
    every stream entry, the string measured without being read."""
    path = sparse_dump.build(tmp_path / "past-4gib.rdb")
    keys = _load(spark, "keys", path, splitSize="4k")
    assert keys.rdd.getNumPartitions() > 2
    got = [(b(r["key"]), r["offset"], r["size_in_file"], r["elements"]) for r in keys.collect()]
    with rdbspec.open(path) as dump:
        assert got == [(r.key, r.offset, r.size, r.count_elements()) for r in dump.keys()]
    assert got[1][1] > 1 << 32 and got[0][2] > 1 << 32
    assert _load(spark, "stream_entries", path, splitSize="4k").count() == len(sparse_dump.ENTRIES)
    assert _load(spark, "files", path).collect()[0]["checksum"] == "disabled (0)"


def test_split_size_option_is_checked(spark, big_dump):
    with pytest.raises(Exception, match="splitSize"):
        _load(spark, "keys", big_dump, splitSize="lots").collect()


def test_dfs_snapshot_set_is_read_one_task_per_shard(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("dfs")
    dragonfly_build.build(out)
    with rdbspec.open(out / "set") as dump:
        expected = [(k.key, k.db, k.type_name, k.expire_at_ms) for k in dump.keys()]
    for named in (out / "set", out / "set" / "snap-summary.dfs", out / "set" / "snap-0001.dfs"):
        df = _load(spark, "keys", named)
        assert df.rdd.getNumPartitions() == 4  # the summary and its 3 shard files
        rows = df.collect()
        assert [(bytes(r["key"]), r["db"], r["type"], r["expire_at_ms"]) for r in rows] == expected
    assert {Path(r["file"]).name for r in rows} == {"snap-0000.dfs", "snap-0001.dfs", "snap-0002.dfs"}
    aux = {(Path(r["file"]).name, r["name"]) for r in _load(spark, "aux", out / "set").collect()}
    assert ("snap-summary.dfs", "shard-count") in aux and ("snap-0002.dfs", "shard-id") in aux
    for broken, message in (("missing", "snap-0002.dfs: shard file missing"),
                            ("extra", "snap-0003.dfs: extra shard file")):
        with pytest.raises(Exception, match=message):
            _load(spark, "keys", out / broken).collect()


def test_pipeline_command(tmp_path, spark, monkeypatch):
    from rdbspec.cli import pipeline
    from rdbspec.spark import launch

    parser = argparse.ArgumentParser()
    pipeline.register(parser.add_subparsers(dest="command"))
    sample = str(Path(__file__).parents[2] / "examples" / "sample.rdb")
    args = parser.parse_args(["pipeline", sample, "--out", str(tmp_path / "out"),
                              "--tables", "files,keys", "--tables", "streams,stream_groups"])
    assert args.standalone is pipeline.run and args.run_pipeline is pipeline.run
    out = io.StringIO()
    # run() gets the session and stops it at the end: keep the module's shared one running
    monkeypatch.setattr(launch, "session", lambda master, verbose=False, conf=None: _Unstoppable(spark))
    assert pipeline.run(args, out) == 0
    text = out.getvalue()
    assert "files: 1" in text and "keys: 47" in text and "stream" in text
    keys = spark.read.parquet(str(tmp_path / "out" / "keys"))
    assert keys.count() == 47
    assert sorted(os.listdir(tmp_path / "out")) == ["files", "keys", "stream_groups", "streams"]


def test_pipeline_report_is_the_report_of_every_input(tmp_path, spark, monkeypatch):
    """`pipeline --report`: the figures of `rdbspec report` over both inputs, made from the
    tables (the keys table's memory column, the stream tables summed per group by Spark), equal
    those `report.data.from_dump` gathers from the two dumps one after the other; the page and
    its JSON are written whole."""
    from rdbspec.cli import pipeline
    from rdbspec.report.data import ReportBuilder, from_dump, save_time_ms
    from rdbspec.spark import launch

    inputs = [str(REAL / "redis-7.0.15" / "stream_groups.rdb"), str(REAL / "redis-7.0.15" / "mixed_types.rdb")]
    parser = argparse.ArgumentParser()
    pipeline.register(parser.add_subparsers(dest="command"))
    monkeypatch.setattr(launch, "session", lambda master, verbose=False, conf=None: _Unstoppable(spark))
    for name in ("report.json", "report.html"):
        args = parser.parse_args(["pipeline", *inputs, "--out", str(tmp_path / "out"), "--tables", "keys",
                                  "--report", str(tmp_path / name), "--allocator", "libc"])
        assert pipeline.run(args, io.StringIO()) == 0
    got = json.loads((tmp_path / "report.json").read_text())
    dumps = [rdbspec.open(path) for path in inputs]
    builder = ReportBuilder(now_ms=max(save_time_ms(d.aux) for d in dumps))
    for dump in dumps:
        from_dump(dump, memory.model_for(dump, None, "libc"), builder)
        dump.close()
    expected = json.loads(json.dumps(builder.result()))

    def unordered(result: dict) -> dict:  # rows of equal weight come in Spark's order
        result["top_keys"] = sorted(result["top_keys"], key=repr)
        result["streams"]["top"] = sorted(result["streams"]["top"], key=repr)
        return result

    assert unordered(got) == unordered(expected)
    assert got["streams"]["pending"] > 0 and got["totals"]["keys"] == sum(t["keys"] for t in got["types"])
    page = (tmp_path / "report.html").read_text()
    assert 'id="streams"' in page and 'id="top-keys"' in page
    assert not list(tmp_path.glob(f".*{TEMP_MARK}*"))  # the page's temporary files, renamed


class _Unstoppable:
    def __init__(self, session):
        self._session = session

    def __getattr__(self, name):
        return getattr(self._session, name)

    def stop(self) -> None:
        pass


def test_pipeline_ends_a_bug_in_a_task_with_exit_70(tmp_path, spark, monkeypatch, capsys):
    """A task that meets a bug of ours fails with `source.InternalReadError` (its line is tested
    in test_internal_errors.py); the pipeline prints that one line and exits 70."""

    from pyspark.sql.functions import udf

    from rdbspec.cli import pipeline
    from rdbspec.spark import launch, source

    line = ("rdbspec: internal error reading x.rdb at byte 9: TypeError: injected bug; this is a bug in "
            "rdbspec, please report it (rdbspec --debug ... prints the traceback)")

    def task(_):  # a bug put into a real Spark task
        raise source.InternalReadError(line)

    parser = argparse.ArgumentParser()
    pipeline.register(parser.add_subparsers(dest="command"))
    sample = str(Path(__file__).parents[2] / "examples" / "sample.rdb")
    args = parser.parse_args(["pipeline", sample, "--out", str(tmp_path / "out"), "--tables", "keys"])
    monkeypatch.setattr(launch, "session", lambda master, verbose=False, conf=None: _Unstoppable(spark))
    monkeypatch.setattr(pipeline, "reader", lambda session, table, options, inputs: spark.range(1).select(
        udf(task)("id")))
    assert pipeline.run(args, io.StringIO()) == 70
    assert capsys.readouterr().err.splitlines() == [line]


# -- the pipeline's failures: one line, the documented exit code --------------------------------

EXAMPLES = Path(__file__).parents[2] / "examples"


def _pipeline(*argv: str) -> int:
    from rdbspec import cli

    return cli.main(["pipeline", *argv])


def test_pipeline_empty_or_missing_input_is_one_line_exit_6(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    for missing in (tmp_path / "empty", tmp_path / "nothing-here"):
        assert _pipeline(str(missing), "--out", str(tmp_path / "out")) == 6
        err = capsys.readouterr().err.splitlines()
        assert err == [f"rdbspec pipeline: {'no dump file in' if missing.name == 'empty' else 'no such file:'} "
                       f"{missing}" + (" (directories are searched for *.rdb)" if missing.name == "empty" else "")]


def test_pipeline_without_java_says_what_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no java on it
    assert _pipeline(str(EXAMPLES / "sample.rdb"), "--out", str(tmp_path / "out")) == 69
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert err[0].startswith("rdbspec pipeline: Java 17+ is needed for Spark: install openjdk-17-jre-headless (apt)")


def test_pipeline_conf_without_a_value_is_one_line_exit_2(tmp_path, capsys):
    assert _pipeline(str(EXAMPLES / "sample.rdb"), "--out", str(tmp_path / "out"), "--conf", "spark.archives") == 2
    assert capsys.readouterr().err.splitlines() == ["rdbspec pipeline: --conf spark.archives: expected KEY=VALUE"]


def test_pipeline_job_failure_exit_codes():
    from rdbspec.cli.pipeline import job_failure

    trace = ("py4j...\n  File x\nrdbspec.spark.source.CorruptFileError: /d/a: b.rdb: ChecksumError at byte 9: "
             "checksum mismatch\n\tat org.apache.spark...")
    failure = job_failure(RuntimeError(trace))
    assert (str(failure), failure.code) == ("/d/a: b.rdb: ChecksumError at byte 9: checksum mismatch", 4)
    assert job_failure(RuntimeError("... CorruptFileError: /d/c.rdb: IntegrityError: length 3, 2 live")).code == 5
    assert job_failure(RuntimeError("... CorruptFileError: /d/c.rdb: FileNotFoundError: gone")).code == 6
    failure = job_failure(RuntimeError("\nTypeError: oops\n at ..."))
    assert (str(failure), failure.code) == ("internal error, please report: TypeError: oops", 70)
    # an executor's Python without rdbspec fails unpickling the reader, before any of rdbspec runs
    failure = job_failure(RuntimeError("PythonException:\n  File x\nModuleNotFoundError: No module named 'rdbspec'"))
    assert failure.code == 69 and str(failure).startswith("an executor's Python has no module rdbspec: give the")


def test_directories_are_read_recursively(spark, tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "_temporary").mkdir()
    shutil.copy(EXAMPLES / "sample.rdb", tmp_path / "a" / "b" / "one.rdb")
    shutil.copy(EXAMPLES / "streams.rdb", tmp_path / "a" / "two.rdb")
    shutil.copy(EXAMPLES / "streams.rdb", tmp_path / "_temporary" / "skipped.rdb")
    files = {r["file"]: r["keys"] for r in _load(spark, "files", tmp_path).collect()}
    assert files == {str(tmp_path / "a" / "b" / "one.rdb"): 47, str(tmp_path / "a" / "two.rdb"): 2}


@pytest.fixture(scope="module")
def troubled_inputs(tmp_path_factory) -> Path:
    """A nested stream dump whose groups' lag the server answers nil, a cut dump, a text file."""
    d = tmp_path_factory.mktemp("troubled")
    (d / "nested").mkdir()
    shutil.copy(EXAMPLES / "streams.rdb", d / "nested" / "streams.rdb")
    data = (EXAMPLES / "sample.rdb").read_bytes()
    (d / "cut.rdb").write_bytes(data[:30000])
    (d / "text.rdb").write_text("hello world, not a dump\n")
    return d


def _pipeline_process(*argv: str) -> tuple[int, str, list[str]]:
    """`rdbspec pipeline` as a user runs it: its own process, so what its JVM prints is seen too."""
    done = subprocess.run([sys.executable, "-m", "rdbspec", "pipeline", *argv], capture_output=True, text=True,
                          check=False)
    return done.returncode, done.stdout, done.stderr.splitlines()


def test_pipeline_ignoring_corrupt_files_warns_once_per_file(troubled_inputs, tmp_path):
    code, out, err = _pipeline_process(str(troubled_inputs), "--out", str(tmp_path), "--ignore-corrupt-files",
                                       "--tables", "files,streams,stream_groups")
    assert code == 0
    assert sorted(line.split(": ")[2] for line in err) == [str(troubled_inputs / "cut.rdb"),
                                                           str(troubled_inputs / "text.rdb")]
    assert all(line.startswith("rdbspec: skipping the rest of a corrupt file: ") for line in err)
    assert "None" not in out
    assert f"  {troubled_inputs / 'text.rdb'}: header unreadable, 0 keys, ERROR " in out
    # XINFO GROUPS answers lag nil for the groups of s:grp (entries deleted after their position)
    assert "          61      6       23      nil  s:grp (db 0, streams.rdb)" in out.splitlines()


def test_pipeline_corrupt_file_is_one_line(troubled_inputs, tmp_path):
    code, out, err = _pipeline_process(str(troubled_inputs), "--out", str(tmp_path), "--tables", "keys")
    assert code == 3
    assert len(err) == 1 and err[0].startswith(f"rdbspec pipeline: {troubled_inputs}/"), err
    assert " at byte " in err[0] and out == ""


def test_pipeline_debug_adds_the_traceback(spark, troubled_inputs, tmp_path, monkeypatch, capsys):
    from rdbspec.spark import launch

    monkeypatch.setattr(launch, "session", lambda master, verbose=False, conf=None: _Unstoppable(spark))
    cut = str(troubled_inputs / "cut.rdb")
    assert _pipeline(cut, "--out", str(tmp_path), "--tables", "files", "--no-summary") == 3
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"rdbspec pipeline: {cut}: TruncatedError at byte 30000")
    assert _pipeline(cut, "--out", str(tmp_path), "--tables", "files", "--no-summary", "--debug") == 3
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):") and "CorruptFileError" in err
    assert err.splitlines()[-1] == line


def _digests(server, dbs) -> dict[tuple[int, bytes], bytes]:
    out = {}
    for db in dbs:
        client = server.client(db)
        for key in client.keys("*"):
            out[(db, key)] = client.execute_command("DEBUG", "DIGEST-VALUE", key)[0]
    return out


def test_pipeline_writes_a_filtered_dump_per_input(tmp_path, spark, monkeypatch, redis_server_factory):
    """--dumps: each input's keys that the filters select (the rows of its keys table) as one dump
    under OUT/dumps/ in the inputs' layout; Redis 7.0 loads them with sanitize-dump-payload yes and
    gives each key the digest its source server gave; a DFS set becomes one dump for the target."""
    from rdbspec.cli import pipeline
    from rdbspec.spark import launch

    inputs, out = tmp_path / "in", tmp_path / "out"
    sources = {}
    for name, seed in (("a/one.rdb", 1), ("b/c/two.rdb", 2)):
        (inputs / name).parent.mkdir(parents=True)
        sources[name] = redis_server_factory(servers.binary_for("debian"))
        populate(sources[name].client(), seed=seed, scale=0.2)
        sources[name].save(copy_to=inputs / name)
    dragonfly_build.build(tmp_path / "df")
    shutil.copytree(tmp_path / "df" / "set", inputs / "df")
    parser = argparse.ArgumentParser()
    pipeline.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["pipeline", str(inputs), "--out", str(out), "--tables", "keys", "--db", "0,3",
                              "--types", "string,list,zset,hash,stream", "--key-pattern", "*[a-m]*", "--dumps",
                              "--dumps-target", "redis-7.0", "--dumps-allow-lossy", "--no-summary"])
    monkeypatch.setattr(launch, "session", lambda master, verbose=False, conf=None: _Unstoppable(spark))
    report = io.StringIO()
    assert pipeline.run(args, report) == 0
    rows = spark.read.parquet(str(out / "keys")).collect()
    listed: dict[str, set] = {}
    for r in rows:
        name = os.path.relpath(r["file"], inputs)
        listed.setdefault("df" if name.startswith("df") else name, set()).add((r["db"], bytes(r["key"])))
    assert sorted(listed) == ["a/one.rdb", "b/c/two.rdb", "df"]
    for name, source in sources.items():
        written = out / "dumps" / name
        assert f"dump: wrote {len(listed[name])} of " in report.getvalue()
        loaded = redis_server_factory(servers.binary_for("debian"), {"sanitize-dump-payload": "yes"}, rdb=written)
        digests = _digests(loaded, (0, 3))
        assert set(digests) == listed[name] and listed[name]
        assert digests == {k: v for k, v in _digests(source, (0, 3)).items() if k in digests}
    set_dump = out / "dumps" / "df" / "snap.rdb"
    loaded = redis_server_factory(servers.binary_for("debian"), {"sanitize-dump-payload": "yes"}, rdb=set_dump)
    assert set(_digests(loaded, (0, 3))) == listed["df"]
    with rdbspec.open(inputs / "df") as source, rdbspec.open(set_dump) as written:
        expected = {(k.db, k.key): k.type_name for k in source.keys() if (k.db, k.key) in listed["df"]}
        assert {(k.db, k.key): k.type_name for k in written.keys()} == expected
    assert "  dropped hash field TTLs (Dragonfly type 31): 1\n" in report.getvalue()


def test_pipeline_dumps_report_an_input_they_cannot_write(troubled_inputs, tmp_path, spark, monkeypatch):
    from rdbspec.spark import launch

    monkeypatch.setattr(launch, "session", lambda master, verbose=False, conf=None: _Unstoppable(spark))
    report = io.StringIO()
    from rdbspec.cli import pipeline

    parser = argparse.ArgumentParser()
    pipeline.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["pipeline", str(troubled_inputs), "--out", str(tmp_path), "--tables", "files",
                              "--ignore-corrupt-files", "--dumps", "--no-summary"])
    assert pipeline.run(args, report) == 0
    lines = report.getvalue().splitlines()
    assert f"dump: none for {troubled_inputs / 'cut.rdb'}: TruncatedError at byte 30000: " in "\n".join(lines)
    assert any(line.startswith(f"dump: wrote 2 of 2 keys of {troubled_inputs / 'nested' / 'streams.rdb'}")
               for line in lines)
    assert (tmp_path / "dumps" / "nested" / "streams.rdb").read_bytes() == \
        (troubled_inputs / "nested" / "streams.rdb").read_bytes()  # nothing filtered: the same bytes
    assert lines[-1] == f"wrote 1 dumps to {tmp_path / 'dumps'} (2 inputs failed)"
    assert not (tmp_path / "dumps" / "cut.rdb").exists()


# `python -c` this with an input and OUT/dumps: the task of --dumps that writes its dump
# (`dumps.write_dump`), in a process of its own; prints its error line and exit code
DUMP_TASK = """
import sys
from rdbspec.spark import dumps
done = dumps.write_dump(dumps.jobs([sys.argv[1]], sys.argv[2], {})[0])
print(done.error, done.exit_code)
"""


def test_pipeline_dumps_after_a_killed_run_and_a_full_disk(tmp_path, spark, monkeypatch):
    """--dumps, crash-safe: a task whose write fails (EFBIG past RLIMIT_FSIZE, as ENOSPC would fail
    it) names the dump, exit 6, and leaves the previous dump and no temporary file; one killed at a
    byte of its dump (`file_limit`) leaves the previous dump whole and its temporary file. The
    next run removes what killed writers left under OUT/dumps (that of an input no longer given
    too) and writes the dumps whole."""
    from rdbspec.cli import pipeline
    from rdbspec.spark import launch
    from tests.support.file_limit import limited

    inputs, out = tmp_path / "in", tmp_path / "out"
    inputs.mkdir()
    source = inputs / "one.rdb"
    shutil.copy(REAL / "redis-7.0.15" / "mixed_types.rdb", source)
    written = out / "dumps" / "one.rdb"
    written.parent.mkdir(parents=True)
    written.write_bytes(b"the previous dump")

    def task(limit: int, die: bool) -> subprocess.CompletedProcess[str]:
        return subprocess.run(limited(["-c", DUMP_TASK, str(source), str(written.parent)], limit, die),
                              capture_output=True, text=True, timeout=120, check=False)

    def left() -> list[Path]:
        return sorted(p for p in out.rglob(f".*{TEMP_MARK}*"))

    full = task(4096, die=False)
    assert full.stdout == f"{written}: File too large 6\n", full.stderr
    assert written.read_bytes() == b"the previous dump" and left() == []
    assert task(20_000, die=True).returncode == -signal.SIGXFSZ
    [killed] = left()
    assert killed.parent == written.parent and killed.stat().st_size == 20_000
    (out / "dumps" / "gone").mkdir()
    gone = subprocess.run(limited(["-c", "import sys; from rdbspec.atomic import AtomicFile; "
                                   "AtomicFile(sys.argv[1]).binary.write(bytes(1 << 20))",
                                   str(out / "dumps" / "gone" / "input.rdb")], 1000, die=True),
                          capture_output=True, timeout=120, check=False)
    assert gone.returncode == -signal.SIGXFSZ and len(left()) == 2
    assert written.read_bytes() == b"the previous dump"

    monkeypatch.setattr(launch, "session", lambda master, verbose=False, conf=None: _Unstoppable(spark))
    parser = argparse.ArgumentParser()
    pipeline.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["pipeline", str(inputs), "--out", str(out), "--tables", "files", "--dumps",
                              "--no-summary"])
    assert pipeline.run(args, io.StringIO()) == 0
    assert written.read_bytes() == source.read_bytes()  # nothing filtered: the same bytes
    assert left() == []


def test_pipeline_dumps_of_a_dragonfly_set_need_a_target(tmp_path, capsys):
    dragonfly_build.build(tmp_path / "df")
    assert _pipeline(str(tmp_path / "df" / "set"), "--out", str(tmp_path / "out"), "--dumps") == 2
    assert capsys.readouterr().err == ("rdbspec pipeline: a Dragonfly snapshot is written for a Redis server: "
                                       "give --dumps-target\n")
