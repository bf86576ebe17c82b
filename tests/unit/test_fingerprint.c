/*
 * test_fingerprint.c — quiver/fingerprint.h: the documented examples pinned
 * to exact values (the same values tests/python/test_fingerprint.py gets
 * from its independent Python implementation of the encoding, and that
 * docs/fingerprints.md shows), argument rules and their exact error
 * messages, validation, huggingface metadata and file identity. Runs under
 * ASan/UBSan with the rest of the unit tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quiver/fingerprint.h"
#include "qv_test.h"

#define PREV "0123456789abcdef"

static qv_fingerprint_args *new_args(void) {
  qv_fingerprint_args *a = NULL;
  if (qv_fingerprint_args_new(&a, NULL) != QV_OK) return NULL;
  return a;
}

/* update(PREV, transform, args) as a string (static buffer). */
static const char *update(const char *transform, const qv_fingerprint_args *a) {
  static char out[QV_FINGERPRINT_SIZE];
  qv_error err;
  if (qv_fingerprint_update(PREV, transform, a, out, &err) != QV_OK) {
    fprintf(stderr, "update failed: %s\n", err.message);
    return "(error)";
  }
  return out;
}

/* The examples of docs/fingerprints.md. */
static void test_documented_examples(void) {
  qv_fingerprint_args *a = new_args();
  QV_REQUIRE(a != NULL);
  QV_CHECK_EQ_INT(qv_fingerprint_arg_int(a, "seed", 42, NULL), QV_OK);
  QV_CHECK_EQ_STR(update("quiver.shuffle", a), "3501711daa332773");
  qv_fingerprint_args_free(a);

  a = new_args();
  const int64_t idx[] = {0, 1, 2};
  QV_CHECK_EQ_INT(qv_fingerprint_arg_int_array(a, "indices", idx, 3, NULL), QV_OK);
  QV_CHECK_EQ_STR(update("quiver.select", a), "1a7a4a94262f541b");
  qv_fingerprint_args_free(a);
  /* The same indices as uint64: same value, same fingerprint. */
  a = new_args();
  const uint64_t uidx[] = {0, 1, 2};
  QV_CHECK_EQ_INT(qv_fingerprint_arg_uint_array(a, "indices", uidx, 3, NULL), QV_OK);
  QV_CHECK_EQ_STR(update("quiver.select", a), "1a7a4a94262f541b");
  qv_fingerprint_args_free(a);

  QV_CHECK_EQ_STR(update("quiver.flatten_indices", NULL), "243848191c4bb5f2");
  a = new_args();
  QV_CHECK_EQ_STR(update("quiver.flatten_indices", a), "243848191c4bb5f2");
  qv_fingerprint_args_free(a);

  /* Added in a different order than the sorted encoding. */
  a = new_args();
  qv_fingerprint_arg_str(a, "null_placement", "at_end", NULL);
  qv_fingerprint_arg_begin_list(a, "reverse", NULL);
  qv_fingerprint_arg_bool(a, NULL, true, NULL);
  qv_fingerprint_arg_bool(a, NULL, false, NULL);
  qv_fingerprint_arg_end(a, NULL);
  qv_fingerprint_arg_begin_list(a, "column_names", NULL);
  qv_fingerprint_arg_str(a, NULL, "label", NULL);
  qv_fingerprint_arg_str(a, NULL, "text", NULL);
  QV_CHECK_EQ_INT(qv_fingerprint_arg_end(a, NULL), QV_OK);
  QV_CHECK_EQ_STR(update("quiver.sort", a), "83f6e7c2e17cacad");
  qv_fingerprint_args_free(a);

  a = new_args();
  qv_fingerprint_arg_begin_dict(a, "fn_kwargs", NULL);
  qv_fingerprint_arg_float(a, "p", 0.5, NULL);
  qv_fingerprint_arg_int(a, "max_len", 128, NULL);
  qv_fingerprint_arg_end(a, NULL);
  qv_fingerprint_arg_uint(a, "batch_size", 1000, NULL);
  QV_CHECK_EQ_INT(qv_fingerprint_arg_bool(a, "batched", true, NULL), QV_OK);
  QV_CHECK_EQ_STR(update("tokenize@2", a), "8f1e55523d6a78e0");
  /* args are not consumed: the same set gives the same print again. */
  QV_CHECK_EQ_STR(update("tokenize@2", a), "8f1e55523d6a78e0");
  qv_fingerprint_args_free(a);

  char out[QV_FINGERPRINT_SIZE];
  QV_CHECK_EQ_INT(
      qv_fingerprint_from_identity("/data/train.arrow", 1024, 1700000000123456789ll, out, NULL),
      QV_OK);
  QV_CHECK_EQ_STR(out, "c92cb6f2166c3c04");
}

/* Each input changes the result. */
static void test_sensitivity(void) {
  char base[QV_FINGERPRINT_SIZE], other[QV_FINGERPRINT_SIZE];
  qv_fingerprint_args *a = new_args();
  qv_fingerprint_arg_int(a, "seed", 42, NULL);
  QV_CHECK_EQ_INT(qv_fingerprint_update(PREV, "t", a, base, NULL), QV_OK);
  QV_CHECK_EQ_INT(qv_fingerprint_update("0123456789abcdeF", "t", a, other, NULL), QV_OK);
  QV_CHECK(strcmp(base, other) != 0);
  QV_CHECK_EQ_INT(qv_fingerprint_update(PREV, "u", a, other, NULL), QV_OK);
  QV_CHECK(strcmp(base, other) != 0);
  qv_fingerprint_args_free(a);

  a = new_args();
  qv_fingerprint_arg_int(a, "seeD", 42, NULL);
  QV_CHECK_EQ_INT(qv_fingerprint_update(PREV, "t", a, other, NULL), QV_OK);
  QV_CHECK(strcmp(base, other) != 0);
  qv_fingerprint_args_free(a);

  a = new_args();
  qv_fingerprint_arg_float(a, "seed", 42.0, NULL);
  QV_CHECK_EQ_INT(qv_fingerprint_update(PREV, "t", a, other, NULL), QV_OK);
  QV_CHECK(strcmp(base, other) != 0);
  qv_fingerprint_args_free(a);

  a = new_args();
  qv_fingerprint_arg_int(a, "seed", -42, NULL);
  QV_CHECK_EQ_INT(qv_fingerprint_update(PREV, "t", a, other, NULL), QV_OK);
  QV_CHECK(strcmp(base, other) != 0);
  qv_fingerprint_args_free(a);

  /* Same value as uint64: equal by design. */
  a = new_args();
  qv_fingerprint_arg_uint(a, "seed", 42, NULL);
  QV_CHECK_EQ_INT(qv_fingerprint_update(PREV, "t", a, other, NULL), QV_OK);
  QV_CHECK_EQ_STR(other, base);
  qv_fingerprint_args_free(a);

  /* INT64_MIN encodes its magnitude without overflow (UBSan checks). */
  a = new_args();
  QV_CHECK_EQ_INT(qv_fingerprint_arg_int(a, "seed", INT64_MIN, NULL), QV_OK);
  QV_CHECK_EQ_INT(qv_fingerprint_update(PREV, "t", a, other, NULL), QV_OK);
  qv_fingerprint_args_free(a);

  /* Strings with embedded NUL differ from their prefix; bytes from strings. */
  char s1[QV_FINGERPRINT_SIZE], s2[QV_FINGERPRINT_SIZE], s3[QV_FINGERPRINT_SIZE];
  a = new_args();
  qv_fingerprint_arg_strn(a, "s", "ab\0c", 4, NULL);
  QV_CHECK(qv_fingerprint_update(PREV, "t", a, s1, NULL) == QV_OK);
  qv_fingerprint_args_free(a);
  a = new_args();
  qv_fingerprint_arg_str(a, "s", "ab", NULL);
  QV_CHECK(qv_fingerprint_update(PREV, "t", a, s2, NULL) == QV_OK);
  qv_fingerprint_args_free(a);
  a = new_args();
  qv_fingerprint_arg_bytes(a, "s", "ab", 2, NULL);
  QV_CHECK(qv_fingerprint_update(PREV, "t", a, s3, NULL) == QV_OK);
  qv_fingerprint_args_free(a);
  QV_CHECK(strcmp(s1, s2) != 0 && strcmp(s2, s3) != 0 && strcmp(s1, s3) != 0);
}

static void test_argument_errors(void) {
  qv_error err;
  qv_fingerprint_args *a = new_args();
  char out[QV_FINGERPRINT_SIZE];
  QV_CHECK_EQ_INT(qv_fingerprint_arg_int(a, NULL, 1, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "fingerprint argument '(NULL)': a dictionary entry needs a key");
  /* Sticky: later calls and the update repeat the first error. */
  QV_CHECK_EQ_INT(qv_fingerprint_arg_int(a, "ok", 1, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "fingerprint argument '(NULL)': a dictionary entry needs a key");
  QV_CHECK_EQ_INT(qv_fingerprint_update(PREV, "t", a, out, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "fingerprint argument '(NULL)': a dictionary entry needs a key");
  qv_fingerprint_args_free(a);

  a = new_args();
  QV_CHECK_EQ_INT(qv_fingerprint_arg_str(a, "s", NULL, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "fingerprint argument 's': string is NULL (use _none)");
  qv_fingerprint_args_free(a);

  a = new_args();
  QV_CHECK_EQ_INT(qv_fingerprint_arg_int_array(a, "i", NULL, 3, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "fingerprint argument 'i': array values are NULL for length 3");
  qv_fingerprint_args_free(a);
  a = new_args();
  const uint64_t one = 1;
  QV_CHECK_EQ_INT(qv_fingerprint_arg_uint_array(a, "u", &one, -1, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "fingerprint argument 'u': array length -1 is negative");
  qv_fingerprint_args_free(a);

  a = new_args();
  QV_CHECK_EQ_INT(qv_fingerprint_arg_int_array(a, "i", NULL, 0, &err), QV_OK);
  QV_CHECK_EQ_INT(qv_fingerprint_arg_begin_dict(a, "d", &err), QV_OK);
  QV_CHECK_EQ_INT(qv_fingerprint_arg_none(a, "x", &err), QV_OK);
  QV_CHECK_EQ_INT(qv_fingerprint_arg_none(a, "x", &err), QV_OK);
  QV_CHECK_EQ_INT(qv_fingerprint_arg_end(a, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "fingerprint argument 'x' given twice");
  qv_fingerprint_args_free(a);

  /* Open containers are freed by args_free (ASan checks for leaks). */
  a = new_args();
  qv_fingerprint_arg_begin_list(a, "l", NULL);
  qv_fingerprint_arg_begin_dict(a, NULL, NULL);
  qv_fingerprint_arg_str(a, "k", "v", NULL);
  QV_CHECK_EQ_INT(qv_fingerprint_update(PREV, "t", a, out, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message,
                  "fingerprint update: 2 list(s)/dictionaries of the "
                  "arguments are still open");
  qv_fingerprint_args_free(a);

  a = new_args();
  for (int d = 0; d < QV_FINGERPRINT_MAX_DEPTH; d++)
    QV_CHECK_EQ_INT(qv_fingerprint_arg_begin_list(a, d == 0 ? "l" : NULL, NULL), QV_OK);
  QV_CHECK_EQ_INT(qv_fingerprint_arg_begin_list(a, NULL, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message,
                  "fingerprint argument '(list element)': nesting deeper than 64 levels");
  qv_fingerprint_args_free(a);

  QV_CHECK_EQ_INT(qv_fingerprint_update(PREV, "", NULL, out, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "fingerprint update: the transform name is empty");
  QV_CHECK_EQ_INT(qv_fingerprint_update("a|b", "t", NULL, out, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message,
                  "fingerprint update: previous invalid fingerprint 'a|b': character "
                  "'|' at byte 1 is not allowed (none of <>:/\\|?* or control "
                  "characters)");
}

static void test_validate(void) {
  qv_error err;
  QV_CHECK_EQ_INT(qv_fingerprint_validate("3501711daa332773", NULL), QV_OK);
  QV_CHECK_EQ_INT(qv_fingerprint_validate("any name-1.2_x", NULL), QV_OK);
  QV_CHECK_EQ_INT(qv_fingerprint_validate(NULL, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "invalid fingerprint '': it must be a non-empty string");
  char long_fp[100];
  memset(long_fp, 'f', 99);
  long_fp[99] = '\0';
  QV_CHECK_EQ_INT(qv_fingerprint_validate(long_fp, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message,
                  "invalid fingerprint '"
                  "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
                  "...': 99 bytes, at most 64");
  QV_CHECK_EQ_INT(qv_fingerprint_validate("a\x7f", &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message,
                  "invalid fingerprint 'a\\x7f': character '\\x7f' at byte 1 is not "
                  "allowed (none of <>:/\\|?* or control characters)");
}

static void test_metadata(void) {
  qv_metadata md = {0};
  char out[QV_FINGERPRINT_SIZE];
  bool found = true;
  qv_error err;
  QV_CHECK_EQ_INT(qv_fingerprint_from_metadata(NULL, out, &found, NULL), QV_OK);
  QV_CHECK(!found);
  const char *hf = "{\"info\": {\"features\": {}}, \"fingerprint\": \"0a1b2c3d4e5f6071\"}";
  QV_REQUIRE(qv_metadata_append(&md, "huggingface", 11, hf, (int64_t)strlen(hf), NULL) == QV_OK);
  QV_CHECK_EQ_INT(qv_fingerprint_from_metadata(&md, out, &found, NULL), QV_OK);
  QV_CHECK(found);
  QV_CHECK_EQ_STR(out, "0a1b2c3d4e5f6071");
  /* The last pair with the key counts (as qv_metadata_find). */
  const char *bad = "{\"fingerprint\": \"x\\\\y\"}";
  QV_REQUIRE(qv_metadata_append(&md, "huggingface", 11, bad, (int64_t)strlen(bad), NULL) == QV_OK);
  QV_CHECK_EQ_INT(qv_fingerprint_from_metadata(&md, out, &found, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "schema metadata 'huggingface': invalid fingerprint 'x\\y': character "
                  "'\\' at byte 1 is not allowed (none of <>:/\\|?* or control characters)");
  qv_metadata_reset(&md);
  /* Embedded NUL in the JSON bytes is an error, not a truncation. */
  QV_REQUIRE(qv_metadata_append(&md, "huggingface", 11, "{}\0x", 4, NULL) == QV_OK);
  QV_CHECK_EQ_INT(qv_fingerprint_from_metadata(&md, out, &found, &err), QV_EINVAL);
  QV_CHECK(strncmp(err.message, "schema metadata 'huggingface': invalid JSON at line 1", 53) == 0);
  qv_metadata_reset(&md);
}

static void test_of_file(void) {
  char dir[] = "/tmp/qv_fp_XXXXXX";
  QV_REQUIRE(mkdtemp(dir) != NULL);
  char path[256];
  snprintf(path, sizeof path, "%s/data.arrow", dir);
  FILE *f = fopen(path, "wb");
  QV_REQUIRE(f != NULL);
  fputs("hello", f);
  fclose(f);
  struct stat st;
  QV_REQUIRE(stat(path, &st) == 0);
  int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  char *abs = realpath(path, NULL);
  QV_REQUIRE(abs != NULL);

  char got[QV_FINGERPRINT_SIZE], want[QV_FINGERPRINT_SIZE];
  QV_CHECK_EQ_INT(qv_fingerprint_of_file(path, NULL, NULL, got, NULL), QV_OK);
  QV_CHECK_EQ_INT(qv_fingerprint_from_identity(abs, 5, mtime, want, NULL), QV_OK);
  QV_CHECK_EQ_STR(got, want);
  qv_file_identity id = {.size = 5, .mtime_ns = 1};
  QV_CHECK_EQ_INT(qv_fingerprint_of_file(path, NULL, &id, got, NULL), QV_OK);
  QV_CHECK_EQ_INT(qv_fingerprint_from_identity(abs, 5, 1, want, NULL), QV_OK);
  QV_CHECK_EQ_STR(got, want);

  qv_error err;
  char missing[300];
  snprintf(missing, sizeof missing, "%s/none.arrow", dir);
  QV_CHECK_EQ_INT(qv_fingerprint_of_file(missing, NULL, NULL, got, &err), QV_EIO);
  char expect[600];
  snprintf(expect, sizeof expect,
           "file fingerprint: cannot resolve '%s': No such file or directory", missing);
  QV_CHECK_EQ_STR(err.message, expect);
  free(abs);
  unlink(path);
  rmdir(dir);
}

/* datasets' builder split fingerprint. The expected digest is the one
 * datasets 5.2.0 gave load_dataset("json", ...)["train"] for that cache
 * directory (tests/python/test_hf_cache.py checks it live); the pickle
 * framing below is what dill writes for short strings. */
static void test_builder_split(void) {
  char fp[QV_FINGERPRINT_SIZE];
  qv_error err;
  QV_REQUIRE(qv_fingerprint_builder_split(
                 "json/default-6bfcf3862e515771/0.0.0/"
                 "d78d59350287f412d1b9bba3fc43382481557d01d4e6863b77495a979d96b0d2",
                 "train", fp, &err) == QV_OK);
  QV_CHECK_EQ_STR(fp, "a80258735a1d5318");
  QV_CHECK(qv_fingerprint_builder_split("", "train", fp, &err) == QV_EARG);
  QV_CHECK(qv_fingerprint_builder_split("a/b/c", "", fp, &err) == QV_EARG);
}

int main(void) {
  QV_RUN(test_documented_examples);
  QV_RUN(test_sensitivity);
  QV_RUN(test_argument_errors);
  QV_RUN(test_validate);
  QV_RUN(test_metadata);
  QV_RUN(test_of_file);
  QV_RUN(test_builder_split);
  return QV_TEST_END();
}
