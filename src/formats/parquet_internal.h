/*
 * parquet_internal.h — the decoded Parquet metadata (parquet.thrift's
 * FileMetaData, SchemaElement, RowGroup, ColumnChunk, ColumnMetaData,
 * Statistics, KeyValue, PageHeader) and the pieces of the reader shared
 * between its files: the footer and page-header decoders
 * (parquet_read_meta.c), page decompression and the value/level decoders
 * (parquet_read_page.c), the schema mapping (parquet_read_schema.c).
 * Formats layer (private header).
 *
 * Byte ranges (names, statistics) point into the file's bytes: they live
 * as long as the buffer the metadata was decoded from.
 */
#ifndef QUIVER_FORMATS_PARQUET_INTERNAL_H
#define QUIVER_FORMATS_PARQUET_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "formats/parquet_format.h"
#include "formats/thrift_internal.h"
#include "quiver/core.h"
#include "quiver/type.h"

/** A byte range into the file (NULL when absent). */
typedef struct qv_pq_bytes {
  const uint8_t *data;
  int32_t len;
} qv_pq_bytes;

typedef struct qv_pq_stats {
  qv_pq_bytes min, max;   /* min_value/max_value, else the legacy min/max */
  int64_t null_count;     /* -1 when absent */
  int64_t distinct_count; /* -1 when absent */
  bool present;
} qv_pq_stats;

typedef struct qv_pq_column_meta {
  int32_t type; /* qv_pq_type */
  int32_t n_encodings;
  int32_t *encodings; /* owned */
  char *path;         /* owned, dotted path_in_schema */
  int32_t codec;
  int64_t num_values;
  int64_t total_uncompressed_size;
  int64_t total_compressed_size;
  int64_t data_page_offset;
  int64_t index_page_offset;      /* -1 when absent */
  int64_t dictionary_page_offset; /* -1 when absent */
  qv_pq_stats stats;
} qv_pq_column_meta;

typedef struct qv_pq_column_chunk {
  bool has_file_path; /* data in another file: not supported */
  int64_t file_offset;
  bool has_meta;
  bool encrypted; /* crypto_metadata or encrypted_column_metadata present */
  qv_pq_column_meta meta;
} qv_pq_column_chunk;

typedef struct qv_pq_row_group {
  int32_t n_columns;
  qv_pq_column_chunk *columns; /* owned */
  int64_t total_byte_size;
  int64_t num_rows;
  int64_t file_offset;           /* -1 when absent */
  int64_t total_compressed_size; /* -1 when absent */
} qv_pq_row_group;

typedef struct qv_pq_schema_element {
  int32_t type;        /* qv_pq_type, -1 for a group */
  int32_t type_length; /* FIXED_LEN_BYTE_ARRAY width, -1 when absent */
  int32_t repetition;  /* qv_pq_repetition, -1 when absent (the root) */
  char *name;          /* owned */
  int32_t num_children;
  int32_t converted; /* qv_pq_converted, -1 when absent */
  int32_t scale, precision;
  int32_t field_id; /* -1 when absent */
  /* LogicalType */
  int32_t logical; /* qv_pq_logical, QV_PQ_LT_NONE when absent */
  int32_t lt_scale, lt_precision;
  bool lt_utc;
  int32_t lt_unit; /* qv_pq_time_unit */
  int32_t lt_bit_width;
  bool lt_signed;
} qv_pq_schema_element;

typedef struct qv_pq_file_meta {
  int32_t version;
  int32_t n_schema;
  qv_pq_schema_element *schema; /* owned; [0] is the root */
  int64_t num_rows;
  int32_t n_row_groups;
  qv_pq_row_group *row_groups; /* owned */
  qv_metadata kv;              /* key_value_metadata */
  char *created_by;            /* owned, may be NULL */
  bool encrypted;              /* encryption_algorithm present (plaintext footer) */
} qv_pq_file_meta;

typedef struct qv_pq_page_header {
  int32_t type; /* qv_pq_page_type */
  int32_t uncompressed_size;
  int32_t compressed_size;
  bool has_crc;
  uint32_t crc;
  /* DATA_PAGE, DICTIONARY_PAGE and DATA_PAGE_V2 */
  int32_t num_values;
  int32_t encoding;
  /* DATA_PAGE */
  int32_t def_encoding, rep_encoding;
  /* DICTIONARY_PAGE */
  bool is_sorted;
  /* DATA_PAGE_V2 */
  int32_t num_nulls, num_rows;
  int32_t def_len, rep_len;
  bool is_compressed;
  bool has_v1, has_v2, has_dict; /* which sub-header was present */
} qv_pq_page_header;

/** Decode a FileMetaData of `len` bytes. On failure *out is reset. */
qv_status qv_pq_decode_file_meta(const uint8_t *data, int64_t len, qv_pq_file_meta *out,
                                 qv_error *err);
void qv_pq_file_meta_reset(qv_pq_file_meta *m);

/** Decode a PageHeader at the start of [data, data+len); *header_len gets
 *  its size in bytes. */
qv_status qv_pq_decode_page_header(const uint8_t *data, int64_t len, qv_pq_page_header *out,
                                   int64_t *header_len, qv_error *err);

/** Names for messages and `info`. */
const char *qv_pq_type_name(int32_t t);
const char *qv_pq_encoding_name(int32_t e);
const char *qv_pq_codec_name(int32_t c);

/* ------------------------------------------------------------------------ */
/* Pages (parquet_read_page.c)                                               */

/** Decompress `src` (codec qv_pq_codec) into exactly `dst_len` bytes. */
qv_status qv_pq_decompress(int32_t codec, const uint8_t *src, int64_t src_len, uint8_t *dst,
                           int64_t dst_len, qv_error *err);

/** RLE/bit-packed hybrid decoder (Encodings.md "RLE"). */
typedef struct qv_pq_rle {
  const uint8_t *p, *end;
  int bit_width;
  int64_t rle_left;   /* values left in the current RLE run */
  uint64_t rle_value; /* its value */
  int64_t bp_left;    /* values left in the current bit-packed run */
  const uint8_t *bp;  /* its bytes */
  int64_t bp_pos;     /* index of the next bit-packed value in the run */
} qv_pq_rle;

void qv_pq_rle_init(qv_pq_rle *r, const uint8_t *data, int64_t len, int bit_width);
/** Decode n values into out (uint32); QV_EINVAL when the data runs out. */
qv_status qv_pq_rle_get(qv_pq_rle *r, uint32_t *out, int64_t n, qv_error *err);

/** Decode n levels (bit width <= 16) into out, each checked <= max
 *  (QV_EINVAL naming the first above it). */
qv_status qv_pq_rle_get_levels(qv_pq_rle *r, int16_t *out, int64_t n, int16_t max, qv_error *err);

/** The deprecated BIT_PACKED level encoding of v1 pages: n levels of
 *  bit_width(max) bits, most significant bit first, no length prefix;
 *  each checked <= max. *used gets the bytes taken (ceil(n*width/8)). */
qv_status qv_pq_bit_packed_levels(const uint8_t *p, int64_t len, int64_t n, int16_t max,
                                  int16_t *out, int64_t *used, qv_error *err);

/** DELTA_BINARY_PACKED decoder: n values of 32 (width 4) or 64 bits into
 *  out (int32 or int64 little-endian); *used gets the bytes consumed
 *  (through the end of the last miniblock holding a value). When n < 0,
 *  the count comes from the header (*n_out). */
qv_status qv_pq_delta_decode(const uint8_t *data, int64_t len, int width, int64_t max_values,
                             void *out, int64_t *n_out, int64_t *used, qv_error *err);
/** The value count of a DELTA_BINARY_PACKED header (to size outputs). */
qv_status qv_pq_delta_count(const uint8_t *data, int64_t len, int64_t *n, qv_error *err);

/** Bit width needed for values up to max (levels). */
int qv_pq_bit_width(uint64_t max);

#endif /* QUIVER_FORMATS_PARQUET_INTERNAL_H */
