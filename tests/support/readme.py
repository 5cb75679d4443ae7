"""README.md's fenced code blocks, for the tests that run them as written.

Most blocks are run by tests/unit/test_readme.py in a directory of sample dumps. A block that needs
a part started by a test (a Spark cluster, a server) is marked by the HTML comment before its
fence, ``<!-- run by tests/spark/test_cluster.py -->``, and is run by that test instead, which
gives it its endpoints through the environment (``$SPARK_MASTER``...)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
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
