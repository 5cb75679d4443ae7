"""Offline Redis stream commands over a dump: XRANGE, XREVRANGE, XREAD, XPENDING, XINFO, and the
ones that change a stream (`rdbspec rewrite --commands`).

The replies are what the server that loaded the dump would answer (redis src/t_stream.c):
the same ID parsing (`-`, `+`, incomplete and exclusive IDs, strtoull's leniency), the same
errors, the same fields in the same order for the generation that wrote the stream type
(`rdbspec.server.streams.VERSION_OF_TYPE`, or `--as-version X.Y`), and the same computed values
(lag, entries-read of a stream of the first stream type loaded by 7.0+, idle times measured at
`now_ms`). The rules themselves (ID parsing, error texts, the read counter and lag) are the
server's and live in `rdbspec.server.streams`; this package applies them.

A dump with the VALKEY magic (Valkey 9.0+, valkey src/rdb.h rdbUseValkeyMagic) is answered as
Valkey 9 does: the fields of Redis 7.4 (``VALKEY_9``) with Valkey's own rules (``valkey=True``)
for the lag (`rdbspec.server.streams.group_lag`) and XREAD's ``+`` (`ranges.xread_id`).

One module per job, each importing only the ones before it:

* `ranges`, `groups`, `xinfo`: the queries, pure functions from a `Stream` and the command's
  arguments to a reply value (entries by ID; XPENDING; XINFO);
* `commands`: `execute()` runs a command line (a list of byte strings, as the server receives
  it) over a key lookup, raising `CommandError` with the server's error text;
* `reply`: the reply rendered as RESP2 values, JSON or redis-cli's text;
* `changes`, `delivery`: the commands that change a stream (`rdbspec.write.stream` keeps it as
  the server does while they change it), for ``rdbspec rewrite --commands``
  (`rdbspec.rewrite.command_file`): XADD, XTRIM, XDEL, XSETID, XACK, XGROUP, then XREADGROUP,
  XCLAIM, XAUTOCLAIM.

The ``rdbspec xrange|xrevrange|xread|xpending|xinfo`` subcommands are `rdbspec.cli.streams`.
This file imports none of them, so each loads without the others.

Imports: the server's rules, the reading side, the editable stream of `rdbspec.write`, and
`rdbspec.jsonl` (the replies' JSON).
"""
