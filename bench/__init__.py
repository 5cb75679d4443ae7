"""rdbspec benchmark suite: ``python -m bench`` (``make bench``).

Builds dumps with real servers (cached in bench/cache/, gitignored), then runs each contender as
a separate process several times: rdbspec (full decode, keys only, stream only, the dump CLI),
the official Kaitai compiler's Python output of our specs, rdbtools, redis-server loading the
dump, and ``cat`` as the floor. The Markdown report goes to bench/results/latest.md.

    python -m bench --quick          # 100k stream entries + 20k keys
    python -m bench                  # 1M stream entries + 200k keys
    python -m bench --profile        # cProfile of rdbspec's full decode of the stream dump
"""
