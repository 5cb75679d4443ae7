"""Errors and the CLI's exit codes. Every problem with the input is an `RdbError`."""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from rdbspec_generated import ParseError, RdbError, TruncatedError

__all__ = ["ChecksumError", "IntegrityError", "ParseError", "RdbError", "RdbWarning", "TruncatedError",
           "EXIT_CODES", "DECODING_FAILURES"]

# Python errors that generated code can only raise on input it cannot make sense of
# (an expression over a field that a corrupt byte made absent, a wrong-typed value...)
DECODING_FAILURES = (TypeError, ValueError, IndexError, KeyError, OverflowError, struct.error,
                     RecursionError, UnicodeDecodeError, AttributeError)


class ChecksumError(RdbError):
    """The CRC-64 trailer does not match the bytes before it."""

    def __init__(self, stored: int, computed: int, offset: int):
        super().__init__(f"checksum mismatch: the file says {stored:#018x}, its bytes give "
                         f"{computed:#018x} (trailer at byte {offset})")
        self.stored = stored
        self.computed = computed
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


# Documented in the README; stable for scripts.
EXIT_CODES = {
    "ok": 0,
    "usage": 2,          # bad command line (argparse's own code)
    "corrupt": 3,        # ParseError: truncated, bad magic, unknown type, corrupt container
    "checksum": 4,       # ChecksumError
    "integrity": 5,      # IntegrityError: stream PELs or counts the server would reject
    "io": 6,             # the file cannot be opened or read
}


def exit_code(error: BaseException) -> int:
    if isinstance(error, ChecksumError):
        return EXIT_CODES["checksum"]
    if isinstance(error, IntegrityError):
        return EXIT_CODES["integrity"]
    if isinstance(error, RdbError):
        return EXIT_CODES["corrupt"]
    return EXIT_CODES["io"]
