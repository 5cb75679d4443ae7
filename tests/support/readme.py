"""README.md's fenced code blocks, for the tests that run them as written.

Most blocks are run by tests/unit/test_readme.py in a directory of sample dumps. A block that needs
a part started by a test (a Spark cluster, a server) is marked by the HTML comment before its
fence, ``<!-- run by tests/spark/test_cluster.py -->``, and is run by that test instead, which
gives it its endpoints through the environment (``$SPARK_MASTER``...)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
README = REPO / "README.md"
FENCE = re.compile(r"(?:^<!-- run by (\S+) -->\n)?^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    language: str  # python, sh, text
    body: str
    line: int  # of the opening fence
    run_by: str | None  # the test file that runs it, None for test_readme.py

    @property
    def id(self) -> str:
        return f"README.md:{self.line}"


def blocks() -> list[Block]:
    text = README.read_text(encoding="utf-8")
    return [Block(m.group(2), m.group(3), text.count("\n", 0, m.start(2)) + 1, m.group(1))
            for m in FENCE.finditer(text)]


def run_by(test_file: str) -> list[Block]:
    """The blocks marked as run by `test_file` (a path from the repository root)."""
    return [b for b in blocks() if b.run_by == test_file]


def make_workdir(directory: Path) -> Path:
    """The names the README's examples use, made in `directory` from the bundled sample dumps:
    ``dump.rdb`` and ``backups/``."""
    shutil.copy(EXAMPLES / "sample.rdb", directory / "dump.rdb")
    (directory / "backups").mkdir()
    for dump in EXAMPLES.glob("*.rdb"):
        shutil.copy(dump, directory / "backups" / dump.name)
    return directory


def user_env(venv_on_path: bool, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A user's environment (with `extra`): no PYSPARK_PYTHON; the venv's scripts on the PATH
    when activated (for a shell) or not (the venv's Python started by its path: ``python3`` is
    another one)."""
    env = {k: v for k, v in {**os.environ, **(extra or {})}.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    venv_bin = str(Path(sys.executable).parent)
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin]
    env["PATH"] = os.pathsep.join([venv_bin, *path] if venv_on_path else path)
    return env


def run(argv: list[str], cwd: Path, venv_on_path: bool = True,
        extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=user_env(venv_on_path, extra_env), capture_output=True, text=True,
                          check=False)


def run_block(block: Block, cwd: Path, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A ``python`` block in this Python (as a user's paste into the venv's Python, not on the
    PATH), an ``sh`` one in bash (-e, pipefail) with the venv's scripts on the PATH."""
    if block.language == "python":
        return run([sys.executable, "-c", block.body], cwd, venv_on_path=False, extra_env=extra_env)
    return run(["bash", "-e", "-o", "pipefail", "-c", block.body], cwd, extra_env=extra_env)
