/*
 * join_spill.c — compute layer: the grace hash join, for a build side
 * whose hash state would pass the join's memory budget
 * (qv_join_options.memory_limit; 0 = a quarter of physical memory, < 0 =
 * no bound). join.c decides (qvj_spill_partitions) and calls qvj_grace:
 *  1. partition pass: every row of both sides gets a partition from 8
 *     bits (8..15) of the row table's key hash (qv_row_hash_columns64)
 *     over the unified, canonical keys, so equal keys of the two sides
 *     land in the same partition (rows with a null key, which never
 *     match, in partition 0). Each side's keys plus the row number in
 *     its table are appended, batch by batch, to one Arrow IPC file per
 *     partition and side; each batch of a mapped side is released
 *     (qv_table_batch_done) once read, so resident memory stays flat;
 *  2. partition by partition, both files are mapped and joined in memory
 *     (qvj_join with the build side of the whole join forced, no second
 *     spill), the partition's row pairs mapped back to the sides' row
 *     numbers, and the files deleted;
 *  3. the partitions' pairs are merged into the in-memory run's order:
 *     each partition returns its pairs in probe order (its files keep the
 *     sides' row order), each probe row's pairs in one partition, so
 *     walking the probe rows in order and taking each one's pairs from its
 *     partition gives probe order; then the unmatched build rows, walked
 *     in build order; semi / anti: the kept left rows, in left order.
 * The output is identical to the in-memory join's, pair for pair
 * (tests/unit/test_join.c). Only the keys and a row number are spilled:
 * qv_table_join gathers the output columns from the original sides.
 * The files live in a private directory (mode 0700) made with the
 * atomic-directory helper under opts->temp_directory, else $TMPDIR, else
 * /tmp: `quiver-join-<pid>` plus the helper's temporary suffix, removed on
 * success and on failure (one left by a process that died is reclaimed by
 * the next atomic directory opened there). A partition still larger than
 * the budget (one key repeated) is joined in memory anyway.
 * The partition files, the hash bits that pick a partition and the
 * counting sort by partition are group-by spilling's too (spill.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compute/join_internal.h"
#include "compute/spill_internal.h"
#include "core/atomic_internal.h"
#include "quiver/row.h"
#include "quiver/writer.h"

#define SPILL_ROW_COL "__quiver_join_row"
#define SPILL_MAX_PARTS 256

int64_t qvj_spill_runs = 0;
int qvj_spill_max_parts = SPILL_MAX_PARTS;

/* Bytes per row of a side's keys as stored (strings: their mean length
 * plus an offset). */
static int64_t key_bytes(const qvj_side *s) {
  int64_t total = 0;
  for (int32_t j = 0; j < s->n_keys; j++) {
    for (int64_t b = 0; b < s->nb; b++) {
      const qv_array *a = s->hkeys[(int64_t)j * s->nb + b];
      int w = qv_type_byte_width(a->type);
      if (w > 0) total += (int64_t)w * a->length;
      else if (a->n_buffers > 2 && a->buffers[2]) total += a->buffers[2]->size + 8 * a->length;
      else total += 16 * a->length;
    }
  }
  return s->n ? total / s->n : 0;
}

int qvj_spill_partitions(const qvj_side *build, int64_t memory_limit) {
  int64_t budget = memory_limit == 0 ? qv_spill_default_memory_limit() : memory_limit;
  if (memory_limit < 0 || build->n == 0) return 0;
  /* The in-memory build state: group ids, row lists, hash table slots
   * (about 24 bytes a row) and the keys. */
  int64_t need = build->n * (24 + key_bytes(build));
  if (need <= budget) return 0;
  int parts = 2;
  int max = qvj_spill_max_parts < 2 ? 2 : qvj_spill_max_parts;
  while (parts < max && parts < SPILL_MAX_PARTS && need / parts > budget / 2) parts *= 2;
  return parts;
}

static void part_path(char *buf, size_t cap, const char *dir, int side, int p) {
  snprintf(buf, cap, "%s/%c-%03d.arrow", dir, side == 0 ? 'L' : 'R', p);
}

/* The partition of every row of side s (rows with a null key: 0). */
static qv_status partition_rows(const qvj_side *s, const qv_row_metadata *md, int parts,
                                uint8_t *part, qv_error *err) {
  int32_t nk = s->n_keys;
  qv_array *keys[64];
  qv_array **kp = nk <= 64 ? keys : malloc(sizeof(qv_array *) * (size_t)nk);
  int64_t maxlen = 1;
  for (int64_t b = 0; b < s->nb; b++)
    if (s->boff[b + 1] - s->boff[b] > maxlen) maxlen = s->boff[b + 1] - s->boff[b];
  uint64_t *h = malloc(sizeof(uint64_t) * (size_t)maxlen);
  qv_status st = QV_OK;
  if (!kp || !h) st = qv_error_set(err, QV_ENOMEM, "join spill: out of memory");
  for (int64_t b = 0; b < s->nb && st == QV_OK; b++) {
    int64_t len = s->boff[b + 1] - s->boff[b];
    for (int32_t j = 0; j < nk; j++) kp[j] = s->hkeys[(int64_t)j * s->nb + b];
    if (len == 0) continue;
    st = qv_row_hash_columns64(md, kp, NULL, len, h, err);
    if (st != QV_OK) break;
    uint8_t *pp = part + s->boff[b];
    for (int64_t i = 0; i < len; i++) pp[i] = qv_spill_partition_of(h[i], parts, 0);
    for (int32_t j = 0; j < nk; j++) {
      qv_array *a = kp[j];
      if (a->type->id == QV_NA) memset(pp, 0, (size_t)len);
      else if (a->buffers[0] && qv_array_null_count(a) > 0)
        for (int64_t i = 0; i < len; i++)
          if (!qv_bit_get(a->buffers[0]->data, a->offset + i)) pp[i] = 0;
    }
    qv_table_batch_done(s->t, b); /* faults back in for write_side, from the page cache */
  }
  free(h);
  if (kp != keys) free(kp);
  return st;
}

/* Write side s's keys and row numbers to its `parts` partition files. */
static qv_status write_side(const qvj_side *s, int side, const uint8_t *part, int parts,
                            const char *dir, qv_type *st_type, qv_error *err) {
  int32_t nk = s->n_keys;
  qv_spill_part *files = malloc(sizeof *files * (size_t)parts);
  int64_t maxlen = 1;
  for (int64_t b = 0; b < s->nb; b++)
    if (s->boff[b + 1] - s->boff[b] > maxlen) maxlen = s->boff[b + 1] - s->boff[b];
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)maxlen);
  int64_t *start = malloc(sizeof(int64_t) * ((size_t)parts + 1));
  int64_t *fill = malloc(sizeof(int64_t) * ((size_t)parts + 1));
  qv_status st = QV_OK;
  if (!files || !idx || !start || !fill)
    st = qv_error_set(err, QV_ENOMEM, "join spill: out of memory");
  for (int p = 0; files && p < parts; p++) qv_spill_part_init(&files[p]);
  for (int p = 0; p < parts && st == QV_OK; p++) {
    char path[4200];
    part_path(path, sizeof path, dir, side, p);
    st = qv_spill_part_open(&files[p], path, st_type, "join spill", err);
  }
  for (int64_t b = 0; b < s->nb && st == QV_OK; b++) {
    int64_t len = s->boff[b + 1] - s->boff[b];
    const uint8_t *pp = part + s->boff[b];
    qv_spill_bucket_starts(pp, len, parts, start);
    memcpy(fill, start, sizeof(int64_t) * ((size_t)parts + 1));
    for (int64_t i = 0; i < len; i++) idx[fill[pp[i]]++] = i;
    for (int p = 0; p < parts && st == QV_OK; p++) {
      int64_t cnt = start[p + 1] - start[p];
      if (cnt == 0) continue;
      const int64_t *sel = idx + start[p];
      qv_array *batch = qv_array_new(st_type, 1, nk + 1);
      if (!batch) {
        st = qv_error_set(err, QV_ENOMEM, "join spill: out of memory");
        break;
      }
      batch->length = cnt;
      batch->null_count = 0;
      for (int32_t j = 0; j < nk && st == QV_OK; j++)
        st = qv_array_take(s->hkeys[(int64_t)j * s->nb + b], sel, cnt, &batch->children[j], err);
      qv_array *rows = st == QV_OK ? qv_array_new(st_type->children[nk].type, 2, 0) : NULL;
      if (st == QV_OK && !rows) st = qv_error_set(err, QV_ENOMEM, "join spill: out of memory");
      if (st == QV_OK) {
        batch->children[nk] = rows;
        rows->length = cnt;
        rows->null_count = 0;
        st = qv_buffer_alloc(cnt * 8, &rows->buffers[1], err);
      }
      if (st == QV_OK) {
        int64_t *r = (int64_t *)(void *)rows->buffers[1]->data;
        for (int64_t i = 0; i < cnt; i++) r[i] = s->boff[b] + sel[i];
        st = qv_spill_part_write(&files[p], batch, "join spill", err);
      }
      qv_array_unref(batch);
    }
    qv_table_batch_done(s->t, b); /* resident memory stays flat as the sides are read */
  }
  /* Closed, kept for join_partition, which reads and deletes them. */
  for (int p = 0; files && p < parts; p++) {
    st = qv_spill_part_close(&files[p], st, "join spill", err);
    free(files[p].path);
  }
  free(files);
  free(idx);
  free(start);
  free(fill);
  return st == QV_OK ? QV_OK : qv_error_prefix(err, st, "join spill: writing partitions: ");
}

/* The row-number column of a partition table as one int64 array. */
static qv_status row_numbers(qv_table *t, int32_t col, int64_t **out, qv_error *err) {
  int64_t n = qv_table_num_rows(t);
  *out = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!*out) return qv_error_set(err, QV_ENOMEM, "join spill: out of memory");
  qvc_columns c;
  qv_status st = qvc_columns_load(&c, t, &col, 1, err);
  int64_t k = 0;
  for (int64_t b = 0; st == QV_OK && b < c.n_batches; b++) {
    const qv_array *a = c.columns[0].chunks[b];
    if (k + a->length > n) {
      st = qv_error_set(err, QV_EINVAL, "join spill: partition file has more rows than declared");
      break;
    }
    if (a->length) memcpy(*out + k, a->buffers[1]->data + a->offset * 8, (size_t)a->length * 8);
    k += a->length;
  }
  qvc_columns_reset(&c);
  return st;
}

typedef struct part_pairs {
  int64_t *l, *r, n, at;
} part_pairs;

/* Join partition p in memory; its pairs as the sides' row numbers. */
static qv_status join_partition(const char *dir, int p, const qv_join_options *o, bool build_left,
                                const char *const *names, part_pairs *out, qv_error *err) {
  char lpath[4200], rpath[4200];
  part_path(lpath, sizeof lpath, dir, 0, p);
  part_path(rpath, sizeof rpath, dir, 1, p);
  qv_table *lt = NULL, *rt = NULL;
  int64_t *lrow = NULL, *rrow = NULL, *pl = NULL, *pr = NULL, n = 0;
  int32_t nk = o->n_keys;
  qv_status st = qv_table_open_path(lpath, NULL, &lt, err);
  if (st == QV_OK) st = qv_table_open_path(rpath, NULL, &rt, err);
  if (st == QV_OK) st = row_numbers(lt, nk, &lrow, err);
  if (st == QV_OK) st = row_numbers(rt, nk, &rrow, err);
  if (st == QV_OK) {
    qv_join_options po = *o;
    po.left_on = names;
    po.right_on = names;
    po.build = build_left ? QV_JOIN_BUILD_LEFT : QV_JOIN_BUILD_RIGHT;
    po.memory_limit = -1;
    st = qv_join_indices(lt, rt, &po, &pl, &pr, &n, err);
  }
  if (st == QV_OK) {
    for (int64_t i = 0; i < n; i++) {
      pl[i] = pl[i] < 0 ? -1 : lrow[pl[i]];
      if (pr) pr[i] = pr[i] < 0 ? -1 : rrow[pr[i]];
    }
    out->l = pl;
    out->r = pr;
    out->n = n;
    pl = pr = NULL;
  }
  free(pl);
  free(pr);
  free(lrow);
  free(rrow);
  qv_table_unref(lt);
  qv_table_unref(rt);
  (void)unlink(lpath);
  (void)unlink(rpath);
  return st == QV_OK ? QV_OK : qv_error_prefix(err, st, "join spill: partition %d: ", p);
}

qv_status qvj_grace(qvj_side *l, qvj_side *r, qv_type **types, const qv_join_options *o,
                    bool build_left, int parts, int64_t **out_l, int64_t **out_r, int64_t *out_n,
                    qv_error *err) {
  int32_t nk = o->n_keys;
  bool semi = o->how == QV_JOIN_SEMI || o->how == QV_JOIN_ANTI;
  qv_row_metadata md;
  memset(&md, 0, sizeof md);
  qv_atomic_dir *dir = NULL;
  uint8_t *lpart = malloc((size_t)(l->n ? l->n : 1)), *rpart = malloc((size_t)(r->n ? r->n : 1));
  part_pairs *pp = calloc((size_t)parts, sizeof *pp);
  char **names = calloc((size_t)nk + 1, sizeof *names);
  qv_type *st_type = qv_type_new(QV_STRUCT);
  int64_t *pl = NULL, *pr = NULL;
  qv_status st = QV_OK;
  if (!lpart || !rpart || !pp || !names || !st_type) {
    st = qv_error_set(err, QV_ENOMEM, "join spill: out of memory");
    goto done;
  }
  __atomic_add_fetch(&qvj_spill_runs, 1, __ATOMIC_RELAXED);
  for (int32_t j = 0; j < nk && st == QV_OK; j++) {
    char name[32];
    snprintf(name, sizeof name, "k%d", (int)j);
    names[j] = strdup(name);
    if (!names[j]) st = qv_error_set(err, QV_ENOMEM, "join spill: out of memory");
    else st = qv_type_add_child(st_type, name, true, qv_type_ref(types[j]), NULL, err);
  }
  if (st == QV_OK)
    st = qv_type_add_child(st_type, SPILL_ROW_COL, false, qv_type_new(QV_INT64), NULL, err);
  if (st == QV_OK) st = qv_row_metadata_from_types(&md, types, nk, 8, 8, err);
  if (st == QV_OK) st = partition_rows(l, &md, parts, lpart, err);
  if (st == QV_OK) st = partition_rows(r, &md, parts, rpart, err);
  if (st == QV_OK)
    st = qv_spill_dir_open(o->temp_directory, "quiver-join", "join spill", &dir, err);
  if (st == QV_OK) st = write_side(l, 0, lpart, parts, qv_atomic_dir_tmp(dir), st_type, err);
  if (st == QV_OK) st = write_side(r, 1, rpart, parts, qv_atomic_dir_tmp(dir), st_type, err);
  int64_t total = 0;
  for (int p = 0; p < parts && st == QV_OK; p++) {
    st = join_partition(qv_atomic_dir_tmp(dir), p, o, build_left, (const char *const *)names,
                        &pp[p], err);
    if (st == QV_OK && qv_add_overflow(total, pp[p].n, &total))
      st = qv_error_set(err, QV_ERANGE, "join: the output has more than 2^63 rows");
  }
  if (st != QV_OK) goto done;
  pl = malloc(sizeof(int64_t) * (size_t)(total ? total : 1));
  pr = semi ? NULL : malloc(sizeof(int64_t) * (size_t)(total ? total : 1));
  if (!pl || (!semi && !pr)) {
    st = qv_error_set(err, QV_ENOMEM, "join: out of memory (%" PRId64 " output rows)", total);
    goto done;
  }
  int64_t k = 0;
  if (semi) {
    for (int64_t i = 0; i < l->n; i++) {
      part_pairs *q = &pp[lpart[i]];
      if (q->at < q->n && q->l[q->at] == i) pl[k++] = q->l[q->at++];
    }
  } else {
    /* Probe rows in order, each with its partition's pairs; then the
     * unmatched build rows in build order. */
    const qvj_side *ps = build_left ? r : l, *bs = build_left ? l : r;
    const uint8_t *ppart = build_left ? rpart : lpart, *bpart = build_left ? lpart : rpart;
    for (int64_t i = 0; i < ps->n; i++) {
      part_pairs *q = &pp[ppart[i]];
      const int64_t *qp = build_left ? q->r : q->l;
      while (q->at < q->n && qp[q->at] == i) {
        pl[k] = q->l[q->at];
        pr[k++] = q->r[q->at++];
      }
    }
    for (int64_t i = 0; i < bs->n; i++) {
      part_pairs *q = &pp[bpart[i]];
      const int64_t *qp = build_left ? q->r : q->l, *qb = build_left ? q->l : q->r;
      if (q->at < q->n && qp[q->at] < 0 && qb[q->at] == i) {
        pl[k] = q->l[q->at];
        pr[k++] = q->r[q->at++];
      }
    }
  }
  for (int p = 0; p < parts; p++)
    if (pp[p].at != pp[p].n) {
      st = qv_error_set(err, QV_EINVAL,
                        "join spill: partition %d's pairs are not in probe order (internal)", p);
      goto done;
    }
  *out_l = pl;
  *out_r = pr;
  *out_n = k;
  pl = pr = NULL;
done:
  qv_atomic_dir_abort(dir);
  qv_row_metadata_reset(&md);
  if (pp)
    for (int p = 0; p < parts; p++) {
      free(pp[p].l);
      free(pp[p].r);
    }
  free(pp);
  if (names)
    for (int32_t j = 0; j < nk; j++) free(names[j]);
  free(names);
  qv_type_unref(st_type);
  free(lpart);
  free(rpart);
  free(pl);
  free(pr);
  return st;
}
