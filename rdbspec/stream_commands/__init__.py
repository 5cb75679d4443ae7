"""Offline Redis stream commands over a dump: XRANGE, XREVRANGE, XREAD, XPENDING, XINFO, and the
ones that change a stream (`rdbspec rewrite --commands`).

The replies are what the server that loaded the dump would answer (redis src/t_stream.c):
the same ID parsing (`-`, `+`, incomplete and exclusive IDs, strtoull's leniency), the same
errors, the same fields in the same order for the generation that wrote the stream type
(15 → 6.2, 19 → 7.0, 21 → 7.2, 26 → 8.6, or `--as-version X.Y`), and the same computed values
(lag, entries-read of a type-15 stream loaded by 7.0+, idle times measured at `now_ms`).

A dump with the VALKEY magic (Valkey 9.0+, valkey src/rdb.h rdbUseValkeyMagic) is answered as
Valkey 9 does: the fields of Redis 7.4 (``rules.VALKEY_9``) with Valkey's own rules
(``valkey=True``) for the lag (`groups.group_lag`) and XREAD's ``+`` (`ranges.xread_id`).

One module per job, each importing only the ones before it:

* `rules`: the server's number and ID parsing, its error texts (`CommandError`), the reply
  generations; what a command that changes a stream parses the same way;
* `ranges`, `groups`, `xinfo`: the queries, pure functions from a `Stream` and the command's
  arguments to a reply value (entries by ID; XPENDING, entries-read and lag; XINFO);
* `commands`: `execute()` runs a command line (a list of byte strings, as the server receives
  it) over a key lookup, raising `CommandError` with the server's error text;
* `reply`: the reply rendered as RESP2 values, JSON or redis-cli's text;
* `cli`: the ``rdbspec xrange|xrevrange|xread|xpending|xinfo`` subcommands;
* `edit`, `changes`, `delivery`: the commands that change a stream, for ``rdbspec rewrite
  --commands`` (`rdbspec.edits`): a stream as the server keeps it while commands change it, then
  XADD, XTRIM, XDEL, XSETID, XACK, XGROUP, then XREADGROUP, XCLAIM, XAUTOCLAIM.

This file imports none of them, so each loads without the command line.
"""
