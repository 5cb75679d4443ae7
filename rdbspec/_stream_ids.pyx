# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Stream entry IDs compared in C: whether a node's IDs ascend (`streams.walk_nodes` checks it
for every node), without a tuple per entry. Compiled by setup.py; without it `streams`
compares tuples."""


def ascending(const unsigned long long[::1] ms, const unsigned long long[::1] seq, previous) -> bool:
    """Whether each ID (ms[i], seq[i]) is above the one before it, the first above `previous`
    (an (ms, seq) pair, or None)."""
    cdef Py_ssize_t n = ms.shape[0], i, start = 0
    cdef unsigned long long last_ms, last_seq
    if seq.shape[0] != n:
        raise ValueError("the ms and seq columns differ in length")
    if n == 0:
        return True
    if previous is None:
        last_ms, last_seq = ms[0], seq[0]
        start = 1
    else:
        last_ms, last_seq = previous
    for i in range(start, n):
        if ms[i] < last_ms or (ms[i] == last_ms and seq[i] <= last_seq):
            return False
        last_ms, last_seq = ms[i], seq[i]
    return True
