"""`rdbspec pipeline` on a real Spark standalone cluster: a master and two one-core workers started
from the pyspark wheel on 127.0.0.1 (tests/support/spark_cluster.py), whose Python has no
rdbspec. The README's recipe (the packed environment shipped in ``spark.archives``) runs as
written; the cluster's tables equal local mode's over the same inputs; every task ran in an
executor, none in the driver (the application's event log says where each ran); and the same
workers without the archive end the pipeline with one line naming the recipe.

One cluster serves the module. Each pipeline runs as a user runs it, a process of its own,
with the Spark properties of the test (event log) in ``SPARK_CONF_DIR``'s spark-defaults.conf."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rdbspec.cli.pipeline import DEFAULT_TABLES
from rdbspec.read.splits import plan
from tests.support import dragonfly_dumps, readme, s3, spark_cluster, split_dump, wheelhouse
from tests.support.spark_cluster import SparkCluster

cluster = spark_cluster.cluster  # the module's master and two workers (pytest finds module attributes)
s3_server = s3.s3_server  # moto's S3 server, for the inputs in a store

REPO = Path(__file__).resolve().parents[2]
RECIPE = readme.run_by("tests/spark/test_cluster.py")
SPLIT_SIZE = "64k"  # cuts the split dump (about 1.4 MB) into many ranges
ARCHIVE = "rdbspec-env.tar.gz"  # what the README's recipe packs


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The index the recipe's `pip install rdbspec pyarrow venv-pack` reads: wheels of what this
    venv has installed (PIP_FIND_LINKS), so that it needs no network and compiles nothing."""
    return wheelhouse.build(tmp_path_factory.mktemp("wheels"), ("pyarrow", "venv-pack"))


def _environment(cluster: SparkCluster, conf_dir: Path, **extra: str) -> dict[str, str]:
    """A user's shell with the venv activated, and what the test gives the snippets: the master
    URL, the local package index, Spark's defaults (the event log), every address 127.0.0.1."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_", "PIP_"))}
    env.pop("PYTHONPATH", None)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(SPARK_MASTER=cluster.url, SPARK_LOCAL_IP=spark_cluster.HOST, SPARK_CONF_DIR=str(conf_dir), **extra)
    return env


def _conf_dir(directory: Path) -> Path:
    """spark-defaults.conf writing each application's event log, uncompressed, under
    `directory`/events (where `_tasks` reads it)."""
    (directory / "events").mkdir(parents=True)
    (directory / "spark-defaults.conf").write_text(
        f"spark.eventLog.enabled true\nspark.eventLog.dir {(directory / 'events').as_uri()}\n"
        "spark.eventLog.compress false\nspark.eventLog.rolling.enabled false\n")
    return directory


def _tasks(conf_dir: Path) -> tuple[set[str], list[str]]:
    """The executors an application's event log added and the executor each finished task ran in."""
    (log,) = list((conf_dir / "events").iterdir())
    executors: set[str] = set()
    ran_in: list[str] = []
    for line in log.read_text().splitlines():
        event = json.loads(line)
        if event["Event"] == "SparkListenerExecutorAdded":
            executors.add(event["Executor ID"])
        elif event["Event"] == "SparkListenerTaskEnd":
            ran_in.append(event["Task Info"]["Executor ID"])
    return executors, ran_in


def _assert_ran_in_executors(conf_dir: Path) -> None:
    executors, ran_in = _tasks(conf_dir)
    assert ran_in and "driver" not in executors and set(ran_in) <= executors, (executors, sorted(set(ran_in)))


@pytest.fixture(scope="module")
def recipe(cluster: SparkCluster, wheels: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """The README's cluster recipe run as written in a directory holding `backups/` (the sample
    dumps): the folder, its Spark conf folder and the run."""
    assert len(RECIPE) == 1 and RECIPE[0].language == "sh"
    workdir = tmp_path_factory.mktemp("recipe")
    shutil.copytree(REPO / "examples", workdir / "backups")
    conf_dir = _conf_dir(workdir / "spark-conf")
    env = _environment(cluster, conf_dir, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels))
    started = time.monotonic()
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", RECIPE[0].body], cwd=workdir, env=env,
                          capture_output=True, text=True, check=False, timeout=600)
    packed = workdir / ARCHIVE
    print(f"README recipe on the cluster: {time.monotonic() - started:.1f} s; {ARCHIVE}: "
          f"{packed.stat().st_size / 1e6 if packed.exists() else 0:.0f} MB")
    return workdir, conf_dir, done


def test_the_workers_python_has_no_rdbspec(cluster: SparkCluster) -> None:
    """What the recipe starts from: the ``python3`` the workers give their executors imports
    neither rdbspec nor pyarrow."""
    python = shutil.which("python3", path=str(cluster.python_path))
    assert python is not None and Path(python).parent == cluster.python_path
    for module in ("rdbspec", "pyarrow"):
        done = subprocess.run([python, "-c", f"import {module}"], cwd=cluster.directory, capture_output=True,
                              text=True, check=False)
        assert f"No module named '{module}'" in done.stderr


def test_readme_recipe_runs_on_the_cluster(recipe: tuple[Path, Path, subprocess.CompletedProcess[str]],
                                           cluster: SparkCluster) -> None:
    workdir, conf_dir, done = recipe
    assert done.returncode == 0, done.stderr[-3000:]
    assert "wrote keys to tables/" in done.stdout
    assert pq.read_table(workdir / "tables" / "keys").num_rows > 0
    _assert_ran_in_executors(conf_dir)
    # each executor that ran tasks unpacked the archive into its folder and ran its Python
    unpacked = list(cluster.directory.glob("worker-*/app-*/*/environment/bin/python"))
    assert unpacked, sorted(str(p) for p in cluster.directory.glob("worker-*/app-*/*"))


# -- the cluster's tables are local mode's ----------------------------------------------------

@pytest.fixture(scope="module", params=["local", "s3"])
def inputs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The cluster test's inputs: the real servers' dumps, a dump cut into several ranges by
    `SPLIT_SIZE` and a Dragonfly snapshot set; on disk, or the same files in moto's S3 as s3://
    URLs (each task fetching its own ranges; the store reached as `store_conf` says)."""
    folder = tmp_path_factory.mktemp("cluster-inputs")
    shutil.copytree(REPO / "tests" / "corpus" / "real", folder / "real")
    big = split_dump.build(folder / "split.rdb")
    assert len(plan(str(big), 64 << 10, 0)) > 4  # several ranges, so several tasks for it
    dragonfly_dumps.build(folder / "dragonfly")
    if request.param == "s3":
        server = request.getfixturevalue("s3_server")
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            server.upload(path, f"cluster/{path.relative_to(folder)}")
        folder_name = "s3://dumps/cluster"
    else:
        folder_name = str(folder)
    return [f"{folder_name}/real", f"{folder_name}/split.rdb", f"{folder_name}/dragonfly/set"]


def store_conf(inputs: list[str], request: pytest.FixtureRequest) -> list[str]:
    """How the executors reach the store of s3:// inputs: the session's S3A settings, which the
    reads carry to every task (the workers' environment has no credentials)."""
    if not inputs[0].startswith("s3://"):
        return []
    server = request.getfixturevalue("s3_server")
    conf = {"endpoint": server.endpoint.removeprefix("http://"), "connection.ssl.enabled": "false",
            "endpoint.region": s3.REGION, "access.key": server.reader["aws_access_key_id"],
            "secret.key": server.reader["aws_secret_access_key"]}
    return [arg for name, value in conf.items() for arg in ("--conf", f"spark.hadoop.fs.s3a.{name}={value}")]


def _pipeline(env: dict[str, str], cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "rdbspec", "pipeline", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False, timeout=600)
    print(f"pipeline --master {argv[argv.index('--master') + 1]}: {time.monotonic() - started:.1f} s")
    return done


def _rows(folder: Path) -> list[str]:
    """A table's rows, every column, as a sorted list (Spark's order of rows is its own)."""
    return sorted(repr(sorted(row.items())) for row in pq.read_table(folder).to_pylist())


def test_pipeline_on_the_cluster_equals_local_mode(cluster: SparkCluster, inputs: list[str],
                                                   recipe: tuple[Path, Path, subprocess.CompletedProcess[str]],
                                                   tmp_path: Path, request: pytest.FixtureRequest) -> None:
    archive = recipe[0] / ARCHIVE
    assert archive.is_file(), recipe[2].stderr[-3000:]
    common = ["--split-size", SPLIT_SIZE, "--no-summary", "--include-deleted", *store_conf(inputs, request)]
    on_cluster = _conf_dir(tmp_path / "cluster-conf")
    done = _pipeline(_environment(cluster, on_cluster, PYSPARK_PYTHON="./environment/bin/python"), tmp_path,
                     *inputs, "--out", str(tmp_path / "cluster"), "--master", cluster.url,
                     "--conf", f"spark.archives={archive}#environment", *common)
    assert done.returncode == 0, done.stderr[-3000:]
    _assert_ran_in_executors(on_cluster)
    local = _environment(cluster, _conf_dir(tmp_path / "local-conf"), PYSPARK_PYTHON=sys.executable)
    done = _pipeline(local, tmp_path, *inputs, "--out", str(tmp_path / "local"), "--master", "local[2]", *common)
    assert done.returncode == 0, done.stderr[-3000:]
    for table in DEFAULT_TABLES:
        expected = _rows(tmp_path / "local" / table)
        assert expected, table
        assert _rows(tmp_path / "cluster" / table) == expected, table


def test_worker_without_rdbspec_is_one_line(cluster: SparkCluster, tmp_path: Path) -> None:
    """No archive: the executors run the workers' own ``python3``, which lacks what the reads
    import. The pipeline says so in one line naming the README's recipe, exit 69."""
    env = _environment(cluster, _conf_dir(tmp_path / "conf"), PYSPARK_PYTHON="python3")
    done = _pipeline(env, tmp_path, str(REPO / "examples" / "sample.rdb"), "--out", str(tmp_path / "out"),
                     "--master", cluster.url, "--tables", "keys")
    assert done.returncode == 69, done.stderr[-3000:]
    (line,) = done.stderr.splitlines()
    assert line.startswith("rdbspec pipeline: an executor's Python has no module "), line
    assert line.endswith('(README.md, "Running on a cluster")'), line


@pytest.fixture(autouse=True, scope="module")
def _timed() -> Iterator[None]:
    started = time.monotonic()
    yield
    print(f"\ntests/spark/test_cluster.py: {time.monotonic() - started:.1f} s")
