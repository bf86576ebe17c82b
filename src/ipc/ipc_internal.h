/*
 * ipc_internal.h — shapes shared inside the ipc layer: decoded IPC
 * messages (schema, record batch, dictionary batch), the file footer, and
 * the entry points of the decoder (metadata.c), the body loader (loader.c),
 * and compression codecs (codec.c). Not installed.
 */
#ifndef QUIVER_IPC_INTERNAL_H
#define QUIVER_IPC_INTERNAL_H

#include "quiver/ipc.h"

/* Framing constants of the IPC format (Columnar.rst, "Encapsulated
 * message format"). */
#define QV_IPC_CONTINUATION 0xFFFFFFFFu /* marks a post-0.15 message */
#define QV_IPC_MAGIC "ARROW1"           /* file format magic, 6 bytes */
#define QV_IPC_MAGIC_LEN 6
#define QV_IPC_MAGIC_PADDED 8 /* magic + 2 padding bytes at file start */

/* Metadata versions (Schema.fbs MetadataVersion). */
enum { QV_METADATA_V1 = 0, QV_METADATA_V2, QV_METADATA_V3, QV_METADATA_V4, QV_METADATA_V5 };

/* Message.fbs MessageHeader union type tags. */
typedef enum qv_msg_type {
  QV_MSG_NONE = 0,
  QV_MSG_SCHEMA = 1,
  QV_MSG_DICTIONARY_BATCH = 2,
  QV_MSG_RECORD_BATCH = 3,
  QV_MSG_TENSOR = 4,
  QV_MSG_SPARSE_TENSOR = 5
} qv_msg_type;

/** FieldNode: one per array in depth-first pre-order. */
typedef struct qv_ipc_node {
  int64_t length;
  int64_t null_count;
} qv_ipc_node;

/** Buffer: relative to the start of the message body. */
typedef struct qv_ipc_buffer_spec {
  int64_t offset;
  int64_t length;
} qv_ipc_buffer_spec;

/** A decoded RecordBatch table (also the data of a DictionaryBatch). */
typedef struct qv_ipc_batch_desc {
  int64_t length;
  int64_t n_nodes;
  qv_ipc_node *nodes; /* owned */
  int64_t n_buffers;
  qv_ipc_buffer_spec *buffers; /* owned */
  qv_compression compression;  /* BodyCompression codec, NONE if absent */
  int64_t n_variadic;
  int64_t *variadic_counts; /* owned; NULL when absent */
} qv_ipc_batch_desc;

/** A decoded Message. */
typedef struct qv_ipc_message {
  int version; /* QV_METADATA_V* */
  qv_msg_type type;
  int64_t body_length;
  qv_schema *schema;           /* QV_MSG_SCHEMA: owned reference */
  bool big_endian;             /* QV_MSG_SCHEMA: Schema.endianness == Big */
  qv_ipc_batch_desc batch;     /* RECORD_BATCH / DICTIONARY_BATCH */
  int64_t dict_id;             /* DICTIONARY_BATCH */
  bool is_delta;               /* DICTIONARY_BATCH */
  qv_metadata custom_metadata; /* Message.custom_metadata */
} qv_ipc_message;

/** File.fbs Block. */
typedef struct qv_ipc_block {
  int64_t offset;
  int32_t metadata_length;
  int64_t body_length;
} qv_ipc_block;

/** A decoded File.fbs Footer. */
typedef struct qv_ipc_footer {
  int version;
  qv_schema *schema; /* owned reference */
  bool big_endian;
  int64_t n_dictionaries;
  qv_ipc_block *dictionaries; /* owned */
  int64_t n_record_batches;
  qv_ipc_block *record_batches; /* owned */
  qv_metadata custom_metadata;
} qv_ipc_footer;

/**
 * Verify (flatbuffers verifier: every offset, vtable, vector, string, union
 * and nesting depth in bounds) and decode a Message flatbuffer of `size`
 * bytes. Unsupported message types (tensors) fail with QV_ENOTSUP.
 * On failure the message is reset; on success the caller frees it with
 * qv_ipc_message_reset.
 */
qv_status qv_ipc_decode_message(const uint8_t *data, int64_t size, qv_ipc_message *out,
                                qv_error *err);
void qv_ipc_message_reset(qv_ipc_message *m);

/** Verify and decode a Footer flatbuffer. Free with qv_ipc_footer_reset. */
qv_status qv_ipc_decode_footer(const uint8_t *data, int64_t size, qv_ipc_footer *out,
                               qv_error *err);
void qv_ipc_footer_reset(qv_ipc_footer *f);

/*
 * Encoders (metadata_encode.c): the inverse of the decoders above. Each
 * builds a flatbuffer with metadata version V5 and returns it in *out as
 * heap bytes (malloc) of *out_size bytes; the caller frees them with
 * free(). The bytes are the raw flatbuffer, without IPC framing
 * (continuation marker, length prefix, padding). Fails with QV_EARG when
 * the input cannot be expressed (e.g. a dictionary whose value type is
 * itself a dictionary) and QV_ENOMEM on allocation failure.
 */

/** Message of any decodable kind: m->type selects the header (SCHEMA uses
 *  m->schema and m->big_endian; RECORD_BATCH m->batch; DICTIONARY_BATCH
 *  m->batch, m->dict_id, m->is_delta), plus m->body_length and
 *  m->custom_metadata. m->version is ignored (V5 is written). */
qv_status qv_ipc_encode_message(const qv_ipc_message *m, uint8_t **out, int64_t *out_size,
                                qv_error *err);
/** Schema message (body length 0, little-endian). */
qv_status qv_ipc_encode_schema_message(const qv_schema *schema, uint8_t **out, int64_t *out_size,
                                       qv_error *err);
/** RecordBatch message describing a body of body_length bytes. */
qv_status qv_ipc_encode_record_batch_message(const qv_ipc_batch_desc *desc, int64_t body_length,
                                             uint8_t **out, int64_t *out_size, qv_error *err);
/** DictionaryBatch message. */
qv_status qv_ipc_encode_dictionary_message(int64_t dict_id, bool is_delta,
                                           const qv_ipc_batch_desc *desc, int64_t body_length,
                                           uint8_t **out, int64_t *out_size, qv_error *err);
/** File footer (f->version is ignored, V5 is written). */
qv_status qv_ipc_encode_footer(const qv_ipc_footer *f, uint8_t **out, int64_t *out_size,
                               qv_error *err);

/*
 * Persisted stream index (index_cache.c; the file layout is documented
 * there). The reader converts its index to and from these entries.
 */
typedef struct qv_index_msg {
  int64_t offset;      /* framing of the message */
  int64_t body_offset; /* absolute */
  int64_t body_length;
  int64_t num_rows;        /* rows (record batch) or values (dictionary) */
  int64_t dict_id;         /* dictionaries; -1 for record batches */
  int32_t metadata_length; /* flatbuffer bytes (incl. padding) */
  uint8_t kind;            /* QV_MSG_RECORD_BATCH or QV_MSG_DICTIONARY_BATCH */
  bool is_delta;
} qv_index_msg;

/** What a cache entry is keyed by: any difference is a miss. */
typedef struct qv_index_key {
  uint64_t dev, ino;
  int64_t size, mtime_ns;
  uint64_t content; /* xxh64 of first/last 4 KiB and the schema message */
} qv_index_key;

/** Parse and validate cache bytes (untrusted) for the stream `key` whose
 *  first message after the schema is at `first`. On success *out (malloc,
 *  caller frees) holds *n_out entries that tile [first, *end_out) inside
 *  key->size. Fails with QV_EINVAL on anything else (err may be NULL). */
qv_status qv_index_cache_parse(const uint8_t *p, int64_t n, const qv_index_key *key, int64_t first,
                               qv_index_msg **out, int64_t *n_out, int64_t *end_out,
                               qv_compression *comp_out, qv_error *err);
/** Encode entries into cache bytes (*out malloc'd, caller frees). */
qv_status qv_index_cache_encode(const qv_index_key *key, int64_t first, int64_t end,
                                qv_compression comp, const qv_index_msg *msgs, int64_t n,
                                uint8_t **out, int64_t *out_size, qv_error *err);
/** False when `mode` is OFF or QV_INDEX_CACHE=0/off/no/false is set. */
bool qv_index_cache_enabled(qv_index_cache_mode mode);
/** Byte bound of the cache directory (QV_INDEX_CACHE_MAX_BYTES or 64 MiB). */
int64_t qv_index_cache_max_bytes(void);
/** Receives each cache entry as it is checked (`count`: how many the file
 *  holds, checked against its size); false refuses the file. */
typedef bool (*qv_index_emit)(void *ctx, const qv_index_msg *m, int64_t count);
/** Look the stream up, handing each entry to `emit` in stream order; true
 *  on a valid hit. The entries emitted count only when it returns true (a
 *  later check may still fail). Never fails: a missing, unreadable or
 *  invalid file is a miss. */
bool qv_index_cache_load(const qv_index_key *key, int64_t first, qv_index_emit emit, void *ctx,
                         int64_t *end_out, qv_compression *comp_out);
/** Store atomically and evict; true when stored. Silently does nothing
 *  when the directory cannot be created or written. */
bool qv_index_cache_store(const qv_index_key *key, int64_t first, int64_t end, qv_compression comp,
                          const qv_index_msg *msgs, int64_t n);

/** The per-user cache directory ($XDG_CACHE_HOME/quiver, else
 *  ~/.cache/quiver) into buf; false when none can be named. Shared by the
 *  stream index and the dataset layer's text conversions. */
bool qv_cache_dir_name(char *buf, size_t cap);
/** mkdir -p of `dir` (0700 for what it creates; `dir` is restored). */
bool qv_cache_dir_create(char *dir);
/** Bound the files <prefix>*<suffix> of `dir` to `max` bytes, least
 *  recently used (by the later of atime and mtime) first,
 *  never removing `keep` (a file name, may be NULL). */
void qv_cache_dir_evict(const char *dir, const char *prefix, const char *suffix, int64_t max,
                        const char *keep);

/** Dictionaries in force while decoding a batch, looked up by id. */
typedef struct qv_ipc_dict_lookup {
  /* Return the current dictionary (borrowed) for dict_id, or NULL. */
  qv_array *(*find)(void *ctx, int64_t dict_id);
  void *ctx;
} qv_ipc_dict_lookup;

/**
 * The decompression budget of a reader: decompressed bytes currently
 * held (by buffers still referenced anywhere), bounded by `limit` (0 = no
 * bound), and the bytes decompressed over the reader's life. Shared by
 * the reader and every buffer it decompressed (each holds a reference
 * until released), so it outlives the reader when arrays do.
 */
typedef struct qv_ipc_budget {
  long refcount;
  int64_t limit; /* set before loads start; read without a lock */
  int64_t held;  /* atomic */
  int64_t total; /* atomic */
} qv_ipc_budget;

/** New budget (one reference) or NULL when out of memory. */
qv_ipc_budget *qv_ipc_budget_new(int64_t limit);
void qv_ipc_budget_unref(qv_ipc_budget *b);

/** Default decompression budget when $QUIVER_DECOMPRESS_BUDGET is unset. */
#define QV_DEFAULT_DECOMPRESS_BUDGET ((int64_t)4 << 30)

/**
 * The budget a reader starts with: $QUIVER_DECOMPRESS_BUDGET (bytes, with
 * an optional K/M/G/T suffix; 0 = unbounded) when set, else the smallest
 * of 4 GiB, a quarter of physical memory and half of RLIMIT_AS.
 */
int64_t qv_ipc_default_budget(void);

/** Options and context for turning a batch body into arrays. */
typedef struct qv_ipc_load_ctx {
  qv_buffer *body;   /* the message body (view into the mapping) */
  bool big_endian;   /* swap fixed-width values into owned memory */
  int64_t max_alloc; /* bound for any single decompressed buffer */
  qv_validate_level validation;
  qv_ipc_dict_lookup dicts;
  int64_t message_index; /* for error text ("message 3: ...") */
  int metadata_version;  /* QV_METADATA_V4 / V5 of the message: V4 union
                              arrays carry a (skipped) validity buffer slot */
  const bool *columns;   /* per top-level column: load it (NULL = all) */
  bool limit_rows;       /* false (zero-initialised): all rows */
  int64_t max_rows;      /* with limit_rows: at most this many rows */
  qv_ipc_budget *budget; /* decompressed bytes accounting, or NULL */
} qv_ipc_load_ctx;

/**
 * Build the columns of a record batch: a STRUCT array of `schema_type`
 * (its children are the columns) from `desc` and ctx->body. Consumes field
 * nodes and buffers in depth-first pre-order, checks every buffer range
 * against the body and the counts of nodes/buffers/variadic counts against
 * the schema, decompresses compressed buffers (bounded by ctx->max_alloc),
 * converts big-endian values, attaches dictionaries, and validates the
 * result at ctx->validation. Caller owns *out.
 *
 * Decompress what is read: with ctx->columns, the columns not asked for
 * are walked and range-checked but nothing of them is decompressed or
 * referenced (their children of *out are NULL). With ctx->limit_rows and
 * ctx->max_rows >= 0 the batch has min(max_rows, length) rows; top-level columns of a
 * compressed batch whose layout is a prefix of rows (fixed width, bool,
 * binary/string, dictionary indices) decompress only the bytes of those
 * rows, others decompress whole and are sliced. A compressed buffer whose
 * declared uncompressed length exceeds its real need (from the node
 * length and the type: validity ceil(len/8), fixed width len*width,
 * offsets (len+1)*w, views len*16, variable data the last offset; padded
 * to 64 bytes) is refused with QV_EINVAL; each decompression is counted
 * in ctx->budget and refused with QV_ENOMEM when it would pass the
 * budget's limit.
 */
qv_status qv_ipc_load_batch(const qv_type *schema_type, const qv_ipc_batch_desc *desc,
                            const qv_ipc_load_ctx *ctx, qv_array **out, qv_error *err);

/**
 * Decompress one IPC-compressed buffer: 8-byte little-endian uncompressed
 * length prefix (-1 = the rest is stored uncompressed), then the codec's
 * frame. Fails with QV_ENOMEM if the declared length exceeds max_alloc and
 * QV_EINVAL when the frame is corrupt or its decoded size differs.
 */
qv_status qv_ipc_decompress(qv_compression codec, qv_buffer *compressed, int64_t max_alloc,
                            qv_buffer **out, qv_error *err);

/**
 * The uncompressed length an IPC-compressed buffer declares in its 8-byte
 * prefix: -1 means "stored uncompressed" (the bytes after the prefix), 0
 * for an empty buffer. QV_EINVAL for a short buffer, another negative
 * length or an unknown codec. Nothing is decoded.
 */
qv_status qv_ipc_compressed_length(qv_compression codec, const qv_buffer *compressed,
                                   int64_t *declared, qv_error *err);

/**
 * Decode the first `len` bytes of an IPC-compressed buffer into caller
 * memory `dst` (len bytes). len == the declared length decodes it all and
 * checks the frame decodes to exactly that; a shorter len stops decoding
 * as soon as dst is full (a prefix costs what it decodes, not the whole
 * frame). QV_EARG when len exceeds the declared length or the buffer is
 * stored uncompressed; QV_EINVAL for corrupt or short frames.
 */
qv_status qv_ipc_decompress_into(qv_compression codec, const qv_buffer *compressed, uint8_t *dst,
                                 int64_t len, qv_error *err);

/**
 * Compress `len` bytes at `src` into the IPC form: an 8-byte little-endian
 * uncompressed length followed by one codec frame (LZ4 frame or ZSTD).
 * `level` is passed to the codec (0 = the codec's default). An empty input
 * gives an empty buffer (IPC writers leave empty buffers uncompressed and
 * without prefix). The caller owns *out. Storing incompressible data with
 * the -1 "uncompressed" prefix is left to the writer.
 */
qv_status qv_ipc_compress(qv_compression codec, int level, const void *src, int64_t len,
                          qv_buffer **out, qv_error *err);

/** Reusable compressor state (a ZSTD / LZ4 frame context), one per
 *  thread; created on first use by qv_ipc_compress_into. */
typedef struct qv_codec_ctx qv_codec_ctx;
void qv_codec_ctx_free(qv_codec_ctx *ctx);

/** Largest IPC-compressed size (8-byte prefix + frame) of `len` bytes, or
 *  -1 when the codec cannot say. */
int64_t qv_ipc_compress_bound(qv_compression codec, int level, int64_t len);

/**
 * As qv_ipc_compress, into caller memory: dst must hold
 * qv_ipc_compress_bound bytes; *written receives the size used. *ctx is a
 * context to reuse (created when NULL; free with qv_codec_ctx_free); pass
 * ctx = NULL for a one-off context. len must be > 0. Thread-safe for
 * distinct contexts.
 */
qv_status qv_ipc_compress_into(qv_codec_ctx **ctx, qv_compression codec, int level, const void *src,
                               int64_t len, uint8_t *dst, int64_t dst_cap, int64_t *written,
                               qv_error *err);

/**
 * Record batch i (random access) with only the top-level columns whose
 * `load` entry is true (NULL = all) materialised: a STRUCT of the
 * reader's schema whose other children are NULL (the columns are still
 * range-checked). For caches that add columns on demand (table sources).
 */
qv_status qv_reader_batch_masked(qv_reader *r, int64_t i, const bool *load, qv_array **out,
                                 qv_error *err);

/** Default bound for a single decompressed buffer: 2 GiB. */
#define QV_DEFAULT_MAX_ALLOC ((int64_t)1 << 31)

#endif /* QUIVER_IPC_INTERNAL_H */
