# cython: language_level=3
"""Drops the pages of the mapped dumps from the resident set every few milliseconds
(rdbspec.read.source.RELEASE_EVERY_S), from a C thread that never takes the GIL.

Why C: a page of a mapping that the parser has read counts in the process's resident set until
it is unmapped or released (madvise MADV_DONTNEED: the kernel's page cache keeps the page, and
touching it again maps it back, so dropping pages of a read-only file mapping is always safe).
One native call reads a whole value while holding the GIL (a stream of 15M entries is 270 MB
read in one call), so a Python thread could not release anything during it and the resident set
grew with the largest value. This thread needs no Python at all, and it exists only while some
mapping is tracked.

Why it is safe:
* It madvises only the ranges in its table, with `lock` held; `untrack` takes the range out
  under the same lock, so once `untrack` returns no madvise of that range runs or will run,
  and the mapping may be closed (rdbspec.read.source untracks before any close).
* The table holds a reference to each tracked mapping (never a buffer export, so mmap.close()
  still works), so no tracked range is unmapped by deallocation, at interpreter exit neither.
* fork: `lock` is taken around fork (pthread_atfork), so the child gets it unlocked; the thread
  does not exist in the child, which starts its own after os.fork or at its next `track`.
* Exit: the thread is detached, touches nothing of Python's and blocks every signal (they go to
  Python's threads); the process's end stops it.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from libc.stdlib cimport realloc
from posix.mman cimport MADV_DONTNEED, madvise
from posix.signal cimport sigfillset, sigset_t
from posix.time cimport nanosleep, timespec

import os


cdef extern from "<pthread.h>" nogil:
    ctypedef struct pthread_t:
        pass
    ctypedef struct pthread_attr_t:
        pass
    ctypedef struct pthread_mutex_t:
        pass
    int PTHREAD_CREATE_DETACHED
    int pthread_attr_init(pthread_attr_t*)
    int pthread_attr_setdetachstate(pthread_attr_t*, int)
    int pthread_attr_destroy(pthread_attr_t*)
    int pthread_create(pthread_t*, const pthread_attr_t*, void* (*)(void*) noexcept nogil, void*)
    int pthread_mutex_init(pthread_mutex_t*, const void*)
    int pthread_mutex_lock(pthread_mutex_t*)
    int pthread_mutex_unlock(pthread_mutex_t*)
    int pthread_atfork(void (*)() noexcept nogil, void (*)() noexcept nogil, void (*)() noexcept nogil)

cdef extern from "<signal.h>" nogil:
    int SIG_SETMASK
    int pthread_sigmask(int, const sigset_t*, sigset_t*)


cdef struct Tracked:
    PyObject* mapping  # the reference the table holds
    void* start
    size_t length


cdef pthread_mutex_t lock
cdef Tracked* tracked = NULL
cdef Py_ssize_t count = 0
cdef Py_ssize_t capacity = 0
cdef timespec pause
cdef bint running = False  # whether this process has the thread (a forked child has not)


cdef void* release_forever(void* unused) noexcept nogil:
    """Releases the tracked ranges after every pause; ends when the table is empty (the next
    `track` starts the thread again), so a process with no mapping open has no thread."""
    global running
    cdef timespec wait
    cdef Py_ssize_t i
    while True:
        pthread_mutex_lock(&lock)
        wait = pause
        pthread_mutex_unlock(&lock)
        nanosleep(&wait, NULL)
        pthread_mutex_lock(&lock)
        if count == 0:
            running = False
            pthread_mutex_unlock(&lock)
            return NULL
        for i in range(count):
            madvise(tracked[i].start, tracked[i].length, MADV_DONTNEED)
        pthread_mutex_unlock(&lock)


cdef int start_thread() except -1:
    """Starts the thread unless running; `lock` held."""
    global running
    cdef pthread_t thread
    cdef pthread_attr_t attr
    cdef sigset_t every_signal, previous
    cdef int err
    if running:
        return 0
    sigfillset(&every_signal)
    pthread_attr_init(&attr)
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED)
    pthread_sigmask(SIG_SETMASK, &every_signal, &previous)  # the new thread inherits the mask
    err = pthread_create(&thread, &attr, release_forever, NULL)
    pthread_sigmask(SIG_SETMASK, &previous, NULL)
    pthread_attr_destroy(&attr)
    if err != 0:
        raise OSError(err, f"rdbspec: cannot start the thread that releases mapped pages: {os.strerror(err)}")
    running = True
    return 0


cdef int add(object mapping, void* start, size_t length) except -1:
    """Appends a range to the table; `lock` held."""
    global tracked, count, capacity
    cdef Tracked* grown
    if count == capacity:
        grown = <Tracked*>realloc(tracked, (2 * capacity + 4) * sizeof(Tracked))
        if grown == NULL:
            raise MemoryError()
        tracked = grown
        capacity = 2 * capacity + 4
    Py_INCREF(mapping)
    tracked[count].mapping = <PyObject*>mapping
    tracked[count].start = start
    tracked[count].length = length
    count += 1
    return 0


def track(mapping, double every_s) -> None:
    """Releases the pages of `mapping` (an mmap) every `every_s` seconds (from now on the pause
    for every tracked mapping) until `untrack(mapping)`; the table keeps `mapping` alive till then."""
    cdef Py_buffer view
    PyObject_GetBuffer(mapping, &view, PyBUF_SIMPLE)  # only for the address: released at once
    cdef void* start = view.buf
    cdef size_t length = view.len
    PyBuffer_Release(&view)
    with nogil:
        pthread_mutex_lock(&lock)
    try:
        pause.tv_sec = <long>every_s
        pause.tv_nsec = <long>((every_s - pause.tv_sec) * 1e9)
        start_thread()
        add(mapping, start, length)
    finally:
        pthread_mutex_unlock(&lock)


def untrack(mapping) -> None:
    """Stops releasing `mapping`: when this returns, no madvise of its range runs or will run.
    Untracking a mapping that is not tracked does nothing."""
    global count
    cdef PyObject* key = <PyObject*>mapping
    cdef PyObject* found = NULL
    cdef Py_ssize_t i
    with nogil:
        pthread_mutex_lock(&lock)
        for i in range(count):
            if tracked[i].mapping == key:
                found = tracked[i].mapping
                count -= 1
                tracked[i] = tracked[count]
                break
        pthread_mutex_unlock(&lock)
    Py_XDECREF(found)  # after the unlock: it may deallocate (unmap) the mapping


cdef void lock_before_fork() noexcept nogil:
    pthread_mutex_lock(&lock)


cdef void unlock_in_parent() noexcept nogil:
    pthread_mutex_unlock(&lock)


cdef void unlock_in_child() noexcept nogil:
    global running
    running = False
    pthread_mutex_unlock(&lock)


def _start_in_child() -> None:
    """After os.fork: the child releases the mappings it inherited too."""
    with nogil:
        pthread_mutex_lock(&lock)
    try:
        if count:
            start_thread()
    finally:
        pthread_mutex_unlock(&lock)


cdef int set_up() except -1:
    cdef int err = pthread_mutex_init(&lock, NULL)
    if err == 0:
        err = pthread_atfork(lock_before_fork, unlock_in_parent, unlock_in_child)
    if err != 0:
        raise OSError(err, f"rdbspec: cannot set up the thread that releases mapped pages: {os.strerror(err)}")
    os.register_at_fork(after_in_child=_start_in_child)
    return 0


set_up()
