"""Starting Spark for rdbspec: a checked Java, Python workers that can import rdbspec, quiet logs.

    import rdbspec.spark
    spark = rdbspec.spark.session()          # local[*], format "rdb" registered

Spark runs its Python workers with ``PYSPARK_PYTHON`` (default: whatever ``python3`` is on the
PATH), which in a virtual environment is not the Python that has rdbspec installed. `session`
sets it to this interpreter unless it is set already; `register` (in `source`) plans the ``rdb``
format's reads in this interpreter and runs them in ``PYSPARK_PYTHON``, also for a session made
elsewhere. On a cluster, ``PYSPARK_PYTHON`` names the executors' Python: one installed on every
node, or ``./environment/bin/python`` from a packed environment given in ``spark.archives``
(README, "Running on a cluster").
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import RdbspecError
from .source import register

JAVA_MIN = 17  # PySpark 4 runs on Java 17 and 21
# Spark's JVM logs (startup notes, a failed task's stack trace) go nowhere unless asked for:
# failures reach the caller as the exception of the action that ran the job.
QUIET_LOG4J = Path(__file__).with_name("log4j2-quiet.properties")


class JavaMissingError(RdbspecError):
    """No Java 17+ to start Spark with."""


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def _feature(version: str) -> int:
    """8, 11, 17, 21... of a Java version string: "17.0.15", "21", "1.8.0_402" (Java 8)."""
    major, _, rest = version.partition(".")
    return int(rest.split(".")[0].split("_")[0] or 0) if major == "1" else int(major)


def java_version(java: str) -> int | None:
    """The feature version (8, 11, 17, 21...) of the runtime `java` starts, None if it does not
    run. From the ``release`` file of its installation (JAVA_VERSION="17.0.15") when there is
    one: `java -version` would start a JVM, about 0.1 s before Spark starts its own."""
    try:
        release = Path(os.path.realpath(java)).parent.parent.joinpath("release").read_text(errors="replace")
        found = re.search(r'^JAVA_VERSION="(\d[\d._]*)"', release, re.MULTILINE)
        if found:
            return _feature(found.group(1))
    except (OSError, ValueError):
        pass
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r'version "(\d+(?:\.\d+)?)', done.stderr + done.stdout)
    return _feature(found.group(1)) if found else None


def require_java() -> None:
    """Raises `JavaMissingError` (one line saying what to install) unless Java 17+ is there."""
    java = _java()
    version = java_version(java) if java else None
    if version is None or version < JAVA_MIN:
        found = "none found (JAVA_HOME or java on the PATH)" if java is None else f"{java} is Java {version}"
        raise JavaMissingError(f"Java {JAVA_MIN}+ is needed for Spark: install openjdk-17-jre-headless (apt) "
                               f"or any JDK {JAVA_MIN}+ and put it on the PATH or in JAVA_HOME ({found})")


def session(master: str = "local[*]", app_name: str = "rdbspec", verbose: bool = False,
            conf: Mapping[str, str] | None = None) -> Any:
    """A SparkSession with the ``rdb`` format registered, its Python workers running this Python
    (unless ``PYSPARK_PYTHON`` names another), with the Spark properties of `conf` on top of
    rdbspec's defaults. Spark's JVM logs stay off stderr unless `verbose`. Raises
    `JavaMissingError` before starting anything when Java 17+ is missing."""
    require_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "8")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
    if not verbose:
        builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={QUIET_LOG4J}")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark
