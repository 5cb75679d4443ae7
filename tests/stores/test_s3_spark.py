"""The ``rdb`` data source over an object store (moto's S3 server on 127.0.0.1): every table of
`s3://` inputs (a directory, a glob, a Dragonfly snapshot set, a file split into several ranges)
is the table of the same files on disk, row for row but the `file` column; each task fetches only
its split's byte ranges; a missing object and a denied bucket fail the query naming the URL.

The store is reached through the reader's options (``s3.endpoint``, ``s3.accessKey``...) in one
session and through the session's ``spark.hadoop.fs.s3a.*`` settings in another."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rdbspec.read import location, splits
from rdbspec.spark import dumps
from rdbspec.spark.options import TABLES
from tests.support import dragonfly_dumps, s3, split_dump
from tests.support.s3 import DENIED, S3Server

s3_server = s3.s3_server  # the fixture (pytest finds module attributes)
REAL = Path(__file__).resolve().parents[1] / "corpus" / "real"
SPLIT = "16k"


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from rdbspec.spark.launch import session as start

    session = start("local[2]", "rdbspec-s3-tests")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def inputs(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A local directory and its copy in the store (`s3://dumps/spark/`): real servers' dumps,
    a file of many keys and streams that splits into ranges, a Dragonfly snapshot set."""
    local = tmp_path_factory.mktemp("inputs")
    for path in sorted(REAL.glob("redis-7*/*.rdb")) + sorted(REAL.glob("valkey-8.0.1/*.rdb")):
        shutil.copy(path, local / f"{path.parent.name}__{path.name}")
    split_dump.build(local / "big.rdb")
    snapshots = tmp_path_factory.mktemp("dfs")
    dragonfly_dumps.build(snapshots)
    shutil.copytree(snapshots / "set", local / "dfs")
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        s3_server.upload(path, f"spark/{path.relative_to(local)}")
    return local, "s3://dumps/spark"


def store_options(server: S3Server) -> dict[str, str]:
    return {"s3.endpoint": server.endpoint, "s3.region": s3.REGION,
            "s3.accessKey": server.reader["aws_access_key_id"], "s3.secretKey": server.reader["aws_secret_access_key"]}


def rows(spark: Any, table: str, path: str, root: str, **options: str) -> list[tuple]:
    """The table's rows, each with its `file` relative to `root`, in the order read."""
    reader = spark.read.format("rdb").option("table", table)
    for name, value in options.items():
        reader = reader.option(name, value)
    out = []
    for row in reader.load(path).collect():
        values = row.asDict()
        values["file"] = values["file"][len(root):]
        out.append(tuple(bytes(v) if isinstance(v, bytearray) else v for v in values.values()))
    return out


@pytest.mark.parametrize("table, pattern", [(table, "") for table in TABLES] + [("keys", "/*.rdb"),
                                                                                  ("aux", "/dfs/snap-summary.dfs")])
def test_every_table_of_the_store_is_the_local_table(spark: Any, s3_server: S3Server, inputs: tuple[Path, str],
                                                     table: str, pattern: str) -> None:
    """The whole directory (every file, listed), a glob, a snapshot set named by its summary."""
    local, remote = inputs
    expected = rows(spark, table, f"{local}{pattern}", str(local), splitSize=SPLIT)
    got = rows(spark, table, f"{remote}{pattern}", remote, splitSize=SPLIT, **store_options(s3_server))
    assert got == expected and expected


def test_a_big_file_is_read_in_ranges_by_several_tasks(spark: Any, s3_server: S3Server, inputs: tuple[Path, str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's file splits into as many tasks as the file on disk cut by keys, and no task
    fetches more than its split and the records before the databases."""
    local, remote = inputs
    for key, value in s3_server.environment().items():
        monkeypatch.setenv(key, value)
    location.configure(location.Store.from_settings())
    planned = splits.plan(f"{remote}/big.rdb", 16 << 10, streams_only=False)
    assert len(planned) == len(splits.plan(str(local / "big.rdb"), 16 << 10)) > 4
    fetched: list[list[tuple[int, int]]] = []
    real = location.fetch
    monkeypatch.setattr(location, "fetch", lambda url, size, ranges: fetched.append(ranges) or real(url, size, ranges))
    keys = []
    for split in planned:
        with splits.open_split(split) as dump:
            if split.start is not None:
                dump.seek(split.start, split.db)
            keys += [(r.key, r.offset) for r in dump.keys(split.end)]
            assert dump.checksum_status == ("ok" if split.end is None else "not read")
    size = (local / "big.rdb").stat().st_size
    assert fetched == [[(0, s.head_end), (s.start or 0, size if s.end is None else s.end)] for s in planned]
    assert planned[0].head_end < 1000 and sum(s.head_end for s in planned) + size == sum(
        end - start for ranges in fetched for start, end in ranges)  # each byte once, the head once a task
    with splits.open_split(splits.Split(str(local / "big.rdb"))) as whole:
        assert keys == [(r.key, r.offset) for r in whole.keys()]
    df = spark.read.format("rdb").options(**store_options(s3_server), splitSize=SPLIT).load(f"{remote}/big.rdb")
    assert df.rdd.getNumPartitions() == len(planned)


def test_the_session_s3a_settings_reach_the_store(spark: Any, s3_server: S3Server, inputs: tuple[Path, str]) -> None:
    from rdbspec.spark import register

    local, remote = inputs
    conf = {"endpoint": s3_server.endpoint.removeprefix("http://"), "connection.ssl.enabled": "false",
            "endpoint.region": s3.REGION, "access.key": s3_server.reader["aws_access_key_id"],
            "secret.key": s3_server.reader["aws_secret_access_key"]}
    for name, value in conf.items():
        spark.conf.set(f"spark.hadoop.fs.s3a.{name}", value)
    try:
        register(spark)
        assert rows(spark, "keys", remote, remote) == rows(spark, "keys", str(local), str(local))
    finally:
        for name in conf:
            spark.conf.unset(f"spark.hadoop.fs.s3a.{name}")
        register(spark)


@pytest.mark.parametrize("bucket, words", [("dumps", "no such file"), (DENIED, "access denied")])
def test_an_object_the_query_cannot_read_fails_it_naming_the_url(spark: Any, s3_server: S3Server, bucket: str,
                                                                words: str) -> None:
    url = f"s3://{bucket}/spark/missing.rdb"
    if bucket == DENIED:  # there, but not for the reader
        s3_server.upload(REAL / "redis-7.0.15" / "stream_basic.rdb", "spark/missing.rdb", bucket=DENIED)
    with pytest.raises(Exception, match=f"{url}.*{words}|{words}.*{url}"):
        spark.read.format("rdb").options(**store_options(s3_server)).load(url).collect()


def test_the_pipeline_dumps_of_store_inputs_keep_their_layout(s3_server: S3Server, inputs: tuple[Path, str],
                                                               tmp_path: Path) -> None:
    """`pipeline --dumps`: a dump an input, written below OUT as the inputs lie in the store (a
    DFS set as one dump named after its summary), each the dump its local twin gives."""
    local, remote = inputs
    options = {**store_options(s3_server), "types": "stream"}
    sources = [f"{remote}/big.rdb", f"{remote}/dfs/snap-summary.dfs", f"{remote}/dfs/snap-0000.dfs"]
    made = dumps.jobs(sources, str(tmp_path / "remote"), options, target="redis-7.0", allow_lossy=True)
    assert [job.destination for job in made] == [str(tmp_path / "remote" / n) for n in ("big.rdb", "dfs/snap.rdb")]
    twins = dumps.jobs([str(local / "big.rdb"), str(local / "dfs")], str(tmp_path / "local"), options,
                       target="redis-7.0", allow_lossy=True)
    for job, twin in zip(made, twins):
        result, expected = dumps.write_dump(job), dumps.write_dump(twin)
        assert result.error is None and result.written == expected.written > 0
        assert Path(job.destination).read_bytes() == Path(twin.destination).read_bytes()
