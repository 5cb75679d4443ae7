"""What the sections that run against a live server share (bench/restore.py, bench/live.py): the record of
a run, Debian's Redis 7.0 found and named, redis-cli found beside it, and the line that says how a section
was run."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.binaries import DEBIAN_REDIS_SERVER, debian_binary

from .contenders import section_backend
from .datasets import Dataset, server_version
from .report import finished_stamp, versions
from .runner import Result

HOST = "127.0.0.1"  # the only address the bench's servers listen on


@dataclass
class ServerRun:
    """What one run of a live-server section measured, and how."""

    datasets: list[Dataset]
    contenders: list[str]
    results: dict[tuple[str, str], Result] = field(default_factory=dict)  # (contender, file) -> result
    notes: list[str] = field(default_factory=list)
    shown: dict[str, str] = field(default_factory=dict)  # contender -> its command as shown
    backend: str = "native"
    server: str = ""  # "Redis 7.0.15 (/usr/bin/redis-server)"
    rdbspec: str = ""  # its version and commit, as the report's Versions section gives them
    runs: int = 3
    timeout: float = 600.0
    argv: list[str] = field(default_factory=list)
    finished: str = ""

    def get(self, contender: str, ds: Dataset) -> Result | None:
        return self.results.get((contender, ds.name))

    @property
    def all_results(self) -> list[Result]:
        return list(self.results.values())

    def ran_by(self) -> str:
        """The section's opening words: the command that ran it and when it finished."""
        return (f"Run by `python -m bench {' '.join(self.argv)}`".rstrip() + f", finished {self.finished}; the "
                "machine and versions above may describe another run.")

    def closing_lines(self, wrong: str) -> list[str]:
        """The section's last lines: its notes, then each run that did not end well (`wrong`: what a
        result counted wrong is said to have)."""
        problems = [f"* {name} on {ds}: {r.status}{f' ({wrong})' if r.invalid else ''}: {r.note}"
                    for (name, ds), r in self.results.items() if r.status not in ("ok", "skipped") or r.invalid]
        lines = [f"* {n}" for n in self.notes] + problems
        return lines + ([""] if lines else [])


def begin(got: ServerRun, section: str) -> Path | None:
    """Fills in `got`'s backend (native when built), rdbspec's version and the server's, and returns Debian's
    redis-server; None when it is not installed, with a note that `section` was skipped."""
    got.backend, notes = section_backend()
    got.notes += notes
    got.rdbspec = versions()["rdbspec"]
    binary = debian_binary()
    if binary is None:
        got.notes.append(f"{section} skipped: {DEBIAN_REDIS_SERVER} is not installed")
        return None
    got.server = f"Redis {server_version(binary)} (`{binary}`)"
    return binary


def finish(got: ServerRun) -> None:
    got.finished = finished_stamp()


def find_redis_cli(server: Path) -> str | None:
    """The redis-cli beside the server's binary, else the one on PATH."""
    beside = server.parent / "redis-cli"
    return str(beside) if os.access(beside, os.X_OK) else shutil.which("redis-cli")
