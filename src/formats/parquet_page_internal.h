/*
 * parquet_page_internal.h — one Parquet data page decoded on its own,
 * outside a file: the column's physical type and levels described by the
 * caller, an optional PLAIN dictionary page, then the page's levels and
 * values through the same decoders the reader uses (parquet_read.c). For
 * the per-encoding fuzz target (fuzz/fuzz_parquet_page.c); not public API.
 * Formats layer (private header).
 */
#ifndef QUIVER_FORMATS_PARQUET_PAGE_INTERNAL_H
#define QUIVER_FORMATS_PARQUET_PAGE_INTERNAL_H

#include "formats/parquet_internal.h"

typedef struct qv_pq_page_probe {
  int32_t physical;    /* qv_pq_type */
  int32_t type_length; /* FIXED_LEN_BYTE_ARRAY: bytes per value (>= 1) */
  int16_t max_def, max_rep;
  int32_t encoding;                   /* the values' encoding (qv_pq_encoding) */
  int32_t def_encoding, rep_encoding; /* v1 pages: RLE or BIT_PACKED */
  bool v2;                            /* DATA_PAGE_V2: rep_len + def_len level bytes in front */
  int32_t rep_len, def_len;
  const uint8_t *dict; /* PLAIN dictionary page body, or NULL (borrowed) */
  int64_t dict_len;
  int32_t dict_count;  /* values in the dictionary page */
  const uint8_t *page; /* the data page body, uncompressed (borrowed) */
  int64_t page_len;
  int32_t num_values; /* levels in the page (values when no levels) */
  int64_t max_alloc;  /* allocation bound; <= 0: the reader's default */
} qv_pq_page_probe;

/** Decode the page described by *probe. On QV_OK, *out_values gets the
 *  non-null values decoded and *out_levels the level slots (either may be
 *  NULL); on failure err names the page and what was wrong. Nothing is
 *  kept: every buffer is freed before returning; the probe's bytes are
 *  only read during the call. */
qv_status qv_pq_page_probe_decode(const qv_pq_page_probe *probe, int64_t *out_values,
                                  int64_t *out_levels, qv_error *err);

#endif /* QUIVER_FORMATS_PARQUET_PAGE_INTERNAL_H */
