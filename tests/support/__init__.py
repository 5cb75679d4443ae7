"""What the tests share and no test is: real servers started on 127.0.0.1 (`binaries`, `servers`),
the content written into them (`populate`, `memory_content`), what a live server reports about
its keys (`expected`), rdbtools' reading for comparison (`rdbtools_values`), dumps made by hand
(`dragonfly_dumps`: Dragonfly snapshots and the RDB byte builders), a dump with big values for
the split readers (`split_dump`) and one of Redis 8.10's hash templates (`template_dump`); processes whose
files may grow to a limit, to fill a disk or kill a writer at a byte (`file_limit`); a Valkey
cluster on 127.0.0.1 whose nodes may load dumps at start (`valkey_cluster`); a Spark
standalone cluster on 127.0.0.1 (`spark_cluster`), a Spark Connect server from the pyspark wheel
(`spark_connect`), moto's S3 server (`s3`), a local package index of what the venv has installed
(`wheelhouse`) and README.md's blocks for the tests that run them (`readme`). The benchmark
(bench/) builds its inputs with the same modules.

The tests are grouped by what they check against: `unit/` (the library on inputs made in the
test or kept in the repository), `golden/` (hand-written fixtures with their expected values),
`corpus/` (dumps real servers wrote, with what the server reported), `servers/` (live Redis and
Valkey servers started by the test), `spark/` (the real Spark), `peers/` (other projects' dumps,
read from the shared corpus beside the repository by `make test-peers` only) and `conformance/`
(the official Kaitai compiler's Python and JavaScript output against ours)."""
