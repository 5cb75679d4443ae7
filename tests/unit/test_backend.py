"""The backend choice (rdbspec/read/backend.py): RDBSPEC_BACKEND, the default, what `--version` and
`info --json` say, both backends giving the same output, and the Spark reader carrying the
driver's choice to its workers. The install without a compiler is in test_build.py."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from rdbspec import cli
from rdbspec.errors import EXIT_CODES
from rdbspec.read import backend
from rdbspec.read.splits import Split
from rdbspec.spark.source import RdbPartition, RdbReader, ReadOptions

REAL = sorted((Path(__file__).resolve().parents[1] / "corpus" / "real").glob("*/*.rdb"))
BASIC = REAL[0]


def rdbspec_with(backend_env: str | None, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != backend.ENV}
    if backend_env is not None:
        env[backend.ENV] = backend_env
    return subprocess.run([sys.executable, "-m", "rdbspec", *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


def test_native_backend_is_built() -> None:
    """`make test` builds it: a test run without it is a failure, not a skip."""
    assert backend.native_problem() is None


@pytest.mark.parametrize(("chosen", "expected"), [(None, "native"), ("", "native"), ("python", "python"),
                                                  ("native", "native"), (" Native ", "native")])
def test_rdbspec_backend_picks_and_the_cli_says_which(chosen: str | None, expected: str) -> None:
    proc = rdbspec_with(chosen, "--version")
    assert proc.returncode == 0 and proc.stdout == f"rdbspec {version('rdbspec')} ({expected} backend)\n"
    info = rdbspec_with(chosen, "info", "--json", str(BASIC))
    assert info.returncode == 0 and json.loads(info.stdout)["backend"] == expected


def test_unknown_backend_is_a_usage_error() -> None:
    proc = rdbspec_with("pypy", "info", str(BASIC))
    assert proc.returncode == EXIT_CODES["usage"]
    assert proc.stdout == ""
    assert proc.stderr == "rdbspec: RDBSPEC_BACKEND='pypy' names no backend; use one of: python, native\n"
    with pytest.raises(backend.BackendError, match="names no backend"):
        backend.select("pypy")
    assert backend.name() in backend.BACKENDS  # a refused choice leaves the one in use


@pytest.mark.parametrize("path", REAL, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_both_backends_write_the_same_bytes(path: Path, tmp_path: Path) -> None:
    """The Python backend is the reference: the native one's `dump --include-deleted` and `keys`
    output is byte-identical."""
    outputs = {}
    try:
        for name in backend.BACKENDS:
            backend.select(name)
            for command in ("dump", "keys"):
                out = tmp_path / f"{name}.{command}"
                extra = ["--include-deleted"] if command == "dump" else []
                assert cli.main([command, str(path), *extra, "-o", str(out)]) == 0
                outputs[name, command] = out.read_bytes()
    finally:
        backend.select(os.environ.get(backend.ENV))
    for command in ("dump", "keys"):
        assert outputs["native", command] == outputs["python", command]
        assert outputs["python", command]


def test_spark_workers_run_the_drivers_backend() -> None:
    """The reader is made on the driver and pickled to the workers; its `read` selects the
    backend the driver chose, whatever the worker's own default."""
    try:
        backend.select("python")
        reader = pickle.loads(pickle.dumps(RdbReader([str(BASIC)], ReadOptions(table="files"))))
        backend.select("native")
        rows = list(reader.read(RdbPartition(Split(str(BASIC)))))
        assert rows and backend.name() == "python"
    finally:
        backend.select(os.environ.get(backend.ENV))
