# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Stream entry IDs compared in C, without a tuple per entry: whether a node's IDs ascend
(`streams.walk_nodes` checks it for every node), and a group's PEL resolved to its consumers
(`group_pel`). Compiled by setup.py; without it `streams` compares tuples."""

from cpython cimport array

from rdbspec_generated.native._columns cimport ScalarColumns

import array as _arrays

cdef array.array _U64 = _arrays.array("Q")
cdef array.array _I64 = _arrays.array("q")


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


def group_pel(list group, list consumers):
    """A group's PEL and its consumers' PELs, from the columns the native parser reads them into
    (`chunks_pel`: ms, seq, delivery time, delivery count a group entry; ms, seq a consumer's), as
    (ms, seq, delivery times, delivery counts, owner, [(ms, seq) of each consumer]): arrays, owner
    the index of the consumer each entry is pending for (-1: none). None when the group PEL is not
    in strictly ascending ID order (the order the server saves its radix tree in), or a consumer's
    entry is not in it or is owned twice: `streams` then reads them with the checks that name the
    problem."""
    cdef Py_ssize_t n = 0, i, r, k, lo, hi, mid, index, place
    cdef ScalarColumns chunk
    cdef unsigned long long id_ms, id_seq
    for chunk in group:
        n += chunk.n
    if n % 4:
        raise ValueError("a group PEL's columns hold 4 numbers an entry")
    n //= 4
    cdef array.array ms = array.clone(_U64, n, False), seq = array.clone(_U64, n, False)
    cdef array.array times = array.clone(_I64, n, False), counts = array.clone(_U64, n, False)
    cdef array.array owner = array.clone(_I64, n, False)
    cdef unsigned long long* ms_p = ms.data.as_ulonglongs
    cdef unsigned long long* seq_p = seq.data.as_ulonglongs
    cdef long long* owner_p = owner.data.as_longlongs
    i = 0
    for chunk in group:  # a number above 2**63 - 1 is a KIND_UINT row of the same 64 bits
        for r in range(0, chunk.n - 3, 4):
            ms_p[i] = <unsigned long long>chunk.i[r]
            seq_p[i] = <unsigned long long>chunk.i[r + 1]
            times.data.as_longlongs[i] = chunk.i[r + 2]
            counts.data.as_ulonglongs[i] = <unsigned long long>chunk.i[r + 3]
            owner_p[i] = -1
            i += 1
    for i in range(1, n):
        if ms_p[i] < ms_p[i - 1] or (ms_p[i] == ms_p[i - 1] and seq_p[i] <= seq_p[i - 1]):
            return None
    owned = []
    for index in range(len(consumers)):
        chunks = consumers[index]
        k = 0
        for chunk in chunks:
            k += chunk.n
        if k % 2:
            raise ValueError("a consumer PEL's columns hold 2 numbers an entry")
        mine_ms, mine_seq = array.clone(_U64, k // 2, False), array.clone(_U64, k // 2, False)
        place = 0
        for chunk in chunks:
            for r in range(0, chunk.n - 1, 2):
                id_ms, id_seq = <unsigned long long>chunk.i[r], <unsigned long long>chunk.i[r + 1]
                lo, hi = 0, n
                while lo < hi:  # the first entry not below the ID
                    mid = (lo + hi) // 2
                    if ms_p[mid] < id_ms or (ms_p[mid] == id_ms and seq_p[mid] < id_seq):
                        lo = mid + 1
                    else:
                        hi = mid
                if lo == n or ms_p[lo] != id_ms or seq_p[lo] != id_seq or owner_p[lo] != -1:
                    return None
                owner_p[lo] = index
                (<array.array>mine_ms).data.as_ulonglongs[place] = id_ms
                (<array.array>mine_seq).data.as_ulonglongs[place] = id_seq
                place += 1
        owned.append((mine_ms, mine_seq))
    return ms, seq, times, counts, owner, owned
