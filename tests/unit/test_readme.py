"""README.md's fenced code blocks, run as written, so the README cannot drift from the code.

``python`` blocks run each in its own Python process (this interpreter, as a user's paste into
the venv's Python: without the PYSPARK_PYTHON the Makefile exports), ``sh`` blocks in bash with
the venv's scripts on the PATH (tests/support/readme.py), both in a directory holding the names
they use: ``dump.rdb`` and ``backups/`` (the bundled sample dumps), the latter also in an S3
store as ``s3://dumps/backups/`` (moto's server on 127.0.0.1, reached through the AWS SDKs'
environment variables the blocks are run with, as a user's shell would hold them). ``text``
blocks are synopses: each ``rdbspec`` command line in them names a subcommand and options that
``--help`` lists, each ``make`` line a target that exists. A block marked ``<!-- run by
tests/... -->`` needs a part a test starts (a cluster, a Connect server): that test runs it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.support import readme, s3
from tests.support.readme import REPO, Block, make_workdir, run, run_block

BLOCKS = [b for b in readme.blocks() if b.run_by is None]
s3_server = s3.s3_server  # the fixture (pytest finds module attributes)


def _blocks(language: str) -> list[Block]:
    return [b for b in BLOCKS if b.language == language]


@pytest.fixture(scope="module")
def store_env(s3_server: s3.S3Server) -> dict[str, str]:
    """The store's variables, with the sample dumps in it as the README's blocks name them."""
    for dump in readme.EXAMPLES.glob("*.rdb"):
        s3_server.upload(dump, f"backups/{dump.name}")
    return s3_server.environment()


def test_every_block_is_run_or_checked() -> None:
    assert {b.language for b in BLOCKS} == {"python", "sh", "text"}, [(b.language, b.line) for b in BLOCKS]
    assert len(_blocks("python")) >= 3 and _blocks("sh")


def test_blocks_run_elsewhere_are_run_there() -> None:
    """A block marked as run by another test names a test file that reads the blocks so marked."""
    elsewhere = {b.run_by for b in readme.blocks() if b.run_by is not None}
    assert elsewhere == {"tests/spark/test_cluster.py", "tests/spark/test_connect.py", "tests/servers/test_restore.py",
                         "tests/servers/test_split.py", "tests/servers/test_resp.py",
                         "tests/servers/test_live_source.py"}
    for test_file in elsewhere:
        assert f'readme.run_by("{test_file}")' in (REPO / test_file).read_text(encoding="utf-8"), test_file


@pytest.mark.parametrize("block", _blocks("python") + _blocks("sh"), ids=lambda b: b.id)
def test_block_runs(block: Block, tmp_path: Path, store_env: dict[str, str]) -> None:
    done = run_block(block, make_workdir(tmp_path), store_env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout  # every example shows something


def _synopsis_lines(command: str) -> list[list[str]]:
    return [ln.split("#")[0].split() for b in _blocks("text") for ln in b.body.splitlines()
            if ln.startswith(command + " ")]


def test_synopsis_commands_and_options_exist() -> None:
    lines = _synopsis_lines("rdbspec")
    assert len(lines) >= 5
    main_help = run([sys.executable, "-m", "rdbspec", "--help"], REPO).stdout
    for words in lines:
        assert words[1] in main_help, words
        if words[1].startswith("-"):  # an option of rdbspec itself (--version)
            continue
        sub_help = run([sys.executable, "-m", "rdbspec", words[1], "--help"], REPO).stdout
        options = {o for w in words for o in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", w)}
        missing = [o for o in options if not re.search(rf"(?<![\w-]){re.escape(o)}\b", sub_help)]
        assert not missing, (words, missing)


def test_synopsis_make_targets_exist() -> None:
    targets = [words[1] for words in _synopsis_lines("make")]
    assert targets == ["run", "test", "test-asan", "test-peers", "test-large", "fuzz"]
    for target in targets:
        done = run(["make", "-n", target], REPO)
        assert done.returncode == 0, done.stderr


def test_make_run_needs_only_python_and_java() -> None:
    """`make run` installs the venv and nothing of the tests' (npm, apt): -B lists every step."""
    done = run(["make", "-n", "-B", "run"], REPO)
    assert done.returncode == 0, done.stderr
    assert "rdbspec pipeline" in done.stdout
    for tool in ("npm", "apt-get", "redis-server", "[dev"):
        assert tool not in done.stdout, tool
