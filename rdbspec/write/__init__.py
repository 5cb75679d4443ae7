"""Writing a dump: the layouts the server gives values (`layouts`), the dump writer (`writer`),
a stream changed as the server changes it (`stream`), and the conversion of a value read from one
RDB version into the layout of another (`convert`).

Imports: `rdbspec.errors`, `rdbspec.atomic` (the file written whole or not at all), `rdbspec.server`,
`rdbspec.read` and the generated writers."""
