"""PySpark integration: the ``rdb`` data source (`source`), a ready session (`launch.session`) and the
``rdbspec pipeline`` command (`rdbspec.cli.pipeline`). Needs the ``spark`` extra (pyspark >= 4.0, pyarrow, pandas).

Importing this package imports no pyspark: `session`, `JavaMissingError`, `register` and
`SCHEMAS` load their modules (and pyspark) when first asked for, so the command line, which
registers the ``pipeline`` command, starts without Spark (about 80 ms) and runs without the
extra installed.

Imports: the reading side, the server's rules, `rdbspec.memory`, `rdbspec.rewrite` (the dumps
table's conversion) and `rdbspec.report` (the pipeline's page)."""

from __future__ import annotations

from typing import Any

from .options import TABLES

__all__ = ["SCHEMAS", "TABLES", "JavaMissingError", "register", "session"]


def __getattr__(name: str) -> Any:
    if name in ("session", "JavaMissingError"):
        from . import launch

        return getattr(launch, name)
    if name in ("register", "SCHEMAS"):
        from . import source

        return getattr(source, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
