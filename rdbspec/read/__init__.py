"""Reading a dump: where its bytes come from (`source`, mapped or streamed), which generated
parsers read them (`backend`), the checksum (`checksum`), the dump as a header and an iterator of
key records (`dumpfile`), the values those records hold (`elements`, `values`, `streams`,
`dragonfly`), and one file read by several processes (`splits`, `parallel`).

Imports: `rdbspec.errors`, `rdbspec.atomic` (the file `--save` keeps a live server's RDB in),
`rdbspec.server`, `rdbspec.net` (a live server's RDB, when one is read) and the generated parsers;
nothing that writes dumps or reports."""
