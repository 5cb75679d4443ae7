"""Runtime support shared by the generated parsers: the stream view, errors and LZF.

Copied as it is by rdbspec's generator from generator/python/runtime/_runtime.py: edit that file
and run `make regenerate`, never the copy.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from contextvars import ContextVar
from types import SimpleNamespace

import lzf as _lzf


class RdbspecError(Exception):
    """The one base of every error rdbspec raises (`rdbspec.errors` draws the tree). Defined here,
    where the generated parsers and writers can derive from it without importing rdbspec."""


class RdbError(RdbspecError):
    """Base of every error rdbspec raises for bad input. `key` is the key whose record was being
    read, where the reader knows it (rdbspec sets it)."""

    key: bytes | None = None


class ParseError(RdbError):
    """Input that does not match the grammar.

    `offset` is the absolute byte offset in the file (for data inside an LZF-compressed
    string, the offset of that string's compressed bytes; `inner_offset` then says where in
    the decompressed data), `spec_path` names the field being read as `spec:type.field`.
    """

    def __init__(self, message: str, offset: int, spec_path: str, inner_offset: int | None = None):
        where = (
            f"at byte {offset}"
            if inner_offset is None
            else (f"at byte {inner_offset} of the data decompressed from byte {offset}")
        )
        super().__init__(f"{message} {where} ({spec_path})")
        self.reason = message
        self.offset = offset
        self.spec_path = spec_path
        self.inner_offset = inner_offset


class TruncatedError(ParseError):
    """The input ends (or a length runs past its container) before a field is complete."""


class Io:
    """A substream: `buf[start:end]`, with `base` the file offset of `buf[0]` and `origin`
    the file offset of the compressed bytes when `buf` holds decompressed data."""

    __slots__ = ("buf", "start", "end", "base", "origin")

    def __init__(self, buf, start: int, end: int, base: int = 0, origin: int | None = None):
        self.buf = buf
        self.start = start
        self.end = end
        self.base = base
        self.origin = origin

    def offset(self, pos: int) -> int:
        """The file offset of `pos` (for decompressed data: of the compressed bytes)."""
        return self.base + pos if self.origin is None else self.origin

    def error(self, cls: type, message: str, pos: int, spec_path: str) -> ParseError:
        if self.origin is None:
            return cls(message, self.base + pos, spec_path)
        return cls(message, self.origin, spec_path, pos)


def truncated(io: Io, pos: int, need: object, spec_path: str) -> TruncatedError:
    return io.error(TruncatedError, f"needs {need} bytes, {max(io.end - pos, 0)} remain", pos, spec_path)


def count_exceeds(io: Io, pos: int, count: int, remain: int, spec_path: str) -> TruncatedError:
    """A declared count that the `remain` bytes left cannot hold: they end before its elements
    (bytes still arriving, a live server's RDB, are read again once more have come)."""
    return io.error(TruncatedError, f"count {count} exceeds the {remain} bytes that remain", pos, spec_path)


def invalid(io: Io, pos: int, spec_path: str, message: str) -> ParseError:
    return io.error(ParseError, message, pos, spec_path)


def lzf_decompress(data: bytes, expected_len: int, io: Io, pos: int, spec_path: str) -> bytes:
    """LZF (liblzf, through python-lzf) with the server's rule: the output must be exactly
    `expected_len` bytes (redis src/rdb.c rdbLoadLzfStringObject)."""
    # A 3-byte back-reference yields at most 264 bytes, so LZF cannot expand more than 88
    # times: a larger declared length is corrupt and is never allocated.
    if expected_len > 88 * len(data) + 32:
        raise invalid(io, pos, spec_path, f"LZF data of {len(data)} bytes cannot decompress to {expected_len} bytes")
    if expected_len == 0:
        raise invalid(io, pos, spec_path, "LZF data declares an empty output")
    try:
        out = _lzf.decompress(bytes(data), expected_len + 1)
    except ValueError:
        out = None
    if out is None or len(out) != expected_len:
        raise invalid(io, pos, spec_path, f"LZF data does not decompress to {expected_len} bytes")
    return out


# -- writing ---------------------------------------------------------------------------------


class WriteError(RdbspecError):
    """A value the spec cannot write (a number out of its field's range, an object of another
    type than the field's, fields that disagree), or a written field that fails a check of the
    reader. `spec_path` names the field as `spec:type.field`."""

    def __init__(self, message: str, spec_path: str):
        super().__init__(f"{message} ({spec_path})")
        self.reason = message
        self.spec_path = spec_path


class WriteIo:
    """Bytes being written, with how many `-rdbspec-scalar` values they hold (`scalars`) and the
    size of the last element of the repeat they end with (`last_size`)."""

    __slots__ = ("data", "scalars", "last_size")

    def __init__(self) -> None:
        self.data = bytearray()
        self.scalars = 0
        self.last_size = 0

    def write(self, data: bytes | bytearray) -> None:
        self.data += data

    def pack(self, fmt: str, value: object, spec_path: str) -> None:
        try:
            self.data += struct.pack(fmt, value)
        except struct.error as err:
            raise WriteError(f"{value!r} does not fit: {err}", spec_path) from None

    def add(self, part: WriteIo) -> None:
        """Appends what `part` holds."""
        self.data += part.data
        self.scalars += part.scalars
        self.last_size = part.last_size


def new_object(cls: type, fields: dict[str, object]):
    """An object of a generated class to write (`Class._new`): `fields` set, every other slot None
    (but the instances' caches)."""
    obj = cls.__new__(cls)
    for name in cls.__slots__:
        if not name.startswith("_m_"):  # an instance's cache stays empty: its property computes it
            setattr(obj, name, None)
    for name, value in fields.items():  # a slot, or a lazy field's property (kept in `_given_<id>`)
        if name not in cls.__slots__ and f"_given_{name}" not in cls.__slots__:
            raise TypeError(f"{cls.__name__} has no field {name!r}")
        setattr(obj, name, value)
    return obj


class WriteInputs(SimpleNamespace):
    """The inputs a writer derives for a field of a type written from its instances."""


def _holds(test: Callable[[], object]) -> bool:
    """A check's expression on written values; one that cannot be evaluated fails, as on read."""
    try:
        return bool(test())
    except (TypeError, ValueError, IndexError, AttributeError, ZeroDivisionError):
        return False


def lzf_compress(data: bytes, spec_path: str) -> bytes:
    """LZF (liblzf, through python-lzf), the inverse of `lzf_decompress`: the compressed bytes
    must be fewer than the data (redis src/rdb.c rdbSaveLzfStringObject gives liblzf a buffer of
    len - 4 bytes and keeps the raw string when it does not fit)."""
    out = _lzf.compress(bytes(data), max(len(data) - 4, 1)) if len(data) > 4 else None
    if out is None:
        raise WriteError(f"{len(data)} bytes that LZF does not make 4 bytes shorter", spec_path)
    return out


# -- warnings: checks that the server does not make on load --------------------------------

WarningSink = Callable[[str, "int | None", str], None]
# The sink in force. `collecting` sets it for a block; a caller that decodes one value at a time
# by the hundred thousand sets and resets it itself (token = warning_sink.set(sink), then
# warning_sink.reset(token)), without the block's three calls.
warning_sink: ContextVar[WarningSink | None] = ContextVar("rdbspec_warning_sink", default=None)


def warn(io: Io, pos: int, spec_path: str, message: str) -> None:
    """A check the server does not make on load failed (a `valid` marked `-rdbspec-warn`): the
    sink that `collecting` installed is told (message, file offset, spec path) and parsing goes
    on. With no sink it is an error like any other `valid`, as in the official compiler's output."""
    sink = warning_sink.get()
    if sink is None:
        raise invalid(io, pos, spec_path, message)
    sink(message, io.offset(pos), spec_path)


class collecting:  # noqa: N801 - used as a function: `with collecting(sink):`
    """Warnings raised while the block runs go to `sink`. A class, not a @contextmanager
    generator: rdbspec enters one per decoded value, and this costs a third as much."""

    __slots__ = ("sink", "token")

    def __init__(self, sink: WarningSink):
        self.sink = sink

    def __enter__(self) -> None:
        self.token = warning_sink.set(self.sink)

    def __exit__(self, *exc: object) -> None:
        warning_sink.reset(self.token)


def current_sink() -> WarningSink | None:
    """The sink in force (kept by lazily decoded values, to report to it later)."""
    return warning_sink.get()
