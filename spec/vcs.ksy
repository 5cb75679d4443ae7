meta:
  id: vcs
  title: Valkey compressed stream (VCS) envelope of a whole RDB file (rdbcompression lz4 / zstd)
  file-extension: rdb
  endian: le
doc: |
  A Valkey 9.2 dump saved with `rdbcompression lz4` (or `zstd`, in a build with Zstandard): a 7-byte
  envelope, then the whole RDB file (magic through the EOF opcode and its 8-byte trailer, which the
  saver leaves 0: the frame's checksums stand for it) compressed as one frame of the codec: an LZ4
  frame (LZ4 Frame Format, magic 04 22 4D 18) or a Zstandard frame (magic 28 B5 2F FD). With
  `rdbchecksum yes` the LZ4 frame has block and content checksums (xxHash-32), the zstd frame a
  content checksum; with `no`, none. The loader probes the first bytes: anything that is not the
  "VCS" magic is read as a plain RDB file; the magic with another version, codec, a reserved byte
  other than 0 or another stream kind is refused ("Invalid or unsupported RDB stream envelope").
  Bytes after the frame's end are not read (as after a plain file's trailer); decoded bytes after
  the RDB's trailer are refused (streamReaderFinish). `rdbspec.read.source` reads this header with
  the parser generated from here and unwraps the frame as it streams.

  The envelope changed while valkey PR #3531 ("Streaming Compression support for RDB") was
  reviewed (an 8-byte "VKCS" form with a flags byte and stream kind 0, and a 7-byte "VCS" form with
  a flags byte in place of the reserved one, were drafts); this is the layout of the merged code
  and of its tests (valkey tests/integration/rdb-compression.tcl: the bytes 86 67 83 1 1 0 1 for
  LZ4 and 86 67 83 1 2 0 1 for zstd, and a reserved byte 1 refused).
doc-ref: valkey src/compression_stream.c readVcsEnvelope
seq:
  - id: magic
    contents: VCS
    doc: '"VCS" (valkey src/compression_stream.h VCS_MAGIC_0..2).'
  - id: version
    type: u1
    valid:
      expr: _ == 1
    -rdbspec-message: 'expected envelope version 1 (the one Valkey writes and loads), found {_}'
    doc: Envelope version (VCS_VERSION 1); the loader refuses any other.
  - id: codec_id
    type: u1
    valid:
      expr: _ == vcs_codec::lz4.to_i or _ == vcs_codec::zstd.to_i
    -rdbspec-message: 'expected codec 1 (LZ4) or 2 (Zstandard), found {_}'
    doc: The frame's codec, a wire id independent of the server's own numbering (VCS_CODEC_*).
  - id: reserved
    type: u1
    valid:
      expr: _ == 0
    -rdbspec-message: 'expected the reserved byte 0, found {_}'
    doc: Reserved, 0; the loader refuses anything else so that an extension fails loudly.
  - id: stream_kind
    type: u1
    valid:
      expr: _ == vcs_stream_kind::rdb.to_i
    -rdbspec-message: 'expected stream kind 1 (an RDB file), found {_}'
    doc: What the frame decodes to (VCS_STREAM_RDB 1); the RDB loader refuses any other.
  - id: frame
    size-eos: true
    doc: |
      The compressed frame, then whatever follows it (not read). `rdbspec.read.source` decodes it
      as it streams rather than reading it here.
instances:
  codec:
    value: codec_id
    enum: vcs_codec
    doc: The codec by name.
enums:
  vcs_codec:
    1: lz4
    2: zstd
  vcs_stream_kind:
    1: rdb
