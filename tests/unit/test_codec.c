/* test_codec.c — unit tests for src/ipc/codec.c: IPC buffer compression
 * round trips (LZ4 frame, ZSTD), the -1 "stored uncompressed" prefix, the
 * max_alloc bound, frames whose decoded size differs from the prefix, and
 * prefix decoding (only the first bytes of a frame).
 * Frames are checked against the codec libraries directly as oracles. */
#include <lz4frame.h>
#include <string.h>
#include <zstd.h>

#include "ipc/ipc_internal.h"
#include "qv_test.h"

static const qv_compression codecs[] = {QV_COMPRESSION_LZ4_FRAME, QV_COMPRESSION_ZSTD};
static const char *codec_names[] = {"LZ4_FRAME", "ZSTD"};

static void fill(uint8_t *p, int64_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (int64_t i = 0; i < n; i++) {
    x = x * 1103515245u + 12345u;
    /* mostly compressible: small alphabet with runs */
    p[i] = (uint8_t)((i % 97 < 50) ? 'a' + (x >> 28) : (x >> 16));
  }
}

static qv_buffer *wrap_copy(const void *data, int64_t n) {
  qv_buffer *b = NULL;
  qv_error err;
  if (qv_buffer_alloc(n, &b, &err) != QV_OK) return NULL;
  if (n) memcpy(b->data, data, (size_t)n);
  return b;
}

static int64_t le64(const uint8_t *p) {
  int64_t v;
  memcpy(&v, p, 8);
  return v;
}

static void put_le64(uint8_t *p, int64_t v) { memcpy(p, &v, 8); }

static void test_round_trip(void) {
  const int64_t sizes[] = {1, 7, 1000, 100000, 1 << 20};
  for (int c = 0; c < 2; c++) {
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      int64_t n = sizes[s];
      uint8_t *src = malloc((size_t)n);
      fill(src, n, (uint32_t)(s + 1));
      qv_error err;
      qv_buffer *comp = NULL, *back = NULL;
      QV_REQUIRE(qv_ipc_compress(codecs[c], 0, src, n, &comp, &err) == QV_OK);
      QV_CHECK_EQ_INT(le64(comp->data), n);
      /* Oracle: the codec library decodes the frame to the input. */
      uint8_t *dec = malloc((size_t)n);
      if (codecs[c] == QV_COMPRESSION_ZSTD) {
        size_t got = ZSTD_decompress(dec, (size_t)n, comp->data + 8, (size_t)comp->size - 8);
        QV_CHECK(!ZSTD_isError(got) && got == (size_t)n);
      } else {
        LZ4F_dctx *d = NULL;
        LZ4F_createDecompressionContext(&d, LZ4F_VERSION);
        size_t out = (size_t)n, in = (size_t)comp->size - 8;
        size_t rc = LZ4F_decompress(d, dec, &out, comp->data + 8, &in, NULL);
        QV_CHECK(rc == 0 && out == (size_t)n);
        LZ4F_freeDecompressionContext(d);
      }
      QV_CHECK(memcmp(dec, src, (size_t)n) == 0);
      QV_REQUIRE(qv_ipc_decompress(codecs[c], comp, 0, &back, &err) == QV_OK);
      QV_CHECK_EQ_INT(back->size, n);
      QV_CHECK(memcmp(back->data, src, (size_t)n) == 0);
      qv_buffer_unref(comp);
      qv_buffer_unref(back);
      free(dec);
      free(src);
    }
  }
}

static void test_empty(void) {
  qv_error err;
  qv_buffer *comp = NULL, *back = NULL;
  QV_REQUIRE(qv_ipc_compress(QV_COMPRESSION_ZSTD, 0, "", 0, &comp, &err) == QV_OK);
  QV_CHECK_EQ_INT(comp->size, 0);
  QV_REQUIRE(qv_ipc_decompress(QV_COMPRESSION_ZSTD, comp, 0, &back, &err) == QV_OK);
  QV_CHECK_EQ_INT(back->size, 0);
  qv_buffer_unref(comp);
  qv_buffer_unref(back);
  /* A frame of zero bytes with an explicit 0 prefix. */
  for (int c = 0; c < 2; c++) {
    uint8_t frame[64];
    size_t n;
    if (codecs[c] == QV_COMPRESSION_ZSTD) n = ZSTD_compress(frame + 8, sizeof frame - 8, "", 0, 1);
    else n = LZ4F_compressFrame(frame + 8, sizeof frame - 8, "", 0, NULL);
    put_le64(frame, 0);
    comp = wrap_copy(frame, (int64_t)n + 8);
    QV_REQUIRE(qv_ipc_decompress(codecs[c], comp, 0, &back, &err) == QV_OK);
    QV_CHECK_EQ_INT(back->size, 0);
    qv_buffer_unref(comp);
    qv_buffer_unref(back);
  }
}

static void test_uncompressed_prefix(void) {
  uint8_t raw[8 + 11];
  put_le64(raw, -1);
  memcpy(raw + 8, "hello world", 11);
  qv_buffer *in = wrap_copy(raw, sizeof raw), *out = NULL;
  qv_error err;
  for (int c = 0; c < 2; c++) {
    QV_REQUIRE(qv_ipc_decompress(codecs[c], in, 0, &out, &err) == QV_OK);
    QV_CHECK_EQ_INT(out->size, 11);
    QV_CHECK(out->data == in->data + 8); /* zero copy */
    QV_CHECK(memcmp(out->data, "hello world", 11) == 0);
    qv_buffer_unref(out);
  }
  qv_buffer_unref(in);
}

static void test_bad_prefix(void) {
  qv_error err;
  qv_buffer *out = NULL;
  qv_buffer *shortb = wrap_copy("abc", 3);
  QV_CHECK_EQ_INT(qv_ipc_decompress(QV_COMPRESSION_ZSTD, shortb, 0, &out, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "ZSTD: compressed buffer of 3 bytes is shorter than its "
                  "8-byte length prefix");
  qv_buffer_unref(shortb);
  uint8_t raw[16] = {0};
  put_le64(raw, -5);
  qv_buffer *neg = wrap_copy(raw, 16);
  QV_CHECK_EQ_INT(qv_ipc_decompress(QV_COMPRESSION_LZ4_FRAME, neg, 0, &out, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message, "LZ4_FRAME: negative uncompressed length -5");
  qv_buffer_unref(neg);
  QV_CHECK(out == NULL);
}

static void test_max_alloc(void) {
  uint8_t src[1000];
  fill(src, sizeof src, 9);
  for (int c = 0; c < 2; c++) {
    qv_error err;
    qv_buffer *comp = NULL, *out = NULL;
    QV_REQUIRE(qv_ipc_compress(codecs[c], 0, src, 1000, &comp, &err) == QV_OK);
    QV_CHECK_EQ_INT(qv_ipc_decompress(codecs[c], comp, 999, &out, &err), QV_ENOMEM);
    char expect[200];
    snprintf(expect, sizeof expect,
             "%s: uncompressed length 1000 exceeds the limit of 999 bytes "
             "(max_alloc)",
             codec_names[c]);
    QV_CHECK_EQ_STR(err.message, expect);
    QV_CHECK(out == NULL);
    QV_CHECK_EQ_INT(qv_ipc_decompress(codecs[c], comp, 1000, &out, &err), QV_OK);
    qv_buffer_unref(out);
    /* A huge declared length never reaches the allocator. */
    put_le64(comp->data, (int64_t)1 << 62);
    QV_CHECK_EQ_INT(qv_ipc_decompress(codecs[c], comp, 0, &out, &err), QV_ENOMEM);
    snprintf(expect, sizeof expect,
             "%s: uncompressed length 4611686018427387904 exceeds the limit "
             "of 2147483648 bytes (max_alloc)",
             codec_names[c]);
    QV_CHECK_EQ_STR(err.message, expect);
    qv_buffer_unref(comp);
  }
}

static void test_size_mismatch(void) {
  uint8_t src[100];
  fill(src, sizeof src, 3);
  for (int c = 0; c < 2; c++) {
    qv_error err;
    qv_buffer *comp = NULL, *out = NULL;
    char expect[200];
    QV_REQUIRE(qv_ipc_compress(codecs[c], 0, src, 100, &comp, &err) == QV_OK);
    /* Declared shorter than the frame decodes to: never written past. */
    put_le64(comp->data, 99);
    QV_CHECK_EQ_INT(qv_ipc_decompress(codecs[c], comp, 0, &out, &err), QV_EINVAL);
    snprintf(expect, sizeof expect, "%s: frame decodes to more than the declared 99 bytes",
             codec_names[c]);
    QV_CHECK_EQ_STR(err.message, expect);
    /* Declared longer. */
    put_le64(comp->data, 101);
    QV_CHECK_EQ_INT(qv_ipc_decompress(codecs[c], comp, 0, &out, &err), QV_EINVAL);
    snprintf(expect, sizeof expect, "%s: frame decodes to 100 bytes but 101 were declared",
             codec_names[c]);
    QV_CHECK_EQ_STR(err.message, expect);
    QV_CHECK(out == NULL);
    qv_buffer_unref(comp);
  }
}

static void test_corrupt_frames(void) {
  uint8_t src[5000];
  fill(src, sizeof src, 5);
  qv_error err;
  qv_buffer *comp = NULL, *out = NULL;
  /* Garbage instead of a frame. */
  uint8_t junk[24];
  put_le64(junk, 16);
  memset(junk + 8, 0x5A, 16);
  qv_buffer *j = wrap_copy(junk, sizeof junk);
  QV_CHECK_EQ_INT(qv_ipc_decompress(QV_COMPRESSION_ZSTD, j, 0, &out, &err), QV_EINVAL);
  QV_CHECK(strncmp(err.message, "ZSTD: corrupt frame: ", 21) == 0);
  QV_CHECK_EQ_INT(qv_ipc_decompress(QV_COMPRESSION_LZ4_FRAME, j, 0, &out, &err), QV_EINVAL);
  QV_CHECK(strncmp(err.message, "LZ4_FRAME: corrupt frame: ", 26) == 0);
  qv_buffer_unref(j);
  /* Truncated LZ4 frame. */
  QV_REQUIRE(qv_ipc_compress(QV_COMPRESSION_LZ4_FRAME, 0, src, 5000, &comp, &err) == QV_OK);
  qv_buffer *t = wrap_copy(comp->data, comp->size - 5);
  QV_CHECK_EQ_INT(qv_ipc_decompress(QV_COMPRESSION_LZ4_FRAME, t, 0, &out, &err), QV_EINVAL);
  char expect[100];
  snprintf(expect, sizeof expect, "LZ4_FRAME: truncated frame (%lld input bytes consumed)",
           (long long)(comp->size - 13));
  QV_CHECK_EQ_STR(err.message, expect);
  qv_buffer_unref(t);
  qv_buffer_unref(comp);
  /* Truncated ZSTD frame. */
  QV_REQUIRE(qv_ipc_compress(QV_COMPRESSION_ZSTD, 3, src, 5000, &comp, &err) == QV_OK);
  t = wrap_copy(comp->data, comp->size - 3);
  QV_CHECK_EQ_INT(qv_ipc_decompress(QV_COMPRESSION_ZSTD, t, 0, &out, &err), QV_EINVAL);
  QV_CHECK(strncmp(err.message, "ZSTD: corrupt frame: ", 21) == 0);
  qv_buffer_unref(t);
  qv_buffer_unref(comp);
  /* Unknown codec. */
  QV_CHECK_EQ_INT(qv_ipc_compress((qv_compression)7, 0, src, 10, &comp, &err), QV_EARG);
  QV_CHECK_EQ_STR(err.message, "qv_ipc_compress: unknown codec 7");
}

/* Prefix decoding (qv_ipc_decompress_into with fewer bytes than
 * declared) gives exactly the first bytes of the input, for prefixes
 * inside the first block, across blocks (ZSTD blocks are 128 KiB, LZ4
 * frame blocks 64 KiB..4 MiB) and up to the whole; the length the prefix
 * declares is read back; asking past it is an argument error. */
static void test_decompress_prefix(void) {
  const int64_t n = 3 << 20;
  uint8_t *src = malloc((size_t)n);
  fill(src, n, 7);
  const int64_t lens[] = {0, 1, 17, 4096, 131072, 131073, 1 << 20, n - 1, n};
  for (int c = 0; c < 2; c++) {
    qv_error err;
    qv_buffer *comp = NULL;
    QV_REQUIRE(qv_ipc_compress(codecs[c], 0, src, n, &comp, &err) == QV_OK);
    int64_t declared = -2;
    QV_CHECK(qv_ipc_compressed_length(codecs[c], comp, &declared, &err) == QV_OK);
    QV_CHECK_EQ_INT(declared, n);
    uint8_t *dst = malloc((size_t)n + 1);
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
      memset(dst, 0xAB, (size_t)n + 1);
      qv_status st = qv_ipc_decompress_into(codecs[c], comp, dst, lens[k], &err);
      if (st != QV_OK)
        fprintf(stderr, "%s %lld: %s\n", codec_names[c], (long long)lens[k], err.message);
      QV_CHECK(st == QV_OK);
      QV_CHECK(memcmp(dst, src, (size_t)lens[k]) == 0);
      QV_CHECK(dst[lens[k]] == 0xAB); /* nothing written past the prefix */
    }
    QV_CHECK(qv_ipc_decompress_into(codecs[c], comp, dst, n + 1, &err) == QV_EARG);
    /* A frame shorter than the prefix asked for is an error: declare more
     * than the frame holds and ask for all but the last byte. */
    put_le64(comp->data, n + 100);
    QV_CHECK(qv_ipc_decompress_into(codecs[c], comp, dst, n, &err) == QV_OK);
    uint8_t *big = malloc((size_t)n + 100);
    QV_CHECK(qv_ipc_decompress_into(codecs[c], comp, big, n + 99, &err) == QV_EINVAL);
    QV_CHECK(strstr(err.message, "fewer than") != NULL);
    free(big);
    free(dst);
    qv_buffer_unref(comp);
  }
  free(src);
}

int main(void) {
  QV_RUN(test_round_trip);
  QV_RUN(test_empty);
  QV_RUN(test_uncompressed_prefix);
  QV_RUN(test_bad_prefix);
  QV_RUN(test_max_alloc);
  QV_RUN(test_size_mismatch);
  QV_RUN(test_corrupt_frames);
  QV_RUN(test_decompress_prefix);
  return QV_TEST_END();
}
