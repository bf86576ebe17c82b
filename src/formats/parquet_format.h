/*
 * parquet_format.h — the constants of the Parquet format (the enums of
 * apache/parquet-format's parquet.thrift) and of the Thrift compact
 * protocol its metadata is written in. Formats layer (private header);
 * shared by the Parquet reader and writer.
 */
#ifndef QUIVER_FORMATS_PARQUET_FORMAT_H
#define QUIVER_FORMATS_PARQUET_FORMAT_H

/* "PAR1": the magic at the start and end of every Parquet file. */
#define QV_PQ_MAGIC "PAR1"
#define QV_PQ_MAGIC_LEN 4

/* parquet.thrift Type: the physical types. */
typedef enum qv_pq_type {
  QV_PQ_BOOLEAN = 0,
  QV_PQ_INT32 = 1,
  QV_PQ_INT64 = 2,
  QV_PQ_INT96 = 3, /* deprecated; timestamps written by Impala/Spark */
  QV_PQ_FLOAT = 4,
  QV_PQ_DOUBLE = 5,
  QV_PQ_BYTE_ARRAY = 6,
  QV_PQ_FIXED_LEN_BYTE_ARRAY = 7
} qv_pq_type;

/* parquet.thrift ConvertedType (the legacy annotations). */
typedef enum qv_pq_converted {
  QV_PQ_CT_UTF8 = 0,
  QV_PQ_CT_MAP = 1,
  QV_PQ_CT_MAP_KEY_VALUE = 2,
  QV_PQ_CT_LIST = 3,
  QV_PQ_CT_ENUM = 4,
  QV_PQ_CT_DECIMAL = 5,
  QV_PQ_CT_DATE = 6,
  QV_PQ_CT_TIME_MILLIS = 7,
  QV_PQ_CT_TIME_MICROS = 8,
  QV_PQ_CT_TIMESTAMP_MILLIS = 9,
  QV_PQ_CT_TIMESTAMP_MICROS = 10,
  QV_PQ_CT_UINT_8 = 11,
  QV_PQ_CT_UINT_16 = 12,
  QV_PQ_CT_UINT_32 = 13,
  QV_PQ_CT_UINT_64 = 14,
  QV_PQ_CT_INT_8 = 15,
  QV_PQ_CT_INT_16 = 16,
  QV_PQ_CT_INT_32 = 17,
  QV_PQ_CT_INT_64 = 18,
  QV_PQ_CT_JSON = 19,
  QV_PQ_CT_BSON = 20,
  QV_PQ_CT_INTERVAL = 21
} qv_pq_converted;

/* parquet.thrift LogicalType: the field id of each member of the union. */
typedef enum qv_pq_logical {
  QV_PQ_LT_NONE = 0, /* no LogicalType in the schema element */
  QV_PQ_LT_STRING = 1,
  QV_PQ_LT_MAP = 2,
  QV_PQ_LT_LIST = 3,
  QV_PQ_LT_ENUM = 4,
  QV_PQ_LT_DECIMAL = 5,
  QV_PQ_LT_DATE = 6,
  QV_PQ_LT_TIME = 7,
  QV_PQ_LT_TIMESTAMP = 8,
  /* 9 is reserved (INTERVAL was planned there) */
  QV_PQ_LT_INTEGER = 10,
  QV_PQ_LT_UNKNOWN = 11, /* "NullType": always-null column */
  QV_PQ_LT_JSON = 12,
  QV_PQ_LT_BSON = 13,
  QV_PQ_LT_UUID = 14,
  QV_PQ_LT_FLOAT16 = 15,
  QV_PQ_LT_VARIANT = 16,
  QV_PQ_LT_GEOMETRY = 17,
  QV_PQ_LT_GEOGRAPHY = 18
} qv_pq_logical;

/* parquet.thrift TimeUnit: field ids of its union. */
typedef enum qv_pq_time_unit {
  QV_PQ_MILLIS = 1,
  QV_PQ_MICROS = 2,
  QV_PQ_NANOS = 3
} qv_pq_time_unit;

/* parquet.thrift FieldRepetitionType. */
typedef enum qv_pq_repetition {
  QV_PQ_REQUIRED = 0,
  QV_PQ_OPTIONAL = 1,
  QV_PQ_REPEATED = 2
} qv_pq_repetition;

/* parquet.thrift Encoding (1, GROUP_VAR_INT, was never used). */
typedef enum qv_pq_encoding {
  QV_PQ_PLAIN = 0,
  QV_PQ_PLAIN_DICTIONARY = 2,
  QV_PQ_RLE = 3,
  QV_PQ_BIT_PACKED = 4, /* deprecated levels encoding */
  QV_PQ_DELTA_BINARY_PACKED = 5,
  QV_PQ_DELTA_LENGTH_BYTE_ARRAY = 6,
  QV_PQ_DELTA_BYTE_ARRAY = 7,
  QV_PQ_RLE_DICTIONARY = 8,
  QV_PQ_BYTE_STREAM_SPLIT = 9
} qv_pq_encoding;

/* parquet.thrift CompressionCodec. */
typedef enum qv_pq_codec {
  QV_PQ_UNCOMPRESSED = 0,
  QV_PQ_SNAPPY = 1,
  QV_PQ_GZIP = 2,
  QV_PQ_LZO = 3, /* not supported: no codec library here */
  QV_PQ_BROTLI = 4,
  QV_PQ_LZ4 = 5, /* deprecated: Hadoop framing, or raw in old files */
  QV_PQ_ZSTD = 6,
  QV_PQ_LZ4_RAW = 7
} qv_pq_codec;

/* parquet.thrift PageType. */
typedef enum qv_pq_page_type {
  QV_PQ_DATA_PAGE = 0,
  QV_PQ_INDEX_PAGE = 1,
  QV_PQ_DICTIONARY_PAGE = 2,
  QV_PQ_DATA_PAGE_V2 = 3
} qv_pq_page_type;

/* Thrift compact protocol: the 4-bit type of a field header or a
 * list/set/map element. */
typedef enum qv_thrift_ctype {
  QV_TC_STOP = 0,
  QV_TC_BOOL_TRUE = 1,
  QV_TC_BOOL_FALSE = 2,
  QV_TC_BYTE = 3,
  QV_TC_I16 = 4,
  QV_TC_I32 = 5,
  QV_TC_I64 = 6,
  QV_TC_DOUBLE = 7,
  QV_TC_BINARY = 8,
  QV_TC_LIST = 9,
  QV_TC_SET = 10,
  QV_TC_MAP = 11,
  QV_TC_STRUCT = 12,
  QV_TC_UUID = 13
} qv_thrift_ctype;

#endif /* QUIVER_FORMATS_PARQUET_FORMAT_H */
