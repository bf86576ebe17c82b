/* test_metadata.c — unit tests for Arrow IPC metadata decoding and encoding
 * (src/ipc/metadata.c, metadata_encode.c): every message of every golden
 * integration stream decodes; footers of the golden files agree with their
 * streams; schemas of every type survive encode -> decode; invalid metadata
 * fails with exact error text; and byte flips / truncations of real schema
 * messages never crash. Golden files are found through $QV_SHARED. */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/arrow_fbs.h"
#include "ipc/ipc_internal.h"
#include "qv_test.h"

static char g_integration[1024];

static bool have_golden(void) {
  const char *shared = getenv("QV_SHARED");
  if (shared == NULL) shared = "../shared";
  snprintf(g_integration, sizeof g_integration,
           "%s/testdata/arrow-testing/data/arrow-ipc-stream/integration", shared);
  DIR *d = opendir(g_integration);
  if (d == NULL) {
    fprintf(stderr, "golden files not found at %s\n", g_integration);
    return false;
  }
  closedir(d);
  return true;
}

static uint8_t *read_file(const char *path, int64_t *size) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  uint8_t *d = malloc((size_t)n + 1);
  if (d && fread(d, 1, (size_t)n, f) != (size_t)n) {
    free(d);
    d = NULL;
  }
  fclose(f);
  *size = n;
  return d;
}

static uint32_t rd_u32(const uint8_t *p) { return qv_fb_read_u32(p); }

/* Locate message framing at pos: metadata start/length. Handles both the
 * continuation form (0xFFFFFFFF, len) and the pre-0.15 form (len). */
static bool frame(const uint8_t *d, int64_t n, int64_t pos, int64_t *meta, int64_t *len) {
  if (pos + 8 > n) return false;
  int64_t hdr = 4, l = (int32_t)rd_u32(d + pos);
  if (rd_u32(d + pos) == QV_IPC_CONTINUATION) {
    hdr = 8;
    l = (int32_t)rd_u32(d + pos + 4);
  }
  if (l <= 0 || pos + hdr + l > n) return false;
  *meta = pos + hdr;
  *len = l;
  return true;
}

/* Decode the schema message of a stream file. */
static qv_schema *stream_schema(const char *path, bool *big_endian) {
  int64_t n, meta, len;
  uint8_t *d = read_file(path, &n);
  qv_schema *s = NULL;
  if (d && frame(d, n, 0, &meta, &len)) {
    qv_ipc_message m;
    qv_error err;
    if (qv_ipc_decode_message(d + meta, len, &m, &err) == QV_OK && m.type == QV_MSG_SCHEMA) {
      s = qv_schema_ref(m.schema);
      if (big_endian) *big_endian = m.big_endian;
    }
    qv_ipc_message_reset(&m);
  }
  free(d);
  return s;
}

static void type_str(const qv_type *t, char *buf, int64_t cap) { qv_type_to_string(t, buf, cap); }

typedef void (*file_fn)(const char *dir, const char *name);

/* Call fn for every file with `suffix` in every integration directory. */
static int for_each_golden(const char *suffix, file_fn fn) {
  int count = 0;
  DIR *top = opendir(g_integration);
  if (top == NULL) return 0;
  struct dirent *e;
  while ((e = readdir(top)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char dir[1300];
    snprintf(dir, sizeof dir, "%s/%s", g_integration, e->d_name);
    DIR *sub = opendir(dir);
    if (sub == NULL) continue;
    struct dirent *f;
    while ((f = readdir(sub)) != NULL) {
      size_t ln = strlen(f->d_name), ls = strlen(suffix);
      if (ln > ls && strcmp(f->d_name + ln - ls, suffix) == 0) {
        fn(dir, f->d_name);
        count++;
      }
    }
    closedir(sub);
  }
  closedir(top);
  return count;
}

/* ---- golden streams: every message decodes ------------------------------ */

static int g_messages;

static void check_stream(const char *dir, const char *name) {
  char path[1600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int64_t n, pos = 0, meta, len;
  uint8_t *d = read_file(path, &n);
  QV_REQUIRE(d != NULL);
  int idx = 0;
  while (frame(d, n, pos, &meta, &len)) {
    qv_ipc_message m;
    qv_error err;
    qv_status st = qv_ipc_decode_message(d + meta, len, &m, &err);
    if (st != QV_OK) {
      fprintf(stderr, "%s message %d: %s\n", path, idx, err.message);
      QV_CHECK(st == QV_OK);
      break;
    }
    QV_CHECK(idx == 0 ? m.type == QV_MSG_SCHEMA : m.type != QV_MSG_SCHEMA);
    QV_CHECK(m.version == QV_METADATA_V4 || m.version == QV_METADATA_V5);
    if (m.type != QV_MSG_SCHEMA) QV_CHECK(m.batch.n_nodes > 0);
    pos = meta + len + m.body_length;
    qv_ipc_message_reset(&m);
    idx++;
    g_messages++;
  }
  QV_CHECK(idx >= 1);
  free(d);
}

static void test_golden_streams_decode(void) {
  if (!have_golden()) return;
  g_messages = 0;
  int files = for_each_golden(".stream", check_stream);
  QV_CHECK(files >= 60);
  QV_CHECK(g_messages > 200);
}

/* ---- golden schemas: names and types ------------------------------------ */

static qv_schema *cpp21(const char *file) {
  char path[1400];
  snprintf(path, sizeof path, "%s/cpp-21.0.0/%s.stream", g_integration, file);
  return stream_schema(path, NULL);
}

static void expect_field(const qv_schema *s, int i, const char *name, bool nullable,
                         const char *type) {
  char buf[1024];
  if (i >= qv_schema_num_fields(s)) {
    QV_CHECK(i < qv_schema_num_fields(s));
    return;
  }
  const qv_field *f = qv_schema_field(s, i);
  QV_CHECK_EQ_STR(f->name, name);
  QV_CHECK_EQ_INT(f->nullable, nullable);
  type_str(f->type, buf, sizeof buf);
  QV_CHECK_EQ_STR(buf, type);
}

static void test_golden_schemas(void) {
  if (!have_golden()) return;
  qv_schema *s = cpp21("generated_datetime");
  QV_REQUIRE(s != NULL);
  QV_CHECK_EQ_INT(qv_schema_num_fields(s), 15);
  expect_field(s, 0, "f0", true, "date32");
  expect_field(s, 1, "f1", true, "date64");
  expect_field(s, 2, "f2", true, "time32[s]");
  expect_field(s, 5, "f5", true, "time64[ns]");
  expect_field(s, 12, "f12", true, "timestamp[ms, tz=US/Eastern]");
  qv_schema_unref(s);

  s = cpp21("generated_binary");
  QV_REQUIRE(s != NULL);
  expect_field(s, 0, "binary_nullable", true, "binary");
  expect_field(s, 3, "utf8_nonnullable", false, "string");
  expect_field(s, 6, "fixedsizebinary_120_nullable", true, "fixed_size_binary[120]");
  qv_schema_unref(s);

  s = cpp21("generated_decimal64");
  QV_REQUIRE(s != NULL);
  expect_field(s, 15, "f15", true, "decimal64(18, 2)");
  qv_schema_unref(s);
  s = cpp21("generated_decimal");
  QV_REQUIRE(s != NULL);
  expect_field(s, 35, "f35", true, "decimal128(38, 2)");
  qv_schema_unref(s);

  s = cpp21("generated_dictionary_unsigned");
  QV_REQUIRE(s != NULL);
  expect_field(s, 2, "f2", true, "dictionary<values=string, indices=uint32, ordered=0>");
  QV_CHECK(qv_schema_field(s, 0)->type->dict_id != qv_schema_field(s, 1)->type->dict_id);
  qv_schema_unref(s);

  s = cpp21("generated_nested_dictionary");
  QV_REQUIRE(s != NULL);
  expect_field(s, 0, "list_dict", true,
               "dictionary<values=list<str_dict: dictionary<values=string, indices=int8, "
               "ordered=0>>, indices=int8, ordered=0>");
  qv_schema_unref(s);

  s = cpp21("generated_map");
  QV_REQUIRE(s != NULL);
  expect_field(s, 0, "map_nullable", true, "map<string, int32>");
  {
    const qv_type *m = qv_schema_field(s, 0)->type;
    QV_REQUIRE(m->n_children == 1);
    QV_CHECK_EQ_STR(m->children[0].name, "entries");
    QV_CHECK(!m->children[0].nullable);
    QV_CHECK_EQ_STR(m->children[0].type->children[0].name, "key");
  }
  qv_schema_unref(s);

  s = cpp21("generated_list_view");
  QV_REQUIRE(s != NULL);
  expect_field(s, 0, "lv", true, "list_view<item: float>");
  expect_field(s, 1, "llv", true, "large_list_view<item: float>");
  qv_schema_unref(s);

  s = cpp21("generated_binary_view");
  QV_REQUIRE(s != NULL);
  expect_field(s, 0, "bv", true, "binary_view");
  expect_field(s, 1, "sv", true, "string_view");
  qv_schema_unref(s);

  s = cpp21("generated_interval_mdn");
  QV_REQUIRE(s != NULL);
  expect_field(s, 0, "f1", true, "month_day_nano_interval");
  qv_schema_unref(s);

  s = cpp21("generated_nested");
  QV_REQUIRE(s != NULL);
  expect_field(s, 1, "fixedsizelist_nullable", true, "fixed_size_list<item: int32>[4]");
  expect_field(s, 2, "struct_nullable", true, "struct<f1: int32, f2: string>");
  qv_schema_unref(s);

  s = cpp21("generated_extension");
  QV_REQUIRE(s != NULL);
  QV_CHECK(qv_field_extension_name(qv_schema_field(s, 0)) != NULL);
  qv_schema_unref(s);

  s = cpp21("generated_custom_metadata");
  QV_REQUIRE(s != NULL);
  QV_CHECK_EQ_INT(s->metadata.n, 2);
  QV_CHECK_EQ_INT(qv_schema_field(s, 1)->metadata.n, 9);
  qv_schema_unref(s);

  /* Big-endian files say so in their schema. */
  char path[1400];
  bool be = false;
  snprintf(path, sizeof path, "%s/1.0.0-bigendian/generated_primitive.stream", g_integration);
  s = stream_schema(path, &be);
  QV_REQUIRE(s != NULL);
  QV_CHECK(be);
  qv_schema_unref(s);
  /* 0.14.1 files use V4 metadata and the pre-0.15 framing. */
  snprintf(path, sizeof path, "%s/0.14.1/generated_decimal.stream", g_integration);
  s = stream_schema(path, NULL);
  QV_REQUIRE(s != NULL);
  expect_field(s, 0, "f0", true, "decimal128(3, 2)");
  qv_schema_unref(s);
}

/* ---- golden files: footers ------------------------------------------------ */

static int g_footers;

static void check_footer(const char *dir, const char *name) {
  char path[1600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int64_t n;
  uint8_t *d = read_file(path, &n);
  QV_REQUIRE(d != NULL && n > 18);
  QV_REQUIRE(memcmp(d + n - 6, QV_IPC_MAGIC, 6) == 0);
  int64_t flen = (int32_t)rd_u32(d + n - 10);
  QV_REQUIRE(flen > 0 && flen < n - 10);
  qv_ipc_footer f;
  qv_error err;
  qv_status st = qv_ipc_decode_footer(d + n - 10 - flen, flen, &f, &err);
  if (st != QV_OK) fprintf(stderr, "%s: %s\n", path, err.message);
  QV_REQUIRE(st == QV_OK);
  /* The footer's schema equals the stream's. */
  char spath[1600];
  snprintf(spath, sizeof spath, "%s/%.*s.stream", dir, (int)(strlen(name) - strlen(".arrow_file")),
           name);
  qv_schema *s = stream_schema(spath, NULL);
  if (s != NULL) {
    QV_CHECK(qv_schema_equals(s, f.schema, true));
    qv_schema_unref(s);
  }
  /* Each block frames a message of the advertised type. */
  for (int64_t i = 0; i < f.n_record_batches + f.n_dictionaries; i++) {
    bool dict = i < f.n_dictionaries;
    const qv_ipc_block *b = dict ? &f.dictionaries[i] : &f.record_batches[i - f.n_dictionaries];
    int64_t meta, len;
    QV_REQUIRE(frame(d, n, b->offset, &meta, &len));
    qv_ipc_message m;
    QV_REQUIRE(qv_ipc_decode_message(d + meta, len, &m, &err) == QV_OK);
    QV_CHECK(m.type == (dict ? QV_MSG_DICTIONARY_BATCH : QV_MSG_RECORD_BATCH));
    QV_CHECK_EQ_INT(m.body_length, b->body_length);
    qv_ipc_message_reset(&m);
  }
  if (strstr(name, "no_batches") == NULL && strstr(name, "zerolength") == NULL)
    QV_CHECK(f.n_record_batches > 0);
  g_footers++;
  qv_ipc_footer_reset(&f);
  free(d);
}

static void test_golden_footers(void) {
  if (!have_golden()) return;
  g_footers = 0;
  for_each_golden(".arrow_file", check_footer);
  QV_CHECK(g_footers >= 60);
}

/* ---- encode -> decode round trips --------------------------------------- */

static qv_type *T(qv_type_id id) { return qv_type_new(id); }

static void add(qv_type *parent, const char *name, bool nullable, qv_type *t) {
  qv_error err;
  if (qv_type_add_child(parent, name, nullable, t, NULL, &err) != QV_OK) {
    fprintf(stderr, "add_child: %s\n", err.message);
    qv_type_unref(t);
  }
}

static qv_schema *round_trip(const qv_schema *s, bool big_endian) {
  uint8_t *bytes = NULL;
  int64_t n = 0;
  qv_error err;
  qv_ipc_message in;
  memset(&in, 0, sizeof in);
  in.type = QV_MSG_SCHEMA;
  in.schema = (qv_schema *)s;
  in.big_endian = big_endian;
  if (qv_ipc_encode_message(&in, &bytes, &n, &err) != QV_OK) {
    fprintf(stderr, "encode: %s\n", err.message);
    return NULL;
  }
  qv_ipc_message m;
  qv_schema *out = NULL;
  if (qv_ipc_decode_message(bytes, n, &m, &err) != QV_OK) {
    fprintf(stderr, "decode: %s\n", err.message);
  } else {
    out = qv_schema_ref(m.schema);
    if (m.big_endian != big_endian) fprintf(stderr, "endianness lost\n");
    if (m.version != QV_METADATA_V5) fprintf(stderr, "version %d\n", m.version);
  }
  qv_ipc_message_reset(&m);
  free(bytes);
  return out;
}

static qv_schema *all_types_schema(void) {
  qv_error err;
  qv_type *root = T(QV_STRUCT);
  for (int id = QV_NA; id <= QV_INTERVAL_MONTH_DAY_NANO; id++) {
    qv_type *t = T((qv_type_id)id);
    char name[32];
    snprintf(name, sizeof name, "c%d", id);
    if (id >= QV_DECIMAL32 && id <= QV_DECIMAL256) {
      t->precision = id == QV_DECIMAL32 ? 9 : id == QV_DECIMAL64 ? 18 : 38;
      t->scale = -3 + id;
    }
    if (id == QV_TIME32) t->unit = QV_SECOND;
    if (id == QV_TIME64) t->unit = QV_NANO;
    if (id == QV_DURATION) t->unit = QV_MICRO;
    if (id == QV_TIMESTAMP) {
      qv_type_unref(t);
      t = qv_type_timestamp(QV_NANO, "Asia/Tokyo");
    }
    add(root, name, id % 2 == 0, t);
  }
  add(root, "ts_naive", true, qv_type_timestamp(QV_MILLI, NULL));
  for (int id = QV_BINARY; id <= QV_STRING_VIEW; id++) add(root, "bin", true, T((qv_type_id)id));
  qv_type *fsb = T(QV_FIXED_SIZE_BINARY);
  fsb->byte_width = 0;
  add(root, "fsb0", false, fsb);
  for (int id = QV_LIST; id <= QV_FIXED_SIZE_LIST; id++) {
    qv_type *l = T((qv_type_id)id);
    if (id == QV_FIXED_SIZE_LIST) l->list_size = 3;
    add(l, "item", true, T(QV_INT16));
    add(root, "list", true, l);
  }
  qv_type *st = T(QV_STRUCT);
  add(st, "x", true, T(QV_FLOAT));
  add(st, "", false, T(QV_NA)); /* empty names survive */
  add(root, "struct", true, st);
  add(root, "empty_struct", true, T(QV_STRUCT));
  qv_type *entries = T(QV_STRUCT);
  add(entries, "key", false, T(QV_STRING));
  add(entries, "value", true, T(QV_INT64));
  qv_type *map = T(QV_MAP);
  map->keys_sorted = true;
  add(map, "entries", false, entries);
  add(root, "map", true, map);
  for (int id = QV_SPARSE_UNION; id <= QV_DENSE_UNION; id++) {
    qv_type *u = T((qv_type_id)id);
    add(u, "a", true, T(QV_INT32));
    add(u, "b", true, T(QV_STRING));
    u->type_codes = malloc(2 * sizeof(int32_t));
    u->type_codes[0] = 5;
    u->type_codes[1] = 127;
    add(root, "union", true, u);
  }
  qv_type *ree = T(QV_RUN_END_ENCODED);
  add(ree, "run_ends", false, T(QV_INT64));
  add(ree, "values", true, T(QV_STRING));
  add(root, "ree", true, ree);
  qv_type *dict = T(QV_DICTIONARY);
  dict->index_type = T(QV_UINT16);
  dict->value_type = T(QV_LARGE_STRING);
  dict->dict_id = 42;
  dict->ordered = true;
  add(root, "dict", true, dict);
  /* A dictionary nested inside a dictionary's value type. */
  qv_type *inner = T(QV_DICTIONARY);
  inner->index_type = T(QV_INT8);
  inner->value_type = T(QV_STRING);
  inner->dict_id = 1;
  qv_type *lst = T(QV_LIST);
  add(lst, "item", true, inner);
  qv_type *outer = T(QV_DICTIONARY);
  outer->index_type = T(QV_INT32);
  outer->value_type = lst;
  outer->dict_id = 2;
  add(root, "nested_dict", true, outer);
  /* Field metadata with embedded NUL bytes and extension keys. */
  qv_metadata md = {0, NULL};
  QV_CHECK(qv_metadata_append(&md, "ARROW:extension:name", -1, "my.uuid", -1, &err) == QV_OK);
  QV_CHECK(qv_metadata_append(&md, "k\0k", 3, "v\0\0v", 4, &err) == QV_OK);
  QV_CHECK(qv_metadata_append(&md, "dup", -1, "1", -1, &err) == QV_OK);
  QV_CHECK(qv_metadata_append(&md, "dup", -1, "2", -1, &err) == QV_OK);
  fsb = T(QV_FIXED_SIZE_BINARY);
  fsb->byte_width = 16;
  QV_CHECK(qv_type_add_child(root, "ext", true, fsb, &md, &err) == QV_OK);
  qv_schema *s = qv_schema_new(root);
  QV_CHECK(qv_metadata_copy(&s->metadata, &md, &err) == QV_OK);
  qv_metadata_reset(&md);
  return s;
}

static void test_round_trip_all_types(void) {
  qv_schema *s = all_types_schema();
  QV_REQUIRE(s != NULL);
  qv_schema *r = round_trip(s, false);
  QV_REQUIRE(r != NULL);
  QV_CHECK(qv_schema_equals(s, r, true));
  for (int32_t i = 0; i < qv_schema_num_fields(s) && i < qv_schema_num_fields(r); i++) {
    char a[2048], b[2048];
    type_str(qv_schema_field(s, i)->type, a, sizeof a);
    type_str(qv_schema_field(r, i)->type, b, sizeof b);
    QV_CHECK_EQ_STR(b, a);
  }
  const qv_field *u = qv_schema_field(r, qv_schema_find(r, "union"));
  QV_CHECK_EQ_INT(u->type->type_codes[1], 127);
  const qv_field *e = qv_schema_field(r, qv_schema_find(r, "ext"));
  QV_CHECK_EQ_STR(qv_field_extension_name(e), "my.uuid");
  QV_CHECK_EQ_INT(e->metadata.kv[1].value_len, 4);
  QV_CHECK(memcmp(e->metadata.kv[1].value, "v\0\0v", 4) == 0);
  qv_schema_unref(r);
  r = round_trip(s, true);
  QV_CHECK(r != NULL && qv_schema_equals(s, r, true));
  qv_schema_unref(r);
  qv_schema_unref(s);
}

static void round_trip_golden(const char *dir, const char *name) {
  char path[1600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  bool be = false;
  qv_schema *s = stream_schema(path, &be);
  QV_REQUIRE(s != NULL);
  qv_schema *r = round_trip(s, be);
  QV_CHECK(r != NULL && qv_schema_equals(s, r, true));
  qv_schema_unref(r);
  qv_schema_unref(s);
}

static void test_round_trip_golden_schemas(void) {
  if (!have_golden()) return;
  QV_CHECK(for_each_golden(".stream", round_trip_golden) >= 60);
}

static void test_round_trip_batches_and_footer(void) {
  qv_ipc_node nodes[3] = {{10, 0}, {10, 3}, {0, 0}};
  qv_ipc_buffer_spec bufs[4] = {{0, 0}, {0, 64}, {64, 8}, {72, 1000}};
  int64_t variadic[2] = {0, 3};
  qv_ipc_batch_desc desc = {10, 3, nodes, 4, bufs, QV_COMPRESSION_LZ4_FRAME, 2, variadic};
  uint8_t *bytes = NULL;
  int64_t n = 0;
  qv_error err;
  qv_ipc_message m;
  QV_REQUIRE(qv_ipc_encode_record_batch_message(&desc, 1072, &bytes, &n, &err) == QV_OK);
  QV_REQUIRE(qv_ipc_decode_message(bytes, n, &m, &err) == QV_OK);
  QV_CHECK(m.type == QV_MSG_RECORD_BATCH);
  QV_CHECK_EQ_INT(m.body_length, 1072);
  QV_CHECK_EQ_INT(m.batch.length, 10);
  QV_REQUIRE(m.batch.n_nodes == 3 && m.batch.n_buffers == 4 && m.batch.n_variadic == 2);
  QV_CHECK_EQ_INT(m.batch.nodes[1].null_count, 3);
  QV_CHECK_EQ_INT(m.batch.buffers[3].offset, 72);
  QV_CHECK_EQ_INT(m.batch.buffers[3].length, 1000);
  QV_CHECK_EQ_INT(m.batch.variadic_counts[1], 3);
  QV_CHECK(m.batch.compression == QV_COMPRESSION_LZ4_FRAME);
  qv_ipc_message_reset(&m);
  free(bytes);

  desc.compression = QV_COMPRESSION_ZSTD;
  desc.n_variadic = 0;
  desc.variadic_counts = NULL;
  QV_REQUIRE(qv_ipc_encode_dictionary_message(7, true, &desc, 1072, &bytes, &n, &err) == QV_OK);
  QV_REQUIRE(qv_ipc_decode_message(bytes, n, &m, &err) == QV_OK);
  QV_CHECK(m.type == QV_MSG_DICTIONARY_BATCH);
  QV_CHECK_EQ_INT(m.dict_id, 7);
  QV_CHECK(m.is_delta);
  QV_CHECK(m.batch.compression == QV_COMPRESSION_ZSTD);
  QV_CHECK(m.batch.variadic_counts == NULL);
  qv_ipc_message_reset(&m);
  free(bytes);

  /* Footer with blocks and metadata. */
  qv_schema *s = all_types_schema();
  qv_ipc_block dicts[1] = {{8, 200, 64}};
  qv_ipc_block batches[2] = {{272, 300, 1024}, {1596, 296, (int64_t)1 << 40}};
  qv_ipc_footer f;
  memset(&f, 0, sizeof f);
  f.schema = s;
  f.n_dictionaries = 1;
  f.dictionaries = dicts;
  f.n_record_batches = 2;
  f.record_batches = batches;
  QV_CHECK(qv_metadata_append(&f.custom_metadata, "writer", -1, "quiver", -1, &err) == QV_OK);
  QV_REQUIRE(qv_ipc_encode_footer(&f, &bytes, &n, &err) == QV_OK);
  qv_ipc_footer g;
  QV_REQUIRE(qv_ipc_decode_footer(bytes, n, &g, &err) == QV_OK);
  QV_CHECK_EQ_INT(g.version, QV_METADATA_V5);
  QV_CHECK(qv_schema_equals(s, g.schema, true));
  QV_REQUIRE(g.n_dictionaries == 1 && g.n_record_batches == 2);
  QV_CHECK_EQ_INT(g.dictionaries[0].metadata_length, 200);
  QV_CHECK_EQ_INT(g.record_batches[1].offset, 1596);
  QV_CHECK(g.record_batches[1].body_length == (int64_t)1 << 40);
  QV_CHECK(qv_metadata_equals(&f.custom_metadata, &g.custom_metadata));
  qv_ipc_footer_reset(&g);
  qv_metadata_reset(&f.custom_metadata);
  free(bytes);
  qv_schema_unref(s);
}

/* ---- invalid metadata: exact errors --------------------------------------- */

/* Raw builders for metadata the encoder would never produce. */
static qv_fb_ref raw_field(qv_fb_builder *b, const char *name, bool nullable, uint8_t tag,
                           qv_fb_ref type, const qv_fb_ref *kids, int nkids, qv_fb_ref dict) {
  qv_fb_ref children = qv_fb_create_vector_refs(b, kids, nkids);
  qv_fb_ref nm = name ? qv_fb_create_string(b, name, (int64_t)strlen(name)) : 0;
  qv_fb_start_table(b);
  qv_fb_add_ref(b, QV_FBS_FIELD_NAME, nm);
  qv_fb_add_bool(b, QV_FBS_FIELD_NULLABLE, nullable, false);
  qv_fb_add_u8(b, QV_FBS_FIELD_TYPE_TYPE, tag, 0);
  qv_fb_add_ref(b, QV_FBS_FIELD_TYPE, type);
  qv_fb_add_ref(b, QV_FBS_FIELD_DICTIONARY, dict);
  qv_fb_add_ref(b, QV_FBS_FIELD_CHILDREN, children);
  return qv_fb_end_table(b);
}

static qv_fb_ref empty_table(qv_fb_builder *b) {
  qv_fb_start_table(b);
  return qv_fb_end_table(b);
}

static qv_fb_ref int_table(qv_fb_builder *b, int32_t bw, bool sgn) {
  qv_fb_start_table(b);
  qv_fb_add_i32(b, QV_FBS_INT_BIT_WIDTH, bw, 0);
  qv_fb_add_bool(b, QV_FBS_INT_IS_SIGNED, sgn, false);
  return qv_fb_end_table(b);
}

static qv_fb_ref int_field(qv_fb_builder *b, const char *name, bool nullable) {
  return raw_field(b, name, nullable, QV_FBS_TYPE_INT, int_table(b, 32, true), NULL, 0, 0);
}

/* Wrap fields in a struct field 'a' (when wrap) inside a Schema message. */
static void decode_raw_schema(qv_fb_builder *b, qv_fb_ref field, bool wrap, int16_t version,
                              qv_status want_st, const char *want) {
  if (wrap) field = raw_field(b, "a", true, QV_FBS_TYPE_STRUCT, empty_table(b), &field, 1, 0);
  qv_fb_ref fields = qv_fb_create_vector_refs(b, &field, 1);
  qv_fb_start_table(b);
  qv_fb_add_ref(b, QV_FBS_SCHEMA_FIELDS, fields);
  qv_fb_ref schema = qv_fb_end_table(b);
  qv_fb_start_table(b);
  qv_fb_add_i16(b, QV_FBS_MESSAGE_VERSION, version, 0);
  qv_fb_add_u8(b, QV_FBS_MESSAGE_HEADER_TYPE, QV_MSG_SCHEMA, 0);
  qv_fb_add_ref(b, QV_FBS_MESSAGE_HEADER, schema);
  qv_fb_ref root = qv_fb_end_table(b);
  const uint8_t *d;
  int64_t n;
  qv_error err;
  memset(&err, 0, sizeof err);
  if (qv_fb_builder_finish(b, root, &d, &n, &err) != QV_OK) {
    QV_CHECK(!"builder failed");
    return;
  }
  qv_ipc_message m;
  QV_CHECK_EQ_INT(qv_ipc_decode_message(d, n, &m, &err), want_st);
  if (want) QV_CHECK_EQ_STR(err.message, want);
  if (want_st != QV_OK) {
    QV_CHECK(m.schema == NULL && m.type == QV_MSG_NONE); /* reset on failure */
  }
  qv_ipc_message_reset(&m);
  qv_fb_builder_reset(b);
}

static void test_invalid_types(void) {
  qv_fb_builder b;
  qv_fb_builder_init(&b);
  qv_fb_ref t, kids[3];

  /* Time: bit width does not match the unit. */
  qv_fb_start_table(&b);
  qv_fb_add_i16(&b, QV_FBS_TIME_UNIT, QV_FBS_TIME_MILLISECOND, -1);
  qv_fb_add_i32(&b, QV_FBS_TIME_BIT_WIDTH, 16, 0);
  t = qv_fb_end_table(&b);
  decode_raw_schema(&b, raw_field(&b, "b", true, QV_FBS_TYPE_TIME, t, NULL, 0, 0), true, 4,
                    QV_EINVAL,
                    "schema: field 'a.b': Time bit width 16 does not match unit "
                    "MILLISECOND (expected 32)");
  /* Time with defaults (MILLISECOND, 32) is time32[ms]. */
  decode_raw_schema(&b, raw_field(&b, "b", true, QV_FBS_TYPE_TIME, empty_table(&b), NULL, 0, 0),
                    true, 4, QV_OK, NULL);
  qv_fb_start_table(&b);
  qv_fb_add_i16(&b, QV_FBS_TIME_UNIT, QV_FBS_TIME_NANOSECOND, -1);
  t = qv_fb_end_table(&b);
  decode_raw_schema(&b, raw_field(&b, "t", true, QV_FBS_TYPE_TIME, t, NULL, 0, 0), false, 4,
                    QV_EINVAL,
                    "schema: field 't': Time bit width 32 does not match unit "
                    "NANOSECOND (expected 64)");

  decode_raw_schema(
      &b, raw_field(&b, "i", true, QV_FBS_TYPE_INT, int_table(&b, 12, true), NULL, 0, 0), false, 4,
      QV_EINVAL, "schema: field 'i': Int bit width 12 is invalid (expected 8, 16, 32 or 64)");

  qv_fb_start_table(&b);
  qv_fb_add_i32(&b, QV_FBS_DECIMAL_PRECISION, 10, 0);
  qv_fb_add_i32(&b, QV_FBS_DECIMAL_BIT_WIDTH, 100, 0);
  t = qv_fb_end_table(&b);
  decode_raw_schema(&b, raw_field(&b, "d", true, QV_FBS_TYPE_DECIMAL, t, NULL, 0, 0), false, 4,
                    QV_EINVAL,
                    "schema: field 'd': Decimal bit width 100 is invalid (expected 32, 64, "
                    "128 or 256)");
  qv_fb_start_table(&b);
  qv_fb_add_i32(&b, QV_FBS_DECIMAL_PRECISION, 10, 0);
  qv_fb_add_i32(&b, QV_FBS_DECIMAL_BIT_WIDTH, 32, 0);
  t = qv_fb_end_table(&b);
  decode_raw_schema(&b, raw_field(&b, "d", true, QV_FBS_TYPE_DECIMAL, t, NULL, 0, 0), false, 4,
                    QV_EINVAL,
                    "schema: field 'd': Decimal precision 10 out of range [1, 9] for bit width 32");

  qv_fb_start_table(&b);
  qv_fb_add_i32(&b, QV_FBS_FIXED_SIZE_BINARY_BYTE_WIDTH, -1, 0);
  t = qv_fb_end_table(&b);
  decode_raw_schema(&b, raw_field(&b, "f", true, QV_FBS_TYPE_FIXED_SIZE_BINARY, t, NULL, 0, 0),
                    false, 4, QV_EINVAL,
                    "schema: field 'f': FixedSizeBinary byte width -1 is negative");

  qv_fb_start_table(&b);
  qv_fb_add_i16(&b, QV_FBS_INTERVAL_UNIT, 3, 0);
  t = qv_fb_end_table(&b);
  decode_raw_schema(&b, raw_field(&b, "iv", true, QV_FBS_TYPE_INTERVAL, t, NULL, 0, 0), false, 4,
                    QV_EINVAL, "schema: field 'iv': Interval unit 3 is invalid");

  /* Lists need exactly one child; primitives none. */
  decode_raw_schema(&b, raw_field(&b, "l", true, QV_FBS_TYPE_LIST, empty_table(&b), NULL, 0, 0),
                    true, 4, QV_EINVAL,
                    "schema: field 'a.l': List must have exactly 1 child, found 0");
  kids[0] = int_field(&b, "x", true);
  decode_raw_schema(&b, raw_field(&b, "u", true, QV_FBS_TYPE_UTF8, empty_table(&b), kids, 1, 0),
                    false, 4, QV_EINVAL, "schema: field 'u': Utf8 must have no children, found 1");

  /* Map entries must be a non-nullable struct of two with a non-null key. */
  kids[0] = int_field(&b, "key", false);
  kids[1] = int_field(&b, "value", true);
  kids[2] = raw_field(&b, "entries", true, QV_FBS_TYPE_STRUCT, empty_table(&b), kids, 2, 0);
  decode_raw_schema(&b, raw_field(&b, "m", true, QV_FBS_TYPE_MAP, empty_table(&b), &kids[2], 1, 0),
                    false, 4, QV_EINVAL,
                    "schema: field 'm': Map entries child must not be nullable");
  kids[0] = int_field(&b, "key", true);
  kids[1] = int_field(&b, "value", true);
  kids[2] = raw_field(&b, "entries", false, QV_FBS_TYPE_STRUCT, empty_table(&b), kids, 2, 0);
  decode_raw_schema(&b, raw_field(&b, "m", true, QV_FBS_TYPE_MAP, empty_table(&b), &kids[2], 1, 0),
                    false, 4, QV_EINVAL, "schema: field 'm': Map key field must not be nullable");
  kids[0] = int_field(&b, "key", false);
  kids[2] = raw_field(&b, "entries", false, QV_FBS_TYPE_STRUCT, empty_table(&b), kids, 1, 0);
  decode_raw_schema(&b, raw_field(&b, "m", true, QV_FBS_TYPE_MAP, empty_table(&b), &kids[2], 1, 0),
                    false, 4, QV_EINVAL,
                    "schema: field 'm': Map entries child must be a struct of 2 fields (key, "
                    "value), found struct with 1 children");

  /* Union type ids: count and range. */
  {
    uint8_t le[4] = {1, 0, 0, 0};
    qv_fb_ref ids = qv_fb_create_vector(&b, le, 1, 4, 4);
    qv_fb_start_table(&b);
    qv_fb_add_i16(&b, QV_FBS_UNION_MODE, QV_FBS_UNION_DENSE, 0);
    qv_fb_add_ref(&b, QV_FBS_UNION_TYPE_IDS, ids);
    t = qv_fb_end_table(&b);
    kids[0] = int_field(&b, "x", true);
    kids[1] = int_field(&b, "y", true);
    decode_raw_schema(&b, raw_field(&b, "u", true, QV_FBS_TYPE_UNION, t, kids, 2, 0), false, 4,
                      QV_EINVAL, "schema: field 'u': Union has 1 type ids but 2 children");
    uint8_t le2[8] = {1, 0, 0, 0, 200, 0, 0, 0};
    ids = qv_fb_create_vector(&b, le2, 2, 4, 4);
    qv_fb_start_table(&b);
    qv_fb_add_ref(&b, QV_FBS_UNION_TYPE_IDS, ids);
    t = qv_fb_end_table(&b);
    kids[0] = int_field(&b, "x", true);
    kids[1] = int_field(&b, "y", true);
    decode_raw_schema(&b, raw_field(&b, "u", true, QV_FBS_TYPE_UNION, t, kids, 2, 0), false, 4,
                      QV_EINVAL, "schema: field 'u': Union type id 200 out of range [0, 127]");
  }

  /* Run-end encoded: run ends must be int16/32/64. */
  kids[0] = raw_field(&b, "run_ends", false, QV_FBS_TYPE_INT, int_table(&b, 8, true), NULL, 0, 0);
  kids[1] = int_field(&b, "values", true);
  decode_raw_schema(
      &b, raw_field(&b, "r", true, QV_FBS_TYPE_RUN_END_ENCODED, empty_table(&b), kids, 2, 0), false,
      4, QV_EINVAL,
      "schema: field 'r': RunEndEncoded run_ends must be int16, int32 or int64, found int8");
  kids[0] = int_field(&b, "run_ends", false);
  decode_raw_schema(
      &b, raw_field(&b, "r", true, QV_FBS_TYPE_RUN_END_ENCODED, empty_table(&b), kids, 1, 0), false,
      4, QV_EINVAL,
      "schema: field 'r': RunEndEncoded must have exactly 2 children (run_ends, values), found 1");

  /* Dictionary index type. */
  {
    qv_fb_ref it = int_table(&b, 3, false);
    qv_fb_start_table(&b);
    qv_fb_add_ref(&b, QV_FBS_DICT_ENCODING_INDEX_TYPE, it);
    qv_fb_ref de = qv_fb_end_table(&b);
    decode_raw_schema(&b,
                      raw_field(&b, "dict", true, QV_FBS_TYPE_UTF8, empty_table(&b), NULL, 0, de),
                      false, 4, QV_EINVAL,
                      "schema: field 'dict': dictionary index bit width 3 is invalid (expected 8, "
                      "16, 32 or 64)");
    /* Absent index type: int32. */
    qv_fb_start_table(&b);
    qv_fb_add_i64(&b, QV_FBS_DICT_ENCODING_ID, 5, 0);
    de = qv_fb_end_table(&b);
    decode_raw_schema(&b,
                      raw_field(&b, "dict", true, QV_FBS_TYPE_UTF8, empty_table(&b), NULL, 0, de),
                      false, 4, QV_OK, NULL);
  }

  /* Union tags: NONE, unknown, member table missing. Unnamed fields are
   * named by index in paths. */
  decode_raw_schema(&b, raw_field(&b, NULL, true, QV_FBS_TYPE_NONE, 0, NULL, 0, 0), true, 4,
                    QV_EINVAL, "schema: field 'a.[0]': missing type (Type union is NONE)");
  decode_raw_schema(&b, raw_field(&b, "x", true, 99, empty_table(&b), NULL, 0, 0), false, 4,
                    QV_ENOTSUP, "schema: field 'x': unsupported type (Type union tag 99)");
  decode_raw_schema(&b, raw_field(&b, "x", true, QV_FBS_TYPE_INT, 0, NULL, 0, 0), false, 4,
                    QV_EINVAL, "schema: field 'x': Type union tag 2 (Int) has no table");

  /* Old metadata versions. */
  decode_raw_schema(&b, int_field(&b, "x", true), false, QV_METADATA_V3, QV_ENOTSUP,
                    "metadata version V3 is not supported (V4 or later required; written by "
                    "Arrow before 0.8)");
  decode_raw_schema(&b, int_field(&b, "x", true), false, 9, QV_ENOTSUP,
                    "metadata version 9 is unknown (V4 and V5 are supported)");
  qv_fb_builder_reset(&b);
}

/* A Message with an arbitrary header. */
static void decode_raw_message(qv_fb_builder *b, uint8_t tag, qv_fb_ref header, int64_t body,
                               qv_status want_st, const char *want) {
  qv_fb_start_table(b);
  qv_fb_add_i16(b, QV_FBS_MESSAGE_VERSION, QV_METADATA_V5, 0);
  qv_fb_add_u8(b, QV_FBS_MESSAGE_HEADER_TYPE, tag, 0);
  qv_fb_add_ref(b, QV_FBS_MESSAGE_HEADER, header);
  qv_fb_add_i64(b, QV_FBS_MESSAGE_BODY_LENGTH, body, 0);
  qv_fb_ref root = qv_fb_end_table(b);
  const uint8_t *d;
  int64_t n;
  qv_error err;
  QV_REQUIRE(qv_fb_builder_finish(b, root, &d, &n, &err) == QV_OK);
  qv_ipc_message m;
  QV_CHECK_EQ_INT(qv_ipc_decode_message(d, n, &m, &err), want_st);
  QV_CHECK_EQ_STR(err.message, want);
  qv_fb_builder_reset(b);
}

static qv_fb_ref raw_batch(qv_fb_builder *b, int64_t length, const int64_t *pairs, int64_t npairs,
                           int8_t codec) {
  uint8_t le[64];
  for (int64_t i = 0; i < 2 * npairs; i++)
    for (int k = 0; k < 8; k++) le[8 * i + k] = (uint8_t)((uint64_t)pairs[i] >> (8 * k));
  qv_fb_ref nodes = qv_fb_create_vector(b, le, npairs, 16, 8);
  qv_fb_ref comp = 0;
  if (codec >= 0) {
    qv_fb_start_table(b);
    qv_fb_add_u8(b, QV_FBS_BODY_COMPRESSION_CODEC, (uint8_t)codec, 0xFF);
    comp = qv_fb_end_table(b);
  }
  qv_fb_start_table(b);
  qv_fb_add_i64(b, QV_FBS_RECORD_BATCH_LENGTH, length, 0);
  qv_fb_add_ref(b, QV_FBS_RECORD_BATCH_NODES, nodes);
  qv_fb_add_ref(b, QV_FBS_RECORD_BATCH_COMPRESSION, comp);
  return qv_fb_end_table(b);
}

static void test_invalid_messages(void) {
  qv_fb_builder b;
  qv_fb_builder_init(&b);
  decode_raw_message(&b, QV_MSG_NONE, 0, 0, QV_EINVAL,
                     "message has no header (MessageHeader union is NONE)");
  decode_raw_message(&b, QV_MSG_TENSOR, empty_table(&b), 0, QV_ENOTSUP,
                     "Tensor messages are not supported");
  decode_raw_message(&b, QV_MSG_SPARSE_TENSOR, empty_table(&b), 0, QV_ENOTSUP,
                     "SparseTensor messages are not supported");
  decode_raw_message(&b, 17, empty_table(&b), 0, QV_ENOTSUP,
                     "unknown message header type 17 (newer format?)");
  decode_raw_message(&b, QV_MSG_RECORD_BATCH, 0, 0, QV_EINVAL,
                     "MessageHeader union tag 3 (RecordBatch) has no table");
  int64_t ok[2] = {5, 0};
  decode_raw_message(&b, QV_MSG_RECORD_BATCH, raw_batch(&b, 5, ok, 1, -1), -8, QV_EINVAL,
                     "negative body length -8");
  int64_t neg[4] = {5, 0, 5, -1};
  decode_raw_message(&b, QV_MSG_RECORD_BATCH, raw_batch(&b, 5, neg, 2, -1), 0, QV_EINVAL,
                     "record batch: field node 1 has negative null count -1");
  decode_raw_message(&b, QV_MSG_RECORD_BATCH, raw_batch(&b, -5, ok, 1, -1), 0, QV_EINVAL,
                     "record batch: negative length -5");
  decode_raw_message(&b, QV_MSG_RECORD_BATCH, raw_batch(&b, 5, ok, 1, 7), 0, QV_ENOTSUP,
                     "record batch: unknown compression codec 7");
  qv_fb_start_table(&b);
  qv_fb_add_i64(&b, QV_FBS_DICTIONARY_BATCH_ID, 3, 0);
  decode_raw_message(&b, QV_MSG_DICTIONARY_BATCH, qv_fb_end_table(&b), 0, QV_EINVAL,
                     "dictionary batch (id 3): missing data");
  qv_fb_builder_reset(&b);
}

/* A real schema message corrupted at the flatbuffer level. */
static void test_corrupt_golden_schema(void) {
  if (!have_golden()) return;
  char path[1400];
  snprintf(path, sizeof path, "%s/cpp-21.0.0/generated_primitive.stream", g_integration);
  int64_t n, meta, len;
  uint8_t *d = read_file(path, &n);
  QV_REQUIRE(d != NULL && frame(d, n, 0, &meta, &len));
  uint8_t *fb = d + meta;
  qv_ipc_message m;
  qv_error err;
  /* Truncated: the root offset points past the end. */
  QV_CHECK_EQ_INT(qv_ipc_decode_message(fb, 12, &m, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message, "flatbuffer: root table offset 16 out of bounds [0, 12)");
  /* vtable offset of the root table out of bounds. */
  uint32_t root = rd_u32(fb);
  uint8_t save[4];
  memcpy(save, fb + root, 4);
  fb[root] = 0x10;
  fb[root + 1] = 0x27; /* soffset 10000 -> vtable at 16 - 10000 */
  fb[root + 2] = 0;
  fb[root + 3] = 0;
  char want[256];
  snprintf(want, sizeof want,
           "flatbuffer: table Message at offset 16: vtable offset -9984 out of bounds [0, %" PRId64
           ")",
           len);
  QV_CHECK_EQ_INT(qv_ipc_decode_message(fb, len, &m, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message, want);
  memcpy(fb + root, save, 4);
  QV_CHECK_EQ_INT(qv_ipc_decode_message(fb, len, &m, &err), QV_OK);
  qv_ipc_message_reset(&m);
  free(d);
}

/* ---- robustness: flips and truncations never crash ---------------------- */

static int64_t g_decodes, g_ok;

static void fuzz_stream(const char *dir, const char *name) {
  if (strstr(dir, "cpp-21.0.0") == NULL) return;
  char path[1600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int64_t n, meta, len;
  uint8_t *d = read_file(path, &n);
  QV_REQUIRE(d != NULL && frame(d, n, 0, &meta, &len));
  uint8_t *fb = malloc((size_t)len);
  static const uint8_t values[] = {0x00, 0xFF, 0x80, 0x7F, 0x01};
  for (int64_t i = 0; i < len; i++) {
    for (size_t k = 0; k < sizeof values + 1; k++) {
      memcpy(fb, d + meta, (size_t)len);
      fb[i] = k < sizeof values ? values[k] : (uint8_t)(fb[i] ^ 0x04);
      qv_ipc_message m;
      qv_error err;
      if (qv_ipc_decode_message(fb, len, &m, &err) == QV_OK) g_ok++;
      qv_ipc_message_reset(&m);
      g_decodes++;
    }
    /* Truncated copies (in a fresh allocation so ASan sees overreads). */
    uint8_t *t = malloc((size_t)(i > 0 ? i : 1));
    memcpy(t, d + meta, (size_t)i);
    qv_ipc_message m;
    qv_error err;
    QV_CHECK(qv_ipc_decode_message(t, i, &m, &err) != QV_OK || i >= len - 8);
    qv_ipc_message_reset(&m);
    free(t);
    g_decodes++;
  }
  free(fb);
  free(d);
}

static void test_flip_and_truncate_golden(void) {
  if (!have_golden()) return;
  g_decodes = g_ok = 0;
  for_each_golden(".stream", fuzz_stream);
  QV_CHECK(g_decodes > 10000);
  fprintf(stderr, "flip/truncate: %" PRId64 " decodes, %" PRId64 " accepted\n", g_decodes, g_ok);
}

int main(void) {
  QV_RUN(test_golden_streams_decode);
  QV_RUN(test_golden_schemas);
  QV_RUN(test_golden_footers);
  QV_RUN(test_round_trip_all_types);
  QV_RUN(test_round_trip_golden_schemas);
  QV_RUN(test_round_trip_batches_and_footer);
  QV_RUN(test_invalid_types);
  QV_RUN(test_invalid_messages);
  QV_RUN(test_corrupt_golden_schema);
  QV_RUN(test_flip_and_truncate_golden);
  return QV_TEST_END();
}
