"""The server's rules that every side shares, one place each, named after the server's function
that makes them: `versions` (servers, their generations and the RDB versions they write), `numbers` (the
texts of integers and scores: string2ll, string2ull, d2string), `streams` (stream IDs, the stream
commands' numbers and errors, a group's read counter and lag), `templates` (the order of a hash
template's field names), `cluster` (hash slots and their ranges).

Imports: `rdbspec.errors` and the generated enums only; the reading, writing and reporting sides
import these, never the other way."""
