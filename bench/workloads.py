"""What one contender does, run in its own process: ``python -m bench.workloads NAME FILE``.

Each workload prints one JSON line (what it counted) so the runner can check that the work was
really done: keys seen and stream entries decoded, and how many modules of rdbspec's compiled
backend were loaded (so that a run asked for RDBSPEC_BACKEND=native shows it really used it).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KAITAI_BUILD = Path(__file__).resolve().parent / "cache" / "kaitai_py"
KAITAI_SUPPORT = REPO / "tests" / "conformance" / "support"


def rdbspec_full(path: str) -> dict[str, int]:
    """Every key's value decoded into Python objects."""
    import rdbspec.read.dumpfile as api

    keys = entries = 0
    with api.open(path) as d:
        for k in d.keys():
            v = k.value
            keys += 1
            if k.type_name == "stream":
                entries += sum(len(got.columns) for _, got in v.node_entries())
    return {"keys": keys, "entries": entries}


def rdbspec_keys(path: str) -> dict[str, int]:
    """Keys only: values are skipped, not decoded."""
    import rdbspec.read.dumpfile as api

    keys = 0
    with api.open(path) as d:
        for _ in d.keys():
            keys += 1
    return {"keys": keys, "entries": 0}


def rdbspec_stream(path: str) -> dict[str, int]:
    """Walks the keys, decodes only the stream values."""
    import rdbspec.read.dumpfile as api

    keys = entries = 0
    with api.open(path) as d:
        for k in d.keys():
            keys += 1
            if k.type_name == "stream":
                entries += sum(len(got.columns) for _, got in k.value.node_entries())
    return {"keys": keys, "entries": entries}


def _lp(x) -> int | bytes:
    return x.int_value if x.is_int else x.str_value


def kaitai_official(path: str) -> dict[str, int]:
    """The official compiler's Python output of spec/*.ksy on the kaitaistruct runtime: parses the
    whole file (seq fields are read eagerly), then touches every stream entry's scalars."""
    for p in (str(KAITAI_SUPPORT), str(KAITAI_BUILD)):
        sys.path.insert(0, p)
    from rdb import Rdb  # type: ignore[import-not-found]

    r = Rdb.from_file(path)
    keys = entries = 0
    for rec in r.records:
        if rec.opcode >= 243 or rec.body is None or not hasattr(rec.body, "key"):
            continue
        keys += 1
        kind = int(rec.body.value_kind)
        if kind not in (15, 19, 21, 26):
            continue
        for node in rec.body.value.nodes:
            lp = node.listpack.payload
            for e in lp.entries:
                _lp(e.flags), _lp(e.ms_diff), _lp(e.seq_diff)
                for item in e.items:
                    _lp(item)
                entries += 1
    return {"keys": keys, "entries": entries}


WORKLOADS: dict[str, Callable[[str], dict[str, int]]] = {
    "rdbspec-full": rdbspec_full,
    "rdbspec-keys": rdbspec_keys,
    "rdbspec-stream": rdbspec_stream,
    "kaitai-official": kaitai_official,
}


def native_modules() -> int:
    """How many modules of rdbspec's compiled backend this process loaded (0: the Python one ran)."""
    return sum(1 for m in sys.modules if m.startswith("rdbspec_generated.native."))


def main(argv: list[str]) -> int:
    name, path = argv
    print(json.dumps({**WORKLOADS[name](path), "native_modules": native_modules()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
