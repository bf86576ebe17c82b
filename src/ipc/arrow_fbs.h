/*
 * arrow_fbs.h — Arrow's flatbuffers schemas (apache/arrow format/Schema.fbs,
 * Message.fbs, File.fbs) as field slots, enum values and verifier
 * descriptors. Shared by the decoder (metadata.c) and the encoder
 * (metadata_encode.c). A slot is the field's declaration index in its
 * table; a union occupies two slots (tag, then value).
 */
#ifndef QUIVER_IPC_ARROW_FBS_H
#define QUIVER_IPC_ARROW_FBS_H

#include "ipc/flatbuf.h"

/* Schema.fbs ------------------------------------------------------------- */

/* union Type: tag values. */
enum {
  QV_FBS_TYPE_NONE = 0,
  QV_FBS_TYPE_NULL,
  QV_FBS_TYPE_INT,
  QV_FBS_TYPE_FLOATING_POINT,
  QV_FBS_TYPE_BINARY,
  QV_FBS_TYPE_UTF8,
  QV_FBS_TYPE_BOOL,
  QV_FBS_TYPE_DECIMAL,
  QV_FBS_TYPE_DATE,
  QV_FBS_TYPE_TIME,
  QV_FBS_TYPE_TIMESTAMP,
  QV_FBS_TYPE_INTERVAL,
  QV_FBS_TYPE_LIST,
  QV_FBS_TYPE_STRUCT,
  QV_FBS_TYPE_UNION,
  QV_FBS_TYPE_FIXED_SIZE_BINARY,
  QV_FBS_TYPE_FIXED_SIZE_LIST,
  QV_FBS_TYPE_MAP,
  QV_FBS_TYPE_DURATION,
  QV_FBS_TYPE_LARGE_BINARY,
  QV_FBS_TYPE_LARGE_UTF8,
  QV_FBS_TYPE_LARGE_LIST,
  QV_FBS_TYPE_RUN_END_ENCODED,
  QV_FBS_TYPE_BINARY_VIEW,
  QV_FBS_TYPE_UTF8_VIEW,
  QV_FBS_TYPE_LIST_VIEW,
  QV_FBS_TYPE_LARGE_LIST_VIEW,
  QV_FBS_TYPE_COUNT /* one past the last known tag */
};

/* Enums. */
enum { QV_FBS_PRECISION_HALF = 0, QV_FBS_PRECISION_SINGLE, QV_FBS_PRECISION_DOUBLE };
enum { QV_FBS_DATE_DAY = 0, QV_FBS_DATE_MILLISECOND };
enum {
  QV_FBS_TIME_SECOND = 0,
  QV_FBS_TIME_MILLISECOND,
  QV_FBS_TIME_MICROSECOND,
  QV_FBS_TIME_NANOSECOND
};
enum { QV_FBS_INTERVAL_YEAR_MONTH = 0, QV_FBS_INTERVAL_DAY_TIME, QV_FBS_INTERVAL_MONTH_DAY_NANO };
enum { QV_FBS_UNION_SPARSE = 0, QV_FBS_UNION_DENSE };
enum { QV_FBS_ENDIAN_LITTLE = 0, QV_FBS_ENDIAN_BIG };
enum { QV_FBS_DICTIONARY_KIND_DENSE_ARRAY = 0 };

/* Table field slots. */
enum { QV_FBS_INT_BIT_WIDTH = 0, QV_FBS_INT_IS_SIGNED };
enum { QV_FBS_FLOATING_POINT_PRECISION = 0 };
enum { QV_FBS_DECIMAL_PRECISION = 0, QV_FBS_DECIMAL_SCALE, QV_FBS_DECIMAL_BIT_WIDTH };
enum { QV_FBS_DATE_UNIT = 0 };
enum { QV_FBS_TIME_UNIT = 0, QV_FBS_TIME_BIT_WIDTH };
enum { QV_FBS_TIMESTAMP_UNIT = 0, QV_FBS_TIMESTAMP_TIMEZONE };
enum { QV_FBS_INTERVAL_UNIT = 0 };
enum { QV_FBS_DURATION_UNIT = 0 };
enum { QV_FBS_FIXED_SIZE_BINARY_BYTE_WIDTH = 0 };
enum { QV_FBS_FIXED_SIZE_LIST_LIST_SIZE = 0 };
enum { QV_FBS_MAP_KEYS_SORTED = 0 };
enum { QV_FBS_UNION_MODE = 0, QV_FBS_UNION_TYPE_IDS };
enum { QV_FBS_KEY_VALUE_KEY = 0, QV_FBS_KEY_VALUE_VALUE };
enum {
  QV_FBS_DICT_ENCODING_ID = 0,
  QV_FBS_DICT_ENCODING_INDEX_TYPE,
  QV_FBS_DICT_ENCODING_IS_ORDERED,
  QV_FBS_DICT_ENCODING_KIND
};
enum {
  QV_FBS_FIELD_NAME = 0,
  QV_FBS_FIELD_NULLABLE,
  QV_FBS_FIELD_TYPE_TYPE,
  QV_FBS_FIELD_TYPE,
  QV_FBS_FIELD_DICTIONARY,
  QV_FBS_FIELD_CHILDREN,
  QV_FBS_FIELD_CUSTOM_METADATA
};
enum {
  QV_FBS_SCHEMA_ENDIANNESS = 0,
  QV_FBS_SCHEMA_FIELDS,
  QV_FBS_SCHEMA_CUSTOM_METADATA,
  QV_FBS_SCHEMA_FEATURES
};

/* Schema defaults that differ from zero. */
#define QV_FBS_DECIMAL_DEFAULT_BIT_WIDTH 128
#define QV_FBS_DATE_DEFAULT_UNIT QV_FBS_DATE_MILLISECOND
#define QV_FBS_TIME_DEFAULT_UNIT QV_FBS_TIME_MILLISECOND
#define QV_FBS_TIME_DEFAULT_BIT_WIDTH 32
#define QV_FBS_DURATION_DEFAULT_UNIT QV_FBS_TIME_MILLISECOND

/* Message.fbs ------------------------------------------------------------ */

/* struct FieldNode { length: long; null_count: long; } */
#define QV_FBS_FIELD_NODE_SIZE 16
/* struct Buffer { offset: long; length: long; } */
#define QV_FBS_BUFFER_SIZE 16

enum { QV_FBS_COMPRESSION_LZ4_FRAME = 0, QV_FBS_COMPRESSION_ZSTD };
enum { QV_FBS_COMPRESSION_METHOD_BUFFER = 0 };

enum { QV_FBS_BODY_COMPRESSION_CODEC = 0, QV_FBS_BODY_COMPRESSION_METHOD };
enum {
  QV_FBS_RECORD_BATCH_LENGTH = 0,
  QV_FBS_RECORD_BATCH_NODES,
  QV_FBS_RECORD_BATCH_BUFFERS,
  QV_FBS_RECORD_BATCH_COMPRESSION,
  QV_FBS_RECORD_BATCH_VARIADIC_COUNTS
};
enum {
  QV_FBS_DICTIONARY_BATCH_ID = 0,
  QV_FBS_DICTIONARY_BATCH_DATA,
  QV_FBS_DICTIONARY_BATCH_IS_DELTA
};
enum {
  QV_FBS_MESSAGE_VERSION = 0,
  QV_FBS_MESSAGE_HEADER_TYPE,
  QV_FBS_MESSAGE_HEADER,
  QV_FBS_MESSAGE_BODY_LENGTH,
  QV_FBS_MESSAGE_CUSTOM_METADATA
};

/* File.fbs --------------------------------------------------------------- */

/* struct Block { offset: long; metaDataLength: int; (4 pad) bodyLength: long; } */
#define QV_FBS_BLOCK_SIZE 24
#define QV_FBS_BLOCK_OFFSET 0
#define QV_FBS_BLOCK_METADATA_LENGTH 8
#define QV_FBS_BLOCK_BODY_LENGTH 16

enum {
  QV_FBS_FOOTER_VERSION = 0,
  QV_FBS_FOOTER_SCHEMA,
  QV_FBS_FOOTER_DICTIONARIES,
  QV_FBS_FOOTER_RECORD_BATCHES,
  QV_FBS_FOOTER_CUSTOM_METADATA
};

/* Verifier descriptors of the two root tables (arrow_fbs.c). */
extern const qv_fb_table_desc qv_fbs_message_desc;
extern const qv_fb_table_desc qv_fbs_footer_desc;
extern const qv_fb_table_desc qv_fbs_schema_desc;

#endif /* QUIVER_IPC_ARROW_FBS_H */
