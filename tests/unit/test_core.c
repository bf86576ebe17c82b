/* test_core.c — unit tests for the core layer: errors, buffers (heap,
 * views, mapped files), bitmaps, types, metadata, arrays and slices. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quiver/array.h"
#include "qv_test.h"

static void test_error_text(void) {
  qv_error err;
  QV_CHECK_EQ_INT(qv_error_set(&err, QV_EINVAL, "bad %d", 3), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message, "bad 3");
  qv_error_prefix(&err, QV_EINVAL, "message %d: ", 7);
  QV_CHECK_EQ_STR(err.message, "message 7: bad 3");
  QV_CHECK_EQ_INT(qv_error_set(NULL, QV_EIO, "x"), QV_EIO);
  QV_CHECK_EQ_STR(qv_status_name(QV_ENOTSUP), "unsupported");
}

static void test_buffers(void) {
  qv_error err;
  qv_buffer *b = NULL, *v = NULL, *vv = NULL;
  QV_REQUIRE(qv_buffer_alloc(10, &b, &err) == QV_OK);
  QV_CHECK(((uintptr_t)b->data % QV_BUFFER_ALIGNMENT) == 0);
  for (int i = 0; i < 10; i++) QV_CHECK_EQ_INT(b->data[i], 0);
  QV_CHECK(qv_buffer_append(b, "hello", 5, &err) == QV_OK);
  QV_CHECK_EQ_INT(b->size, 15);
  QV_CHECK(memcmp(b->data + 10, "hello", 5) == 0);
  for (int i = 0; i < QV_BUFFER_PADDING; i++) QV_CHECK_EQ_INT(b->data[b->capacity_ + i], 0);
  QV_REQUIRE(qv_buffer_view(b, 10, 5, &v, &err) == QV_OK);
  QV_CHECK(memcmp(v->data, "hello", 5) == 0);
  QV_REQUIRE(qv_buffer_view(v, 1, 3, &vv, &err) == QV_OK);
  QV_CHECK(memcmp(vv->data, "ell", 3) == 0);
  QV_CHECK_EQ_INT(qv_buffer_view(v, 3, 3, &vv, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message, "range [3, 3+3) is outside a buffer of 5 bytes");
  /* A shared buffer cannot be resized. */
  QV_CHECK_EQ_INT(qv_buffer_resize(b, 100, &err), QV_EARG);
  qv_buffer_unref(b);
  qv_buffer_unref(v);
  QV_CHECK(memcmp(vv->data, "ell", 3) == 0); /* still alive through the view */
  qv_buffer_unref(vv);
  qv_buffer_unref(NULL);
  QV_CHECK_EQ_INT(qv_buffer_alloc(-1, &b, &err), QV_ENOMEM);
}

static void test_map_file(void) {
  char path[] = "/tmp/qv_test_core_XXXXXX";
  int fd = mkstemp(path);
  QV_REQUIRE(fd >= 0);
  QV_REQUIRE(write(fd, "ARROW1", 6) == 6);
  close(fd);
  qv_error err;
  qv_buffer *m = NULL;
  qv_file_identity id;
  QV_REQUIRE(qv_buffer_map_file(path, &m, &id, &err) == QV_OK);
  QV_CHECK_EQ_INT(m->size, 6);
  QV_CHECK_EQ_INT(id.size, 6);
  QV_CHECK(qv_buffer_is_mapped(m));
  QV_CHECK(memcmp(m->data, "ARROW1", 6) == 0);
  qv_buffer_unref(m);
  unlink(path);
  QV_CHECK_EQ_INT(qv_buffer_map_file("/nonexistent/x", &m, NULL, &err), QV_EIO);
  QV_CHECK_EQ_STR(err.message, "cannot open '/nonexistent/x': No such file or directory");
  QV_CHECK_EQ_INT(qv_buffer_map_file("/tmp", &m, NULL, &err), QV_EARG);
}

static void test_bitmaps(void) {
  uint8_t bits[32] = {0};
  for (int i = 0; i < 256; i += 3) qv_bit_set(bits, i);
  int64_t expect = 0;
  for (int i = 5; i < 200; i++) expect += (i % 3 == 0);
  QV_CHECK_EQ_INT(qv_bitmap_count(bits, 5, 195), expect);
  uint8_t dst[32] = {0};
  qv_bitmap_copy(dst, 3, bits, 7, 100);
  for (int i = 0; i < 100; i++) QV_CHECK_EQ_INT(qv_bit_get(dst, 3 + i), qv_bit_get(bits, 7 + i));
}

static void test_types(void) {
  qv_type *s = qv_type_new(QV_STRUCT);
  QV_REQUIRE(s != NULL);
  QV_CHECK(qv_type_add_child(s, "a", true, qv_type_new(QV_INT32), NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(s, "t", false, qv_type_timestamp(QV_MILLI, "UTC"), NULL, NULL) ==
           QV_OK);
  QV_CHECK(qv_type_add_child(s, "l", true, qv_type_list_of(QV_LIST, qv_type_new(QV_STRING)), NULL,
                             NULL) == QV_OK);
  char buf[256];
  qv_type_to_string(s, buf, sizeof buf);
  QV_CHECK_EQ_STR(buf,
                  "struct<a: int32, t: timestamp[ms, tz=UTC] not null, l: list<item: string>>");
  qv_schema *sch = qv_schema_new(s);
  QV_CHECK_EQ_INT(qv_schema_find(sch, "l"), 2);
  QV_CHECK_EQ_INT(qv_schema_find(sch, "zz"), -1);
  qv_type *t2 = qv_type_new(QV_STRUCT);
  QV_CHECK(qv_type_add_child(t2, "a", true, qv_type_new(QV_INT32), NULL, NULL) == QV_OK);
  QV_CHECK(!qv_type_equals(s, t2, true));
  qv_type_unref(t2);
  QV_CHECK(qv_type_equals(s, s, true));
  qv_metadata md = {0};
  QV_CHECK(qv_metadata_append(&md, "k", -1, "v1", -1, NULL) == QV_OK);
  QV_CHECK(qv_metadata_append(&md, "k", -1, "v2", -1, NULL) == QV_OK);
  QV_CHECK_EQ_STR(qv_metadata_find(&md, "k")->value, "v2");
  qv_metadata cp;
  QV_CHECK(qv_metadata_copy(&cp, &md, NULL) == QV_OK);
  QV_CHECK(qv_metadata_equals(&cp, &md));
  qv_metadata_reset(&cp);
  qv_metadata_reset(&md);
  qv_schema_unref(sch);
}

static void test_array_slice(void) {
  qv_type *t = qv_type_new(QV_INT32);
  qv_array *a = qv_array_new(t, 2, 0);
  qv_type_unref(t);
  QV_REQUIRE(a != NULL);
  qv_buffer *validity, *values;
  QV_CHECK(qv_buffer_alloc(2, &validity, NULL) == QV_OK);
  QV_CHECK(qv_buffer_alloc(40, &values, NULL) == QV_OK);
  for (int i = 0; i < 10; i++) {
    if (i % 2) qv_bit_set(validity->data, i);
    ((int32_t *)values->data)[i] = i;
  }
  a->buffers[0] = validity;
  a->buffers[1] = values;
  a->length = 10;
  QV_CHECK_EQ_INT(qv_array_null_count(a), 5);
  qv_array *s = NULL;
  qv_error err;
  QV_REQUIRE(qv_array_slice(a, 3, 4, &s, &err) == QV_OK);
  QV_CHECK_EQ_INT(s->offset, 3);
  QV_CHECK_EQ_INT(qv_array_null_count(s), 2);
  QV_CHECK(qv_array_is_valid(s, 0));
  QV_CHECK(!qv_array_is_valid(s, 1));
  QV_CHECK_EQ_INT(qv_array_slice(a, 8, 4, &s, &err), QV_ERANGE);
  QV_CHECK_EQ_STR(err.message, "slice [8, 12) is outside an array of length 10");
  qv_array_unref(a);
  QV_CHECK_EQ_INT(((int32_t *)s->buffers[1]->data)[s->offset], 3);
  qv_array_unref(s);
}

int main(void) {
  QV_RUN(test_error_text);
  QV_RUN(test_buffers);
  QV_RUN(test_map_file);
  QV_RUN(test_bitmaps);
  QV_RUN(test_types);
  QV_RUN(test_array_slice);
  return QV_TEST_END();
}
