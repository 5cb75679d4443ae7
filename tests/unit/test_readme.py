"""README.md's fenced code blocks, run as written, so the README cannot drift from the code.

``python`` blocks run each in its own Python process (this interpreter, as a user's paste into
the venv's Python: without the PYSPARK_PYTHON the Makefile exports), ``sh`` blocks in bash with
the venv's scripts on the PATH, both in a directory holding the names they use: ``dump.rdb`` and
``backups/`` (the bundled sample dumps), the latter also in an S3 store as
``s3://dumps/backups/`` (moto's server on 127.0.0.1, reached through the AWS SDKs' environment
variables the blocks are run with, as a user's shell would hold them). ``text`` blocks are
synopses: each ``rdbspec`` command line in them names a subcommand and options that ``--help``
lists, each ``make`` line a target that exists. A block marked ``<!-- run by tests/... -->``
needs a part a test starts (a cluster): that test runs it (tests/support/readme.py).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import readme, s3

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
BLOCKS = [(b.language, b.body, b.line) for b in readme.blocks() if b.run_by is None]


def _blocks(language: str) -> list[tuple[str, int]]:
    return [(body, line) for lang, body, line in BLOCKS if lang == language]


def _ids(blocks: list[tuple[str, int]]) -> list[str]:
    return [f"README.md:{line}" for _, line in blocks]


s3_server = s3.s3_server  # the fixture (pytest finds module attributes)


@pytest.fixture(scope="module")
def store_env(s3_server: s3.S3Server) -> dict[str, str]:
    """The store's variables, with the sample dumps in it as the README's blocks name them."""
    for dump in EXAMPLES.glob("*.rdb"):
        s3_server.upload(dump, f"backups/{dump.name}")
    return s3_server.environment()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """The names the README's examples use, made from the bundled sample dumps."""
    shutil.copy(EXAMPLES / "sample.rdb", tmp_path / "dump.rdb")
    (tmp_path / "backups").mkdir()
    for dump in EXAMPLES.glob("*.rdb"):
        shutil.copy(dump, tmp_path / "backups" / dump.name)
    return tmp_path


def _user_env(venv_on_path: bool, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A user's environment (with `extra`): no PYSPARK_PYTHON; the venv's scripts on the PATH
    when activated (for a shell) or not (the venv's Python started by its path: ``python3`` is
    another one)."""
    env = {k: v for k, v in {**os.environ, **(extra or {})}.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    venv_bin = str(Path(sys.executable).parent)
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin]
    env["PATH"] = os.pathsep.join([venv_bin, *path] if venv_on_path else path)
    return env


def _run(argv: list[str], cwd: Path, venv_on_path: bool = True,
         extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=_user_env(venv_on_path, extra_env), capture_output=True, text=True,
                          check=False)


def test_every_block_is_run_or_checked() -> None:
    assert {lang for lang, _, _ in BLOCKS} == {"python", "sh", "text"}, [(lang, line) for lang, _, line in BLOCKS]
    assert len(_blocks("python")) >= 3 and _blocks("sh")


def test_blocks_run_elsewhere_are_run_there() -> None:
    """A block marked as run by another test names a test file that reads the blocks so marked."""
    elsewhere = {b.run_by for b in readme.blocks() if b.run_by is not None}
    for test_file in elsewhere:
        assert f'readme.run_by("{test_file}")' in (REPO / test_file).read_text(encoding="utf-8"), test_file


@pytest.mark.parametrize(("body", "line"), _blocks("python"), ids=_ids(_blocks("python")))
def test_python_block_runs(body: str, line: int, workdir: Path, store_env: dict[str, str]) -> None:
    done = _run([sys.executable, "-c", body], workdir, venv_on_path=False, extra_env=store_env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout  # every example shows something


@pytest.mark.parametrize(("body", "line"), _blocks("sh"), ids=_ids(_blocks("sh")))
def test_shell_block_runs(body: str, line: int, workdir: Path, store_env: dict[str, str]) -> None:
    done = _run(["bash", "-e", "-o", "pipefail", "-c", body], workdir, extra_env=store_env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout


def _synopsis_lines(command: str) -> list[str]:
    return [ln.split("#")[0].split() for body, _ in _blocks("text") for ln in body.splitlines()
            if ln.startswith(command + " ")]


def test_synopsis_commands_and_options_exist() -> None:
    lines = _synopsis_lines("rdbspec")
    assert len(lines) >= 5
    main_help = _run([sys.executable, "-m", "rdbspec", "--help"], REPO).stdout
    for words in lines:
        assert words[1] in main_help, words
        if words[1].startswith("-"):  # an option of rdbspec itself (--version)
            continue
        sub_help = _run([sys.executable, "-m", "rdbspec", words[1], "--help"], REPO).stdout
        options = {o for w in words for o in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", w)}
        missing = [o for o in options if not re.search(rf"(?<![\w-]){re.escape(o)}\b", sub_help)]
        assert not missing, (words, missing)


def test_synopsis_make_targets_exist() -> None:
    targets = [words[1] for words in _synopsis_lines("make")]
    assert targets == ["run", "test", "test-asan", "test-peers"]
    for target in targets:
        done = _run(["make", "-n", target], REPO)
        assert done.returncode == 0, done.stderr


def test_make_run_needs_only_python_and_java() -> None:
    """`make run` installs the venv and nothing of the tests' (npm, apt): -B lists every step."""
    done = _run(["make", "-n", "-B", "run"], REPO)
    assert done.returncode == 0, done.stderr
    assert "rdbspec pipeline" in done.stdout
    for tool in ("npm", "apt-get", "redis-server", "[dev"):
        assert tool not in done.stdout, tool
