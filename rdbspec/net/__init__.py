"""Talking to live servers: the protocol they speak (`resp`), a connection to one (`connection`:
its URL, AUTH, TLS, what INFO says of it), and a server's RDB taken as a replica takes it
(`replica`: PSYNC or SYNC, then the RDB in either form the server sends).

Imports: `rdbspec.errors` and `rdbspec.server`; nothing that reads or writes a dump (the reading
side opens a `redis://` FILE through `replica`)."""
