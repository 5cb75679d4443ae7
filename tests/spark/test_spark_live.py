"""The `rdb` Spark data source over live servers (issue 31): `load("redis://host:port")` reads
the server's RDB in one task, as a replica takes it; a cluster node's URL reads every master of
its cluster, a task each. Every table equals the same table over the files the servers SAVE (no
write between), but the columns that name where a row came from (`file`: the server's URL, not the
file's path) and where in the RDB (`offset`: a replica's RDB has three more AUX fields before
the keys, redis src/rdb.c rdbSaveInfoAuxFields); no replica is left on any server."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from rdbspec.spark.options import TABLES  # noqa: E402
from tests.servers.test_live_source import MOMENT_AUX, REPLICATION_AUX, no_replica_left  # noqa: E402
from tests.support import servers  # noqa: E402
from tests.support.populate import populate  # noqa: E402
from tests.support.servers import binary_for  # noqa: E402
from tests.support.valkey_cluster import ValkeyCluster  # noqa: E402

redis_server_factory = servers.redis_server_factory
WHERE = {"file", "offset"}  # the columns that differ by design (the module doc)


@pytest.fixture(scope="module")
def spark():
    from rdbspec.spark.launch import session as start

    session = start("local[2]", "rdbspec-tests-live")
    yield session
    session.stop()


def _rows(spark, table: str, paths: list[str]) -> list[str]:
    frame = spark.read.format("rdb").option("table", table).option("paths", _json(paths)).load()
    if table == "aux":  # the AUX fields both have, but those of the moment of the save
        frame = frame.filter(~frame["name"].isin(*(REPLICATION_AUX | MOMENT_AUX)))
    return sorted(repr(tuple(row)) for row in frame.select(*[c for c in frame.columns if c not in WHERE]).collect())


def _json(paths: list[str]) -> str:
    import json

    return json.dumps(paths)


def test_every_table_over_a_live_server_equals_the_saved_file(spark, redis_server_factory, tmp_path: Path) -> None:
    server = redis_server_factory(binary_for("debian"), {"repl-diskless-sync": "no"})
    populate(server.client(), seed=11, scale=0.2)
    saved = str(server.save(tmp_path / "saved.rdb"))
    url = f"redis://127.0.0.1:{server.port}"
    for table in TABLES:
        assert _rows(spark, table, [url]) == _rows(spark, table, [saved]), table
    files = spark.read.format("rdb").option("table", "files").load(url).collect()
    assert [row["file"] for row in files] == [url]
    assert no_replica_left(server)


def test_a_cluster_seed_reads_every_master_a_task_each(spark, tmp_path: Path) -> None:
    with ValkeyCluster(3) as cluster:
        for i in range(300):
            cluster.client_for_key(f"key:{i}").set(f"key:{i}", i)
        for i in range(6):
            client = cluster.client_for_key(f"stream:{i}")
            client.xadd(f"stream:{i}", {"f": i})
            client.xgroup_create(f"stream:{i}", "g", id="0")
        saved = [str(node.save(tmp_path / f"node-{n}.rdb")) for n, node in enumerate(cluster.nodes)]
        nodes = {f"redis://127.0.0.1:{node.port}" for node in cluster.nodes}
        for table in ("keys", "streams", "stream_groups", "files"):
            assert _rows(spark, table, [cluster.seed]) == _rows(spark, table, saved), table
        files = spark.read.format("rdb").option("table", "files").load(cluster.seed)
        assert files.rdd.getNumPartitions() == 3
        assert {row["file"] for row in files.collect()} == nodes
        keys = spark.read.format("rdb").option("table", "keys").load(cluster.seed).collect()
        assert len(keys) == 306 and {row["file"] for row in keys} == nodes  # each key names its node
        assert all(no_replica_left(node) for node in cluster.nodes)


def test_the_pipeline_over_a_live_server(spark, redis_server_factory, tmp_path: Path, monkeypatch) -> None:
    """`rdbspec pipeline redis://…` writes the tables: those of the file the server saves."""
    import argparse
    import io

    from rdbspec.cli import pipeline
    from rdbspec.spark import launch
    from tests.spark.test_spark import _Unstoppable

    server = redis_server_factory(binary_for("valkey"))
    populate(server.client(), seed=13, scale=0.1)
    saved = str(server.save(tmp_path / "saved.rdb"))
    parser = argparse.ArgumentParser()
    pipeline.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["pipeline", f"redis://127.0.0.1:{server.port}", "--out", str(tmp_path / "out"),
                              "--tables", "keys,streams"])
    monkeypatch.setattr(launch, "session", lambda master, verbose=False, conf=None: _Unstoppable(spark))
    assert pipeline.run(args, io.StringIO()) == 0
    for table in ("keys", "streams"):
        written = spark.read.parquet(str(tmp_path / "out" / table))
        assert sorted(repr(tuple(r)) for r in written.select(*[c for c in written.columns if c not in WHERE])
                      .collect()) == _rows(spark, table, [saved])
    assert no_replica_left(server)


def test_a_server_that_refuses_sync_fails_the_query_in_one_line(spark, redis_server_factory) -> None:
    """A task whose server will not send its RDB fails the query naming the server, and the
    pipeline's line for it is that refusal (exit 8)."""
    from pyspark.errors import PythonException

    from rdbspec.cli.pipeline import job_failure
    from rdbspec.errors import EXIT_CODES

    server = redis_server_factory(binary_for("valkey"), {"rename-command": [("SYNC", ""), ("PSYNC", "")]})
    url = f"redis://127.0.0.1:{server.port}"
    with pytest.raises(PythonException) as failed:
        spark.read.format("rdb").option("table", "keys").load(url).collect()
    failure = job_failure(failed.value)
    assert failure.code == EXIT_CODES["refused"]
    assert str(failure).startswith(f"{url}: SyncRefusedError: {url} does not send its RDB to a replica (SYNC: ")
