"""rdbspec benchmark suite: ``python -m bench`` (``make bench``).

Builds dumps with real servers (cached in bench/cache/, gitignored), then runs each contender as
a separate process several times: rdbspec (full decode, keys only, stream only, the dump CLI),
once per backend built (RDBSPEC_BACKEND=python, and native when it imports), librdb's rdb-cli and
HDT3213/rdb (from ../shared/bench-peers or $RDBSPEC_BENCH_PEERS, when there), the official Kaitai
compiler's Python output of our specs, rdbtools, redis-server loading the dump, ``cat`` as the
floor, and the Spark group (the ``rdb`` data source's stream_entries table, unsplit and split,
under local[1] and local[2], per backend, and the split read on a standalone cluster of one and
of two one-core workers: bench/spark_cluster.py, docs/spark-scaling.md). Then the memory accuracy
comparison (bench/memory.py, issue 16): rdbspec's, rdbtools' and HDT3213/rdb's per-key memory
estimates against what the servers answer to MEMORY USAGE for dumps they write during the run.
Before it, the content mix (bench/mix.py, issue 26): dumps of one kind of content each (a session
cache, hashes, sorted sets, streams with consumer groups, long lists, one big key a file;
bench/mix_content.py), `rdbspec dump` against librdb's and HDT3213/rdb's JSON export and the peak
RSS of each rdbspec command, then the restore into a live server (bench/restore.py, issue 30):
`rdbspec restore` against librdb's `rdb-cli ... redis` (plain commands and -r) and, when `rdbspec dump`
has --format resp, its output through `redis-cli --pipe`, each dump of the mix into a local Redis 7.0,
the server's keys checked after every run, and the read of a live server (bench/live.py, issue 31):
`rdbspec dump redis://…` against `redis-cli --rdb F` then `rdbspec dump F`, each dump of the mix and the
stream dump served by a local Redis 7.0, under diskless and disk sync, its output checked against the
server's SAVE. Before that, the Spark workers' memory (bench/spark_memory.py, issue
26): the peak RSS of each of Spark's Python workers in a `keys` read of the mix's big hash and a
`stream_entries` read of a stream of 10M entries, and the reader's warm rows/s against the floor
source's. After it, the cold start (bench/cold_start.py, issue 29): the pipeline's first query on
the bundled sample, cold and warm, and where the cold one's time goes. The Markdown report, with a
Targets section (issue 14's targets and the reader against the floor, met or missed), goes to
bench/results/latest.md.

    python -m bench --quick          # 100k stream entries + 20k keys
    python -m bench                  # 1M stream entries + 200k keys
    python -m bench --large --file large --single-run-above 60
                                     # the ~1 GB dump (15M entries + 3.2M keys, RDB 10) alone
    python -m bench --only spark     # the Spark group only
    python -m bench --profile        # cProfile of rdbspec's full decode of the stream dump
    python -m bench --memory-only    # the memory accuracy comparison only (also: --only memory)
    python -m bench --mix-only       # the content mix only (also: --only mix; --file picks its files),
                                     # its section merged into bench/results/latest.md
    python -m bench --restore-only   # the restore into a live server only (also: --only restore; --file
                                     # picks files of the mix), its section and target rows merged likewise
    python -m bench --live-only      # the read of a live server only (also: --only live; --file picks
                                     # its dumps), its section and target rows merged likewise
    python -m bench --spark-memory-only
                                     # the Spark workers' memory and the reader against the floor only
                                     # (also: --only spark-memory), merged into bench/results/latest.md
    python -m bench --cold-start-only
                                     # the pipeline's first query, cold and warm, and the cold one's
                                     # steps only (also: --only cold-start), merged likewise
"""
