"""RESP, the protocol of Redis and Valkey (redis src/networking.c processMultibulkBuffer reads a
command, src/networking.c addReply* writes replies): a command as the array of bulk strings a
client sends (`command`), and the replies read back from a byte stream (`Replies`).

Only what a client of RESP2 meets is read: simple strings (+), errors (-), integers (:), bulk
strings ($, $-1 the null one), arrays (*, *-1 the null one); a RESP3 type byte is refused
(nothing here says HELLO 3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Union

from ..errors import RdbspecError

CRLF = b"\r\n"
LONG_ARG = 1 << 16  # an argument `command_parts` leaves as it is
OK = b"+OK\r\n"
Arg = Union[bytes, bytearray, memoryview, str, int, float]
Reply = Union[bytes, int, None, "ReplyError", list["Reply"]]


class ReplyError(RdbspecError):
    """An error reply (`-ERR ...`, `-MOVED 3999 127.0.0.1:6381`...): `code` is its first word."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text
        self.code = text.split(" ", 1)[0]


class ProtocolError(RdbspecError):
    """Bytes that are no RESP2 reply: the peer is no Redis-family server (or a TLS one spoken to in
    plain text)."""


def _arg(value: Arg) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bool):
        raise TypeError("a command argument is bytes, str, int or float, not bool")
    if isinstance(value, int):
        return b"%d" % value
    return repr(float(value)).encode()  # the shortest text that reads back as the same double


def command(*args: Arg) -> bytes:
    """The bytes a client sends for one command: `*N`, then each argument as a bulk string."""
    return array_header(len(args)) + b"".join(map(bulk, args))


def command_parts(*args: Arg) -> list[bytes]:
    """`command`'s bytes as pieces: an argument of `LONG_ARG` bytes or more as it is, not copied (a
    command holding a value's tens of megabytes is sent without a copy of them), the rest joined."""
    parts: list[bytes] = []
    joined = bytearray(array_header(len(args)))
    for value in args:
        data = _arg(value)
        joined += b"$%d\r\n" % len(data)
        if len(data) < LONG_ARG:
            joined += data + CRLF
        else:
            parts += (bytes(joined), data)
            joined = bytearray(CRLF)
    parts.append(bytes(joined))
    return parts


def array_header(count: int) -> bytes:
    """What starts a command of `count` arguments."""
    return b"*%d\r\n" % count


def bulk(value: Arg) -> bytes:
    """One argument: `$LEN`, its bytes, CRLF."""
    data = _arg(value)
    return b"$%d\r\n%s\r\n" % (len(data), data)


class Replies:
    """Replies read from `receive` (a callable giving the next bytes the server sent, b"" once it
    closed), one at a time (`next`)."""

    def __init__(self, receive: Callable[[], bytes]):
        self._receive = receive
        self._buffer = bytearray()
        self._at = 0

    def _fill(self) -> None:
        data = self._receive()
        if not data:
            raise ConnectionResetError("the server closed the connection")
        if self._at > 65536 and self._at * 2 > len(self._buffer):
            del self._buffer[:self._at]
            self._at = 0
        self._buffer += data

    def _line(self) -> bytes:
        while True:
            end = self._buffer.find(CRLF, self._at)
            if end >= 0:
                line = bytes(self._buffer[self._at:end])
                self._at = end + 2
                return line
            self._fill()

    def _exactly(self, size: int) -> bytes:
        while len(self._buffer) - self._at < size + 2:
            self._fill()
        data = bytes(self._buffer[self._at:self._at + size])
        if self._buffer[self._at + size:self._at + size + 2] != CRLF:
            raise ProtocolError("a bulk string does not end with CRLF")
        self._at += size + 2
        return data

    def unread(self) -> bytes:
        """The bytes received after the last reply read, taken out: what follows the replies in a
        stream that is not made of replies (a replica's RDB)."""
        rest = bytes(self._buffer[self._at:])
        self._buffer.clear()
        self._at = 0
        return rest

    def oks(self, most: int) -> int:
        """How many of the next replies, up to `most`, are `+OK` (those read), without an object a
        reply: what a pipeline of writes mostly reads back. Only replies already received are looked at."""
        count = min(most, (len(self._buffer) - self._at) // len(OK))
        while count and self._buffer[self._at:self._at + count * len(OK)] != OK * count:
            count //= 2  # a shorter run of them, ending before the first other reply
        self._at += count * len(OK)
        return count

    def next(self) -> Reply:
        """The next reply: bytes, int, None, a ReplyError (returned, not raised: a pipeline's
        error belongs to its command), or a list of replies."""
        line = self._line()
        if not line:
            raise ProtocolError("an empty reply line")
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            return ReplyError(rest.decode("utf-8", "replace"))
        try:
            number = int(rest)
        except ValueError:
            raise ProtocolError(f"not a RESP2 reply: {line[:40]!r}") from None
        if kind == b":":
            return number
        if kind == b"$":
            return None if number < 0 else self._exactly(number)
        if kind == b"*":
            return None if number < 0 else [self.next() for _ in range(number)]
        raise ProtocolError(f"not a RESP2 reply: {line[:40]!r}")
