"""README.md's fenced code blocks and how a test runs one as a user would (tests/unit/test_readme.py).

``python`` blocks run each in its own Python process (this interpreter, as a user's paste into
the venv's Python: without the PYSPARK_PYTHON the Makefile exports), ``sh`` blocks in bash with
the venv's scripts on the PATH, both in a directory holding the names they use: ``dump.rdb`` and
``backups/`` (the bundled sample dumps).

A block that talks to a server reads its endpoint from an environment variable of `ENDPOINTS`
(``os.environ["SPARK_REMOTE"]``, ``$SPARK_REMOTE``): the test that starts that server runs it,
with the variable set (`run_block`), and tests/unit/test_readme.py runs the others.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
README = (REPO / "README.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
# (language, body, line of the opening fence)
BLOCKS = [(m.group(1), m.group(2), README.count("\n", 0, m.start()) + 1) for m in FENCE.finditer(README)]
# The variables naming a server a block talks to, and the test that starts it and runs those blocks:
# SPARK_REMOTE, a Spark Connect server's sc:// URL (pyspark's own variable)
ENDPOINTS = {"SPARK_REMOTE": "tests/spark/test_connect.py"}


def endpoint_of(body: str) -> str | None:
    """The variable of `ENDPOINTS` a block reads, or None."""
    return next((name for name in ENDPOINTS
                 if re.search(rf"""os\.environ\[["']{name}["']\]|\$\{{?{name}\b""", body)), None)


def blocks(language: str, endpoint: str | None = None) -> list[tuple[str, int]]:
    """(body, line) of the blocks of `language` that read the variable `endpoint` (None: no variable)."""
    return [(body, line) for lang, body, line in BLOCKS if lang == language and endpoint_of(body) == endpoint]


def endpoint_blocks(endpoint: str) -> list[tuple[str, str, int]]:
    """(language, body, line) of the ``python`` and ``sh`` blocks that read the variable `endpoint`."""
    return [(lang, body, line) for lang, body, line in BLOCKS
            if lang in ("python", "sh") and endpoint_of(body) == endpoint]


def ids(found: list[tuple[str, int]]) -> list[str]:
    return [f"README.md:{line}" for _, line in found]


def make_workdir(directory: Path) -> Path:
    """The names the README's examples use, made in `directory` from the bundled sample dumps."""
    shutil.copy(EXAMPLES / "sample.rdb", directory / "dump.rdb")
    (directory / "backups").mkdir()
    for dump in EXAMPLES.glob("*.rdb"):
        shutil.copy(dump, directory / "backups" / dump.name)
    return directory


def user_env(venv_on_path: bool, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A user's environment: no PYSPARK_PYTHON; the venv's scripts on the PATH when activated
    (for a shell) or not (the venv's Python started by its path: ``python3`` is another one)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    venv_bin = str(Path(sys.executable).parent)
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin]
    env["PATH"] = os.pathsep.join([venv_bin, *path] if venv_on_path else path)
    return {**env, **(extra or {})}


def run(argv: list[str], cwd: Path, venv_on_path: bool = True,
        extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=user_env(venv_on_path, extra_env), capture_output=True, text=True,
                          check=False)


def run_block(language: str, body: str, cwd: Path,
              extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A ``python`` block in this Python (not on the PATH), an ``sh`` one in bash (-e, pipefail)."""
    if language == "python":
        return run([sys.executable, "-c", body], cwd, venv_on_path=False, extra_env=extra_env)
    return run(["bash", "-e", "-o", "pipefail", "-c", body], cwd, extra_env=extra_env)
