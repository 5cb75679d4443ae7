"""One dump read on several cores (`rdbspec dump ... --jobs N`): byte ranges of the file decoded by
forked worker processes, their results taken back in file order.

The ranges are the splits of `rdbspec.read.splits` (each starts at a record boundary where a database
is selected and no key metadata is pending; with `parts`, a key bigger than a range whose value
may be read in parts, a stream, a quicklist or a hashtable-encoded value, is cut into ranges of
its nodes or elements). The index pass that finds them runs in a process of its own,
the planner, which hands each split over as soon as it is found, so that workers start while the
pass goes on. Each range is read by a process forked for it: fork keeps the mapped file and all
that the command set up, so nothing is pickled on the way in, and a worker reads the dump through
its own `dumpfile.Dump` over the same mapping, seeked to its split. A worker writes the range's output
to a temporary spool file and sends back, pickled through a pipe, its partial result, the
warnings it met, what the records said about the dump (AUX fields, functions..., the checksum for
the last range) and, if it failed, the one line and exit code that a single process would have
ended with. `ranges` yields the ranges in file order, having added their warnings and records to
the parent's dump, so that it looks as if it had read the file itself. At most `jobs` workers run
at once, and at most `WINDOW` ranges a job are read ahead of the one the caller takes next, which
bounds the spool files on disk.

A stream split over several workers (`piece_nodes`) is checked as a single walk checks it: each
worker walks its nodes from the last one before them that holds an entry (the IDs must ascend
across the cut), and counts its live entries; the parent checks their sum against the stream's
length after its last piece. The elements of another value read in parts have no rule across
a cut: each worker reads its own (`dumpfile.KeyRecord.packed`).

One process reads (`split_size` says None) with one job, from stdin, a Dragonfly dump (a DFS set,
or a file whose compressed blobs carry state from record to record), a compressed Valkey dump
(`rdbcompression lz4`: one frame, decoded from its start), without fork, or a file under
`MIN_FILE`, where forking gains nothing. `RDBSPEC_SPLIT_SIZE` (bytes) sets the size of the
ranges and reads any file over it in parallel (the tests cut small dumps with it).
"""

from __future__ import annotations

import contextlib
import errno
import io
import mmap
import os
import pickle
import selectors
import signal
import struct
import sys
import tempfile
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any, BinaryIO, NoReturn

from ..errors import InternalError, RdbspecError, RdbWarning
from . import dumpfile, splits
from .splits import Split
from .streams import NodeEntries, Stream, StreamNode, check_length, walk_nodes
from .values import CUTS

ENV_SPLIT_SIZE = "RDBSPEC_SPLIT_SIZE"
MIN_FILE = 8 << 20  # smaller files are read by one process: forking would cost more than it saves
MIN_SPLIT, MAX_SPLIT = 4 << 20, 256 << 20
RANGES_PER_JOB = 8  # more ranges than workers, so that the last ones end about together
WINDOW = 4  # ranges a job read ahead of the one the caller takes next
# what `Dump.keys` adds to as it reads
_NOTES = ("aux", "functions", "module_aux", "slot_info", "slot_imports", "hash_templates")
_OFFSET = struct.Struct("q")  # a worker's progress: the offset of the record it reads


def usable_cores() -> int:
    """The cores this process may run on (`--jobs`' default)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def split_size(path: str, dump: dumpfile.Dump, jobs: int) -> int | None:
    """The size of the ranges that `jobs` processes read `dump` (opened on `path`) in, or None
    when one process reads it."""
    if jobs < 2 or not hasattr(os, "fork") or isinstance(dump, dumpfile.DfsDump) or dump.header.dialect == "dragonfly":
        return None
    if dump.source.compressed is not None:  # decoded as it was read: a stream, one process reads it
        return None
    if path == "-" or not os.path.isfile(path):  # stdin (dumpfile.open's "-") or a pipe, read once
        return None
    size = len(dump.source.buffer)
    forced = _forced_split_size()
    if forced is not None:
        split = forced
    elif size < MIN_FILE or _first_key_size(dump) >= size - MIN_SPLIT:
        return None  # one key that no split can cut, and less than a range besides: nothing to share
    else:
        split = min(max(size // (jobs * RANGES_PER_JOB), MIN_SPLIT), MAX_SPLIT)
    return split if size > split else None


def _forced_split_size() -> int | None:
    """The range size `RDBSPEC_SPLIT_SIZE` sets, if it sets one."""
    forced = os.environ.get(ENV_SPLIT_SIZE, "")
    return int(forced) if forced.isdigit() and int(forced) > 0 else None


def _first_key_size(dump: dumpfile.Dump) -> int:
    """The bytes of the first key record of `dump` when no split can cut it (`values.CUTS`' can
    be cut between their nodes or elements); 0 for those or without a key. Read as the index
    pass reads it (`splits.key_records`), stepping over the value."""
    with contextlib.suppress(dumpfile.RdbError):
        for _, size, _, value_kind, _ in splits.key_records(dump):  # the first one
            return 0 if value_kind in CUTS else size
    return 0


@dataclass(frozen=True)
class Walked:
    """What a worker found walking the nodes of a part split: the stream key (record offset, key),
    its stored length and the live entries of the split's nodes."""

    offset: int
    key: bytes
    length: int
    live: int


@dataclass
class Piece:
    """One range as a worker reads it: its split and, for a part split (`Split.part`), whether it
    is its key's first and last. `walked` comes back from the worker of a stream's (`piece_nodes`)."""

    split: Split
    first: bool = True
    last: bool = True
    walked: Walked | None = None

    def bounds(self, file_size: int) -> tuple[int, int]:
        return self.split.start or 0, file_size if self.split.end is None else self.split.end


@dataclass(frozen=True)
class Failure:
    """How a range ended the command: the one stderr line and the exit code a single process
    gives; `internal` for a bug (exit 70: no warnings printed, the traceback with --debug)."""

    line: str
    code: int
    internal: bool = False
    traceback: str | None = None


class RangeError(RdbspecError):
    """A range failed: the command ends as `failure` says, after the ranges before it."""

    def __init__(self, failure: Failure):
        super().__init__(failure.line)
        self.failure = failure


@dataclass
class Done:
    """A range read: the worker's result (`value`) or its failure, and the spool file holding what
    it wrote, from the start. `whole` is False when the worker ended without a word (killed):
    its spool may end inside a record."""

    piece: Piece
    value: Any
    failure: Failure | None
    spool: BinaryIO
    whole: bool = True


# (dump opened on the range, its key records, the piece, the spool) -> the range's result
Work = Callable[[dumpfile.Dump, Iterator[dumpfile.KeyRecord], Piece, BinaryIO], Any]
# (the exception a range ended with, the worker's dump or None) -> the failure it ends the command with
Fail = Callable[[BaseException, "dumpfile.Dump | None"], Failure]


def value_parts(jobs: int) -> int:
    """How many parts a big value is cut into (`splits.cut`) for `jobs` workers: one a job, since
    each part's worker reads the key's record again (stepping over the whole value) and the index
    pass walks the value once more to cut it, so that more parts would cost more than they share;
    with `RDBSPEC_SPLIT_SIZE`, parts of that size, as many as that makes (the tests cut small
    values in many parts)."""
    return jobs if _forced_split_size() is None else sys.maxsize


def ranges(dump: dumpfile.Dump, size: int, jobs: int, work: Work, fail: Fail, parts: int = 0,
           progress: Callable[[int], None] | None = None) -> Generator[Done, None, None]:
    """`work` over each range of `size` bytes of `dump` in a worker process (at most `jobs` at
    once), yielded in file order, a big value cut into at most `parts` ranges (`splits.cut`);
    before each is yielded its warnings and what its records said go to `dump`. `progress` is
    told the bytes read so far every half second. Close the iterator to stop: the workers still
    running are killed."""
    return _Runner(dump, size, jobs, work, fail, parts, progress).run()


def piece_nodes(record: dumpfile.KeyRecord, piece: Piece) -> Iterator[tuple[StreamNode, NodeEntries]]:
    """The nodes of a part split of `record` (a stream key), decoded and checked as a walk over all
    of them checks them (`Stream.node_entries`): the walk starts at the last node before them that
    holds an entry, so that their first ID is compared with the one before it (the warnings of
    that node are those of the range before too: the parent keeps each once). Their live entries
    are counted into `piece.walked`, which the parent adds up to check the stream's length."""
    stream = record.value
    if not isinstance(stream, Stream):
        raise TypeError(f"a stream part split of a {record.type_name} key")
    _, first, count = piece.split.part or (0, 0, 0)
    end = first + count
    start = max(first - 1, 0)
    while start > 0 and not _holds_entries(stream, start):
        start -= 1
    live = 0
    for index, (node, got) in enumerate(walk_nodes(stream.nodes[start:end], stream.origin, None, stream.warn), start):
        if index >= first:
            live += len(got.columns) - got.columns.deleted.count(1)
            yield node, got
    piece.walked = Walked(record.offset, record.key, stream.length, live)


def _holds_entries(stream: Stream, index: int) -> bool:
    _, got = next(walk_nodes(stream.nodes[index:index + 1], stream.origin, None, stream.warn))
    return len(got.columns) > 0


def copy(spool: BinaryIO, out: BinaryIO, start: int = 0, end: int | None = None) -> None:
    """Writes bytes `start` to `end` (default: its end) of a spool file to `out`, by the kernel
    (sendfile) where it can."""
    out.flush()
    end = os.fstat(spool.fileno()).st_size if end is None else end
    try:
        target: int | None = out.fileno()
    except (AttributeError, io.UnsupportedOperation):  # an output that is no file
        target = None
    try:
        while target is not None and start < end:
            sent = os.sendfile(target, spool.fileno(), start, end - start)
            if sent == 0:
                raise OSError(errno.EIO, "the spool file ended early")
            start += sent
    except OSError as err:
        if err.errno not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSOCK, errno.EOPNOTSUPP, errno.EBADF):
            if err.filename is None and isinstance(getattr(out, "name", None), str):
                err.filename = out.name  # the output's (-o's, `rdbspec.atomic`) error names it
            raise  # a broken pipe, a full disk...: the output's own problem
    while start < end:
        chunk = os.pread(spool.fileno(), min(end - start, 1 << 20), start)
        if not chunk:
            raise OSError(errno.EIO, "the spool file ended early")
        out.write(chunk)
        start += len(chunk)


@dataclass
class _Outcome:
    """What a worker sends back, pickled."""

    piece: Piece
    value: Any
    warnings: list[RdbWarning]
    notes: dict[str, Any]
    failure: Failure | None


@dataclass
class _Worker:
    index: int
    pid: int
    fd: int
    spool: BinaryIO
    slot: int | None
    data: bytearray = field(default_factory=bytearray)


class _Runner:
    """The parent's side: the planner's splits in, workers forked for them, their outcomes out in
    file order."""

    def __init__(self, dump: dumpfile.Dump, size: int, jobs: int, work: Work, fail: Fail, parts: int,
                 progress: Callable[[int], None] | None):
        self.dump, self.size, self.jobs, self.work, self.fail = dump, size, jobs, work, fail
        self.parts, self.progress = parts, progress
        self.file_size = len(dump.source.buffer)
        self.selector = selectors.DefaultSelector()
        self.pieces: list[Piece] = []
        self.held: Piece | None = None  # a part split, until the next split says whether it is its key's last
        self.planner: int | None = None  # the planner's pid while it runs
        self.plan_fd = -1
        self.plan_data = b""
        self.started = 0  # pieces[:started] have had a worker
        self.running: dict[int, _Worker] = {}
        self.finished: dict[int, tuple[_Outcome | None, _Worker, int]] = {}  # and the worker's exit code
        self.next = 0  # the piece to yield next
        self.live = 0  # the live entries of the part splits of the stream key being yielded
        self.bytes_done = 0
        # each running worker's progress: the offset it reads at, in a page the workers share
        self.shared = mmap.mmap(-1, _OFFSET.size * jobs) if progress is not None else None
        self.slots = list(range(jobs)) if progress is not None else []

    def run(self) -> Generator[Done, None, None]:
        try:
            self._start_planner()
            while True:
                self._start_workers()
                if self.next in self.finished:
                    yield self._done(*self.finished.pop(self.next))
                    self.next += 1
                elif self.planner is None and self.held is None and self.next >= len(self.pieces):
                    return
                else:
                    for key, _ in self.selector.select(0.5 if self.progress is not None else None):
                        key.data()
                    if self.progress is not None:
                        self.progress(self._bytes_read())
        finally:
            self._stop()

    # -- the planner -------------------------------------------------------------------------

    def _start_planner(self) -> None:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            self._plan(write_fd)
        os.close(write_fd)
        os.set_blocking(read_fd, False)
        self.planner, self.plan_fd = pid, read_fd
        self.selector.register(read_fd, selectors.EVENT_READ, self._on_plan)

    def _plan(self, fd: int) -> NoReturn:
        """The planner's body: one line a split, written as soon as the pass finds it."""
        code = 1
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: the parent reports it
            dump = dumpfile.Dump(self.dump.source, verify_checksum=False, parsers=self.dump.backend)
            for split in splits.cut(dump, self.dump.source.name, self.size, self.parts):
                numbers = (split.start, split.end, split.db, *(split.part or (None, None, None)))
                os.write(fd, " ".join("-" if n is None else str(n) for n in numbers).encode() + b"\n")
            code = 0
        finally:
            os._exit(code)

    def _on_plan(self) -> None:
        data = _read(self.plan_fd)
        if data is None:
            return
        if data:
            *lines, self.plan_data = (self.plan_data + data).split(b"\n")
            for line in lines:
                start, end, db, at, first, count = (None if n == b"-" else int(n) for n in line.split())
                self._planned(Split(self.dump.source.name, start, end, db or 0,
                                    None if at is None else (at, first or 0, count or 0)))
            return
        self.selector.unregister(self.plan_fd)
        os.close(self.plan_fd)
        status = _reap(self.planner or 0)
        self.planner = None
        self._planned(None)
        if status != 0:
            raise InternalError(RuntimeError(f"the index pass over the file {_how(status)}"), None)

    def _planned(self, split: Split | None) -> None:
        """Takes the next split of the plan (None: the plan is done)."""
        if self.held is not None:
            held, self.held = self.held, None
            held.last = split is None or split.part is None or _other_key(held.split, split)
            self.pieces.append(held)
        if split is None:
            return
        if split.part is None:
            self.pieces.append(Piece(split))
            return
        before = self.pieces[-1] if self.pieces else None
        self.held = Piece(split, first=before is None or before.split.part is None or before.last)

    # -- the workers -------------------------------------------------------------------------

    def _start_workers(self) -> None:
        while (len(self.running) < self.jobs and self.started < len(self.pieces)
               and self.started < self.next + self.jobs * WINDOW):
            self._fork(self.started)
            self.started += 1

    def _fork(self, index: int) -> None:
        piece = self.pieces[index]
        spool = tempfile.TemporaryFile(prefix="rdbspec-")  # noqa: SIM115 - closed when its piece is done with
        read_fd, write_fd = os.pipe()
        slot = self.slots.pop() if self.shared is not None else None
        if slot is not None and self.shared is not None:
            _OFFSET.pack_into(self.shared, slot * _OFFSET.size, piece.bounds(self.file_size)[0])
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            self._child(piece, spool, write_fd, slot)
        os.close(write_fd)
        os.set_blocking(read_fd, False)
        worker = _Worker(index, pid, read_fd, spool, slot)
        self.running[index] = worker
        self.selector.register(read_fd, selectors.EVENT_READ, partial(self._on_worker, worker))

    def _child(self, piece: Piece, spool: BinaryIO, fd: int, slot: int | None) -> NoReturn:
        """A worker's body: reads its range, sends its outcome, ends without running the parent's
        exit handlers or flushing its buffers."""
        code = 1
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: the parent reports it
            outcome = self._read(piece, spool, slot)
            try:
                data = pickle.dumps(outcome, pickle.HIGHEST_PROTOCOL)
            except Exception as err:  # noqa: BLE001 - a result that does not pickle: a bug of ours
                data = pickle.dumps(_Outcome(piece, None, [], {}, self.fail(err, None)), pickle.HIGHEST_PROTOCOL)
            with open(fd, "wb") as pipe:
                pipe.write(data)
            code = 0
        finally:
            os._exit(code)

    def _read(self, piece: Piece, spool: BinaryIO, slot: int | None) -> _Outcome:
        dump = None
        value = failure = None
        notes: dict[str, Any] = {}
        try:
            dump = dumpfile.Dump(self.dump.source, self.dump.verify_checksum, self.dump.backend)
            split = piece.split
            if split.start is not None:
                dump.seek(split.start, split.db)
            known = {name: len(getattr(dump, name)) for name in _NOTES}  # read at open: the parent has them
            records = dump.keys(split.end)
            if slot is not None and self.shared is not None:
                records = _reporting(records, self.shared, slot)
            try:
                with open(spool.fileno(), "wb", closefd=False) as out:  # flushed even when the range fails
                    value = self.work(dump, records, piece, out)
            finally:
                notes = {name: getattr(dump, name)[known[name]:] for name in _NOTES}
                notes.update(checksum_status=dump.checksum_status, end_offset=dump.end_offset, last_key=dump.last_key)
        except BaseException as err:  # noqa: BLE001 - the parent ends the command as a single process would
            failure = self.fail(err, dump)
        return _Outcome(piece, value, dump.warnings if dump is not None else [], notes, failure)

    def _on_worker(self, worker: _Worker) -> None:
        data = _read(worker.fd)
        if data is None:
            return
        if data:
            worker.data += data
            return
        self.selector.unregister(worker.fd)
        os.close(worker.fd)
        status = _reap(worker.pid)
        del self.running[worker.index]
        if worker.slot is not None:
            self.slots.append(worker.slot)
        outcome = None
        if status == 0:
            try:
                outcome = pickle.loads(worker.data)
            except Exception:  # noqa: BLE001 - cut short: told below as a worker that ended without a word
                outcome = None
        self.finished[worker.index] = (outcome, worker, status)
        worker.data = bytearray()
        piece = self.pieces[worker.index]
        if piece.split.part is None or piece.last:
            start, end = piece.bounds(self.file_size)
            self.bytes_done += end - start

    def _done(self, outcome: _Outcome | None, worker: _Worker, status: int) -> Done:
        """A finished worker's range, its warnings and notes added to the dump (in file order)."""
        piece = self.pieces[worker.index]
        if outcome is None:  # killed, or ended by an error of its own before it could say anything
            start, end = piece.bounds(self.file_size)
            cause = RuntimeError(f"the worker process reading bytes {start} to {end} {_how(status)}")
            return Done(piece, None, self.fail(cause, None), worker.spool, whole=False)
        for warning in outcome.warnings:
            self.dump.warn(warning)
        # the part splits of a key read the same records before it: the first one tells of them
        notes = outcome.notes if piece.split.part is None or piece.first else {}
        for name in _NOTES:
            getattr(self.dump, name).extend(notes.get(name, ()))
        if notes.get("last_key") is not None:
            self.dump.last_key = notes["last_key"]
        if piece.split.end is None and notes:
            self.dump.checksum_status, self.dump.end_offset = notes["checksum_status"], notes["end_offset"]
        walked = outcome.piece.walked
        if walked is not None:
            self.live = (0 if piece.first else self.live) + walked.live
            if piece.last and outcome.failure is None:
                def sink(reason: str, offset: int | None, where: str) -> None:
                    self.dump.warn(RdbWarning(reason, offset, walked.key, where))

                check_length(walked.length, self.live, (walked.offset, walked.key), sink)
        return Done(outcome.piece, outcome.value, outcome.failure, worker.spool)

    def _bytes_read(self) -> int:
        shared = self.shared
        read = self.bytes_done
        for worker in self.running.values():
            piece = self.pieces[worker.index]
            if shared is not None and worker.slot is not None and piece.split.part is None:
                read += max(0, _OFFSET.unpack_from(shared, worker.slot * _OFFSET.size)[0] - (piece.split.start or 0))
        return min(read, self.file_size)

    def _stop(self) -> None:
        """Kills what still runs (the caller stopped early, or failed) and lets go of its files."""
        pids = [w.pid for w in self.running.values()] + ([self.planner] if self.planner is not None else [])
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in pids:
            _reap(pid)
        for worker in self.running.values():
            os.close(worker.fd)
            worker.spool.close()
        for _, worker, _ in self.finished.values():
            worker.spool.close()
        if self.planner is not None:
            os.close(self.plan_fd)
        self.running.clear()
        self.finished.clear()
        self.planner = None
        self.selector.close()
        if self.shared is not None:
            self.shared.close()


def _other_key(held: Split, split: Split) -> bool:
    """Whether the part split `split`, after the part split `held`, is one of another key."""
    return (split.start, split.end) != (held.start, held.end)


def _reporting(records: Iterator[dumpfile.KeyRecord], shared: mmap.mmap, slot: int) -> Iterator[dumpfile.KeyRecord]:
    """The records, each one's offset told to the parent (a worker's progress)."""
    for record in records:
        _OFFSET.pack_into(shared, slot * _OFFSET.size, record.offset)
        yield record


def _read(fd: int) -> bytes | None:
    """What a child sent so far (b"": it has ended; None: nothing after all)."""
    try:
        return os.read(fd, 1 << 20)
    except BlockingIOError:
        return None


def _reap(pid: int) -> int:
    """Waits for a child: its exit code, or minus the signal that ended it."""
    try:
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    except ChildProcessError:
        return 0


def _how(status: int) -> str:
    return f"was killed by signal {-status}" if status < 0 else f"ended with exit status {status}"
