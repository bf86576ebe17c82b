/*
 * arrow_fbs.c — verifier descriptors for Arrow's flatbuffers tables
 * (Schema.fbs, Message.fbs, File.fbs), ipc layer. Every field that the
 * decoder reads is described here with its kind and size, so
 * qv_fb_verify() proves the buffer safe to read before decoding starts.
 * Tensor and SparseTensor headers are verified only as opaque tables: the
 * decoder rejects them as unsupported without reading their fields.
 */
#include "ipc/arrow_fbs.h"

#include <stddef.h>

#define FB_SCALAR(n, s, sz)                                                                        \
  { n, s, QV_FB_SCALAR, sz, 0, NULL, NULL }
#define FB_STRING(n, s)                                                                            \
  { n, s, QV_FB_STRING, 0, 0, NULL, NULL }
#define FB_TABLE(n, s, t)                                                                          \
  { n, s, QV_FB_TABLE, 0, 0, &t, NULL }
#define FB_VEC_SCALAR(n, s, sz)                                                                    \
  { n, s, QV_FB_VEC_SCALAR, sz, sz, NULL, NULL }
#define FB_VEC_TABLE(n, s, t)                                                                      \
  { n, s, QV_FB_VEC_TABLE, 0, 0, &t, NULL }
#define FB_UNION_TYPE(n, s)                                                                        \
  { n, s, QV_FB_UNION_TYPE, 1, 1, NULL, NULL }
#define FB_UNION(n, s, u)                                                                          \
  { n, s, QV_FB_UNION, 0, 0, NULL, &u }
#define FB_TABLE_DESC(var, name, fields)                                                           \
  static const qv_fb_table_desc var = {name, (int)(sizeof fields / sizeof fields[0]), fields}
#define FB_EMPTY_TABLE(var, name) static const qv_fb_table_desc var = {name, 0, NULL}

/* Schema.fbs: Type union members ---------------------------------------- */

FB_EMPTY_TABLE(fbs_null, "Null");
FB_EMPTY_TABLE(fbs_struct, "Struct_");
FB_EMPTY_TABLE(fbs_list, "List");
FB_EMPTY_TABLE(fbs_large_list, "LargeList");
FB_EMPTY_TABLE(fbs_list_view, "ListView");
FB_EMPTY_TABLE(fbs_large_list_view, "LargeListView");
FB_EMPTY_TABLE(fbs_utf8, "Utf8");
FB_EMPTY_TABLE(fbs_binary, "Binary");
FB_EMPTY_TABLE(fbs_large_utf8, "LargeUtf8");
FB_EMPTY_TABLE(fbs_large_binary, "LargeBinary");
FB_EMPTY_TABLE(fbs_utf8_view, "Utf8View");
FB_EMPTY_TABLE(fbs_binary_view, "BinaryView");
FB_EMPTY_TABLE(fbs_bool, "Bool");
FB_EMPTY_TABLE(fbs_run_end_encoded, "RunEndEncoded");

static const qv_fb_field_desc fbs_fixed_size_list_fields[] = {
    FB_SCALAR("listSize", QV_FBS_FIXED_SIZE_LIST_LIST_SIZE, 4)};
FB_TABLE_DESC(fbs_fixed_size_list, "FixedSizeList", fbs_fixed_size_list_fields);

static const qv_fb_field_desc fbs_map_fields[] = {
    FB_SCALAR("keysSorted", QV_FBS_MAP_KEYS_SORTED, 1)};
FB_TABLE_DESC(fbs_map, "Map", fbs_map_fields);

static const qv_fb_field_desc fbs_union_fields[] = {
    FB_SCALAR("mode", QV_FBS_UNION_MODE, 2), FB_VEC_SCALAR("typeIds", QV_FBS_UNION_TYPE_IDS, 4)};
FB_TABLE_DESC(fbs_union, "Union", fbs_union_fields);

static const qv_fb_field_desc fbs_int_fields[] = {FB_SCALAR("bitWidth", QV_FBS_INT_BIT_WIDTH, 4),
                                                  FB_SCALAR("is_signed", QV_FBS_INT_IS_SIGNED, 1)};
FB_TABLE_DESC(fbs_int, "Int", fbs_int_fields);

static const qv_fb_field_desc fbs_floating_point_fields[] = {
    FB_SCALAR("precision", QV_FBS_FLOATING_POINT_PRECISION, 2)};
FB_TABLE_DESC(fbs_floating_point, "FloatingPoint", fbs_floating_point_fields);

static const qv_fb_field_desc fbs_fixed_size_binary_fields[] = {
    FB_SCALAR("byteWidth", QV_FBS_FIXED_SIZE_BINARY_BYTE_WIDTH, 4)};
FB_TABLE_DESC(fbs_fixed_size_binary, "FixedSizeBinary", fbs_fixed_size_binary_fields);

static const qv_fb_field_desc fbs_decimal_fields[] = {
    FB_SCALAR("precision", QV_FBS_DECIMAL_PRECISION, 4),
    FB_SCALAR("scale", QV_FBS_DECIMAL_SCALE, 4),
    FB_SCALAR("bitWidth", QV_FBS_DECIMAL_BIT_WIDTH, 4)};
FB_TABLE_DESC(fbs_decimal, "Decimal", fbs_decimal_fields);

static const qv_fb_field_desc fbs_date_fields[] = {FB_SCALAR("unit", QV_FBS_DATE_UNIT, 2)};
FB_TABLE_DESC(fbs_date, "Date", fbs_date_fields);

static const qv_fb_field_desc fbs_time_fields[] = {FB_SCALAR("unit", QV_FBS_TIME_UNIT, 2),
                                                   FB_SCALAR("bitWidth", QV_FBS_TIME_BIT_WIDTH, 4)};
FB_TABLE_DESC(fbs_time, "Time", fbs_time_fields);

static const qv_fb_field_desc fbs_timestamp_fields[] = {
    FB_SCALAR("unit", QV_FBS_TIMESTAMP_UNIT, 2), FB_STRING("timezone", QV_FBS_TIMESTAMP_TIMEZONE)};
FB_TABLE_DESC(fbs_timestamp, "Timestamp", fbs_timestamp_fields);

static const qv_fb_field_desc fbs_interval_fields[] = {FB_SCALAR("unit", QV_FBS_INTERVAL_UNIT, 2)};
FB_TABLE_DESC(fbs_interval, "Interval", fbs_interval_fields);

static const qv_fb_field_desc fbs_duration_fields[] = {FB_SCALAR("unit", QV_FBS_DURATION_UNIT, 2)};
FB_TABLE_DESC(fbs_duration, "Duration", fbs_duration_fields);

/* Indexed by tag - 1, in Schema.fbs declaration order. */
static const qv_fb_table_desc *const fbs_type_members[QV_FBS_TYPE_COUNT - 1] = {
    &fbs_null,
    &fbs_int,
    &fbs_floating_point,
    &fbs_binary,
    &fbs_utf8,
    &fbs_bool,
    &fbs_decimal,
    &fbs_date,
    &fbs_time,
    &fbs_timestamp,
    &fbs_interval,
    &fbs_list,
    &fbs_struct,
    &fbs_union,
    &fbs_fixed_size_binary,
    &fbs_fixed_size_list,
    &fbs_map,
    &fbs_duration,
    &fbs_large_binary,
    &fbs_large_utf8,
    &fbs_large_list,
    &fbs_run_end_encoded,
    &fbs_binary_view,
    &fbs_utf8_view,
    &fbs_list_view,
    &fbs_large_list_view};
static const qv_fb_union_desc fbs_type_union = {"Type", QV_FBS_TYPE_COUNT - 1, fbs_type_members};

/* Schema.fbs: KeyValue, DictionaryEncoding, Field, Schema ---------------- */

static const qv_fb_field_desc fbs_key_value_fields[] = {FB_STRING("key", QV_FBS_KEY_VALUE_KEY),
                                                        FB_STRING("value", QV_FBS_KEY_VALUE_VALUE)};
FB_TABLE_DESC(fbs_key_value, "KeyValue", fbs_key_value_fields);

static const qv_fb_field_desc fbs_dict_encoding_fields[] = {
    FB_SCALAR("id", QV_FBS_DICT_ENCODING_ID, 8),
    FB_TABLE("indexType", QV_FBS_DICT_ENCODING_INDEX_TYPE, fbs_int),
    FB_SCALAR("isOrdered", QV_FBS_DICT_ENCODING_IS_ORDERED, 1),
    FB_SCALAR("dictionaryKind", QV_FBS_DICT_ENCODING_KIND, 2)};
FB_TABLE_DESC(fbs_dict_encoding, "DictionaryEncoding", fbs_dict_encoding_fields);

/* Field is recursive: its descriptor refers to itself. */
static const qv_fb_table_desc fbs_field;
static const qv_fb_field_desc fbs_field_fields[] = {
    FB_STRING("name", QV_FBS_FIELD_NAME),
    FB_SCALAR("nullable", QV_FBS_FIELD_NULLABLE, 1),
    FB_UNION_TYPE("type_type", QV_FBS_FIELD_TYPE_TYPE),
    FB_UNION("type", QV_FBS_FIELD_TYPE, fbs_type_union),
    FB_TABLE("dictionary", QV_FBS_FIELD_DICTIONARY, fbs_dict_encoding),
    FB_VEC_TABLE("children", QV_FBS_FIELD_CHILDREN, fbs_field),
    FB_VEC_TABLE("custom_metadata", QV_FBS_FIELD_CUSTOM_METADATA, fbs_key_value)};
static const qv_fb_table_desc fbs_field = {
    "Field", (int)(sizeof fbs_field_fields / sizeof fbs_field_fields[0]), fbs_field_fields};

static const qv_fb_field_desc fbs_schema_fields[] = {
    FB_SCALAR("endianness", QV_FBS_SCHEMA_ENDIANNESS, 2),
    FB_VEC_TABLE("fields", QV_FBS_SCHEMA_FIELDS, fbs_field),
    FB_VEC_TABLE("custom_metadata", QV_FBS_SCHEMA_CUSTOM_METADATA, fbs_key_value),
    FB_VEC_SCALAR("features", QV_FBS_SCHEMA_FEATURES, 8)};
const qv_fb_table_desc qv_fbs_schema_desc = {
    "Schema", (int)(sizeof fbs_schema_fields / sizeof fbs_schema_fields[0]), fbs_schema_fields};

/* Message.fbs ------------------------------------------------------------ */

static const qv_fb_field_desc fbs_body_compression_fields[] = {
    FB_SCALAR("codec", QV_FBS_BODY_COMPRESSION_CODEC, 1),
    FB_SCALAR("method", QV_FBS_BODY_COMPRESSION_METHOD, 1)};
FB_TABLE_DESC(fbs_body_compression, "BodyCompression", fbs_body_compression_fields);

static const qv_fb_field_desc fbs_record_batch_fields[] = {
    FB_SCALAR("length", QV_FBS_RECORD_BATCH_LENGTH, 8),
    FB_VEC_SCALAR("nodes", QV_FBS_RECORD_BATCH_NODES, QV_FBS_FIELD_NODE_SIZE),
    FB_VEC_SCALAR("buffers", QV_FBS_RECORD_BATCH_BUFFERS, QV_FBS_BUFFER_SIZE),
    FB_TABLE("compression", QV_FBS_RECORD_BATCH_COMPRESSION, fbs_body_compression),
    FB_VEC_SCALAR("variadicBufferCounts", QV_FBS_RECORD_BATCH_VARIADIC_COUNTS, 8)};
FB_TABLE_DESC(fbs_record_batch, "RecordBatch", fbs_record_batch_fields);

static const qv_fb_field_desc fbs_dictionary_batch_fields[] = {
    FB_SCALAR("id", QV_FBS_DICTIONARY_BATCH_ID, 8),
    FB_TABLE("data", QV_FBS_DICTIONARY_BATCH_DATA, fbs_record_batch),
    FB_SCALAR("isDelta", QV_FBS_DICTIONARY_BATCH_IS_DELTA, 1)};
FB_TABLE_DESC(fbs_dictionary_batch, "DictionaryBatch", fbs_dictionary_batch_fields);

/* Schema, DictionaryBatch, RecordBatch, Tensor, SparseTensor. */
static const qv_fb_table_desc *const fbs_header_members[5] = {
    &qv_fbs_schema_desc, &fbs_dictionary_batch, &fbs_record_batch, NULL, NULL};
static const qv_fb_union_desc fbs_header_union = {"MessageHeader", 5, fbs_header_members};

static const qv_fb_field_desc fbs_message_fields[] = {
    FB_SCALAR("version", QV_FBS_MESSAGE_VERSION, 2),
    FB_UNION_TYPE("header_type", QV_FBS_MESSAGE_HEADER_TYPE),
    FB_UNION("header", QV_FBS_MESSAGE_HEADER, fbs_header_union),
    FB_SCALAR("bodyLength", QV_FBS_MESSAGE_BODY_LENGTH, 8),
    FB_VEC_TABLE("custom_metadata", QV_FBS_MESSAGE_CUSTOM_METADATA, fbs_key_value)};
const qv_fb_table_desc qv_fbs_message_desc = {
    "Message", (int)(sizeof fbs_message_fields / sizeof fbs_message_fields[0]), fbs_message_fields};

/* File.fbs --------------------------------------------------------------- */

static const qv_fb_field_desc fbs_footer_fields[] = {
    FB_SCALAR("version", QV_FBS_FOOTER_VERSION, 2),
    FB_TABLE("schema", QV_FBS_FOOTER_SCHEMA, qv_fbs_schema_desc),
    FB_VEC_SCALAR("dictionaries", QV_FBS_FOOTER_DICTIONARIES, QV_FBS_BLOCK_SIZE),
    FB_VEC_SCALAR("recordBatches", QV_FBS_FOOTER_RECORD_BATCHES, QV_FBS_BLOCK_SIZE),
    FB_VEC_TABLE("custom_metadata", QV_FBS_FOOTER_CUSTOM_METADATA, fbs_key_value)};
const qv_fb_table_desc qv_fbs_footer_desc = {
    "Footer", (int)(sizeof fbs_footer_fields / sizeof fbs_footer_fields[0]), fbs_footer_fields};
