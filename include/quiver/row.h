/*
 * quiver/row.h — the row table: keys stored row-major so that hashing and
 * comparing one key touches one contiguous run of memory. The row layer sits
 * on core (qv_type / qv_array / qv_buffer) and under compute (grouper, hash
 * join, distinct, multi-key sort).
 *
 * The layout follows Arrow C++ compute's RowTableImpl (seed 002 and
 * apache/arrow cpp/src/arrow/compute/row/row_internal.h):
 *
 *  - Key column metadata (qv_row_column_meta) derives from each key type:
 *    dictionary -> fixed width of its index type; boolean -> fixed_length 0
 *    (a bit in arrays, one byte 0/1 in rows); other fixed-width types ->
 *    bit_width / 8 bytes; binary/string -> var-length, 32-bit offsets;
 *    large_binary/large_string -> var-length, 64-bit offsets; null type ->
 *    fixed, is_null_type (occupies one zero byte in rows). Anything else
 *    (nested, views, run-end encoded, unions) is refused with QV_ETYPE.
 *
 *  - Row metadata (qv_row_metadata): columns are placed in an encoding order
 *    (column_order) chosen for alignment: booleans and null columns count as
 *    1 byte, var-length columns as their 4-byte end offset; columns whose
 *    width is a power of two or a multiple of row_alignment come first, by
 *    width descending, fixed-length before var-length at equal width, then
 *    by logical index; the remaining columns follow in logical order.
 *    Fixed-width columns whose width is not a power of two start at a
 *    multiple of string_alignment. Padding is (-offset) & (alignment - 1).
 *
 *  - A row table holds three buffers, each followed by 64 bytes of padding
 *    for vector loads, growing by doubling (at least to what is needed) and
 *    never shrinking:
 *      null masks: null_masks_bytes_per_row bytes per row; bit j of a row's
 *        mask is set when the column at encoded position j is NULL (the
 *        opposite of Arrow validity);
 *      fixed: fixed-length tables: the rows, fixed_length bytes each;
 *        var-length tables: num_rows + 1 int64 row offsets into `var`;
 *      var: var-length tables only: the rows. A row holds its fixed-width
 *        columns, then one uint32 per var-length column (at
 *        varbinary_end_array_offset) giving the END of that field within the
 *        row, then the var-length bytes: the first field starts at
 *        fixed_length, each later one at the previous end rounded up to
 *        string_alignment; the row is padded to row_alignment.
 *
 *  - Encoding is canonical: padding bytes are zero, a NULL fixed-width value
 *    is stored as zero bytes and a NULL var-length value has length 0. Hence
 *    two rows are byte-equal (null masks included) exactly when their keys
 *    are equal with NULL == NULL. (Arrow stores true as 0xff and NULL bytes
 *    as 0xae; quiver stores true as 1, as the seed's worked example shows.)
 *
 * Hashes (qv_row_hash_*): a key's 64-bit hash is computed column by column
 * in encoding order: h = H0; for each column h = mix64(h ^ v) where v is
 * NULL_HASH for a null, x + K for a value of 1, 2, 4 or 8 bytes read as a
 * zero-extended little-endian integer x (booleans 0/1), and
 * XXH3_64bits(bytes) (libxxhash) for wider fixed-width and var-length values.
 * mix64 is an xor-shift-multiply finaliser. The 32-bit hash is the xor of
 * the 64-bit hash's halves. Hashing encoded rows and hashing the same keys in
 * column form give identical values.
 *
 * SIMD: hot loops (fixed-width encode/decode, compare, hash) have AVX2
 * variants chosen at run time (__builtin_cpu_supports) and scalar fallbacks
 * that produce identical results. qv_row_set_simd_level() or the environment
 * variable QV_ROW_SIMD=scalar force the scalar paths.
 *
 * Thread safety: a row table is not thread-safe while it is modified;
 * concurrent read-only calls (compare, hash, decode) are fine.
 */
#ifndef QUIVER_ROW_H
#define QUIVER_ROW_H

#include "quiver/array.h"
#include "quiver/core.h"
#include "quiver/type.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bytes of padding kept past the end of each row-table buffer. */
#define QV_ROW_PADDING 64

/* ------------------------------------------------------------------------ */
/* Key column metadata                                                       */

/** How one key column is stored in rows: a zero-allocation summary of its
 *  qv_type. */
typedef struct qv_row_column_meta {
  bool is_fixed_length; /**< false for binary-like columns */
  bool is_null_type;    /**< the null type (always NULL, no buffers) */
  int32_t fixed_length; /**< fixed: bytes per value, 0 for boolean and the
                              null type; var-length: 0 */
  int32_t offset_width; /**< var-length: bytes per array offset (4 or 8) */
} qv_row_column_meta;

/**
 * Derive the row metadata of a key column of type `t` (rules above).
 * Fails with QV_ETYPE for nested and other unsupported types, with a message
 * naming the type, e.g. "type list<item: int32> is nested; row keys must be
 * non-nested".
 */
QV_API qv_status qv_row_column_meta_from_type(const qv_type *t, qv_row_column_meta *out,
                                              qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Row metadata                                                              */

typedef struct qv_row_metadata {
  int32_t num_cols;
  qv_row_column_meta *cols;         /**< logical (input) order; owned */
  int32_t row_alignment;            /**< power of two; every row starts at a
                                       multiple of it */
  int32_t string_alignment;         /**< power of two <= row_alignment */
  int32_t null_masks_bytes_per_row; /**< smallest power of two with
                                         8 * bytes >= num_cols (>= 1) */
  bool is_fixed_length;             /**< no var-length columns */
  /** Fixed-length tables: bytes per row, a multiple of row_alignment.
   *  Var-length tables: bytes of the fixed part (fixed columns and the end
   *  array) rounded up to string_alignment; the first var field starts here. */
  int32_t fixed_length;
  /** Var-length tables: offset within the row of the uint32 end array;
   *  0 for fixed-length tables. */
  int32_t varbinary_end_array_offset;
  int32_t num_varbinary_cols;
  int32_t *column_order;         /**< encoded position -> logical column */
  int32_t *inverse_column_order; /**< logical column -> encoded position */
  int32_t *column_offsets;       /**< encoded position -> byte offset in row
                                       (var columns: their end-array slot) */
} qv_row_metadata;

/** Bytes needed to round `offset` up to a multiple of `alignment` (a power
 *  of two): (-offset) & (alignment - 1). */
static inline int64_t qv_row_padding(int64_t offset, int64_t alignment) {
  return (int64_t)((0 - (uint64_t)offset) & (uint64_t)(alignment - 1));
}

/**
 * Build row metadata for `num_cols` key columns (num_cols >= 1). Alignments
 * must be powers of two in [1, 64] with string_alignment <= row_alignment
 * (QV_EARG otherwise). `md` is overwritten; release with
 * qv_row_metadata_reset.
 */
QV_API qv_status qv_row_metadata_init(qv_row_metadata *md, const qv_row_column_meta *cols,
                                      int32_t num_cols, int32_t row_alignment,
                                      int32_t string_alignment, qv_error *err) QV_NODISCARD;

/** Same, deriving the column metadata from key types. */
QV_API qv_status qv_row_metadata_from_types(qv_row_metadata *md, qv_type *const *types,
                                            int32_t num_cols, int32_t row_alignment,
                                            int32_t string_alignment, qv_error *err) QV_NODISCARD;

/** Deep copy (dst is overwritten). */
QV_API qv_status qv_row_metadata_copy(qv_row_metadata *dst, const qv_row_metadata *src,
                                      qv_error *err) QV_NODISCARD;

/** Free the arrays inside md and zero it. NULL-safe. */
QV_API void qv_row_metadata_reset(qv_row_metadata *md);

/** True when rows of `a` and `b` may be mixed: same alignments and, column
 *  by column, same fixed/var kind and width. */
QV_API bool qv_row_metadata_compatible(const qv_row_metadata *a, const qv_row_metadata *b);

/* ------------------------------------------------------------------------ */
/* Row table                                                                 */

/**
 * A row table. All fields are readable; fields ending in `_` are private.
 * Buffers are plain heap memory owned by the table; pointers stay valid
 * until the next call that appends to the table (growth may move them).
 */
typedef struct qv_row_table {
  qv_row_metadata md; /**< owned copy */
  int64_t num_rows;
  uint8_t *null_masks; /**< num_rows * null_masks_bytes_per_row bytes */
  /** Fixed-length tables: rows (num_rows * fixed_length bytes).
   *  Var-length tables: int64 row offsets (num_rows + 1 of them). */
  uint8_t *fixed;
  uint8_t *var;            /**< var-length rows; NULL for fixed tables */
  int64_t rows_capacity_;  /**< rows the fixed buffers can hold */
  int64_t bytes_capacity_; /**< bytes the var buffer can hold */
} qv_row_table;

/** Row offsets of a var-length table (num_rows + 1 entries). */
static inline const int64_t *qv_row_table_offsets(const qv_row_table *t) {
  return (const int64_t *)(const void *)t->fixed;
}

/** Pointer to row i and its length in bytes (for any table). */
static inline const uint8_t *qv_row_table_row(const qv_row_table *t, int64_t i,
                                              int64_t *out_length) {
  if (t->md.is_fixed_length) {
    if (out_length) *out_length = t->md.fixed_length;
    return t->fixed + i * (int64_t)t->md.fixed_length;
  }
  const int64_t *off = qv_row_table_offsets(t);
  if (out_length) *out_length = off[i + 1] - off[i];
  return t->var + off[i];
}

/** Row i's null mask (null_masks_bytes_per_row bytes). */
static inline const uint8_t *qv_row_table_null_mask(const qv_row_table *t, int64_t i) {
  return t->null_masks + i * (int64_t)t->md.null_masks_bytes_per_row;
}

/**
 * Initialise an empty table for metadata `md` (copied). The buffers start
 * empty (64 padding bytes each) and grow on append. Release with
 * qv_row_table_reset.
 */
QV_API qv_status qv_row_table_init(qv_row_table *t, const qv_row_metadata *md,
                                   qv_error *err) QV_NODISCARD;

/** Free the table's memory and zero it. NULL-safe. */
QV_API void qv_row_table_reset(qv_row_table *t);

/** Remove all rows; capacity is kept (buffers never shrink). */
QV_API void qv_row_table_clean(qv_row_table *t);

/**
 * Allocated size in bytes of buffer i (0 null masks, 1 fixed rows or row
 * offsets, 2 var rows), padding included; 0 for an absent buffer.
 */
QV_API int64_t qv_row_table_buffer_size(const qv_row_table *t, int buffer_index);

/**
 * Append `num_rows` rows whose null masks and fixed bytes are zero. For
 * var-length tables each new row is empty (length 0) and the var buffer is
 * grown so that at least `num_extra_bytes` more bytes fit.
 */
QV_API qv_status qv_row_table_append_empty(qv_row_table *t, int64_t num_rows,
                                           int64_t num_extra_bytes, qv_error *err) QV_NODISCARD;

/**
 * Append `n` rows of `from` (row ids `ids`, or rows 0..n-1 when ids is NULL)
 * to `t`. The metadata must be compatible (QV_EARG otherwise); ids must be
 * inside `from` (QV_ERANGE). `from` may not be `t`.
 */
QV_API qv_status qv_row_table_append_selection_from(qv_row_table *t, const qv_row_table *from,
                                                    const int64_t *ids, int64_t n,
                                                    qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Encode / decode                                                           */

/**
 * Encode rows of the key columns `cols` (md.num_cols arrays in logical
 * order, all at least as long as the largest selected index) into `t`,
 * replacing its content: rows sel[0..n) (or 0..n-1 when sel is NULL).
 * Two phases: grow the fixed buffers and compute row offsets from the
 * var-length sizes, grow the var buffer, then write the fixed columns, the
 * var-length end offsets, the var-length bytes and the null masks.
 * Fails with QV_ETYPE when a column's type does not match the metadata,
 * QV_ERANGE when an index is out of range or a row would exceed 4 GiB
 * (in-row end offsets are 32-bit), QV_ENOMEM on allocation failure.
 * The arrays are read, not retained.
 */
QV_API qv_status qv_row_encode(qv_row_table *t, qv_array *const *cols, const int64_t *sel,
                               int64_t n, qv_error *err) QV_NODISCARD;

/** Like qv_row_encode but appends after the existing rows. */
QV_API qv_status qv_row_encode_append(qv_row_table *t, qv_array *const *cols, const int64_t *sel,
                                      int64_t n, qv_error *err) QV_NODISCARD;

/**
 * Decode rows [start, start + n) of `t` into new arrays, one per key column
 * in logical order: out[i] gets an array of types[i] (which must map to the
 * table's column metadata, QV_ETYPE otherwise) backed by fresh heap
 * buffers, offset 0, with a validity buffer only when the column has a NULL
 * in the range. Dictionary columns get their indices decoded and
 * `dictionaries[i]` attached (a reference is taken; dictionaries may be NULL
 * or hold NULL, leaving the dictionary unset). Decoding is two-step: all
 * buffers except var-length data first (offsets come from the in-row end
 * arrays), then the var-length bytes. On success the caller owns one
 * reference to each out[i]; on failure out[] is left NULL.
 * Fails with QV_ERANGE if [start, start+n) is outside the table, or a
 * string column's data would exceed int32 offsets.
 */
QV_API qv_status qv_row_decode(const qv_row_table *t, int64_t start, int64_t n,
                               qv_type *const *types, qv_array *const *dictionaries, qv_array **out,
                               qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Compare                                                                   */

/**
 * Compare column-format keys with row-format keys. For each i in [0, n):
 * the key at row sel[i] of `cols` (i when sel is NULL) against row
 * row_ids[i] of `t`. With null_equals_null, a NULL equals a NULL (grouping
 * semantics); without it a key holding any NULL equals nothing (join
 * semantics). Outputs (either may be NULL, not both):
 *  - out_match: bit i (LSB-first, (n + 7) / 8 bytes) set when equal;
 *  - out_mismatch: the left row ids (sel[i], or i) that differ, in order,
 *    their count in *out_num_mismatch.
 */
QV_API qv_status qv_row_compare_columns(const qv_row_table *t, qv_array *const *cols,
                                        const int64_t *sel, const int64_t *row_ids, int64_t n,
                                        bool null_equals_null, uint8_t *out_match,
                                        int64_t *out_mismatch, int64_t *out_num_mismatch,
                                        qv_error *err) QV_NODISCARD;

/**
 * Compare row a_ids[i] of `a` (i when a_ids is NULL) with row b_ids[i] of
 * `b` (i when NULL) for i in [0, n). Tables must have compatible metadata.
 * Outputs as qv_row_compare_columns; out_mismatch receives the `a` ids.
 */
QV_API qv_status qv_row_compare_rows(const qv_row_table *a, const int64_t *a_ids,
                                     const qv_row_table *b, const int64_t *b_ids, int64_t n,
                                     bool null_equals_null, uint8_t *out_match,
                                     int64_t *out_mismatch, int64_t *out_num_mismatch,
                                     qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* Hash                                                                      */

/** 64-bit hashes of rows ids[0..n) of `t` (rows 0..n-1 when ids is NULL). */
QV_API qv_status qv_row_hash_rows64(const qv_row_table *t, const int64_t *ids, int64_t n,
                                    uint64_t *out, qv_error *err) QV_NODISCARD;
/** 32-bit hashes of rows (see qv_row_hash_rows64). */
QV_API qv_status qv_row_hash_rows32(const qv_row_table *t, const int64_t *ids, int64_t n,
                                    uint32_t *out, qv_error *err) QV_NODISCARD;

/**
 * 64-bit hashes of column-format keys: rows sel[0..n) (0..n-1 when sel is
 * NULL) of `cols`, laid out per `md`. Equal to qv_row_hash_rows64 of the
 * same keys encoded with `md`.
 */
QV_API qv_status qv_row_hash_columns64(const qv_row_metadata *md, qv_array *const *cols,
                                       const int64_t *sel, int64_t n, uint64_t *out,
                                       qv_error *err) QV_NODISCARD;
QV_API qv_status qv_row_hash_columns32(const qv_row_metadata *md, qv_array *const *cols,
                                       const int64_t *sel, int64_t n, uint32_t *out,
                                       qv_error *err) QV_NODISCARD;

/* ------------------------------------------------------------------------ */
/* SIMD dispatch                                                             */

typedef enum qv_row_simd {
  QV_ROW_SIMD_SCALAR = 0,
  QV_ROW_SIMD_AVX2 = 1,
  QV_ROW_SIMD_AUTO = -1 /**< the best level the CPU supports */
} qv_row_simd;

/**
 * Choose the instruction set the row kernels use (process-wide). The level
 * in effect is min(requested, supported); it is returned. The initial level
 * is AUTO, or SCALAR when the environment variable QV_ROW_SIMD is "scalar".
 * Not to be changed while other threads run row kernels.
 */
QV_API qv_row_simd qv_row_set_simd_level(qv_row_simd level);
/** The level in effect. */
QV_API qv_row_simd qv_row_simd_level(void);

/* ------------------------------------------------------------------------ */
/* Inspection                                                                */

/**
 * Render the row layout of keys rows [start, end) as one JSON object (the
 * body of `quiver debug row-layout`): encode those rows of the key arrays
 * `keys` (num_keys arrays of equal length) with the given alignments and
 * describe the result:
 *   {"row_alignment": 8, "string_alignment": 8, "null_masks_bytes_per_row": 1,
 *    "is_fixed_length": false, "fixed_length": 16,
 *    "varbinary_end_array_offset": 8, "column_order": [0, 3, 1, 2],
 *    "column_offsets": [0, 4, 8, 12], "row_offsets": [0, 32, 64, 104],
 *    "rows": ["07000000...", ...], "null_masks": ["00", ...]}
 * column_offsets are listed by encoded position (as column_order);
 * row_offsets is null for fixed-length tables; rows are each row's bytes in
 * lowercase hex from its offset to the next row's; null_masks each row's
 * mask bytes in hex. *out is a NUL-terminated string the caller frees with
 * free(). Fails with QV_ERANGE when the range is outside the keys.
 */
QV_API qv_status qv_row_layout_json(qv_array *const *keys, int32_t num_keys, int32_t row_alignment,
                                    int32_t string_alignment, int64_t start, int64_t end,
                                    char **out, qv_error *err) QV_NODISCARD;

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_ROW_H */
