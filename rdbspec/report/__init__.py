"""`rdbspec report`: one self-contained HTML page (or JSON) of where a dump's memory goes (issue 16).

`data` gathers the figures in bounded memory from plain rows (a dump, or the Spark tables),
`prefixes` sums keys by prefix (also `rdbspec prefixes`; past memory through `runs`, sorted runs on
disk), `svg` draws the charts, `html` lays out
the page; `rdbspec.cli.report` registers the command.

Imports: the reading side, the server's rules, `rdbspec.jsonl` and `rdbspec.memory`."""
