"""Putting a dump's keys into live servers (issue 30), over `rdbspec.net`: a key's value as the
payload RESTORE loads (`payload`) or as the plain commands that build it (`commands`), a cluster's
slots and its redirections (`cluster`), and the restore itself (`restore`): what `rdbspec
restore`, `rdbspec dump --format resp` and `rdbspec split --cluster` run.

Imports: the network (`rdbspec.net`), the reading and writing sides, the server's rules,
`rdbspec.rewrite` (its key selection); nothing of the outputs, Spark or the command line."""
