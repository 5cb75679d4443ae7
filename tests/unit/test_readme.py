"""README.md's fenced code blocks, run as written, so the README cannot drift from the code.

``python`` and ``sh`` blocks run as a user would run them (`tests.support.readme`: each in its
own process, in a directory holding ``dump.rdb`` and ``backups/``). ``text`` blocks are
synopses: each ``rdbspec`` command line in them names a subcommand and options that ``--help``
lists, each ``make`` line a target that exists. A block that talks to a server (its endpoint
from an environment variable of `tests.support.readme.ENDPOINTS`) is run by the test that starts
the server.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.support.readme import BLOCKS, ENDPOINTS, REPO, blocks, endpoint_of, ids, make_workdir, run, run_block


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """The names the README's examples use, made from the bundled sample dumps."""
    return make_workdir(tmp_path)


def test_every_block_is_run_or_checked() -> None:
    assert {lang for lang, _, _ in BLOCKS} == {"python", "sh", "text"}, [(lang, line) for lang, _, line in BLOCKS]
    assert len(blocks("python")) >= 3 and blocks("sh")
    # a block talking to a server is run by the test starting it (ENDPOINTS), never a synopsis
    assert [line for lang, body, line in BLOCKS if lang == "text" and endpoint_of(body)] == []
    assert [(name, test) for name, test in ENDPOINTS.items() if not (REPO / test).is_file()] == []


@pytest.mark.parametrize(("body", "line"), blocks("python"), ids=ids(blocks("python")))
def test_python_block_runs(body: str, line: int, workdir: Path) -> None:
    done = run_block("python", body, workdir)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout  # every example shows something


@pytest.mark.parametrize(("body", "line"), blocks("sh"), ids=ids(blocks("sh")))
def test_shell_block_runs(body: str, line: int, workdir: Path) -> None:
    done = run_block("sh", body, workdir)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout


def _synopsis_lines(command: str) -> list[str]:
    return [ln.split("#")[0].split() for body, _ in blocks("text") for ln in body.splitlines()
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
    assert targets == ["run", "test", "test-asan", "test-peers"]
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
