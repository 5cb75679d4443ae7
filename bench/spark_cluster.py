"""The Spark group's standalone-cluster runs (issue 29), each a process of its own:

    python -m bench.spark_cluster FILE --workers N --split-size 8388608

Starts a Spark standalone master and N workers of one core each from the pyspark wheel, on
127.0.0.1 (tests/support/spark_cluster.py, the cluster of the tests), runs bench.spark_workload's
stream_entries query against it (the session built as ``rdbspec pipeline`` builds it, the query
cold then warm: the executors are the workers', each its own JVM and Python workers, this
machine's Python and rdbspec through PYSPARK_PYTHON), stops the cluster and prints the workload's
JSON line with ``workers`` added. The cluster's start is not in the query times: the runner's
process wall has it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from tests.support.spark_cluster import SparkCluster

from .spark_workload import run


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.spark_cluster")
    p.add_argument("file")
    p.add_argument("--workers", type=int, default=1, help="workers of one core each (default 1)")
    p.add_argument("--split-size", required=True, help="splitSize option: bytes, or with a k/m/g suffix")
    args = p.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the executors' Python: this one, on this machine
    with tempfile.TemporaryDirectory(prefix="rdbspec-bench-cluster-") as folder, \
            SparkCluster(Path(folder), workers=args.workers) as cluster:
        result = run(args.file, cluster.url, args.split_size, None)
    print(json.dumps({**result, "workers": args.workers}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
