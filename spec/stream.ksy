meta:
  id: stream
  title: Redis streams (types 15, 19, 21, 26, 27)
  endian: le
  imports:
    - rdb_string
    - listpack
doc: |
  Stream values (notes §6). The root type is empty; `stream_value(type_code)` is the value
  of a STREAM_LISTPACKS* key and `stream_listpack` is one node listpack (parsed through
  `rdb_string::rdb_blob` with kind `stream_listpack`).
doc-ref: redis src/rdb.c rdbSaveObject
enums:
  entry_flag:
    1:
      id: deleted
      doc: STREAM_ITEM_FLAG_DELETED, an entry XDEL removed (kept until its node is rewritten).
    2:
      id: samefields
      doc: STREAM_ITEM_FLAG_SAMEFIELDS, an entry whose fields are the master entry's (its values only).
types:
  stream_value:
    doc: |
      A stream value (notes §6.1): the node listpacks keyed by master ID, the stream metadata
      (length, last id; first id, max deleted id and entries_added since type 19), the consumer
      groups (with the NACK zone of type 27 after each group's consumers), and the IDMP tail of
      type 26. Metadata IDs are pairs of RDB lengths; node keys and PEL IDs are raw 16-byte
      big-endian. Redis 8.8 writes every stream as type 27 (rdbSaveObjectType). Valkey 7.2-9.x write type 21 (valkey src/rdb.c
      rdbSaveObjectType), in the same layout (valkey src/rdb.c rdbSaveObject).
    doc-ref: redis src/rdb.c rdbSaveObject
    params:
      - id: type_code
        type: u1
        doc: The RDB type byte (15, 19, 21, 26 or 27); gates the versioned fields.
    seq:
      - id: num_nodes
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: nodes.size}
        doc: Number of listpack nodes (raxSize of the stream radix tree).
      - id: nodes
        type: stream_node
        repeat: expr
        repeat-expr: num_nodes.value
        -rdbspec-lazy: true
        -rdbspec-splits: true
        doc: |
          The listpack nodes, in ascending master ID order. Stepped over when the stream is read
          (`_lazy_nodes` is where they start), so that a reader can take them one by one.
      - id: length
        type: rdb_string::rdb_len
        doc: Number of live (not deleted) entries.
      - id: last_id
        type: stream_id
        doc: The last generated ID.
      - id: first_id
        type: stream_id
        if: type_code >= 19
        doc: The recorded first entry ID (type >= 19).
      - id: max_deleted_entry_id
        type: stream_id
        if: type_code >= 19
        doc: The largest ID ever deleted (type >= 19).
      - id: entries_added
        type: rdb_string::rdb_len
        if: type_code >= 19
        doc: Number of entries ever added (type >= 19).
      - id: num_groups
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: groups.size}
        doc: Number of consumer groups.
      - id: groups
        type: stream_group(type_code)
        repeat: expr
        repeat-expr: num_groups.value
        doc: The consumer groups, in name order.
      - id: idmp
        type: stream_idmp
        if: type_code >= 26
        doc: The IDMP (idempotent producer) tail of STREAM_LISTPACKS_4 (type >= 26; type 27 keeps it).
  stream_node:
    doc: |
      One radix-tree node: the 16-byte master ID key (an RDB string of exactly 16 bytes)
      and the node listpack blob (possibly LZF-compressed).
    doc-ref: redis src/rdb.c rdbSaveObject
    seq:
      - id: node_key_len
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: node_key._sizeof}
        valid:
          expr: not _.is_encoded and _.value == 16
        -rdbspec-message: 'expected a 16-byte stream ID as the node key, found {_.is_encoded ? "encoding" : "length":s} {_.value}'
        doc: Length of the node key string; must be 16 ("Stream node key entry is not the size of a stream ID").
      - id: node_key
        size: 16
        type: stream_id_raw
        doc: The master ID of the node (big-endian ms and seq).
      - id: listpack
        -rdbspec-lazy: true
        type: rdb_string::rdb_blob(rdb_string::blob_kind::stream_listpack)
        doc: The node listpack.
  stream_id:
    doc: A stream ID stored as two RDB lengths (metadata IDs).
    doc-ref: redis src/rdb.c rdbSaveObject
    seq:
      - id: ms
        type: rdb_string::rdb_len
        doc: Milliseconds part.
      - id: seq
        type: rdb_string::rdb_len
        doc: Sequence part.
  stream_id_raw:
    doc: A stream ID stored as 16 raw bytes, big-endian ms then big-endian seq (node keys and PEL IDs).
    doc-ref: redis src/t_stream.c streamEncodeID
    seq:
      - id: ms
        type: u8be
        doc: Milliseconds part.
      - id: seq
        type: u8be
        doc: Sequence part.
  stream_group:
    doc: A consumer group (notes §6.1), and its NACK zone from type 27.
    doc-ref: redis src/rdb.c rdbSaveObject
    params:
      - id: type_code
        type: u1
        doc: The RDB type byte of the stream.
    seq:
      - id: name
        type: rdb_string
        doc: Group name.
      - id: last_id
        type: stream_id
        doc: The group's last delivered ID.
      - id: entries_read
        type: rdb_string::rdb_len
        if: type_code >= 19
        doc: Logical read counter (type >= 19); 2^64-1 means invalid (SCG_INVALID_ENTRIES_READ saved as uint64).
      - id: pel_size
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: pel.size}
        doc: Number of entries in the group's global PEL.
      - id: pel
        type: stream_pel_entry
        repeat: expr
        repeat-expr: pel_size.value
        -rdbspec-lazy: true
        -rdbspec-chunks: true
        doc: The global pending entries list.
      - id: num_consumers
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: consumers.size}
        doc: Number of consumers.
      - id: consumers
        type: stream_consumer(type_code)
        repeat: expr
        repeat-expr: num_consumers.value
        doc: The consumers, in name order.
      - id: num_nacked
        type: rdb_string::rdb_len
        if: type_code >= 27
        -rdbspec-write: {is_encoded: false, value: nacked.size}
        doc: |
          Number of IDs in the group's NACK zone (type >= 27, Redis 8.8 XNACK): entries released
          back to the group, pending for no consumer (pelListNackedCount; 0 is written as one byte).
      - id: nacked
        type: stream_id_raw
        repeat: expr
        repeat-expr: num_nacked.value
        if: type_code >= 27
        -rdbspec-lazy: true
        -rdbspec-chunks: true
        doc: |
          The NACK zone: bare IDs (no delivery data), in the order of the group's time-ordered PEL
          list, not ID order. Each must be in the group PEL and owned by no consumer
          (rdbLoadObject "Stream NACK zone entry not found in group global PEL", "... has a
          consumer assigned").
  stream_pel_entry:
    doc: One row of a group's global PEL (no per-record length).
    doc-ref: redis src/rdb.c rdbSaveStreamPEL
    seq:
      - id: id
        type: stream_id_raw
        doc: The pending entry ID (16 raw big-endian bytes).
      - id: delivery_time
        type: s8
        doc: Last delivery time, unix ms (little-endian).
      - id: delivery_count
        type: rdb_string::rdb_len
        doc: Number of deliveries.
  stream_consumer:
    doc: A consumer of a group, with its own PEL of bare IDs.
    doc-ref: redis src/rdb.c rdbSaveStreamConsumers
    params:
      - id: type_code
        type: u1
        doc: The RDB type byte of the stream.
    seq:
      - id: name
        type: rdb_string
        doc: Consumer name.
      - id: seen_time
        type: s8
        doc: Last seen time, unix ms (little-endian).
      - id: active_time
        type: s8
        if: type_code >= 21
        doc: Last active time, unix ms (type >= 21).
      - id: pel_size
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: pel.size}
        doc: Number of entries in the consumer PEL.
      - id: pel
        type: stream_id_raw
        repeat: expr
        repeat-expr: pel_size.value
        -rdbspec-lazy: true
        -rdbspec-chunks: true
        doc: The consumer PEL; IDs only (each must be in the group's global PEL).
  stream_idmp:
    doc: IDMP tail of a type-26 stream (Redis 8.6).
    doc-ref: redis src/rdb.c rdbLoadStreamIdmpEntries
    seq:
      - id: duration
        type: rdb_string::rdb_len
        doc: IDMP duration in seconds (loader requires 1..86400).
      - id: max_entries
        type: rdb_string::rdb_len
        doc: Maximum IDMP entries per producer (loader requires 1..10000).
      - id: num_producers
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: producers.size}
        doc: Number of producers.
      - id: producers
        type: stream_idmp_producer
        repeat: expr
        repeat-expr: num_producers.value
        doc: The producers, in insertion order.
      - id: iids_added
        type: rdb_string::rdb_len
        doc: Number of idempotency IDs ever added.
      - id: iids_duplicates
        type: rdb_string::rdb_len
        doc: Number of duplicates detected.
  stream_idmp_producer:
    doc: One IDMP producer with its idempotency IDs.
    doc-ref: redis src/rdb.c rdbLoadStreamIdmpEntries
    seq:
      - id: pid
        type: rdb_string
        doc: Producer ID.
      - id: count
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: iids.size}
        doc: Number of idempotency IDs.
      - id: iids
        type: stream_idmp_iid
        repeat: expr
        repeat-expr: count.value
        doc: The idempotency IDs.
  stream_idmp_iid:
    doc: One idempotency ID and the stream ID it produced.
    doc-ref: redis src/rdb.c rdbLoadStreamIdmpEntries
    seq:
      - id: iid
        type: rdb_string
        doc: The idempotency ID.
      - id: id
        type: stream_id
        doc: The stream entry ID it was mapped to.
  stream_listpack:
    doc: |
      A stream node listpack (notes §6.2): the listpack header, the master entry, count+deleted
      entries, and the EOF byte. All elements are ordinary listpack entries.
    doc-ref: redis src/t_stream.c streamAppendItem
    seq:
      - id: total_bytes
        type: u4
        -rdbspec-write: 6 + master._sizeof + entries._sizeof + 1
        valid:
          expr: _ >= 7 and _ == _io.size
        -rdbspec-message: 'expected the blob size {_io.size} (at least 7), found {_}'
        doc: Total size of the listpack; must equal the blob size.
      - id: num_elements
        type: u2
        -rdbspec-write: '_scalars < 65535 ? _scalars : 65535'
        doc: Number of listpack elements (65535 = unknown); not cross-checked by Redis.
      - id: master
        type: stream_master
        doc: The master entry.
      - id: entries
        type: stream_entry
        repeat: expr
        repeat-expr: master.count.int_value + master.deleted.int_value
        -rdbspec-columns: true
        doc: The entries of the node, live and deleted (count + deleted of them).
      - id: terminator
        type: u1
        -rdbspec-write: 0xff
        valid:
          expr: _ == 0xff and _io.eof
        -rdbspec-message: 'expected the end byte 0xff closing the listpack, found {_:#04x}{_io.eof ? "" : " followed by more bytes":s}'
        doc: LP_EOF; nothing may follow it.
  stream_master:
    doc: The master entry of a node listpack.
    doc-ref: redis src/t_stream.c streamAppendItem
    seq:
      - id: count
        type: listpack::lp_entry
        valid:
          expr: _.is_int and _.int_value >= 0
        -rdbspec-message: 'expected the live entry count of the node (an integer >= 0), found {_}'
        doc: Live entries in this node.
      - id: deleted
        type: listpack::lp_entry
        valid:
          expr: _.is_int and _.int_value >= 0
        -rdbspec-message: 'expected the deleted entry count of the node (an integer >= 0), found {_}'
        doc: Entries flagged deleted in this node.
      - id: num_fields
        type: listpack::lp_entry
        -rdbspec-write: fields.size
        valid:
          expr: _.is_int and _.int_value >= 0
        -rdbspec-message: 'expected the number of master fields (an integer >= 0), found {_}'
        doc: Number of master fields.
      - id: fields
        type: listpack::lp_entry
        repeat: expr
        repeat-expr: num_fields.int_value
        doc: The master field names.
      - id: terminator
        type: listpack::lp_entry
        -rdbspec-write: 0
        valid:
          expr: _.is_int and _.int_value == 0
        -rdbspec-message: 'expected 0 closing the master entry, found {_}'
        -rdbspec-warn: redis src/t_stream.c streamValidateListpackIntegrity (checked only with sanitize-dump-payload yes)
        doc: Master terminator (lp-count of the master entry), always 0.
  stream_entry:
    doc: |
      One stream entry of a node listpack. `items` is the flat list of values (SAMEFIELDS: one
      value per master field) or fields and values interleaved (otherwise).
      ID = master ID + (ms_diff, seq_diff) with wrapping uint64 arithmetic.
    doc-ref: redis src/t_stream.c streamAppendItem
    seq:
      - id: flags
        type: listpack::lp_entry
        valid:
          expr: _.is_int
        -rdbspec-message: 'expected the entry flags (an integer), found {_}'
        doc: Entry flags; bit 0 DELETED, bit 1 SAMEFIELDS.
      - id: ms_diff
        type: listpack::lp_entry
        valid:
          expr: _.is_int
        -rdbspec-message: 'expected the ms part of the entry ID, relative to the master ID (an integer), found {_}'
        doc: id.ms - master.ms (uint64 difference stored as int64).
      - id: seq_diff
        type: listpack::lp_entry
        valid:
          expr: _.is_int
        -rdbspec-message: 'expected the seq part of the entry ID, relative to the master ID (an integer), found {_}'
        doc: id.seq - master.seq (uint64 difference stored as int64, can be negative).
      - id: num_fields
        type: listpack::lp_entry
        -rdbspec-write: items.size / 2
        valid:
          expr: _.is_int and _.int_value >= 0
        -rdbspec-message: 'expected the number of fields of the entry (an integer >= 0), found {_}'
        if: (flags.int_value & entry_flag::samefields.to_i) == 0
        doc: Number of field/value pairs (only when SAMEFIELDS is clear).
      - id: items
        type: listpack::lp_entry
        repeat: expr
        repeat-expr: >-
          (flags.int_value & entry_flag::samefields.to_i) != 0 ? _parent.master.num_fields.int_value : 2 * num_fields.int_value
        doc: "With SAMEFIELDS, the values of the master fields; otherwise field, value, field, value, ..."
      - id: lp_count
        type: listpack::lp_entry
        -rdbspec-write: >-
          (flags.int_value & entry_flag::samefields.to_i) != 0 ? _parent.master.num_fields.int_value + 3 : 2 * num_fields.int_value + 4
        valid:
          expr: >-
            _.is_int and
            _.int_value == ((flags.int_value & entry_flag::samefields.to_i) != 0 ? _parent.master.num_fields.int_value + 3 : 2 * num_fields.int_value + 4)
        -rdbspec-message: 'expected the element count of the entry (its fields + 3 with SAMEFIELDS, else 2 * fields + 4), found {_}'
        -rdbspec-warn: redis src/t_stream.c streamValidateListpackIntegrity (checked only with sanitize-dump-payload yes)
        doc: Number of elements of this entry before lp_count (SAMEFIELDS fields+3, otherwise 2*fields+4).
    instances:
      is_deleted:
        value: (flags.int_value & entry_flag::deleted.to_i) != 0
        doc: True when the entry is deleted (a tombstone).
      is_samefields:
        value: (flags.int_value & entry_flag::samefields.to_i) != 0
        doc: True when the entry uses the master fields.
