"""Native (Cython) parsers generated from spec/*.ksy by rdbspec's generator. Do not edit.

The same API as the pure-Python modules of `rdbspec_generated` (class names, `from_bytes`,
`_read`, `_skip`, `read_<scalar>`, `iter_records`), compiled from `<spec>.pyx` by the install;
runtime names (Io, errors, `collecting`) stay those of `rdbspec_generated`.
"""

SPECS = (
    "dragonfly",
    "function",
    "hash",
    "intset",
    "listpack",
    "module",
    "quicklist",
    "rdb",
    "rdb_string",
    "sparse_array",
    "stream",
    "vcs",
    "ziplist",
    "zipmap",
    "zset",
)
