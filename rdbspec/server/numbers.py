"""The server's numbers and their texts: what the decimal text of an integer is (string2ll,
string2ull), how a score is written as text (d2string), a stored unsigned 64-bit number read as the
signed one the server keeps. Each after its function in redis src/util.c."""

from __future__ import annotations

import math
from decimal import Decimal

MASK64 = (1 << 64) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


LONG_LONG_TEXT = 20  # the longest text string2ll reads: a sign and 19 digits (redis src/util.c)


def string2ll(data: bytes) -> int | None:
    """The number `data` is the decimal text of, in the one form the server turns back into the
    same text (redis src/util.c string2ll: no sign but '-', no leading zero, no space, a long
    long); None for any other text. What decides an integer encoding (rdbTryIntegerEncoding,
    listpack and intset entries) and an integer argument of a command."""
    if not data or len(data) > LONG_LONG_TEXT or not data.isascii():
        return None
    digits = data[1:] if data[:1] == b"-" else data
    if not digits.isdigit() or (digits[:1] == b"0" and data != b"0"):
        return None
    number = int(data)
    return number if -(1 << 63) <= number < 1 << 63 else None  # string2ll: a long long


def _strtoull(text: bytes) -> int | None:
    """C strtoull(s, &end, 10) that must consume the whole string: leading whitespace, a sign,
    '-' negating modulo 2^64; None on no digits, trailing bytes or overflow (ERANGE)."""
    i = 0
    while i < len(text) and text[i] in b" \t\n\v\f\r":
        i += 1
    negative = text[i:i + 1] == b"-"
    if text[i:i + 1] in (b"-", b"+"):
        i += 1
    digits = text[i:]
    if not digits or not (digits.isdigit() and digits.isascii()):
        return None
    value = int(digits)
    if value > MASK64:
        return None
    return (-value) & MASK64 if negative else value


def string2ull(text: bytes) -> int | None:
    """redis util.c string2ull: string2ll (rejecting negatives), else strtoull."""
    if not text:
        return None
    value = string2ll(text)
    if value is not None:
        return None if value < 0 else value
    return _strtoull(text)


def signed64(value: int) -> int:
    """A stored uint64 read as the server's signed mstime_t / long long."""
    value &= MASK64
    return value - (1 << 64) if value > INT64_MAX else value


def d2string(score: float, version: int) -> bytes:
    """A score's text as redis src/util.c d2string writes it into a listpack or ziplist: an
    integral value in range as an integer (the range of 7.2's double2ll from RDB 11, of the
    2^52 check before; -0.0 is "0" but in 6.2), else "%.17g" before RDB 11 and fpconv_dtoa
    (deps/fpconv) from RDB 11."""
    if math.isinf(score):
        return b"-inf" if score < 0 else b"inf"
    if score == 0 and version < 10:  # 6.2 keeps the sign of zero; from 7.0 the integer check takes it
        return b"-0" if math.copysign(1.0, score) < 0 else b"0"
    if version >= 11:
        if -(1 << 62) <= score <= 1 << 62 and score == int(score):
            return b"%d" % int(score)
        return _fpconv_dtoa(score)
    if -(2 ** 52 - 1) < score < 2 ** 52 and score == int(score):
        return b"%d" % int(score)
    return b"%.17g" % score


def _fpconv_dtoa(value: float) -> bytes:
    """fpconv_dtoa's text of a finite, non-zero `value`: its shortest digits (as Python's repr
    finds them) in fpconv's forms: plain while the exponent is small, else d.ddde[+-]x."""
    sign, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    assert isinstance(exponent, int)  # a finite value's (the others are 'n', 'N', 'F')
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    k = exponent + (len(digit_tuple) - len(digits))  # value = digits * 10**k
    n = len(digits)
    exp = abs(k + n - 1)
    neg = value < 0
    if k >= 0 and exp < n + 7:
        text = digits + "0" * k
    elif k < 0 and (k > -7 or exp < 4):
        offset = n + k
        text = "0." + "0" * -offset + digits if offset <= 0 else digits[:offset] + "." + digits[offset:]
    else:
        n = min(n, 18 - neg)
        mantissa = digits[0] + ("." + digits[1:n] if n > 1 else "")
        text = f"{mantissa}e{'-' if k + n - 1 < 0 else '+'}{exp}"
    return (("-" if neg else "") + text).encode()
