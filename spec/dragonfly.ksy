meta:
  id: dragonfly
  title: Dragonfly value types (30-37) and opcodes
  endian: le
  imports:
    - rdb_string
doc: |
  Dragonfly extensions (notes §4.3, §2.2, §9). The root type is empty. Compressed blobs
  (0xC9/0xCA) and tagged chunks (0xE0) are exposed as raw envelopes; decompression and
  chunk reassembly belong to application code.
doc-ref: dragonfly src/server/rdb_save.cc RdbSerializer::SaveEntry
types:
  df_hash_with_expiry:
    doc: |
      HASH_WITH_EXPIRY (type 31) - `len n`, then n × (field, value, ttl string); the ttl string
      holds seconds since 2023-02-01 00:00:00 UTC (1675209600), or -1 for none.
    doc-ref: dragonfly src/server/rdb_load.cc RdbLoaderBase::ReadObj
    seq:
      - id: num_fields
        type: rdb_string::rdb_len
        doc: Number of fields.
      - id: entries
        type: df_hash_entry
        repeat: expr
        repeat-expr: num_fields.value
        -rdbspec-lazy: true
        -rdbspec-chunks: true
        doc: The fields.
  df_hash_entry:
    doc: One field of a Dragonfly HASH_WITH_EXPIRY.
    doc-ref: dragonfly src/server/rdb_load.cc RdbLoaderBase::ReadObj
    seq:
      - id: field
        type: rdb_string
        doc: Field name.
      - id: value
        type: rdb_string
        doc: Field value.
      - id: ttl
        type: rdb_string
        doc: Decimal seconds since 2023-02-01 UTC (usually int-encoded), or -1.
  df_set_with_expiry:
    doc: SET_WITH_EXPIRY (type 32) - `len n`, then n × (member, ttl string) as in type 31.
    doc-ref: dragonfly src/server/rdb_load.cc RdbLoaderBase::ReadObj
    seq:
      - id: num_members
        type: rdb_string::rdb_len
        doc: Number of members.
      - id: entries
        type: df_set_entry
        repeat: expr
        repeat-expr: num_members.value
        -rdbspec-lazy: true
        -rdbspec-chunks: true
        doc: The members.
  df_set_entry:
    doc: One member of a Dragonfly SET_WITH_EXPIRY.
    doc-ref: dragonfly src/server/rdb_load.cc RdbLoaderBase::ReadObj
    seq:
      - id: member
        type: rdb_string
        doc: The member.
      - id: ttl
        type: rdb_string
        doc: Decimal seconds since 2023-02-01 UTC, or -1.
  df_sbf:
    doc: |
      SBF (type 33, scalable bloom filter) - options, grow factor, fp probability, sizes,
      then per filter `len hash_cnt` and the filter bits as one string (SaveString).
    doc-ref: dragonfly src/server/rdb_save.cc RdbSerializer::SaveSBFObject
    seq:
      - id: options
        type: rdb_string::rdb_len
        doc: Options, always 0.
      - id: grow_factor
        type: f8
        doc: Growth factor.
      - id: fp_prob
        type: f8
        doc: False-positive probability.
      - id: prev_size
        type: rdb_string::rdb_len
        doc: Previous size.
      - id: current_size
        type: rdb_string::rdb_len
        doc: Current size.
      - id: max_capacity
        type: rdb_string::rdb_len
        doc: Maximum capacity.
      - id: num_filters
        type: rdb_string::rdb_len
        doc: Number of filters.
      - id: filters
        type: df_sbf_filter
        repeat: expr
        repeat-expr: num_filters.value
        doc: The filters.
  df_sbf_filter:
    doc: One bloom filter of a type-33 SBF.
    doc-ref: dragonfly src/server/rdb_save.cc RdbSerializer::SaveSBFObject
    seq:
      - id: hash_cnt
        type: rdb_string::rdb_len
        doc: Number of hash functions.
      - id: blob
        type: rdb_string
        doc: The filter bits (an RDB string, so possibly LZF- or integer-encoded).
  df_sbf2:
    doc: SBF2 (type 34) - the SBF header, then per filter `len hash_cnt`, `len total_size` and SaveString chunks.
    doc-ref: dragonfly src/server/rdb_save.cc RdbSerializer::SaveSBFObject
    seq:
      - id: options
        type: rdb_string::rdb_len
        doc: Options, always 0.
      - id: grow_factor
        type: f8
        doc: Growth factor.
      - id: fp_prob
        type: f8
        doc: False-positive probability.
      - id: prev_size
        type: rdb_string::rdb_len
        doc: Previous size.
      - id: current_size
        type: rdb_string::rdb_len
        doc: Current size.
      - id: max_capacity
        type: rdb_string::rdb_len
        doc: Maximum capacity.
      - id: num_filters
        type: rdb_string::rdb_len
        doc: Number of filters.
      - id: filters
        type: df_sbf2_filter
        repeat: expr
        repeat-expr: num_filters.value
        doc: The filters.
  df_sbf2_filter:
    doc: One chunked bloom filter of a type-34 SBF2.
    doc-ref: dragonfly src/server/rdb_save.cc RdbSerializer::SaveSBFObject
    seq:
      - id: hash_cnt
        type: rdb_string::rdb_len
        doc: Number of hash functions.
      - id: total_size
        type: rdb_string::rdb_len
        doc: Total size of the filter bits.
      - id: chunks
        type: df_chunk_list(total_size.value)
        if: total_size.value > 0
        doc: The filter bits, in chunks.
  df_chunk_list:
    doc: |
      A run of chunks that together hold `total` bytes (SBF2 filters from SaveSBFObject, cuckoo
      tables from SaveCuckooFilterObject), read one after the other until none remain: each
      chunk is told the bytes still to be read by the one before it (a loop, not a chain of
      nested lists, so a filter of many chunks does not nest as deep).
    doc-ref: dragonfly src/server/rdb_save.cc RdbSerializer::SaveSBFObject
    params:
      - id: total
        type: u8
        doc: Bytes the chunks hold together, once decoded (the size written before them).
    seq:
      - id: chunks
        type: 'df_chunk(_index == 0 ? total : chunks[_index - 1].rest)'
        repeat: until
        repeat-until: _.rest == 0
        doc: The chunks, in order.
  df_chunk:
    doc: |
      One chunk of a `df_chunk_list`. Each chunk is written with SaveString, so it is an RDB
      string: plain, integer-encoded (a chunk of at most 11 bytes that is a canonical decimal
      number) or LZF-compressed (SINGLE_ENTRY compression, chunks over 20 bytes); it counts
      for the bytes it decodes to.
    doc-ref: dragonfly src/server/rdb_save.cc RdbSerializer::SaveSBFObject
    params:
      - id: remaining
        type: u8
        doc: Bytes still to be read, including this chunk.
    seq:
      - id: data
        type: rdb_string
        valid:
          expr: data_len > 0 and data_len <= remaining
        -rdbspec-message: 'expected a chunk of 1 to {remaining} bytes, found {data_len}'
        doc: The chunk, non-empty and at most the bytes remaining once decoded.
    instances:
      data_len:
        value: >-
          data.is_lzf ? data.ulen.value :
          data.is_int ? data.int_value.to_s.length :
          data.len.value
        doc: Size of the chunk once decoded (the LZF output size, or the integer's decimal text length).
      rest:
        value: remaining - data_len
        doc: Bytes still to be read after this chunk (0 after the last one).
  df_cms:
    doc: CMS (type 35, count-min sketch) - width, depth, total count, then width*depth i64 LE counters (WriteRaw, no length).
    doc-ref: dragonfly src/server/rdb_save.cc RdbSerializer::SaveCMSObject
    seq:
      - id: width
        type: rdb_string::rdb_len
        doc: Sketch width.
      - id: depth
        type: rdb_string::rdb_len
        doc: Sketch depth.
      - id: total_count
        type: rdb_string::rdb_len
        doc: Total count.
      - id: counters
        type: s8
        repeat: expr
        repeat-expr: width.value * depth.value
        doc: The counters, row by row.
  df_topk:
    doc: |
      TOPK (type 36) - options, k, width, depth, decay, the heap (items are SaveString strings),
      then `len` of the counter bytes and the raw u32 LE counters (WriteRaw).
    doc-ref: dragonfly src/server/rdb_save.cc RdbSerializer::SaveTOPKObject
    seq:
      - id: options
        type: rdb_string::rdb_len
        doc: Options, always 0.
      - id: k
        type: rdb_string::rdb_len
        doc: Number of top items.
      - id: width
        type: rdb_string::rdb_len
        doc: Sketch width.
      - id: depth
        type: rdb_string::rdb_len
        doc: Sketch depth.
      - id: decay
        type: f8
        doc: Decay factor.
      - id: heap_size
        type: rdb_string::rdb_len
        doc: Number of heap items.
      - id: heap
        type: df_topk_item
        repeat: expr
        repeat-expr: heap_size.value
        doc: The heap items.
      - id: counter_bytes
        type: rdb_string::rdb_len
        valid:
          expr: _.value % 4 == 0
        -rdbspec-message: 'expected a multiple of 4 (u32 counters), found {_.value}'
        doc: Size of the counter array in bytes.
      - id: counters
        type: u4
        repeat: expr
        repeat-expr: counter_bytes.value / 4
        doc: The counters.
  df_topk_item:
    doc: One heap item of a TOPK.
    doc-ref: dragonfly src/server/rdb_save.cc RdbSerializer::SaveTOPKObject
    seq:
      - id: item
        type: rdb_string
        doc: The item.
      - id: count
        type: rdb_string::rdb_len
        doc: Its count.
  df_cuckoo:
    doc: CUCKOO (type 37) - filter parameters, then per filter `len size` and SaveString chunks.
    doc-ref: dragonfly src/server/rdb_save.cc RdbSerializer::SaveCuckooFilterObject
    seq:
      - id: slots_per_bucket
        type: rdb_string::rdb_len
        doc: Slots per bucket.
      - id: max_iter
        type: rdb_string::rdb_len
        doc: Maximum kick iterations.
      - id: expansion
        type: rdb_string::rdb_len
        doc: Expansion factor.
      - id: num_buckets
        type: rdb_string::rdb_len
        doc: Number of buckets.
      - id: num_items
        type: rdb_string::rdb_len
        doc: Number of items.
      - id: num_deletes
        type: rdb_string::rdb_len
        doc: Number of deletes.
      - id: num_filters
        type: rdb_string::rdb_len
        doc: Number of filters.
      - id: filters
        type: df_cuckoo_filter
        repeat: expr
        repeat-expr: num_filters.value
        doc: The filters.
  df_cuckoo_filter:
    doc: One cuckoo filter's table, in chunks.
    doc-ref: dragonfly src/server/rdb_save.cc RdbSerializer::SaveCuckooFilterObject
    seq:
      - id: size
        type: rdb_string::rdb_len
        doc: Size of the table in bytes.
      - id: chunks
        type: df_chunk_list(size.value)
        if: size.value > 0
        doc: The table bytes, in chunks.
  df_mask:
    doc: DF_MASK opcode (220) payload - u32 LE flags (bit0 STICKY, bit1 MC_FLAGS), then the memcached flags if bit1 is set.
    doc-ref: dragonfly src/server/rdb_save.cc RdbSerializer::SaveEntry
    seq:
      - id: flags
        type: u4
        doc: Bit 0 STICKY, bit 1 MC_FLAGS.
      - id: mc_flags
        type: u4
        if: (flags & 2) != 0
        doc: Memcached flags.
  journal_offset:
    doc: JOURNAL_OFFSET opcode (211) payload.
    doc-ref: dragonfly src/server/rdb_save.cc RdbSaver::SendJournalOffset
    seq:
      - id: offset
        type: u8
        doc: Journal offset (u64 LE).
  journal_blob:
    doc: JOURNAL_BLOB opcode (210, replication only) payload.
    doc-ref: dragonfly src/server/rdb_load.cc RdbLoader::HandleJournalBlob
    seq:
      - id: num_entries
        type: rdb_string::rdb_len
        doc: Number of journal entries.
      - id: journal
        type: rdb_string
        doc: The serialized journal entries (notes §9.5).
  fullsync_end:
    doc: FULLSYNC_END opcode (200) payload - 8 zero bytes.
    doc-ref: dragonfly src/server/rdb_save.cc RdbSaver::SendFullSyncCut
    seq:
      - id: padding
        size: 8
        doc: Eight zero bytes.
  shard_doc_index:
    doc: SHARD_DOC_INDEX opcode (223) payload - shard id, index name, and key → doc id pairs.
    doc-ref: dragonfly src/server/rdb_load.cc RdbLoader::HandleShardDocIndex
    seq:
      - id: shard_id
        type: rdb_string::rdb_len
        doc: Shard id.
      - id: index_name
        type: rdb_string
        doc: Search index name.
      - id: count
        type: rdb_string::rdb_len
        doc: Number of documents.
      - id: docs
        type: shard_doc
        repeat: expr
        repeat-expr: count.value
        doc: The documents.
  shard_doc:
    doc: One key → doc id mapping of SHARD_DOC_INDEX.
    doc-ref: dragonfly src/server/rdb_load.cc RdbLoader::HandleShardDocIndex
    seq:
      - id: key
        type: rdb_string
        doc: The key.
      - id: doc_id
        type: rdb_string::rdb_len
        doc: The document id.
  vector_index:
    doc: VECTOR_INDEX opcode (222) payload - index key, entry point, and HNSW node records (raw LE).
    doc-ref: dragonfly src/server/rdb_save.cc SaveHNSWEntry
    seq:
      - id: index_key
        type: rdb_string
        doc: Index key.
      - id: enterpoint
        type: rdb_string::rdb_len
        doc: HNSW entry point.
      - id: num_nodes
        type: rdb_string::rdb_len
        doc: Number of nodes.
      - id: nodes
        type: hnsw_node
        repeat: expr
        repeat-expr: num_nodes.value
        doc: The nodes.
  hnsw_node:
    doc: One HNSW node record.
    doc-ref: dragonfly src/server/rdb_save.cc SaveHNSWEntry
    seq:
      - id: internal_id
        type: u4
        doc: Internal id.
      - id: global_id
        type: u8
        doc: Global id.
      - id: level
        type: u4
        doc: Top level of the node.
      - id: levels
        type: hnsw_links
        repeat: expr
        repeat-expr: level + 1
        doc: Links for levels 0..level.
  hnsw_links:
    doc: The links of one HNSW level.
    doc-ref: dragonfly src/server/rdb_save.cc SaveHNSWEntry
    seq:
      - id: num_links
        type: u4
        doc: Number of links.
      - id: links
        type: u4
        repeat: expr
        repeat-expr: num_links
        doc: Linked internal ids.
  compressed_blob:
    doc: |
      COMPRESSED_ZSTD_BLOB_START (0xC9) / COMPRESSED_LZ4_BLOB_START (0xCA) payload: `len csize`
      and one zstd or LZ4 frame whose content is a sequence of records. Kept raw.
    doc-ref: dragonfly src/server/rdb_save.cc RdbSerializer::CompressBlob
    seq:
      - id: csize
        type: rdb_string::rdb_len
        doc: Compressed size.
      - id: data
        size: csize.value
        doc: The compressed frame.
  tagged_chunk:
    doc: TAGGED_CHUNK (0xE0) envelope - u32 LE stream id, u32 LE payload length, payload (part of a split entry).
    doc-ref: dragonfly src/server/rdb_save.cc MemBufController::PushTagHeader
    seq:
      - id: stream_id
        type: u4
        valid:
          min: 1
        doc: Chunk stream id (non-zero).
      - id: payload_len
        type: u4
        valid:
          min: 1
        doc: Payload length (non-zero).
      - id: payload
        size: payload_len
        doc: The chunk payload.
