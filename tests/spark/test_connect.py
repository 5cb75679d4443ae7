"""The ``rdb`` format from a Spark Connect client: a Connect server started from the pyspark wheel
(`tests.support.spark_connect`, on 127.0.0.1), a client session that registers the source with
`rdbspec.spark.register` and reads every table, each giving exactly the rows of a classic
local-mode session on the same inputs; and the README's Connect snippets, run as written.

One server for the module, and one local session, stopped once it has read what the Connect
reads are compared with; the server's JVM starts meanwhile (each costs seconds to start)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from rdbspec.spark import TABLES, register
from rdbspec.spark.launch import session as classic_session
from tests.support import readme, s3
from tests.support.spark_connect import ConnectServer

s3_server = s3.s3_server  # moto's S3 server, for the inputs in a store (pytest finds module attributes)
CORPUS = Path(__file__).parents[1] / "corpus" / "real"
# three servers' dumps (RDB 9, 12 and Valkey 8's 11), each a mix of types, a stream of many nodes,
# and streams with consumer groups and pending entries
DUMP_DIRS = ("redis-6.0.9", "redis-7.4.1", "valkey-8.0.1")
# every table with the source's defaults, and stream_entries cut into splits and stream parts
# (the planner's index pass then runs in the server's Python worker)
READS: list[tuple[str, dict[str, str]]] = [(table, {}) for table in TABLES] + [
    ("stream_entries", {"splitSize": "16k", "includeDeleted": "true"})]


def _read_id(read: tuple[str, dict[str, str]]) -> str:
    table, options = read
    return "-".join([table, *(f"{k}={v}" for k, v in options.items())])


@dataclass(frozen=True)
class Inputs:
    """What both sessions read, as `load` takes it, and the options that reach its store."""

    paths: list[str]
    options: dict[str, str]


@pytest.fixture(scope="module", params=["local", "s3"])
def inputs(request: pytest.FixtureRequest) -> Inputs:
    """Local directories of dumps, or the same dumps in moto's S3 server (tests/support/s3.py),
    read by URL with the store given as the reader's options (the Connect server's workers have
    no environment for it)."""
    paths = [str(CORPUS / name) for name in DUMP_DIRS]
    if request.param == "local":
        return Inputs(paths, {})
    server: s3.S3Server = request.getfixturevalue("s3_server")
    for name in DUMP_DIRS:
        for dump in sorted((CORPUS / name).glob("*.rdb")):
            server.upload(dump, f"connect/{name}/{dump.name}")
    options = {"s3.endpoint": server.endpoint, "s3.region": s3.REGION,
               "s3.accessKey": server.reader["aws_access_key_id"],
               "s3.secretKey": server.reader["aws_secret_access_key"]}
    return Inputs([f"s3://dumps/connect/{name}" for name in DUMP_DIRS], options)


def _plain(value: Any) -> Any:
    """A collected value the same from either client: binary as bytes, structs as tuples."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, tuple):  # a Row
        return tuple(_plain(v) for v in value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _rows(spark: Any, inputs: Inputs, table: str, options: dict[str, str]) -> list[tuple]:
    frame = spark.read.format("rdb").option("table", table).options(**options, **inputs.options).load(inputs.paths)
    return [_plain(row) for row in frame.collect()]


@pytest.fixture(scope="module")
def local_rows(inputs: Inputs) -> dict[str, list[tuple]]:
    """Each read's rows in a classic local-mode session, stopped once they are read."""
    spark = classic_session("local[2]", "rdbspec-tests-classic")
    try:
        return {_read_id(read): _rows(spark, inputs, *read) for read in READS}
    finally:
        spark.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    """The Connect server, started without waiting: its JVM starts while `local_rows` reads."""
    started = ConnectServer(tmp_path_factory.mktemp("connect")).start(wait=False)
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def remote(server: ConnectServer, local_rows: dict[str, list[tuple]]) -> Iterator[Any]:
    """A Spark Connect client session with the ``rdb`` format registered. After `local_rows`: once
    a Connect session is made, pyspark makes every session of the process a Connect one."""
    server.wait_ready()
    # what marks the process as a Connect one (the builder sets SPARK_CONNECT_MODE_ENABLED): put back
    # as it was when the module ends, so that later modules make classic sessions
    marks = {name: os.environ.get(name) for name in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    spark = SparkSession.builder.remote(server.url).getOrCreate()
    try:
        register(spark)
        yield spark
    finally:
        spark.stop()
        for name, value in marks.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def test_the_client_session_is_a_connect_one(remote: Any) -> None:
    assert type(remote).__module__ == "pyspark.sql.connect.session"


@pytest.mark.parametrize("read", READS, ids=_read_id)
def test_connect_reads_the_rows_of_local_mode(local_rows: dict[str, list[tuple]], remote: Any,
                                              inputs: Inputs, read: tuple[str, dict[str, str]]) -> None:
    expected = local_rows[_read_id(read)]
    assert expected, "every read of these dumps has rows"
    assert _rows(remote, inputs, *read) == expected  # the same rows, in the same order


def test_a_missing_input_fails_naming_it(remote: Any, tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-dump.rdb")
    with pytest.raises(Exception, match="no-such-dump.rdb"):
        remote.read.format("rdb").load(missing).collect()


def test_readme_connect_snippets_run_as_written(server: ConnectServer, tmp_path: Path) -> None:
    snippets = readme.run_by("tests/spark/test_connect.py")
    assert snippets, "the README shows the registration for Spark Connect"
    workdir = readme.make_workdir(tmp_path)
    for block in snippets:
        done = readme.run_block(block, workdir, {"SPARK_REMOTE": server.url})
        assert done.returncode == 0, f"{block.id}\n{done.stderr[-3000:]}"
        assert done.stdout, f"{block.id} shows nothing"
