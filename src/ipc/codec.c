/*
 * codec.c — IPC body buffer compression (Columnar.rst, "Compression").
 * Part of the ipc layer; sits on core buffers and links liblz4 (LZ4 frame
 * format, lz4frame.h) and libzstd.
 *
 * A compressed IPC buffer is an 8-byte little-endian int64 holding the
 * uncompressed length, followed by one codec frame. The length -1 means the
 * rest of the buffer is stored uncompressed. Every length read from a file
 * is untrusted: the declared length is bounded by the caller's max_alloc
 * before anything is allocated, and the decoder writes into a buffer of
 * exactly the declared size, so a frame that decodes to more (or less)
 * than declared is an error rather than an overflow.
 */
#include <lz4frame.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "ipc/ipc_internal.h"

/* Size of the uncompressed-length prefix of every compressed buffer. */
#define QV_CODEC_PREFIX_LEN 8
/* Prefix value meaning "stored uncompressed" (Arrow >= 5.0 writers). */
#define QV_CODEC_UNCOMPRESSED (-1)

static const char *codec_name(qv_compression codec) {
  switch (codec) {
    case QV_COMPRESSION_LZ4_FRAME: return "LZ4_FRAME";
    case QV_COMPRESSION_ZSTD: return "ZSTD";
    case QV_COMPRESSION_NONE: return "NONE";
  }
  return "unknown";
}

static int64_t load_le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return (int64_t)v;
}

static void store_le64(uint8_t *p, int64_t value) {
  uint64_t v = (uint64_t)value;
  for (int i = 0; i < 8; i++) {
    p[i] = (uint8_t)(v & 0xFF);
    v >>= 8;
  }
}

/* Decode one or more concatenated LZ4 frames from src into exactly
 * dst_len bytes at dst. */
static qv_status lz4_decode(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                            qv_error *err) {
  LZ4F_dctx *dctx = NULL;
  size_t rc = LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION);
  if (LZ4F_isError(rc))
    return qv_error_set(err, QV_ENOMEM, "LZ4_FRAME: cannot create context: %s",
                        LZ4F_getErrorName(rc));
  qv_status st = QV_OK;
  size_t spos = 0, dpos = 0;
  size_t hint = 1; /* non-zero while the current frame is unfinished */
  uint8_t scratch[64];
  while (spos < src_len) {
    size_t in = src_len - spos;
    bool overflow_probe = dpos == dst_len;
    uint8_t *out_ptr = overflow_probe ? scratch : dst + dpos;
    size_t out = overflow_probe ? sizeof scratch : dst_len - dpos;
    hint = LZ4F_decompress(dctx, out_ptr, &out, src + spos, &in, NULL);
    if (LZ4F_isError(hint)) {
      st = qv_error_set(err, QV_EINVAL, "LZ4_FRAME: corrupt frame: %s", LZ4F_getErrorName(hint));
      goto done;
    }
    if (overflow_probe && out > 0) {
      st = qv_error_set(err, QV_EINVAL,
                        "LZ4_FRAME: frame decodes to more than the declared "
                        "%zu bytes",
                        dst_len);
      goto done;
    }
    if (in == 0 && out == 0) {
      st = qv_error_set(err, QV_EINVAL, "LZ4_FRAME: decoder made no progress at input byte %zu",
                        spos);
      goto done;
    }
    spos += in;
    dpos += out;
  }
  if (hint != 0) {
    st =
        qv_error_set(err, QV_EINVAL, "LZ4_FRAME: truncated frame (%zu input bytes consumed)", spos);
    goto done;
  }
  if (dpos != dst_len)
    st = qv_error_set(err, QV_EINVAL,
                      "LZ4_FRAME: frame decodes to %zu bytes but %zu were "
                      "declared",
                      dpos, dst_len);
done:
  LZ4F_freeDecompressionContext(dctx);
  return st;
}

static qv_status zstd_decode(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                             qv_error *err) {
  size_t got = ZSTD_decompress(dst, dst_len, src, src_len);
  if (ZSTD_isError(got)) {
    if (ZSTD_getErrorCode(got) == ZSTD_error_dstSize_tooSmall)
      return qv_error_set(err, QV_EINVAL,
                          "ZSTD: frame decodes to more than the declared %zu "
                          "bytes",
                          dst_len);
    return qv_error_set(err, QV_EINVAL, "ZSTD: corrupt frame: %s", ZSTD_getErrorName(got));
  }
  if (got != dst_len)
    return qv_error_set(err, QV_EINVAL,
                        "ZSTD: frame decodes to %zu bytes but %zu were "
                        "declared",
                        got, dst_len);
  return QV_OK;
}

/* Decode the first dst_len bytes of the ZSTD frame(s) at src (streaming;
 * stops as soon as dst is full, so a prefix costs what it decodes). */
static qv_status zstd_decode_prefix(const uint8_t *src, size_t src_len, uint8_t *dst,
                                    size_t dst_len, qv_error *err) {
  ZSTD_DCtx *d = ZSTD_createDCtx();
  if (d == NULL) return qv_error_set(err, QV_ENOMEM, "ZSTD: cannot create a context");
  ZSTD_inBuffer in = {src, src_len, 0};
  ZSTD_outBuffer out = {dst, dst_len, 0};
  qv_status st = QV_OK;
  while (out.pos < out.size) {
    size_t before_in = in.pos, before_out = out.pos;
    size_t rc = ZSTD_decompressStream(d, &out, &in);
    if (ZSTD_isError(rc)) {
      st = qv_error_set(err, QV_EINVAL, "ZSTD: corrupt frame: %s", ZSTD_getErrorName(rc));
      break;
    }
    if (in.pos == before_in && out.pos == before_out) { /* input ended */
      st = qv_error_set(err, QV_EINVAL,
                        "ZSTD: frame decodes to %zu bytes, fewer than the %zu needed", out.pos,
                        dst_len);
      break;
    }
  }
  ZSTD_freeDCtx(d);
  return st;
}

/* As zstd_decode_prefix for LZ4 frames. */
static qv_status lz4_decode_prefix(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                                   qv_error *err) {
  LZ4F_dctx *dctx = NULL;
  size_t rc = LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION);
  if (LZ4F_isError(rc))
    return qv_error_set(err, QV_ENOMEM, "LZ4_FRAME: cannot create context: %s",
                        LZ4F_getErrorName(rc));
  qv_status st = QV_OK;
  size_t spos = 0, dpos = 0;
  while (dpos < dst_len) {
    size_t in = src_len - spos, out = dst_len - dpos;
    size_t hint = LZ4F_decompress(dctx, dst + dpos, &out, src + spos, &in, NULL);
    if (LZ4F_isError(hint)) {
      st = qv_error_set(err, QV_EINVAL, "LZ4_FRAME: corrupt frame: %s", LZ4F_getErrorName(hint));
      break;
    }
    if (in == 0 && out == 0) {
      st = qv_error_set(err, QV_EINVAL,
                        "LZ4_FRAME: frame decodes to %zu bytes, fewer than the %zu needed", dpos,
                        dst_len);
      break;
    }
    spos += in;
    dpos += out;
  }
  LZ4F_freeDecompressionContext(dctx);
  return st;
}

qv_status qv_ipc_compressed_length(qv_compression codec, const qv_buffer *compressed,
                                   int64_t *declared, qv_error *err) {
  *declared = 0;
  if (codec != QV_COMPRESSION_LZ4_FRAME && codec != QV_COMPRESSION_ZSTD)
    return qv_error_set(err, QV_EINVAL, "unknown compression codec %d", (int)codec);
  if (compressed->size == 0) return QV_OK;
  if (compressed->size < QV_CODEC_PREFIX_LEN)
    return qv_error_set(err, QV_EINVAL,
                        "%s: compressed buffer of %lld bytes is shorter than "
                        "its 8-byte length prefix",
                        codec_name(codec), (long long)compressed->size);
  *declared = load_le64(compressed->data);
  if (*declared < 0 && *declared != QV_CODEC_UNCOMPRESSED)
    return qv_error_set(err, QV_EINVAL, "%s: negative uncompressed length %lld", codec_name(codec),
                        (long long)*declared);
  return QV_OK;
}

qv_status qv_ipc_decompress_into(qv_compression codec, const qv_buffer *compressed, uint8_t *dst,
                                 int64_t len, qv_error *err) {
  int64_t declared;
  QV_RETURN_NOT_OK(qv_ipc_compressed_length(codec, compressed, &declared, err));
  if (len < 0 || len > declared || declared == QV_CODEC_UNCOMPRESSED)
    return qv_error_set(err, QV_EARG,
                        "qv_ipc_decompress_into: %lld bytes asked of a buffer declaring %lld",
                        (long long)len, (long long)declared);
  if (len == 0 && declared > 0) return QV_OK;
  const uint8_t *src = compressed->data + QV_CODEC_PREFIX_LEN;
  size_t src_len = (size_t)(compressed->size - QV_CODEC_PREFIX_LEN);
  if (len == declared)
    return codec == QV_COMPRESSION_ZSTD ? zstd_decode(src, src_len, dst, (size_t)len, err)
                                        : lz4_decode(src, src_len, dst, (size_t)len, err);
  return codec == QV_COMPRESSION_ZSTD ? zstd_decode_prefix(src, src_len, dst, (size_t)len, err)
                                      : lz4_decode_prefix(src, src_len, dst, (size_t)len, err);
}

qv_status qv_ipc_decompress(qv_compression codec, qv_buffer *compressed, int64_t max_alloc,
                            qv_buffer **out, qv_error *err) {
  *out = NULL;
  int64_t declared;
  QV_RETURN_NOT_OK(qv_ipc_compressed_length(codec, compressed, &declared, err));
  if (compressed->size == 0) {
    *out = qv_buffer_ref(compressed);
    return QV_OK;
  }
  if (declared == QV_CODEC_UNCOMPRESSED)
    return qv_buffer_view(compressed, QV_CODEC_PREFIX_LEN, compressed->size - QV_CODEC_PREFIX_LEN,
                          out, err);
  if (max_alloc <= 0) max_alloc = QV_DEFAULT_MAX_ALLOC;
  if (declared > max_alloc)
    return qv_error_set(err, QV_ENOMEM,
                        "%s: uncompressed length %lld exceeds the limit of "
                        "%lld bytes (max_alloc)",
                        codec_name(codec), (long long)declared, (long long)max_alloc);
  qv_buffer *dst = NULL;
  QV_RETURN_NOT_OK(qv_buffer_alloc(declared, &dst, err));
  qv_status st = qv_ipc_decompress_into(codec, compressed, dst->data, declared, err);
  if (st != QV_OK) {
    qv_buffer_unref(dst);
    return st;
  }
  *out = dst;
  return QV_OK;
}

struct qv_codec_ctx {
  ZSTD_CCtx *zstd;
};

void qv_codec_ctx_free(qv_codec_ctx *ctx) {
  if (ctx == NULL) return;
  if (ctx->zstd) ZSTD_freeCCtx(ctx->zstd);
  free(ctx);
}

static void lz4_prefs(LZ4F_preferences_t *prefs, int level, int64_t len) {
  memset(prefs, 0, sizeof *prefs);
  prefs->frameInfo.contentSize = (unsigned long long)len;
  prefs->compressionLevel = level;
}

int64_t qv_ipc_compress_bound(qv_compression codec, int level, int64_t len) {
  if (len < 0) return -1;
  size_t bound;
  if (codec == QV_COMPRESSION_ZSTD) {
    bound = ZSTD_compressBound((size_t)len);
    if (ZSTD_isError(bound)) return -1;
  } else if (codec == QV_COMPRESSION_LZ4_FRAME) {
    LZ4F_preferences_t prefs;
    lz4_prefs(&prefs, level, len);
    bound = LZ4F_compressFrameBound((size_t)len, &prefs);
  } else {
    return -1;
  }
  if (bound == 0 || bound > (size_t)INT64_MAX - QV_CODEC_PREFIX_LEN) return -1;
  return (int64_t)bound + QV_CODEC_PREFIX_LEN;
}

qv_status qv_ipc_compress_into(qv_codec_ctx **ctx, qv_compression codec, int level, const void *src,
                               int64_t len, uint8_t *dst, int64_t dst_cap, int64_t *written,
                               qv_error *err) {
  qv_codec_ctx *local = NULL, **pc = ctx ? ctx : &local;
  int64_t bound = qv_ipc_compress_bound(codec, level, len);
  if (len <= 0 || bound < 0 || dst_cap < bound)
    return qv_error_set(err, QV_EARG,
                        "qv_ipc_compress_into: %s: bad length %lld or room %lld (need %lld)",
                        codec_name(codec), (long long)len, (long long)dst_cap, (long long)bound);
  if (*pc == NULL && (*pc = calloc(1, sizeof **pc)) == NULL)
    return qv_error_set(err, QV_ENOMEM, "out of memory (codec context)");
  qv_codec_ctx *c = *pc;
  size_t cap = (size_t)(bound - QV_CODEC_PREFIX_LEN), n;
  qv_status st = QV_OK;
  if (codec == QV_COMPRESSION_ZSTD) {
    if (c->zstd == NULL && (c->zstd = ZSTD_createCCtx()) == NULL) {
      st = qv_error_set(err, QV_ENOMEM, "ZSTD: cannot create a context");
      goto done;
    }
    n = ZSTD_compressCCtx(c->zstd, dst + QV_CODEC_PREFIX_LEN, cap, src, (size_t)len, level);
    if (ZSTD_isError(n)) {
      st = qv_error_set(err, QV_EINVAL, "ZSTD: compression failed: %s", ZSTD_getErrorName(n));
      goto done;
    }
  } else { /* LZ4F_compressFrame keeps its small context on the stack */
    LZ4F_preferences_t prefs;
    lz4_prefs(&prefs, level, len);
    n = LZ4F_compressFrame(dst + QV_CODEC_PREFIX_LEN, cap, src, (size_t)len, &prefs);
    if (LZ4F_isError(n)) {
      st = qv_error_set(err, QV_EINVAL, "LZ4_FRAME: compression failed: %s", LZ4F_getErrorName(n));
      goto done;
    }
  }
  store_le64(dst, len);
  *written = (int64_t)n + QV_CODEC_PREFIX_LEN;
done:
  qv_codec_ctx_free(local);
  return st;
}

qv_status qv_ipc_compress(qv_compression codec, int level, const void *src, int64_t len,
                          qv_buffer **out, qv_error *err) {
  *out = NULL;
  if (len < 0)
    return qv_error_set(err, QV_EARG, "qv_ipc_compress: negative length %lld", (long long)len);
  if (codec != QV_COMPRESSION_LZ4_FRAME && codec != QV_COMPRESSION_ZSTD)
    return qv_error_set(err, QV_EARG, "qv_ipc_compress: unknown codec %d", (int)codec);
  if (len == 0) return qv_buffer_alloc(0, out, err);
  int64_t bound = qv_ipc_compress_bound(codec, level, len);
  if (bound < 0)
    return qv_error_set(err, QV_ENOMEM, "%s: cannot compress %lld bytes (no size bound)",
                        codec_name(codec), (long long)len);
  qv_buffer *dst = NULL;
  QV_RETURN_NOT_OK(qv_buffer_alloc(bound, &dst, err));
  int64_t n = 0;
  qv_status st = qv_ipc_compress_into(NULL, codec, level, src, len, dst->data, bound, &n, err);
  if (st == QV_OK) st = qv_buffer_resize(dst, n, err);
  if (st != QV_OK) {
    qv_buffer_unref(dst);
    return st;
  }
  *out = dst;
  return QV_OK;
}
