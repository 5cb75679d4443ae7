meta:
  id: zipmap
  title: Redis zipmap (type 9, Redis <= 2.4)
  endian: le
doc: |
  A zipmap (notes §5.4): u8 zmlen (entry count, 254 = unknown), then entries
  { len field_len, field, len value_len, u8 free, value, free bytes of padding }, then 0xFF.
  A zipmap length is 1 byte if < 254, or 254 followed by a u32 LE; 255 marks the end.
  The list `entries` ends with the end-marker entry (whose `field_len.is_end` is true).
doc-ref: redis src/zipmap.c zipmapValidateIntegrity
seq:
  - id: zmlen
    type: u1
    doc: Number of entries, or 254 when unknown.
  - id: entries
    type: zm_entry
    repeat: until
    repeat-until: _.field_len.is_end
    doc: The field/value pairs, followed by one end-marker entry.
types:
  zm_len:
    doc: Zipmap length field.
    doc-ref: redis src/zipmap.c zipmapValidateIntegrity
    seq:
      - id: b0
        type: u1
        doc: The length if < 254; 254 means a u32 LE follows; 255 is the end marker.
      - id: len32
        type: u4
        if: b0 == 254
        doc: A 32-bit little-endian length.
    instances:
      is_end:
        value: b0 == 255
        doc: True for the 0xFF end marker.
      value:
        value: 'b0 == 254 ? len32 : b0'
        doc: The decoded length.
  zm_entry:
    doc: One zipmap field/value pair, or the end marker.
    doc-ref: redis src/zipmap.c zipmapValidateIntegrity
    seq:
      - id: field_len
        type: zm_len
        doc: Length of the field, or the end marker.
      - id: field
        size: field_len.value
        if: not field_len.is_end
        doc: The field bytes.
      - id: value_len
        type: zm_len
        valid:
          expr: not _.is_end
        -rdbspec-message: 'expected the length of the value, found the end marker 0xff'
        if: not field_len.is_end
        doc: Length of the value.
      - id: free
        type: u1
        if: not field_len.is_end
        doc: Number of unused bytes after the value.
      - id: value
        size: value_len.value
        if: not field_len.is_end
        doc: The value bytes.
      - id: padding
        size: free
        if: not field_len.is_end
        doc: Unused bytes left after the value by an in-place update.
