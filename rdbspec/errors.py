"""Errors and the CLI's exit codes.

Every problem with the input is an `RdbError`, raised by a check that names what is wrong (a spec
`valid`, a bound, an integrity rule). Any other exception while reading is a bug of rdbspec,
never "corrupt input": the library wraps it in an `InternalError` that says where the read was
(file offset, key), and the CLI ends it with exit 70 and one line asking for a report; the
traceback is printed only with `rdbspec --debug`.

Every error rdbspec raises derives from one base, `RdbspecError` (the generated runtime defines
it, so that the generated parsers and writers need nothing of rdbspec); `except RdbspecError`
catches them all. With each class, the exit code the CLI ends with (`EXIT_CODES`, `exit_code`):

    RdbspecError
    ├── RdbError                      the input is not what the server loads; `key` names the key
    │   ├── ParseError                  bytes that do not match the grammar (offset, spec path)   3
    │   │   └── TruncatedError            the bytes end inside a field                            3
    │   ├── ChecksumError               the CRC-64 trailer does not match                         4
    │   │   └── FrameChecksumError        a compressed dump's LZ4 frame checksum does not match   4
    │   └── IntegrityError              a rule the server checks on load is broken                5
    ├── WriteError                    a generated writer refuses a value (spec path)              7
    ├── UnwritableError               what rdbspec does not write, named                          7
    ├── ServerError                   a live server refused a command (its reply, the key)        8
    │   └── SyncRefusedError            a live server will not send its RDB to a replica          8
    ├── ReplyError                    a server's error reply as a pipeline reads it (a value)
    ├── ProtocolError                 bytes that are no RESP2 reply: not a server (as exit 6)
    ├── InternalError                 a bug of rdbspec met while reading (offset, key)           70
    ├── BackendError                  RDBSPEC_BACKEND names no backend                            2
    │   └── BackendUnavailableError     the native backend asked for is not built                69
    ├── CommandError                  a stream command the server would refuse (its reply)
    ├── CommandFileError              a line of `rewrite --commands` that is no command           2
    ├── RangeError                    a `--jobs` worker's range failed: as that failure says
    ├── CorruptFileError              Spark: a file the query cannot read (its one line)
    ├── InternalReadError             Spark: a bug met reading a file
    ├── PipelineError                 `rdbspec pipeline`: one line and its exit code
    └── JavaMissingError              no Java 17+ for Spark                                      69

An input file or output that cannot be opened, read or written is the `OSError` Python raises
(exit 6); so is a server that cannot be reached or goes away (`ConnectionError`, naming its URL;
while its RDB comes, the byte reached).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from rdbspec_generated import ParseError, RdbError, RdbspecError, TruncatedError, WriteError

__all__ = ["ChecksumError", "FrameChecksumError", "IntegrityError", "InternalError", "ParseError", "RdbError",
           "RdbspecError", "RdbWarning", "ServerError", "SyncRefusedError", "TruncatedError", "UnwritableError",
           "WriteError", "EXIT_CODES", "as_internal", "exit_code", "file_error_line", "internal_error_line",
           "os_error_text", "print_warnings"]


class ChecksumError(RdbError):
    """The CRC-64 trailer does not match the bytes before it."""

    def __init__(self, stored: int, computed: int, offset: int):
        super().__init__(f"checksum mismatch: the file says {stored:#018x}, its bytes give "
                         f"{computed:#018x} (trailer at byte {offset})")
        self.stored: int | None = stored  # None for a compressed dump's frame (FrameChecksumError)
        self.computed: int | None = computed
        self.offset = offset


class FrameChecksumError(ChecksumError):
    """A checksum of the frame a compressed Valkey dump is wrapped in (`rdbcompression lz4`: the
    LZ4 frame's xxHash-32 of its header, of a block or of the content) does not match: the server
    refuses the file ("Corrupt compressed RDB stream"). The frame's own checksums stand in for the
    RDB's CRC-64 there, which the saver leaves 0. `offset` is where the compressed bytes that
    failed were read from."""

    def __init__(self, message: str, offset: int):
        RdbError.__init__(self, message)
        self.stored = self.computed = None
        self.offset = offset


class IntegrityError(RdbError):
    """Bytes that parse but break a rule the server checks on load (e.g. a consumer PEL entry
    missing from its group PEL), named with the key and where in it."""

    def __init__(self, message: str, offset: int | None = None, key: bytes | None = None):
        where = "" if offset is None else f" (key {key!r} at byte {offset})"
        super().__init__(message + where)
        self.reason = message
        self.offset = offset
        self.key = key


class UnwritableError(RdbspecError):
    """What a dump holds that rdbspec does not write (named): the writer refuses it rather than
    drop it. A value that its field cannot hold is the generated writers' `WriteError`."""


class ServerError(RdbspecError):
    """A live server answered a command with an error (`rdbspec restore`): its reply (`reply`,
    whose first word is `code`: BUSYKEY, WRONGPASS, MOVED...), the server (`url`), the command's
    name, and the key it was about when there is one."""

    def __init__(self, reply: str, url: str, command: str, key: bytes | None = None):
        about = f" (key {key!r})" if key is not None else ""
        super().__init__(f"{url} refused {command}{about}: {reply}")
        self.reply, self.url, self.command, self.key = reply, url, command, key
        self.code = reply.split(" ", 1)[0]


class SyncRefusedError(ServerError):
    """The server will not send its RDB to a replica: SYNC and PSYNC renamed away or denied by an
    ACL (managed services do so), a replica without its master, a server loading its data."""

    def __init__(self, reply: str, url: str, command: str):
        super().__init__(reply, url, command)
        self.args = (f"{url} does not send its RDB to a replica ({command}: {reply}); read a backup of it "
                     "instead (the dump file it saves, or the export its service offers)",)


@dataclass(frozen=True)
class RdbWarning:
    """A check that the server does not make on load (or makes only with `sanitize-dump-payload
    yes`) failed: the server loads the file, so rdbspec reads on and says so. `where` names
    the spec path or the server function behind the check."""

    reason: str
    offset: int | None
    key: bytes | None
    where: str

    def __str__(self) -> str:
        at = "" if self.offset is None else f" at byte {self.offset}"
        key = "" if self.key is None else f" (key {self.key!r}{at})" if at else f" (key {self.key!r})"
        return f"{self.reason}{key or at} [{self.where}]"


def print_warnings(warnings: Iterable[RdbWarning]) -> None:
    """The CLI's warning lines on stderr: one per warning, `rdbspec: warning: ...`."""
    for warning in warnings:
        print(f"rdbspec: warning: {warning}", file=sys.stderr)


class InternalError(RdbspecError):
    """An unexpected exception (TypeError, KeyError...) while reading a dump: a bug in rdbspec,
    not a property of the input. `cause` is the original exception (also `__cause__`, so a
    traceback shows where it was raised); `offset` and `key` say what was being read, `file`
    which file, where that is not the one the caller opened (a shard of a Dragonfly set)."""

    def __init__(self, cause: BaseException, offset: int | None, key: bytes | None = None):
        self.cause = cause
        self.offset = offset
        self.key = key
        self.file: str | None = None
        super().__init__(f"internal error{self.where}: {type(cause).__name__}: {cause}")

    @property
    def where(self) -> str:
        return ("" if self.offset is None else f" at byte {self.offset}") + (
            "" if self.key is None else f" (key {self.key!r})")


def as_internal(error: BaseException, current: tuple[int | None, bytes | None] | None = None) -> InternalError:
    """`error` as an InternalError; one raised outside the decoding (by a consumer of the
    records) is named with `current`, the record being read (`dumpfile.Dump.current`)."""
    return error if isinstance(error, InternalError) else InternalError(error, *(current or (None, None)))


def internal_error_line(error: BaseException, file: str | None = None) -> str:
    """The one stderr line for a bug: what was being read, the exception, and the request."""
    error = as_internal(error)
    file = error.file or file
    reading = f" reading {file}" if file else ""
    return (f"rdbspec: internal error{reading}{error.where}: {type(error.cause).__name__}: {error.cause}; "
            "this is a bug in rdbspec, please report it (rdbspec --debug ... prints the traceback)")


# Documented in the README; stable for scripts.
EXIT_CODES = {
    "ok": 0,
    "usage": 2,          # bad command line (argparse's own code)
    "corrupt": 3,        # ParseError: truncated, bad magic, unknown type, corrupt container
    "checksum": 4,       # ChecksumError
    "integrity": 5,      # IntegrityError: stream PELs or counts the server would reject
    "io": 6,             # the file cannot be opened or read
    "unwritable": 7,     # UnwritableError, WriteError: what the input holds cannot be written (named)
    "refused": 8,        # ServerError: a live server refused a command (its reply and the key)
    "unavailable": 69,   # a part it needs is missing: Java 17+ for Spark, the native backend RDBSPEC_BACKEND=native
                         # asks for; BSD sysexits EX_UNAVAILABLE
    "internal": 70,      # any other exception: a bug in rdbspec (BSD sysexits EX_SOFTWARE)
}


def file_error_line(path: str, error: BaseException, last_key: bytes | None = None) -> str:
    """`PATH: ErrorClass at byte N: message (last key read: K)`: a file that cannot be read or
    written, as the Spark pipeline reports it (the byte offset and key when known)."""
    offset = getattr(error, "offset", None)
    where = f" at byte {offset}" if offset is not None else ""
    near = f" (last key read: {last_key!r})" if last_key is not None else ""
    return f"{path}: {error.__class__.__name__}{where}: {error}{near}"


def os_error_text(err: OSError) -> str:
    """`FILE: what happened` for an OSError that names its file (a local file or a store's URL),
    in its own words rather than `[Errno n]`; else its text."""
    if err.filename is not None and err.strerror:
        return f"{os.fsdecode(err.filename)}: {err.strerror}"
    return str(err)


def exit_code(error: BaseException) -> int:
    if isinstance(error, ChecksumError):
        return EXIT_CODES["checksum"]
    if isinstance(error, IntegrityError):
        return EXIT_CODES["integrity"]
    if isinstance(error, RdbError):
        return EXIT_CODES["corrupt"]
    if isinstance(error, OSError):
        return EXIT_CODES["io"]
    if isinstance(error, (UnwritableError, WriteError)):
        return EXIT_CODES["unwritable"]
    if isinstance(error, ServerError):
        return EXIT_CODES["refused"]
    return EXIT_CODES["internal"]
