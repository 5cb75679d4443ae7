"""LZF decompression for the official Kaitai Struct Python output (`process: rdb_lzf(ulen)`).

Pure Python port of redis src/lzf_d.c lzf_decompress (see notes §3.3). The RDB loader
requires the output length to equal the declared uncompressed length exactly
(redis src/rdb.c rdbLoadLzfStringObject), so a mismatch raises ValueError too.
"""


class RdbLzf:
    """Kaitai custom processor: ``RdbLzf(ulen).decode(data) -> bytes``."""

    def __init__(self, ulen):
        self.ulen = int(ulen)

    def decode(self, data):
        data = bytes(data)
        ulen = self.ulen
        if ulen < 0:
            raise ValueError(f"LZF: negative uncompressed length {ulen}")
        out = bytearray()
        ip = 0
        n = len(data)
        while ip < n:
            ctrl = data[ip]
            ip += 1
            if ctrl < 32:
                run = ctrl + 1
                if ip + run > n:
                    raise ValueError(f"LZF: literal run past end of input at {ip - 1}")
                if len(out) + run > ulen:
                    raise ValueError(f"LZF: output exceeds declared length {ulen}")
                out += data[ip:ip + run]
                ip += run
            else:
                length = ctrl >> 5
                if length == 7:
                    if ip >= n:
                        raise ValueError("LZF: truncated back-reference length")
                    length += data[ip]
                    ip += 1
                if ip >= n:
                    raise ValueError("LZF: truncated back-reference offset")
                ref = len(out) - ((ctrl & 0x1F) << 8) - data[ip] - 1
                ip += 1
                length += 2
                if ref < 0:
                    raise ValueError("LZF: back-reference before start of output")
                if len(out) + length > ulen:
                    raise ValueError(f"LZF: output exceeds declared length {ulen}")
                if ref + length <= len(out):
                    out += out[ref:ref + length]
                else:
                    for i in range(length):
                        out.append(out[ref + i])
        if len(out) != ulen:
            raise ValueError(f"LZF: decompressed {len(out)} bytes, expected {ulen}")
        return bytes(out)
