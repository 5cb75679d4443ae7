"""A Spark standalone cluster for tests: one master and N workers, JVMs started from the pyspark
wheel (``pyspark/bin/spark-class``), every one bound to 127.0.0.1 on free ports.

    with SparkCluster(tmp_path, workers=2, python_path=bare_python_dir) as cluster:
        spark = SparkSession.builder.master(cluster.url)...

Each worker has one core and a modest memory, its own work directory (its executors' folders,
the archives they unpack) under the cluster's directory, and a PATH that starts with
`python_path`: an executor started without an explicit Python runs the ``python3`` found there.
Readiness is the master's JSON page (``/json/``) saying ALIVE with every worker registered,
polled until a deadline. `stop` ends every JVM (the workers first, which end their executors),
also when the start fails; the kernel ends them if the test process dies (PR_SET_PDEATHSIG).

`cluster` is a module-scoped pytest fixture of two workers whose ``python3`` lacks rdbspec
(`bare_python`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import venv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers import die_with_parent, free_port

HOST = "127.0.0.1"
MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"
WORKER_MEMORY = "1g"  # what an executor may take (its default heap, spark.executor.memory, is 1g)
DAEMON_MEMORY = "256m"  # the heap of the master's and workers' own JVMs (Spark's default: 1g each)


def spark_home() -> Path:
    """The Spark inside the pyspark wheel (its bin/, jars/ and python/lib/ zips)."""
    spec = importlib.util.find_spec("pyspark")
    assert spec is not None and spec.submodule_search_locations, "pyspark is not installed"
    return Path(next(iter(spec.submodule_search_locations)))


def bare_python(directory: Path) -> Path:
    """A virtual environment of this Python's base interpreter with nothing installed (no pip,
    no rdbspec, no pyspark): its bin/ directory. The Python version is the driver's, as PySpark
    requires of its workers."""
    venv.create(directory, with_pip=False, symlinks=True)
    return directory / "bin"


class ClusterError(RuntimeError):
    """The cluster did not start (the message carries the tail of the logs)."""


class SparkCluster:
    """A standalone master and `workers` workers of `cores` cores each, under `directory`."""

    def __init__(self, directory: Path, workers: int = 2, cores: int = 1, python_path: Path | None = None,
                 start_timeout: float = 90.0):
        self.directory = directory
        self.workers = workers
        self.cores = cores
        self.python_path = python_path
        self.start_timeout = start_timeout
        self.port = 0
        self.web_port = 0
        self.processes: list[tuple[str, subprocess.Popen[bytes]]] = []

    @property
    def url(self) -> str:
        """The master URL applications connect to: spark://127.0.0.1:PORT."""
        return f"spark://{HOST}:{self.port}"

    @property
    def web_url(self) -> str:
        return f"http://{HOST}:{self.web_port}"

    def __enter__(self) -> SparkCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
        env.update(SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP=HOST, SPARK_LOCAL_HOSTNAME=HOST,
                   SPARK_DAEMON_MEMORY=DAEMON_MEMORY, SPARK_LOG_DIR=str(self.directory / "logs"),
                   SPARK_CONF_DIR=str(self.directory / "conf"))
        if self.python_path is not None:
            env["PATH"] = os.pathsep.join([str(self.python_path), env.get("PATH", "")])
        return env

    def _spawn(self, name: str, *argv: str) -> None:
        with open(self.directory / "logs" / f"{name}.log", "wb") as log:  # the process keeps its own copy
            process = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *argv], env=self._environment(),
                                       cwd=self.directory, stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        self.processes.append((name, process))

    def start(self) -> SparkCluster:
        for sub in ("logs", "conf"):
            (self.directory / sub).mkdir(parents=True, exist_ok=True)
        self.port, self.web_port = free_port(), free_port()
        try:
            self._spawn("master", MASTER, "--host", HOST, "--port", str(self.port), "--webui-port", str(self.web_port))
            self._wait(lambda state: state.get("status") == "ALIVE", "the master to answer")
            for n in range(self.workers):
                work = self.directory / f"worker-{n}"
                work.mkdir(exist_ok=True)
                self._spawn(f"worker-{n}", WORKER, "--host", HOST, "--port", str(free_port()),
                            "--webui-port", str(free_port()), "--cores", str(self.cores),
                            "--memory", WORKER_MEMORY, "--work-dir", str(work), self.url)
            self._wait(lambda state: state.get("aliveworkers") == self.workers, f"{self.workers} workers to register")
        except BaseException:
            self.stop()
            raise
        return self

    def state(self) -> dict[str, Any]:
        """The master's JSON page: status, workers, active and completed applications."""
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=5) as reply:
            return dict(json.load(reply))

    def _wait(self, ready: Any, what: str) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            for name, process in self.processes:
                if process.poll() is not None:
                    raise ClusterError(f"the {name} exited with {process.returncode}:\n{self.log_tail(name)}")
            try:
                if ready(self.state()):
                    return
            except (OSError, urllib.error.URLError, ValueError):
                pass  # not listening yet
            time.sleep(0.2)
        raise ClusterError(f"waited {self.start_timeout:.0f} s for {what}:\n"
                           + "\n".join(self.log_tail(name) for name, _ in self.processes))

    def log_tail(self, name: str, lines: int = 30) -> str:
        try:
            text = (self.directory / "logs" / f"{name}.log").read_text(errors="replace")
        except OSError:
            return f"({name}: no log)"
        return f"-- {name} --\n" + "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """Ends the workers (each ends its executors on SIGTERM), then the master."""
        for _, process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        self.processes = []


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    """A master and two one-core workers whose ``python3`` is a bare Python (no rdbspec)."""
    directory = tmp_path_factory.mktemp("spark-cluster")
    with SparkCluster(directory, workers=2, python_path=bare_python(directory / "bare-python")) as started:
        yield started


if __name__ == "__main__":  # pragma: no cover - by hand: start a cluster and wait
    with SparkCluster(Path(sys.argv[1]), workers=int(sys.argv[2]) if len(sys.argv) > 2 else 2) as running:
        print(running.url, running.web_url, flush=True)
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
