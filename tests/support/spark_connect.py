"""A Spark Connect server for tests, from the pyspark wheel in this virtual environment.

The wheel's ``bin/spark-submit`` runs the server class (``SparkConnectServer``, in the wheel's
jars/spark-connect_*.jar) on a local master, its gRPC endpoint bound to 127.0.0.1 on a free port
and every other socket of Spark too (``SPARK_LOCAL_IP``). Its Python workers run this Python
(``PYSPARK_PYTHON``), which has rdbspec: a Connect client only registers the source class, the
server's workers import it. The server's files (logs, Spark's scratch space) go under the
directory given; so does its working directory, which relative paths of a query are read from.

    with ConnectServer(tmp_path) as server:
        spark = SparkSession.builder.remote(server.url).getOrCreate()

spark-submit ends by exec'ing the JVM, so the process started is the server itself: stopped with
SIGTERM (SIGKILL after a grace period) by `stop`, and by the kernel if the test process dies
(``PR_SET_PDEATHSIG``). Readiness has a deadline: the port is polled until it accepts a
connection. ``start(wait=False)`` returns at once, so that a test does other work while the JVM
starts, then `wait_ready`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark

from tests.support.servers import ServerError, die_with_parent, free_port

SPARK_HOME = Path(pyspark.__file__).parent
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
HOST = "127.0.0.1"


class ConnectServer:
    """One Spark Connect server on 127.0.0.1 (`url`: ``sc://127.0.0.1:PORT``)."""

    def __init__(self, workdir: Path, master: str = "local[2]", start_timeout: float = 180.0) -> None:
        self.workdir = workdir
        self.master = master
        self.start_timeout = start_timeout
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"sc://{HOST}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / "connect-server.log"

    def __enter__(self) -> ConnectServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _argv(self) -> list[str]:
        conf = {
            "spark.connect.grpc.binding.address": HOST,
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.ui.enabled": "false",
            "spark.local.dir": str(self.workdir / "spark-local"),
            "spark.sql.shuffle.partitions": "4",
        }
        return [str(SPARK_HOME / "bin" / "spark-submit"), "--master", self.master, "--class", SERVER_CLASS,
                *(item for name, value in conf.items() for item in ("--conf", f"{name}={value}"))]

    def start(self, wait: bool = True) -> ConnectServer:
        """Starts the server; with `wait`, returns once it listens (else call `wait_ready`)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": HOST,
               "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(self._argv(), cwd=self.workdir, env=env, stdin=subprocess.DEVNULL,
                                            stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self) -> None:
        """Returns once the server accepts connections; stops it and raises `ServerError` if it
        exits or does not listen within `start_timeout` of now."""
        try:
            self._poll_ready()
        except BaseException:
            self.stop()
            raise

    def _poll_ready(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerError(f"the Spark Connect server exited with {self.process.returncode} at start:\n"
                                  f"{self.log_tail()}")
            try:
                with socket.create_connection((HOST, self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        raise ServerError(f"the Spark Connect server did not listen on {HOST}:{self.port} in "
                          f"{self.start_timeout:.0f} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        p = self.process
        if p is None:
            return
        if p.poll() is None:
            p.terminate()  # Spark's shutdown hook stops the session, its Python workers with it
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        self.process = None
