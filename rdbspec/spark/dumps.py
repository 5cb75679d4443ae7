"""`rdbspec pipeline --dumps`: each input written again as a dump of the keys the pipeline's
filters select (`--db`, `--types`, `--key-pattern`: the rows of its `keys` table), one Spark task
an input (issue 15). Plain Python, run by the tasks: `rdbspec.rewrite` writes each dump, to a
temporary file renamed at the end (`rdbspec.atomic`), so a failed or killed task leaves no
dump, or the one an earlier run wrote.

A Dragonfly snapshot set is one input (its summary and shard files make one Redis dump, for
`--dumps-target`). The dumps keep the inputs' layout under OUT/dumps/: the path of each input
below the directory that holds them all, a set named after its summary (`snap-summary.dfs` gives
`snap.rdb`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .. import rewrite
from ..errors import (
    EXIT_CODES,
    RdbError,
    UnwritableError,
    WriteError,
    exit_code,
    file_error_line,
    internal_error_line,
    os_error_text,
)
from ..read import dragonfly, dumpfile, location
from ..server.versions import TARGETS
from ..write.convert import Converter
from .options import ReadOptions


@dataclass(frozen=True)
class DumpJob:
    """One input and where its dump goes; `options` are the reader options of the filters."""

    source: str
    destination: str
    options: tuple[tuple[str, str], ...]
    target: str | None = None
    allow_lossy: bool = False


@dataclass(frozen=True)
class DumpResult:
    job: DumpJob
    written: int = 0
    read: int = 0
    dropped: tuple[tuple[str, int], ...] = ()  # what the target could not hold, with allow_lossy
    error: str | None = None  # the one line naming the input and the problem
    exit_code: int = EXIT_CODES["ok"]


class _Filters:
    """The pipeline's filters as a `rewrite` selection: the keys its `keys` table lists."""

    def __init__(self, options: ReadOptions):
        self.options = options

    def keeps(self, record: dumpfile.KeyRecord) -> bool:
        return self.options.selects(record)


def jobs(files: list[str], out_dir: str, options: dict[str, str], target: str | None = None,
         allow_lossy: bool = False) -> list[DumpJob]:
    """A job an input: each file alone, each DFS set once (its files come together from
    `options.resolve_paths`)."""
    location.configure(ReadOptions.parse(options).store)
    sources: list[str] = []
    for path in files:
        source = str(dragonfly.find_summary(path)) if dragonfly.is_dfs_name(path) else path
        if source not in sources:
            sources.append(source)
    root = os.path.commonpath([os.path.dirname(_as_local(s)) for s in sources])
    frozen = tuple(sorted(options.items()))
    return [DumpJob(source, os.path.join(out_dir, _relative_name(source, root)), frozen, target, allow_lossy)
            for source in sources]


def _as_local(source: str) -> str:
    """The absolute path `source` stands for among the outputs: a store's URL as its scheme,
    bucket and key (s3://b/k.rdb as /s3/b/k.rdb), so the inputs' layout is kept below OUT."""
    if location.is_url(source):
        scheme, _, rest = source.partition("://")
        return os.path.join(os.sep, scheme, rest)
    return os.path.abspath(source)


def _relative_name(source: str, root: str) -> str:
    relative = Path(os.path.relpath(_as_local(source), root))
    found = dragonfly.SUMMARY_NAME.match(relative.name)
    return str(relative.with_name(found.group(1) + ".rdb")) if found else str(relative)


def write_dump(job: DumpJob) -> DumpResult:
    """Runs in a task: the dump of `job`, or the one line of what stopped it."""
    try:
        os.makedirs(os.path.dirname(job.destination), exist_ok=True)
        converter = Converter.for_target(TARGETS[job.target], job.allow_lossy) if job.target is not None else None
        options = ReadOptions.parse(dict(job.options))
        location.configure(options.store)
        found = rewrite.rewrite(job.source, job.destination, _Filters(options), converter)
    except (RdbError, OSError, UnwritableError, WriteError) as err:
        # a file that cannot be written (the dump: a full disk...) or opened is the one the line names
        line = os_error_text(err) if isinstance(err, OSError) and err.filename is not None \
            else file_error_line(job.source, err)
        return DumpResult(job, error=line, exit_code=exit_code(err))
    except Exception as err:  # noqa: BLE001 - a bug of ours: its line, for the driver to print
        return DumpResult(job, error=internal_error_line(err, job.source), exit_code=EXIT_CODES["internal"])
    dropped = tuple(sorted(converter.dropped.items())) if converter is not None else ()
    return DumpResult(job, written=sum(found.keys.values()), read=found.read, dropped=dropped)
