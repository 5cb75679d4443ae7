// LZF decompression for the official Kaitai Struct JavaScript output (`process: rdb_lzf(ulen)`).
// Port of redis src/lzf_d.c lzf_decompress (notes §3.3). Throws Error on corrupt input or when the
// output length differs from the declared uncompressed length (redis src/rdb.c rdbLoadLzfStringObject).
(function (root, factory) {
  if (typeof define === 'function' && define.amd) {
    define(['exports'], factory);
  } else if (typeof exports === 'object' && exports !== null && typeof exports.nodeType !== 'number') {
    factory(exports);
  } else {
    factory(root.RdbLzf || (root.RdbLzf = {}));
  }
})(typeof self !== 'undefined' ? self : this, function (RdbLzf_) {
  'use strict';

  function RdbLzf(ulen) {
    this.ulen = Number(ulen);
  }

  RdbLzf.prototype.decode = function (data) {
    var ulen = this.ulen;
    if (!(ulen >= 0)) {
      throw new Error('LZF: invalid uncompressed length ' + ulen);
    }
    var out = new Uint8Array(ulen);
    var op = 0;
    var ip = 0;
    var n = data.length;
    while (ip < n) {
      var ctrl = data[ip++];
      if (ctrl < 32) {
        var run = ctrl + 1;
        if (ip + run > n) throw new Error('LZF: literal run past end of input');
        if (op + run > ulen) throw new Error('LZF: output exceeds declared length ' + ulen);
        for (var i = 0; i < run; i++) out[op++] = data[ip++];
      } else {
        var len = ctrl >> 5;
        if (len === 7) {
          if (ip >= n) throw new Error('LZF: truncated back-reference length');
          len += data[ip++];
        }
        if (ip >= n) throw new Error('LZF: truncated back-reference offset');
        var ref = op - ((ctrl & 0x1f) << 8) - data[ip++] - 1;
        len += 2;
        if (ref < 0) throw new Error('LZF: back-reference before start of output');
        if (op + len > ulen) throw new Error('LZF: output exceeds declared length ' + ulen);
        for (var j = 0; j < len; j++) out[op++] = out[ref++];
      }
    }
    if (op !== ulen) {
      throw new Error('LZF: decompressed ' + op + ' bytes, expected ' + ulen);
    }
    return out;
  };

  RdbLzf_.RdbLzf = RdbLzf;
});
