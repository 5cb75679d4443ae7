"""PySpark integration: the ``rdb`` data source (`source`), a ready session (`launch.session`) and the
``rdbspec pipeline`` command (`pipeline`). Needs the ``spark`` extra (pyspark >= 4.0, pyarrow, pandas)."""

from .launch import JavaMissingError, session
from .source import SCHEMAS, TABLES, register

__all__ = ["SCHEMAS", "TABLES", "JavaMissingError", "register", "session"]
