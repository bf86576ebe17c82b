/*
 * groupby_spill.c — compute layer: group-by beyond memory. This is the
 * public qv_table_group_by (quiver/compute.h): it resolves the memory
 * budget (opts->memory_limit; 0 = a quarter of physical memory, < 0 = no
 * bound), runs the in-memory engine (groupby.c, qvg_group_by_memory) under
 * it, and when the engine reports that its group state would pass the
 * budget (QV_ENOMEM) switches to a partitioned plan:
 *  1. partition pass: the table is read one morsel of record batches at a
 *     time (mapped batches decoded lazily; the pages of a mapped table are
 *     dropped from the process once a morsel is done with
 *     qv_table_batch_done, as the in-memory run drops them batch by batch),
 *     the keys of each
 *     batch are hashed with the row table's key hash
 *     (qv_row_hash_columns64 over the keys as the grouper sees them:
 *     dictionaries decoded, views as large binary, floats canonical), and
 *     each row's key and input columns, plus its row number in the input,
 *     are appended to one of P partition files (Arrow IPC streams) chosen
 *     by 8 bits of the hash. P comes from the input size and the budget.
 *  2. each partition file is mapped and grouped in memory by the same
 *     engine, with first(row number) as an extra aggregate; a partition
 *     still too large is partitioned again on the next 8 hash bits (up to
 *     SPILL_MAX_DEPTH levels). The file is deleted once grouped.
 *  3. the partitions' groups are merged in the order of their first rows
 *     (the in-memory run's first-appearance order), then sorted by the keys
 *     when asked, so a spilled run returns what the in-memory run returns.
 * Every group lives in one partition, so every aggregate is exact.
 * The partition files live in a private directory (mode 0700) made with
 * the atomic-directory helper under opts->temp_directory, else $TMPDIR,
 * else /tmp: `.quiver-spill-<pid>.tmp-quiver-<pid>-<start>-<rand>`,
 * removed on success and on failure; one left by a process that died is
 * reclaimed by the next spill (qv_atomic_reclaim in the same directory).
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compute/groupby_internal.h"
#include "compute/spill_internal.h"
#include "core/atomic_internal.h"
#include "quiver/row.h"
#include "quiver/writer.h"

#define SPILL_ROW_COL "__quiver_spill_row"
#define SPILL_FIRST_COL "__quiver_spill_first"
#define SPILL_MAX_FANOUT 256
#define SPILL_MAX_DEPTH 4
#define SPILL_MIN_MORSEL ((int64_t)1 << 20)
#define SPILL_MAX_MORSEL ((int64_t)64 << 20)

typedef struct spill_ctx {
  const char *const *keys;
  int32_t n_keys;
  qv_aggregate *aggs;    /* the caller's, then first(SPILL_ROW_COL) */
  int32_t n_aggs;        /* including the extra one */
  qv_group_by_options o; /* for the partitions: no sort, the budget */
  bool sort;             /* the caller's: applied to the merged groups */
  void (*progress)(void *ctx, int64_t rows_done, int64_t rows_total); /* the partition pass's */
  void *progress_ctx;
  int64_t budget;
  qv_atomic_dir *dir;
  int64_t seq; /* partition files made */
  qv_table **results;
  int64_t n_results, cap_results;
  qv_spill_stats stats;
} spill_ctx;

/* The key as the grouper compares it, in a form the row table hashes:
 * dictionaries decoded, views as large binary/string, floats canonical. */
static qv_status hash_form(qv_array *a, qv_array **out, qv_error *err) {
  qv_array *cur = qv_array_ref(a), *next = NULL;
  qv_status st = QV_OK;
  if (cur->type->id == QV_DICTIONARY) {
    st = qv_array_cast(cur, cur->type->value_type, &next, err);
    qv_array_unref(cur);
    cur = next;
  }
  if (st == QV_OK && (cur->type->id == QV_STRING_VIEW || cur->type->id == QV_BINARY_VIEW)) {
    qv_type *lt = qv_type_new(cur->type->id == QV_STRING_VIEW ? QV_LARGE_STRING : QV_LARGE_BINARY);
    if (!lt) st = qv_error_set(err, QV_ENOMEM, "group-by spill: out of memory");
    else {
      st = qv_array_cast(cur, lt, &next, err);
      qv_type_unref(lt);
      qv_array_unref(cur);
      cur = next;
    }
  }
  if (st == QV_OK) {
    st = qvg_normalize_floats(cur, &next, err);
    qv_array_unref(cur);
    cur = next;
  }
  if (st != QV_OK) return st; /* cur was released on the failing branch */
  *out = cur;
  return QV_OK;
}

static qv_status push_result(spill_ctx *c, qv_table *t, qv_error *err) {
  if (c->n_results == c->cap_results) {
    int64_t cap = c->cap_results ? c->cap_results * 2 : 64;
    qv_table **r = realloc(c->results, sizeof *r * (size_t)cap);
    if (!r) {
      qv_table_unref(t);
      return qv_error_set(err, QV_ENOMEM, "group-by spill: out of memory");
    }
    c->results = r;
    c->cap_results = cap;
  }
  c->results[c->n_results++] = t;
  return QV_OK;
}

static qv_status spill_partition(spill_ctx *c, qv_table *t, int depth, qv_error *err);

/* A partition file as a table of its record batches, mapped (zero copy):
 * read with a reader that neither validates (quiver wrote it just now) nor
 * persists the stream's index in the user's index cache. */
static qv_status open_partition(const char *path, qv_table **out, qv_error *err) {
  qv_read_options ro;
  memset(&ro, 0, sizeof ro);
  ro.validation = QV_VALIDATE_NONE;
  ro.validation_set = true;
  qv_index_options io;
  memset(&io, 0, sizeof io);
  io.cache = QV_INDEX_CACHE_OFF;
  qv_reader *rd = NULL;
  qv_status st = qv_reader_open_file(path, &ro, &io, &rd, err);
  if (st != QV_OK) return st;
  int64_t n = qv_reader_num_batches(rd);
  qv_array **bs = calloc((size_t)(n > 0 ? n : 1), sizeof *bs);
  if (n < 0 || !bs) st = qv_error_set(err, QV_EIO, "group-by spill: cannot read %s", path);
  for (int64_t i = 0; i < n && st == QV_OK; i++) st = qv_reader_batch(rd, i, &bs[i], err);
  if (st == QV_OK) st = qv_table_from_batches(qv_reader_schema(rd), bs, n, out, err);
  for (int64_t i = 0; i < n && bs; i++)
    if (bs[i]) qv_array_unref(bs[i]);
  free(bs);
  qv_reader_close(rd);
  if (st != QV_OK) qv_error_prefix(err, st, "group-by spill: reading back %s: ", path);
  return st;
}

/* Group partition file `path` in memory, or partition it again. */
static qv_status group_file(spill_ctx *c, const char *path, int64_t parent_rows, int depth,
                            qv_error *err) {
  qv_table *pt = NULL;
  qv_status st = open_partition(path, &pt, err);
  if (st != QV_OK) return st;
  int64_t rows = qv_table_num_rows(pt);
  qv_table *res = NULL;
  st = qvg_group_by_memory(pt, c->keys, c->n_keys, c->aggs, c->n_aggs, &c->o, &res, err);
  if (st == QV_OK) {
    st = push_result(c, res, err);
    c->stats.partitions_grouped++;
  } else if (st == QV_ENOMEM) {
    bool one_group = false;
    if (rows == parent_rows) { /* nothing split off: one key, or a hash collision? */
      qv_aggregate cnt;
      memset(&cnt, 0, sizeof cnt);
      cnt.kind = QV_AGG_COUNT_ALL;
      qv_table *probe = NULL;
      qv_error perr;
      qv_group_by_options po = c->o; /* room for the rows' state, not for many groups */
      po.memory_limit = c->budget + (QVG_ROW_BYTES_IDS + QVG_ROW_BYTES_HASH) * rows;
      if (qvg_group_by_memory(pt, c->keys, c->n_keys, &cnt, 1, &po, &probe, &perr) == QV_OK) {
        one_group = qv_table_num_rows(probe) == 1;
        qv_table_unref(probe);
      }
    }
    if (depth + 1 >= SPILL_MAX_DEPTH || one_group)
      st = qv_error_set(err, QV_ENOMEM,
                        "group-by: a partition of %" PRId64
                        " rows still needs more than the memory limit of %" PRId64
                        " bytes after %d level%s of spilling (%s: raise --memory-limit)",
                        rows, c->budget, depth + 1, depth ? "s" : "",
                        one_group ? "they are one group" : "too many rows in too few groups");
    else st = spill_partition(c, pt, depth + 1, err);
  }
  qv_table_unref(pt);
  (void)unlink(path);
  return st;
}

/* Write the rows of one morsel (chunks[k][0..nch) of the carried columns)
 * to the partition files, by part[] (one entry per morsel row). */
static qv_status flush_morsel(spill_ctx *c, qv_type *st_type, int32_t ncols, qv_array **chunks,
                              int64_t stride, int64_t nch, const int64_t *chunk_len,
                              const uint8_t *part, int64_t nrows, qv_spill_part *outs, int fanout,
                              int depth, qv_error *err) {
  int64_t counts[SPILL_MAX_FANOUT + 1];
  qv_spill_bucket_starts(part, nrows, fanout, counts);
  int64_t *ci = malloc(sizeof(int64_t) * (size_t)(nrows ? nrows : 1));
  int64_t *ri = malloc(sizeof(int64_t) * (size_t)(nrows ? nrows : 1));
  int64_t fill[SPILL_MAX_FANOUT];
  if (!ci || !ri) {
    free(ci);
    free(ri);
    return qv_error_set(err, QV_ENOMEM, "group-by spill: out of memory");
  }
  memcpy(fill, counts, sizeof fill);
  int64_t r = 0;
  for (int64_t k = 0; k < nch; k++)
    for (int64_t i = 0; i < chunk_len[k]; i++, r++) {
      int64_t e = fill[part[r]]++;
      ci[e] = k;
      ri[e] = i;
    }
  qv_status st = QV_OK;
  qv_array **cols = calloc((size_t)ncols, sizeof *cols);
  if (!cols) st = qv_error_set(err, QV_ENOMEM, "group-by spill: out of memory");
  for (int p = 0; p < fanout && st == QV_OK; p++) {
    int64_t n = counts[p + 1] - counts[p];
    if (n == 0) continue;
    qv_spill_part *po = &outs[p];
    if (!po->w) {
      char name[64];
      snprintf(name, sizeof name, "/part-%d-%" PRId64 ".arrow", depth, c->seq++);
      const char *dir = qv_atomic_dir_tmp(c->dir);
      char path[4200];
      if (strlen(dir) + strlen(name) >= sizeof path) {
        st = qv_error_set(err, QV_EARG, "group-by spill: temp directory path too long: %s", dir);
        break;
      }
      strcpy(path, dir);
      strcat(path, name);
      st = qv_spill_part_open(po, path, st_type, "group-by spill", err);
      if (st != QV_OK) break;
      c->stats.files++;
    }
    for (int32_t j = 0; j < ncols && st == QV_OK; j++)
      st = qv_array_take_chunked(chunks + (int64_t)j * stride, nch, ci + counts[p], ri + counts[p],
                                 n, &cols[j], err);
    qv_array *batch = st == QV_OK ? qv_array_new(st_type, 1, ncols) : NULL;
    if (st == QV_OK && !batch) st = qv_error_set(err, QV_ENOMEM, "group-by spill: out of memory");
    if (st == QV_OK) {
      batch->length = n;
      batch->null_count = 0;
      for (int32_t j = 0; j < ncols; j++) {
        batch->children[j] = cols[j];
        cols[j] = NULL;
      }
      int64_t before = po->bytes;
      st = qv_spill_part_write(po, batch, "group-by spill", err);
      c->stats.bytes_written += po->bytes - before;
    }
    if (batch) qv_array_unref(batch);
    for (int32_t j = 0; j < ncols; j++)
      if (cols[j]) {
        qv_array_unref(cols[j]);
        cols[j] = NULL;
      }
  }
  free(cols);
  free(ci);
  free(ri);
  return st;
}

/* An int64 array of `n` consecutive row numbers from `first`. */
static qv_status row_numbers(int64_t first, int64_t n, qv_array **out, qv_error *err) {
  qv_buffer *vals = NULL;
  QV_RETURN_NOT_OK(qv_buffer_alloc(n * 8, &vals, err));
  int64_t *v = (int64_t *)(void *)vals->data;
  for (int64_t i = 0; i < n; i++) v[i] = first + i;
  qv_type *t = qv_type_new(QV_INT64);
  qv_array *a = t ? qv_array_new(t, 2, 0) : NULL;
  if (t) qv_type_unref(t);
  if (!a) {
    qv_buffer_unref(vals);
    return qv_error_set(err, QV_ENOMEM, "group-by spill: out of memory");
  }
  a->length = n;
  a->null_count = 0;
  a->buffers[1] = vals;
  *out = a;
  return QV_OK;
}

/* Partition `t` (depth 0: the input, its row numbers added; deeper: a
 * partition file, which carries them) into files, then group each. */
static qv_status spill_partition(spill_ctx *c, qv_table *t, int depth, qv_error *err) {
  const qv_schema *schema = qv_table_schema(t);
  int32_t nc_all = schema->type->n_children;
  int32_t *need = malloc(sizeof(int32_t) * (size_t)(nc_all + 1));
  int32_t *key_at = malloc(sizeof(int32_t) * (size_t)(c->n_keys ? c->n_keys : 1));
  if (!need || !key_at) {
    free(need);
    free(key_at);
    return qv_error_set(err, QV_ENOMEM, "group-by spill: out of memory");
  }
  /* The carried columns: the keys, every aggregate input (and at depth > 0
   * the row numbers, an aggregate input). */
  int32_t nneed = 0;
  qv_status st = QV_OK;
  int32_t n_names = c->n_keys + 2 * c->n_aggs;
  for (int32_t i = 0; i < n_names && st == QV_OK; i++) {
    const char *name;
    if (i < c->n_keys) {
      name = c->keys[i];
    } else {
      int32_t a = (i - c->n_keys) / 2;
      if (c->aggs[a].kind == QV_AGG_COUNT_ALL) continue;
      if (a == c->n_aggs - 1 && depth == 0) continue; /* row numbers: made here */
      name = (i - c->n_keys) % 2 == 0 ? c->aggs[a].column : c->aggs[a].column2;
    }
    if (name == NULL) continue;
    int32_t col = qv_schema_find(schema, name);
    if (col < 0) {
      st = qv_error_set(err, QV_EARG, "group-by spill: no column named '%s'", name);
      break;
    }
    int32_t j = 0;
    while (j < nneed && need[j] != col) j++;
    if (j == nneed) need[nneed++] = col;
    if (i < c->n_keys) key_at[i] = j;
  }
  int32_t ncols = nneed + (depth == 0 ? 1 : 0);
  qv_type *st_type = st == QV_OK ? qv_type_new(QV_STRUCT) : NULL;
  if (st == QV_OK && !st_type) st = qv_error_set(err, QV_ENOMEM, "group-by spill: out of memory");
  for (int32_t j = 0; j < nneed && st == QV_OK; j++) {
    const qv_field *f = qv_schema_field(schema, need[j]);
    st = qv_type_add_child(st_type, f->name, true, qv_type_ref(f->type), NULL, err);
  }
  if (st == QV_OK && depth == 0)
    st = qv_type_add_child(st_type, SPILL_ROW_COL, false, qv_type_new(QV_INT64), NULL, err);
  /* Fan-out from the input's size against the budget. */
  int64_t nb = qv_table_num_batches(t), total = qv_table_num_rows(t);
  int64_t row_bytes = 16;
  if (st == QV_OK && nb > 0) {
    qv_array *b0 = NULL;
    st = qv_table_batch(t, 0, &b0, err);
    if (st == QV_OK) {
      int64_t bytes = 0;
      for (int32_t j = 0; j < nneed; j++) bytes += qv_array_buffer_bytes(b0->children[need[j]]);
      if (b0->length > 0) row_bytes = bytes / b0->length + 8 + 16;
      qv_array_unref(b0);
    }
  }
  double want = 2.0 * (double)row_bytes * (double)total / (double)c->budget;
  int fanout = depth == 0 ? 2 : 16;
  while (fanout < SPILL_MAX_FANOUT && (double)fanout < want) fanout *= 2;
  if (depth == 0) c->stats.fanout = fanout;
  if (depth + 1 > c->stats.depth) c->stats.depth = depth + 1;
  int64_t morsel_bytes = c->budget / 8;
  if (morsel_bytes < SPILL_MIN_MORSEL) morsel_bytes = SPILL_MIN_MORSEL;
  if (morsel_bytes > SPILL_MAX_MORSEL) morsel_bytes = SPILL_MAX_MORSEL;

  qv_spill_part outs[SPILL_MAX_FANOUT];
  for (int p = 0; p < SPILL_MAX_FANOUT; p++) qv_spill_part_init(&outs[p]);
  int64_t mcap = 16, nch = 0, mrows = 0, mbytes = 0, pcap = 0;
  qv_array **chunks = calloc((size_t)(mcap * ncols), sizeof *chunks);
  int64_t *chunk_len = malloc(sizeof(int64_t) * (size_t)mcap);
  uint8_t *part = NULL;
  uint64_t *hashes = NULL;
  int64_t hcap = 0;
  qv_array **hk = calloc((size_t)(c->n_keys ? c->n_keys : 1), sizeof *hk);
  qv_row_metadata md;
  memset(&md, 0, sizeof md);
  bool md_ready = false;
  if (st == QV_OK && (!chunks || !chunk_len || !hk))
    st = qv_error_set(err, QV_ENOMEM, "group-by spill: out of memory");
  for (int64_t b = 0; b < nb && st == QV_OK; b++) {
    qv_array *batch = NULL;
    st = qv_table_batch(t, b, &batch, err);
    if (st != QV_OK) break;
    /* decoding validated every column (string offsets and the like were
     * read): drop those pages now; the carried columns fault back in from
     * the page cache as they are hashed and gathered */
    qv_table_batch_done(t, b);
    int64_t len = batch->length;
    if (nch == mcap) {
      int64_t cap = mcap * 2;
      qv_array **nchk = calloc((size_t)(cap * ncols), sizeof *nchk);
      int64_t *nl = realloc(chunk_len, sizeof(int64_t) * (size_t)cap);
      if (nl) chunk_len = nl;
      if (!nchk || !nl) {
        free(nchk);
        qv_array_unref(batch);
        st = qv_error_set(err, QV_ENOMEM, "group-by spill: out of memory");
        break;
      }
      for (int32_t j = 0; j < ncols; j++)
        memcpy(nchk + (int64_t)j * cap, chunks + (int64_t)j * mcap, sizeof *nchk * (size_t)nch);
      free(chunks);
      chunks = nchk;
      mcap = cap;
    }
    for (int32_t j = 0; j < nneed && st == QV_OK; j++) {
      qv_array *child = batch->children[need[j]];
      qv_array **slot = &chunks[(int64_t)j * mcap + nch];
      if (child->length == len && batch->offset == 0) *slot = qv_array_ref(child);
      else st = qv_array_slice(child, batch->offset, len, slot, err);
    }
    if (st == QV_OK && depth == 0)
      st = row_numbers(qv_table_batch_offset(t, b), len, &chunks[(int64_t)nneed * mcap + nch], err);
    qv_array_unref(batch);
    chunk_len[nch++] = len;
    if (st != QV_OK) break;
    /* hash this chunk's keys */
    if (mrows + len > pcap) {
      int64_t cap = (mrows + len) * 2;
      uint8_t *np = realloc(part, (size_t)cap);
      if (!np) {
        st = qv_error_set(err, QV_ENOMEM, "group-by spill: out of memory");
        break;
      }
      part = np;
      pcap = cap;
    }
    if (len > hcap) {
      free(hashes);
      hcap = len;
      hashes = malloc(sizeof(uint64_t) * (size_t)hcap);
      if (!hashes) {
        st = qv_error_set(err, QV_ENOMEM, "group-by spill: out of memory");
        break;
      }
    }
    for (int32_t k = 0; k < c->n_keys && st == QV_OK; k++)
      st = hash_form(chunks[(int64_t)key_at[k] * mcap + nch - 1], &hk[k], err);
    if (st == QV_OK && !md_ready) {
      qv_type **kt = malloc(sizeof(qv_type *) * (size_t)c->n_keys);
      if (!kt) st = qv_error_set(err, QV_ENOMEM, "group-by spill: out of memory");
      for (int32_t k = 0; k < c->n_keys && st == QV_OK; k++) kt[k] = hk[k]->type;
      if (st == QV_OK) st = qv_row_metadata_from_types(&md, kt, c->n_keys, 8, 8, err);
      free(kt);
      md_ready = st == QV_OK;
    }
    if (st == QV_OK && len > 0) st = qv_row_hash_columns64(&md, hk, NULL, len, hashes, err);
    for (int32_t k = 0; k < c->n_keys; k++)
      if (hk[k]) {
        qv_array_unref(hk[k]);
        hk[k] = NULL;
      }
    if (st != QV_OK) break;
    for (int64_t i = 0; i < len; i++)
      part[mrows + i] = qv_spill_partition_of(hashes[i], fanout, depth);
    mrows += len;
    for (int32_t j = 0; j < ncols; j++)
      mbytes += qv_array_buffer_bytes(chunks[(int64_t)j * mcap + nch - 1]);
    if (mbytes >= morsel_bytes || b == nb - 1) {
      /* Gathered across chunks only where the chunks share their
       * dictionaries (else each run of chunks that do is written as its
       * own batches: the stream carries the dictionary changes). */
      int64_t k0 = 0, row0 = 0;
      for (int64_t k = 1; k <= nch && st == QV_OK; k++) {
        bool cut = k == nch;
        for (int32_t j = 0; j < ncols && !cut; j++) {
          const qv_array *a = chunks[(int64_t)j * mcap + k], *p = chunks[(int64_t)j * mcap + k - 1];
          cut = a->dictionary != p->dictionary;
        }
        if (!cut) continue;
        int64_t rows = 0;
        for (int64_t q = k0; q < k; q++) rows += chunk_len[q];
        st = flush_morsel(c, st_type, ncols, chunks + k0, mcap, k - k0, chunk_len + k0, part + row0,
                          rows, outs, fanout, depth, err);
        k0 = k;
        row0 += rows;
      }
      for (int64_t k = 0; k < nch; k++) {
        qv_table_batch_done(t, b - nch + 1 + k); /* the morsel's batches */
        for (int32_t j = 0; j < ncols; j++) {
          qv_array **slot = &chunks[(int64_t)j * mcap + k];
          qv_array_unref(*slot);
          *slot = NULL;
        }
      }
      nch = mrows = mbytes = 0;
    }
    if (depth == 0 && c->progress)
      c->progress(c->progress_ctx, qv_table_batch_offset(t, b) + len, total);
  }
  for (int64_t k = 0; k < nch; k++)
    for (int32_t j = 0; j < ncols; j++)
      if (chunks[(int64_t)j * mcap + k]) qv_array_unref(chunks[(int64_t)j * mcap + k]);
  free(chunks);
  free(chunk_len);
  free(part);
  free(hashes);
  free(hk);
  if (md_ready) qv_row_metadata_reset(&md);
  if (st_type) qv_type_unref(st_type);
  free(need);
  free(key_at);
  /* Close every file, then group them one by one. */
  for (int p = 0; p < fanout; p++) st = qv_spill_part_close(&outs[p], st, "group-by spill", err);
  for (int p = 0; p < fanout; p++) {
    if (outs[p].path && st == QV_OK) st = group_file(c, outs[p].path, total, depth, err);
    qv_spill_part_discard(&outs[p]);
  }
  return st;
}

typedef struct first_ref {
  int64_t first;
  int64_t part, row;
} first_ref;

static int cmp_first(const void *a, const void *b) {
  int64_t x = ((const first_ref *)a)->first, y = ((const first_ref *)b)->first;
  return (x > y) - (x < y);
}

/* Merge the partitions' groups into one table in first-appearance order
 * (then sorted by the keys when asked). */
static qv_status merge_results(spill_ctx *c, qv_table **out, qv_error *err) {
  int32_t n_out = c->n_keys + c->n_aggs - 1; /* without the first-row column */
  int64_t np = c->n_results, ng = 0;
  qv_array **cols = calloc((size_t)(np * (n_out + 1) + 1), sizeof *cols);
  qv_array **outs = calloc((size_t)(n_out + 1), sizeof *outs);
  if (!cols || !outs) {
    free(cols);
    free(outs);
    return qv_error_set(err, QV_ENOMEM, "group-by spill: out of memory");
  }
  qv_status st = QV_OK;
  for (int64_t p = 0; p < np && st == QV_OK; p++) {
    qv_array *batch = NULL;
    if (qv_table_num_batches(c->results[p]) == 0) continue;
    st = qv_table_batch(c->results[p], 0, &batch, err);
    if (st != QV_OK) break;
    for (int32_t j = 0; j <= n_out; j++)
      cols[(int64_t)j * np + p] = qv_array_ref(batch->children[j]);
    ng += batch->length;
    qv_array_unref(batch);
  }
  first_ref *refs = st == QV_OK ? malloc(sizeof *refs * (size_t)(ng ? ng : 1)) : NULL;
  if (st == QV_OK && !refs) st = qv_error_set(err, QV_ENOMEM, "group-by spill: out of memory");
  int64_t r = 0;
  for (int64_t p = 0; p < np && st == QV_OK; p++) {
    qv_array *f = cols[(int64_t)n_out * np + p];
    if (!f) continue;
    for (int64_t i = 0; i < f->length; i++, r++) {
      refs[r].first = qv_array_int_at(f, i);
      refs[r].part = p;
      refs[r].row = i;
    }
  }
  int64_t *ci = NULL, *ri = NULL;
  if (st == QV_OK) {
    qsort(refs, (size_t)ng, sizeof *refs, cmp_first);
    ci = malloc(sizeof(int64_t) * (size_t)(ng ? ng : 1));
    ri = malloc(sizeof(int64_t) * (size_t)(ng ? ng : 1));
    if (!ci || !ri) st = qv_error_set(err, QV_ENOMEM, "group-by spill: out of memory");
    for (int64_t i = 0; i < ng && st == QV_OK; i++) {
      ci[i] = refs[i].part;
      ri[i] = refs[i].row;
    }
  }
  free(refs);
  for (int32_t j = 0; j < n_out && st == QV_OK; j++)
    st = qv_array_take_chunked(cols + (int64_t)j * np, np, ci, ri, ng, &outs[j], err);
  if (st == QV_OK && c->sort && c->n_keys > 0 && ng > 1) {
    qv_sort_key *sk = calloc((size_t)c->n_keys, sizeof *sk);
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)ng);
    if (!sk || !perm) st = qv_error_set(err, QV_ENOMEM, "group-by spill: out of memory");
    for (int32_t i = 0; i < c->n_keys && st == QV_OK; i++) {
      sk[i].column.type = outs[i]->type;
      sk[i].column.chunks = &outs[i];
      sk[i].column.n_chunks = 1;
      sk[i].null_placement = QV_NULLS_AT_END;
    }
    if (st == QV_OK) st = qv_sort_indices(sk, c->n_keys, perm, err);
    for (int32_t i = 0; i < n_out && st == QV_OK; i++) {
      qv_array *sorted = NULL;
      st = qv_array_take(outs[i], perm, ng, &sorted, err);
      if (st == QV_OK) {
        qv_array_unref(outs[i]);
        outs[i] = sorted;
      }
    }
    free(sk);
    free(perm);
  }
  const char **names = calloc((size_t)(n_out + 1), sizeof *names);
  if (st == QV_OK && !names) st = qv_error_set(err, QV_ENOMEM, "group-by spill: out of memory");
  const qv_schema *rs = np > 0 ? qv_table_schema(c->results[0]) : NULL;
  for (int32_t j = 0; j < n_out && st == QV_OK; j++) names[j] = qv_schema_field(rs, j)->name;
  if (st == QV_OK) st = qvg_build_table(names, outs, n_out, ng, out, err);
  free(names);
  free(ci);
  free(ri);
  for (int64_t i = 0; i < np * (n_out + 1); i++)
    if (cols[i]) qv_array_unref(cols[i]);
  for (int32_t j = 0; j < n_out; j++)
    if (outs[j]) qv_array_unref(outs[j]);
  free(cols);
  free(outs);
  return st;
}

static qv_status spill_group_by(qv_table *t, const char *const *keys, int32_t n_keys,
                                const qv_aggregate *aggs, int32_t n_aggs,
                                const qv_group_by_options *o, int64_t budget, qv_table **out,
                                qv_spill_stats *stats, qv_error *err) {
  spill_ctx c;
  memset(&c, 0, sizeof c);
  c.keys = keys;
  c.n_keys = n_keys;
  c.n_aggs = n_aggs + 1;
  c.aggs = calloc((size_t)c.n_aggs, sizeof *c.aggs);
  if (!c.aggs) return qv_error_set(err, QV_ENOMEM, "group-by spill: out of memory");
  if (n_aggs) memcpy(c.aggs, aggs, sizeof *aggs * (size_t)n_aggs);
  c.aggs[n_aggs].kind = QV_AGG_FIRST;
  c.aggs[n_aggs].column = SPILL_ROW_COL;
  c.aggs[n_aggs].name = SPILL_FIRST_COL;
  c.o = *o;
  c.sort = o->sort;
  c.o.sort = false;
  c.progress = o->progress;
  c.progress_ctx = o->progress_ctx;
  c.o.progress = NULL; /* partitions: no progress of their own */
  c.o.memory_limit = budget;
  c.budget = budget;
  c.stats.spilled = true;
  qv_status st =
      qv_spill_dir_open(o->temp_directory, "quiver-spill", "group-by spill", &c.dir, err);
  if (st == QV_OK) st = spill_partition(&c, t, 0, err);
  if (c.dir) qv_atomic_dir_abort(c.dir);
  if (st == QV_OK) st = merge_results(&c, out, err);
  for (int64_t i = 0; i < c.n_results; i++) qv_table_unref(c.results[i]);
  free(c.results);
  free(c.aggs);
  if (stats) *stats = c.stats;
  return st;
}

qv_status qv_table_group_by(qv_table *t, const char *const *keys, int32_t n_keys,
                            const qv_aggregate *aggs, int32_t n_aggs,
                            const qv_group_by_options *opts, qv_table **out, qv_error *err) {
  qv_group_by_options o;
  memset(&o, 0, sizeof o);
  if (opts) o = *opts;
  qv_spill_stats *stats = o.spill_stats;
  if (stats) memset(stats, 0, sizeof *stats);
  int64_t budget = o.memory_limit == 0 ? qv_spill_default_memory_limit() : o.memory_limit;
  o.memory_limit = budget > 0 ? budget : 0;
  /* Rows kept whole per group (median, quantile, list) cost the in-memory
   * run about 16 bytes a row before anything else: past the budget, spill
   * at once rather than let the run read (and fault in) the keys first. */
  bool hopeless = false;
  for (int32_t i = 0; i < n_aggs && aggs && t; i++)
    if ((aggs[i].kind == QV_AGG_MEDIAN || aggs[i].kind == QV_AGG_QUANTILE ||
         aggs[i].kind == QV_AGG_LIST) &&
        budget > 0 && qv_table_num_rows(t) > budget / 16)
      hopeless = true;
  if (hopeless && n_keys > 0 && out != NULL) {
    /* the arguments checked (names, types) on no rows first */
    qv_table *none = NULL, *res = NULL;
    qv_status st = qv_table_slice(t, 0, 0, &none, err);
    if (st == QV_OK) st = qvg_group_by_memory(none, keys, n_keys, aggs, n_aggs, &o, &res, err);
    if (res) qv_table_unref(res);
    if (none) qv_table_unref(none);
    if (st != QV_OK) return st;
    return spill_group_by(t, keys, n_keys, aggs, n_aggs, &o, budget, out, stats, err);
  }
  /* Decoding a mapped batch validates it (offsets and the like are read);
   * the engine decodes every batch before it starts, so decode them here
   * one at a time (the table keeps them decoded) and drop the pages the
   * validation read: only the columns the run reads come back, and the
   * engine drops those batch by batch as it aggregates them
   * (qv_table_batch_done, sequential and parallel paths alike). */
  int64_t nb = t ? qv_table_num_batches(t) : 0, seen = 0;
  bool release = false; /* as the engine: once the input passes half the budget */
  for (int64_t b = 0; b < nb; b++) {
    qv_array *batch = NULL;
    qv_error e;
    if (qv_table_batch(t, b, &batch, &e) != QV_OK) break; /* the engine reports it */
    seen += qv_array_buffer_bytes(batch);
    qv_array_unref(batch);
    if (!release && budget > 0 && seen > budget / 2) {
      release = true;
      for (int64_t k = 0; k < b; k++) qv_table_batch_done(t, k);
    }
    if (release) qv_table_batch_done(t, b);
  }
  qv_status st = qvg_group_by_memory(t, keys, n_keys, aggs, n_aggs, &o, out, err);
  if (st != QV_ENOMEM || budget <= 0 || n_keys == 0 || t == NULL || out == NULL) return st;
  return spill_group_by(t, keys, n_keys, aggs, n_aggs, &o, budget, out, stats, err);
}
