"""PySpark integration: the ``rdb`` data source (`source`) and the ``rdbspec pipeline``
command (`pipeline`). Needs the ``spark`` extra (pyspark >= 4.0, pyarrow, pandas)."""

from .source import SCHEMAS, TABLES, register

__all__ = ["SCHEMAS", "TABLES", "register"]
