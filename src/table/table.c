/*
 * table.c — the qv_table object: lifetime, mapped-file sources with lazy
 * batch decoding, batch entries, the batch index (row prefix sums) with
 * fast_slice's interpolation search and gather's one-pass (batch, row)
 * resolution, inspection and logical equality. Table layer, on ipc + core.
 *
 * A table's batches are entries (table_internal.h): materialised STRUCT
 * arrays, or lazy references to rows and columns of a file batch that are
 * decoded the first time a value is needed. Decoding a file batch happens
 * once per source (cached under the source mutex); building the entry's
 * array from it (slice + column projection, zero copy) happens once per
 * entry (published with an atomic compare-and-swap), so tables can be used
 * from several threads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/guard_internal.h"
#include "core/parallel_internal.h"
#include "core/radix_internal.h"
#include "core/take_internal.h"
#include "ipc/ipc_internal.h"
#include "table/table_internal.h"

static qv_status oom(qv_error *err, const char *what) {
  return qv_error_set(err, QV_ENOMEM, "table: out of memory (%s)", what);
}

/* ------------------------------------------------------------------------ */
/* Sources                                                                   */

qv_tsource *qv_tsource_ref(qv_tsource *s) {
  if (s != NULL) __atomic_add_fetch(&s->refcount, 1, __ATOMIC_RELAXED);
  return s;
}

void qv_tsource_unref(qv_tsource *s) {
  if (s == NULL || __atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
  for (int64_t i = 0; s->decoded != NULL && i < s->n_batches; i++) qv_array_unref(s->decoded[i]);
  free(s->decoded);
  free(s->last_use);
  qv_reader_close(s->reader);
  qv_parquet_close(s->pq);
  qv_buffer_unref(s->pq_map);
  qv_schema_unref(s->schema);
  pthread_mutex_destroy(&s->mu);
  free(s->path);
  free(s);
}

/* "size 10 -> 12; mtime ... -> ..." for the fields that differ. */
static void identity_diff(const qv_file_identity *want, const qv_file_identity *got, char *out,
                          size_t cap) {
  size_t n = 0;
  out[0] = '\0';
#define QV_ID_DIFF(cond, ...)                                                                      \
  if ((cond) && n < cap) {                                                                         \
    n += (size_t)snprintf(out + n, cap - n, "%s", n ? "; " : "");                                  \
    if (n < cap) n += (size_t)snprintf(out + n, cap - n, __VA_ARGS__);                             \
  }
  QV_ID_DIFF(want->size != got->size, "size %lld -> %lld", (long long)want->size,
             (long long)got->size);
  QV_ID_DIFF(want->mtime_ns != got->mtime_ns, "mtime_ns %lld -> %lld", (long long)want->mtime_ns,
             (long long)got->mtime_ns);
  QV_ID_DIFF(want->dev != got->dev || want->ino != got->ino, "device/inode %llu/%llu -> %llu/%llu",
             (unsigned long long)want->dev, (unsigned long long)want->ino,
             (unsigned long long)got->dev, (unsigned long long)got->ino);
#undef QV_ID_DIFF
}

static bool identity_equal(const qv_file_identity *a, const qv_file_identity *b) {
  return a->size == b->size && a->mtime_ns == b->mtime_ns && a->dev == b->dev && a->ino == b->ino;
}

static qv_status changed(const char *path, const qv_file_identity *want,
                         const qv_file_identity *got, qv_error *err) {
  char what[512];
  identity_diff(want, got, what, sizeof what);
  return qv_error_set(err, QV_ECHANGED, "file '%s' changed since the recipe was written (%s)", path,
                      what);
}

/* With an expected identity, stat before opening: a missing file, or one
 * that is no longer a regular file (opening a FIFO would block), or one
 * that changed, is refused without being opened. */
static qv_status precheck(const char *path, const qv_file_identity *expect, qv_error *err) {
  struct stat sb;
  if (stat(path, &sb) != 0) {
    int e = errno;
    return qv_error_set(
        err, e == ENOENT || e == ENOTDIR ? QV_ECHANGED : QV_EIO, "file '%s' %s (%s)", path,
        e == ENOENT || e == ENOTDIR ? "is missing" : "cannot be checked", strerror(e));
  }
  if (!S_ISREG(sb.st_mode))
    return qv_error_set(err, QV_ECHANGED, "file '%s' is no longer a regular file", path);
  qv_file_identity got = {(int64_t)sb.st_size,
                          (int64_t)sb.st_mtim.tv_sec * 1000000000 + (int64_t)sb.st_mtim.tv_nsec,
                          (uint64_t)sb.st_dev, (uint64_t)sb.st_ino};
  return identity_equal(expect, &got) ? QV_OK : changed(path, expect, &got, err);
}

qv_status qv_tsource_open(const char *path, const qv_read_options *opts,
                          const qv_file_identity *expect, qv_tsource **out, qv_error *err) {
  qv_buffer *map = NULL;
  qv_file_identity id;
  if (expect != NULL) QV_RETURN_NOT_OK(precheck(path, expect, err));
  QV_RETURN_NOT_OK(qv_buffer_map_file(path, &map, &id, err));
  if (expect != NULL && !identity_equal(expect, &id)) { /* changed since the stat */
    qv_buffer_unref(map);
    return changed(path, expect, &id, err);
  }
  qv_tsource *s = calloc(1, sizeof *s);
  if (s == NULL) {
    qv_buffer_unref(map);
    return oom(err, "source");
  }
  s->refcount = 1;
  s->identity = id;
  pthread_mutex_init(&s->mu, NULL);
  /* Recipes name the file by its absolute path, so that another process
   * (another working directory) finds it. */
  s->path = realpath(path, NULL);
  if (s->path == NULL) s->path = strdup(path);
  qv_status st = s->path ? QV_OK : oom(err, "path");
  bool parquet = map->size >= 8 && (memcmp(map->data, "PAR1", 4) == 0 ||
                                    memcmp(map->data, "PARE", 4) == 0); /* refused by the reader */
  if (st == QV_OK && parquet) {
    st = qv_tsource_open_parquet(s, map, path, err); /* table_parquet.c */
    qv_buffer_unref(map);
    if (st != QV_OK) {
      qv_tsource_unref(s);
      return st;
    }
  } else {
    if (st == QV_OK) st = qv_reader_open_mapped(map, path, &id, opts, NULL, &s->reader, err);
    qv_buffer_unref(map);
    if (st != QV_OK) {
      qv_error_prefix(err, st, "'%s': ", path);
      qv_tsource_unref(s);
      return st;
    }
    s->schema = qv_schema_ref((qv_schema *)qv_reader_schema(s->reader));
    s->n_batches = qv_reader_num_batches(s->reader);
  }
  if (s->n_batches < 0) {
    qv_tsource_unref(s);
    return qv_error_set(err, QV_EIO, "'%s': batches cannot be located", path);
  }
  s->decoded = calloc((size_t)(s->n_batches > 0 ? s->n_batches : 1), sizeof *s->decoded);
  s->last_use = calloc((size_t)(s->n_batches > 0 ? s->n_batches : 1), sizeof *s->last_use);
  if (s->decoded == NULL || s->last_use == NULL) {
    qv_tsource_unref(s);
    return oom(err, "batch cache");
  }
  *out = s;
  return QV_OK;
}

/* Is cached batch a held by the cache alone (its struct, and each column
 * loaded)? Then releasing it frees its decompressed memory. Under s->mu
 * (no new reference can be taken from the cache meanwhile). */
static bool only_cached(const qv_array *a) {
  if (__atomic_load_n(&a->refcount_, __ATOMIC_ACQUIRE) != 1) return false;
  for (int32_t c = 0; c < a->n_children; c++)
    if (a->children[c] != NULL &&
        __atomic_load_n(&a->children[c]->refcount_, __ATOMIC_ACQUIRE) != 1)
      return false;
  return true;
}

/* Release the least recently used cached batch (other than `keep`) that
 * nothing but the cache references. Under s->mu. False: none. */
static bool release_lru(qv_tsource *s, int64_t keep) {
  int64_t best = -1;
  for (int64_t j = 0; j < s->n_batches; j++) {
    if (j == keep || s->decoded[j] == NULL || !only_cached(s->decoded[j])) continue;
    if (best < 0 || s->last_use[j] < s->last_use[best]) best = j;
  }
  if (best < 0) return false;
  qv_array_unref(s->decoded[best]);
  s->decoded[best] = NULL;
  s->released++;
  return true;
}

/* File batch i, decoded on first use, with at least the columns `cols` (n
 * of them; NULL = all) loaded: one new reference (the source keeps
 * another). In a compressed file only the columns asked for are
 * decompressed: the cached batch has NULL children for the others, which
 * later calls fill in (a slot only ever goes from NULL to a column, under
 * the mutex, so arrays taken from it stay valid). A decode that the
 * reader's decompression budget refuses releases least recently used
 * cached batches no one else holds (release_lru) and is retried.
 * Uncompressed files decode whole batches (zero copy; all columns
 * validated) as before. */
static qv_status src_batch(qv_tsource *s, int64_t i, const int32_t *cols, int32_t n, qv_array **out,
                           qv_error *err) {
  pthread_mutex_lock(&s->mu);
  qv_status st = QV_OK;
  if (s->pq != NULL) { /* a Parquet row group, column by column */
    st = qv_tsource_parquet_batch(s, i, cols, n, err);
    *out = st == QV_OK ? qv_array_ref(s->decoded[i]) : NULL; /* a new reference, as below */
    pthread_mutex_unlock(&s->mu);
    return st;
  }
  qv_array *a = s->decoded[i];
  int32_t nf = qv_schema_num_fields(s->schema);
  bool lazy = qv_reader_compression(s->reader) != QV_COMPRESSION_NONE;
  bool *want = NULL;
  bool missing = a == NULL;
  if (lazy && cols != NULL) {
    want = calloc((size_t)(nf > 0 ? nf : 1), sizeof *want);
    if (want == NULL) st = oom(err, "column mask");
    for (int32_t k = 0; st == QV_OK && k < n; k++) {
      if (cols[k] < 0 || cols[k] >= nf) continue; /* reported by the caller's check */
      if (a == NULL || a->children[cols[k]] == NULL) want[cols[k]] = missing = true;
    }
  } else if (a != NULL) {
    for (int32_t c = 0; c < a->n_children && !missing; c++) missing = a->children[c] == NULL;
  }
  while (st == QV_OK && missing) {
    qv_array *got = NULL;
    st = lazy ? qv_reader_batch_masked(s->reader, i, want, &got, err)
              : qv_reader_batch(s->reader, i, &got, err);
    if (st == QV_ENOMEM && lazy && qv_reader_decompress_budget(s->reader) > 0 &&
        release_lru(s, i)) {
      st = QV_OK; /* memory released for the budget: try again */
      continue;
    }
    if (st != QV_OK) {
      qv_error_prefix(err, st, "'%s': ", s->path);
    } else if (a == NULL) {
      s->decoded[i] = a = got;
    } else {
      for (int32_t c = 0; c < a->n_children && c < got->n_children; c++)
        if (a->children[c] == NULL && got->children[c] != NULL)
          a->children[c] = qv_array_ref(got->children[c]);
      qv_array_unref(got);
    }
    missing = false;
  }
  if (st == QV_OK) {
    s->last_use[i] = ++s->tick;
    *out = qv_array_ref(a);
  }
  pthread_mutex_unlock(&s->mu);
  free(want);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Projections, entries                                                      */

qv_tproj *qv_tproj_new(int32_t n) {
  qv_tproj *p = malloc(sizeof *p + sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
  if (p == NULL) return NULL;
  p->refcount = 1;
  p->n = n;
  return p;
}

qv_tproj *qv_tproj_ref(qv_tproj *p) {
  if (p != NULL) __atomic_add_fetch(&p->refcount, 1, __ATOMIC_RELAXED);
  return p;
}

void qv_tproj_unref(qv_tproj *p) {
  if (p != NULL && __atomic_sub_fetch(&p->refcount, 1, __ATOMIC_ACQ_REL) == 0) free(p);
}

void qv_tbatch_reset(qv_tbatch *e) {
  qv_array_unref(e->array);
  qv_tsource_unref(e->src);
  qv_tproj_unref(e->proj);
  memset(e, 0, sizeof *e);
}

qv_tbatch qv_tbatch_copy(const qv_tbatch *e) {
  qv_tbatch c = *e;
  c.array = qv_array_ref(__atomic_load_n(&((qv_tbatch *)e)->array, __ATOMIC_ACQUIRE));
  qv_tsource_ref(c.src);
  qv_tproj_ref(c.proj);
  return c;
}

qv_status qv_make_batch(qv_type *type, int64_t length, qv_array **children, int32_t n,
                        qv_array **out, qv_error *err) {
  qv_array *b = qv_array_new(type, 1, n);
  if (b == NULL) {
    for (int32_t i = 0; i < n; i++) qv_array_unref(children[i]);
    return oom(err, "batch");
  }
  b->length = length;
  b->null_count = 0;
  for (int32_t i = 0; i < n; i++) b->children[i] = children[i];
  *out = b;
  return QV_OK;
}

/* Children of `src` (a STRUCT) at `cols` (NULL: all), each sliced to
 * [off, off+len) of the struct's logical rows, into a new batch. */
static qv_status batch_from(qv_array *src, qv_type *type, const int32_t *cols, int32_t n,
                            int64_t off, int64_t len, qv_array **out, qv_error *err) {
  qv_array **ch = calloc((size_t)(n > 0 ? n : 1), sizeof *ch);
  if (ch == NULL) return oom(err, "children");
  qv_status st = QV_OK;
  for (int32_t c = 0; c < n && st == QV_OK; c++) {
    qv_array *child = src->children[cols ? cols[c] : c];
    int64_t start = src->offset + off;
    if (start == child->offset && len == child->length && start == 0) ch[c] = qv_array_ref(child);
    else st = qv_array_slice(child, start, len, &ch[c], err);
  }
  if (st != QV_OK) {
    for (int32_t c = 0; c < n; c++) qv_array_unref(ch[c]);
    free(ch);
    return st;
  }
  st = qv_make_batch(type, len, ch, n, out, err);
  free(ch);
  return st;
}

qv_status qv_tbl_entry_array(qv_table *t, int64_t i, qv_array **out, qv_error *err) {
  qv_tbatch *e = &t->batches[i];
  qv_array *a = __atomic_load_n(&e->array, __ATOMIC_ACQUIRE);
  if (a != NULL) {
    *out = qv_array_ref(a);
    return QV_OK;
  }
  qv_array *full = NULL;
  int32_t n = qv_schema_num_fields(t->schema);
  QV_RETURN_NOT_OK(src_batch(e->src, e->src_batch, e->proj ? e->proj->cols : NULL,
                             e->proj ? e->proj->n : -1, &full, err));
  int32_t have = e->proj ? e->proj->n : full->n_children;
  qv_status st = QV_OK;
  if (have != n || full->length < e->offset + e->length)
    st = qv_error_set(err, QV_EINVAL,
                      "'%s': batch %lld has %d columns and %lld rows, expected %d and %lld",
                      e->src->path, (long long)e->src_batch, full->n_children,
                      (long long)full->length, n, (long long)(e->offset + e->length));
  if (st == QV_OK)
    st = batch_from(full, t->schema->type, e->proj ? e->proj->cols : NULL, n, e->offset, e->length,
                    &a, err);
  /* A Parquet source has no IPC reader: its decoded row groups are kept
   * (decoding is the expensive part; table_parquet.c). */
  bool compressed =
      e->src->reader != NULL && qv_reader_compression(e->src->reader) != QV_COMPRESSION_NONE;
  qv_array_unref(full);
  if (st != QV_OK) return st;
  if (compressed) { /* not kept: the source may release the columns */
    *out = a;
    return QV_OK;
  }
  qv_array *expected = NULL;
  if (!__atomic_compare_exchange_n(&e->array, &expected, a, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    qv_array_unref(a); /* another thread won; use its array */
    a = expected;
  }
  *out = qv_array_ref(a);
  return QV_OK;
}

qv_status qv_tbatch_project(const qv_tbatch *e, qv_type *type, const int32_t *cols, int32_t n,
                            qv_tbatch *out, qv_error *err) {
  qv_tbatch r = {0};
  r.src_batch = e->src_batch;
  r.offset = e->offset;
  r.length = e->length;
  r.src = qv_tsource_ref(e->src);
  if (e->src != NULL) {
    if (n < 0) {
      r.proj = qv_tproj_ref(e->proj);
    } else {
      r.proj = qv_tproj_new(n);
      if (r.proj == NULL) {
        qv_tbatch_reset(&r);
        return oom(err, "projection");
      }
      for (int32_t c = 0; c < n; c++) r.proj->cols[c] = e->proj ? e->proj->cols[cols[c]] : cols[c];
    }
  }
  qv_array *a = __atomic_load_n(&((qv_tbatch *)e)->array, __ATOMIC_ACQUIRE);
  if (a != NULL) {
    int32_t m = n < 0 ? a->n_children : n;
    qv_status st = batch_from(a, type, n < 0 ? NULL : cols, m, 0, a->length, &r.array, err);
    if (st != QV_OK) {
      qv_tbatch_reset(&r);
      return st;
    }
  }
  *out = r;
  return QV_OK;
}

qv_status qv_tbatch_slice(const qv_tbatch *e, int64_t off, int64_t len, qv_tbatch *out,
                          qv_error *err) {
  qv_tbatch r = {0};
  r.src = qv_tsource_ref(e->src);
  r.proj = qv_tproj_ref(e->proj);
  r.src_batch = e->src_batch;
  r.offset = e->offset + off;
  r.length = len;
  qv_array *a = __atomic_load_n(&((qv_tbatch *)e)->array, __ATOMIC_ACQUIRE);
  if (a != NULL) {
    qv_status st = off == 0 && len == a->length
                       ? (r.array = qv_array_ref(a), QV_OK)
                       : batch_from(a, a->type, NULL, a->n_children, off, len, &r.array, err);
    if (st != QV_OK) {
      qv_tbatch_reset(&r);
      return st;
    }
  }
  *out = r;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Table objects                                                             */

qv_table *qv_tbl_new(qv_table_kind kind, qv_schema *schema) {
  qv_table *t = calloc(1, sizeof *t);
  if (t == NULL) return NULL;
  t->offsets = calloc(1, sizeof *t->offsets);
  if (t->offsets == NULL) {
    free(t);
    return NULL;
  }
  t->refcount = 1;
  t->kind = kind;
  t->schema = qv_schema_ref(schema);
  return t;
}

qv_status qv_tbl_push(qv_table *t, qv_tbatch *e, qv_error *err) {
  if (e->length == 0) {
    qv_tbatch_reset(e);
    return QV_OK;
  }
  if (t->n_batches == t->cap_batches) {
    int64_t cap = t->cap_batches ? 2 * t->cap_batches : 8;
    qv_tbatch *b = realloc(t->batches, sizeof *b * (size_t)cap);
    if (b != NULL) t->batches = b;
    int64_t *o = realloc(t->offsets, sizeof *o * (size_t)(cap + 1));
    if (o != NULL) t->offsets = o;
    if (b == NULL || o == NULL) {
      qv_tbatch_reset(e);
      return oom(err, "batch list");
    }
    t->cap_batches = cap;
  }
  t->batches[t->n_batches] = *e;
  memset(e, 0, sizeof *e);
  t->num_rows += t->batches[t->n_batches].length;
  t->offsets[++t->n_batches] = t->num_rows;
  return QV_OK;
}

qv_status qv_tbl_push_array(qv_table *t, qv_array *batch, qv_error *err) {
  qv_tbatch e = {0};
  e.array = batch;
  e.length = batch->length;
  return qv_tbl_push(t, &e, err);
}

qv_table *qv_table_ref(qv_table *t) {
  if (t != NULL) __atomic_add_fetch(&t->refcount, 1, __ATOMIC_RELAXED);
  return t;
}

void qv_trow_reset(qv_trow *r) {
  for (int32_t j = 0; j < r->n_blocks; j++) qv_table_unref(r->blocks[j]);
  free(r->blocks);
  free(r->col_block);
  free(r->col_index);
  memset(r, 0, sizeof *r);
}

void qv_table_unref(qv_table *t) {
  if (t == NULL || __atomic_sub_fetch(&t->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
  for (int64_t i = 0; i < t->n_batches; i++) qv_tbatch_reset(&t->batches[i]);
  free(t->batches);
  free(t->offsets);
  qv_schema_unref(t->schema);
  qv_tsource_unref(t->src);
  qv_treplay_unref(t->replays);
  for (int64_t r = 0; r < t->n_rows_blocks; r++) qv_trow_reset(&t->rows[r]);
  free(t->rows);
  free(t);
}

qv_status qv_schema_from_fields(const qv_field *fields, int32_t n, const qv_metadata *md,
                                qv_schema **out, qv_error *err) {
  qv_type *st = qv_type_new(QV_STRUCT);
  if (st == NULL) return oom(err, "schema");
  for (int32_t i = 0; i < n; i++) {
    qv_status s = qv_type_add_child(st, fields[i].name, fields[i].nullable,
                                    qv_type_ref(fields[i].type), &fields[i].metadata, err);
    if (s != QV_OK) {
      qv_type_unref(fields[i].type);
      qv_type_unref(st);
      return s;
    }
  }
  qv_schema *s = qv_schema_new(st);
  if (s == NULL) {
    qv_type_unref(st);
    return oom(err, "schema");
  }
  if (md != NULL && md->n > 0) {
    qv_status r = qv_metadata_copy(&s->metadata, md, err);
    if (r != QV_OK) {
      qv_schema_unref(s);
      return r;
    }
  }
  *out = s;
  return QV_OK;
}

qv_status qv_table_from_batches(const qv_schema *schema, qv_array *const *batches, int64_t n,
                                qv_table **out, qv_error *err) {
  if (schema == NULL || n < 0 || (n > 0 && batches == NULL))
    return qv_error_set(err, QV_EARG, "table: needs a schema and %lld batches", (long long)n);
  qv_table *t = qv_tbl_new(QV_TABLE_IN_MEMORY, (qv_schema *)schema);
  if (t == NULL) return oom(err, "table");
  qv_type *type = schema->type;
  int32_t nc = type->n_children;
  for (int64_t i = 0; i < n; i++) {
    qv_array *b = batches[i];
    qv_status st = QV_OK;
    if (b == NULL || !qv_type_equals(b->type, type, false)) {
      char want[256], got[256] = "NULL";
      qv_type_to_string(type, want, sizeof want);
      if (b) qv_type_to_string(b->type, got, sizeof got);
      st = qv_error_set(err, QV_ETYPE, "table: batch %lld has type %s, expected %s", (long long)i,
                        got, want);
    } else if (qv_array_null_count(b) > 0) {
      st = qv_error_set(err, QV_EARG,
                        "table: batch %lld has %lld null rows at the top level (a record "
                        "batch has none)",
                        (long long)i, (long long)qv_array_null_count(b));
    }
    qv_array *nb = NULL;
    if (st == QV_OK) {
      bool plain = b->type == type && b->offset == 0 && b->buffers[0] == NULL;
      for (int32_t c = 0; c < nc && plain; c++)
        plain = b->children[c]->length == b->length && b->children[c]->offset == 0;
      if (plain) nb = qv_array_ref(b);
      else st = batch_from(b, type, NULL, nc, 0, b->length, &nb, err);
    }
    if (st == QV_OK) st = qv_tbl_push_array(t, nb, err);
    if (st != QV_OK) {
      qv_table_unref(t);
      return st;
    }
  }
  *out = t;
  return QV_OK;
}

qv_status qv_tbl_from_source(qv_tsource *src, qv_table **out, qv_error *err) {
  qv_table *t = qv_tbl_new(QV_TABLE_MAPPED, src->schema);
  if (t == NULL) return oom(err, "table");
  t->src = qv_tsource_ref(src);
  for (int64_t i = 0; i < src->n_batches; i++) {
    qv_tbatch e = {0};
    e.src = qv_tsource_ref(src);
    e.src_batch = i;
    e.length = src->pq ? qv_tsource_parquet_rows(src, i) : qv_reader_batch_rows(src->reader, i);
    qv_status st = e.length < 0 ? qv_error_set(err, QV_EINVAL, "'%s': batch %lld has %lld rows",
                                               src->path, (long long)i, (long long)e.length)
                                : qv_tbl_push(t, &e, err);
    if (st != QV_OK) {
      qv_tbatch_reset(&e);
      qv_table_unref(t);
      return st;
    }
  }
  *out = t;
  return QV_OK;
}

qv_status qv_table_open_path(const char *path, const qv_read_options *options, qv_table **out,
                             qv_error *err) {
  if (path == NULL) return qv_error_set(err, QV_EARG, "table: no path");
  qv_tsource *src = NULL;
  QV_RETURN_NOT_OK(qv_tsource_open(path, options, NULL, &src, err));
  qv_status st = qv_tbl_from_source(src, out, err);
  qv_tsource_unref(src);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Inspection                                                                */

qv_table_kind qv_table_get_kind(const qv_table *t) { return t->kind; }
const qv_schema *qv_table_schema(const qv_table *t) { return t->schema; }
int64_t qv_table_num_rows(const qv_table *t) { return t->num_rows; }
int32_t qv_table_num_columns(const qv_table *t) { return qv_schema_num_fields(t->schema); }
int64_t qv_table_num_batches(const qv_table *t) { return t->n_batches; }
int64_t qv_table_num_replays(const qv_table *t) { return t->n_replays; }

int64_t qv_table_batch_offset(const qv_table *t, int64_t i) {
  if (i < 0 || i > t->n_batches) return -1;
  return t->offsets[i];
}

int64_t qv_table_batch_rows(const qv_table *t, int64_t i) {
  if (i < 0 || i >= t->n_batches) return -1;
  return t->batches[i].length;
}

qv_status qv_table_batch(qv_table *t, int64_t i, qv_array **out, qv_error *err) {
  if (i < 0 || i >= t->n_batches)
    return qv_error_set(err, QV_ERANGE, "table: batch %lld is out of range (%lld batches)",
                        (long long)i, (long long)t->n_batches);
  qv_array *a = NULL;
  QV_RETURN_NOT_OK(qv_tbl_entry_array(t, i, &a, err));
  /* Callers read the batch directly: one that was decoded before its file
   * shrank fails here rather than with SIGBUS in the caller (quiver/guard.h;
   * one load per mapped buffer). */
  qv_status st = qv_guard_check_array(a, err);
  if (st != QV_OK) {
    qv_array_unref(a);
    return st;
  }
  *out = a;
  return QV_OK;
}

/* The pages of a batch's mapped buffers, dropped from this process one
 * span at a time: the buffers of a record batch lie together in its
 * message body, so consecutive buffers of one mapping extend one span
 * (page-rounded outward, clamped to the mapping: with batches of a few
 * thousand rows most buffers are smaller than a page, and rounding inward
 * would drop nothing); a buffer of another mapping, or a dictionary (which
 * lives in its own message), flushes it. A page shared with a neighbouring
 * batch faults back in from the page cache if that batch is read again. */
typedef struct page_span {
  const qv_buffer *root; /* the mapping, NULL: empty */
  uintptr_t lo, hi;
} page_span;

static void span_flush(page_span *sp) {
  if (sp->root && sp->hi > sp->lo) (void)madvise((void *)sp->lo, sp->hi - sp->lo, MADV_DONTNEED);
  sp->root = NULL;
}

static void span_add(page_span *sp, const qv_buffer *b, uintptr_t page) {
  if (!b || b->size <= 0 || !qv_buffer_is_mapped(b)) return;
  const qv_buffer *root = b->parent_ ? b->parent_ : b;
  uintptr_t base = (uintptr_t)root->data & ~(page - 1);
  uintptr_t end = ((uintptr_t)root->data + (uintptr_t)root->size + page - 1) & ~(page - 1);
  uintptr_t lo = (uintptr_t)b->data & ~(page - 1);
  uintptr_t hi = ((uintptr_t)b->data + (uintptr_t)b->size + page - 1) & ~(page - 1);
  if (lo < base) lo = base;
  if (hi > end) hi = end;
  if (sp->root == root && lo <= sp->hi + 16 * page && hi + 16 * page >= sp->lo) {
    if (lo < sp->lo) sp->lo = lo;
    if (hi > sp->hi) sp->hi = hi;
    return;
  }
  span_flush(sp);
  sp->root = root;
  sp->lo = lo;
  sp->hi = hi;
}

static void page_out(const qv_array *a, page_span *sp, uintptr_t page) {
  for (int32_t i = 0; i < a->n_buffers; i++) span_add(sp, a->buffers[i], page);
  for (int32_t i = 0; i < a->n_children; i++)
    if (a->children[i]) page_out(a->children[i], sp, page);
  if (a->dictionary) {
    page_span d = {NULL, 0, 0};
    page_out(a->dictionary, &d, page);
    span_flush(&d);
  }
}

void qv_table_batch_done(qv_table *t, int64_t i) {
  if (t == NULL || i < 0 || i >= t->n_batches) return;
  qv_array *a = __atomic_load_n(&t->batches[i].array, __ATOMIC_ACQUIRE);
  long page = sysconf(_SC_PAGESIZE);
  if (a == NULL || page <= 0) return; /* not decoded: nothing of it was read */
  page_span sp = {NULL, 0, 0};
  page_out(a, &sp, (uintptr_t)page);
  span_flush(&sp);
}

int64_t qv_table_num_block_rows(const qv_table *t) {
  return t->kind == QV_TABLE_CONCAT ? t->n_rows_blocks : 1;
}

int64_t qv_table_num_blocks_in_row(const qv_table *t, int64_t r) {
  if (t->kind != QV_TABLE_CONCAT) return r == 0 ? 1 : 0;
  return r >= 0 && r < t->n_rows_blocks ? t->rows[r].n_blocks : 0;
}

qv_table *qv_table_block(const qv_table *t, int64_t r, int64_t j) {
  if (t->kind != QV_TABLE_CONCAT) return r == 0 && j == 0 ? (qv_table *)t : NULL;
  if (r < 0 || r >= t->n_rows_blocks || j < 0 || j >= t->rows[r].n_blocks) return NULL;
  return t->rows[r].blocks[j];
}

static qv_status add_path(char ***paths, int64_t *n, int64_t *cap, const char *p, qv_error *err) {
  if (*n == *cap) {
    int64_t c = *cap ? 2 * *cap : 4;
    char **np = realloc(*paths, sizeof *np * (size_t)c);
    if (np == NULL) return oom(err, "paths");
    *paths = np;
    *cap = c;
  }
  (*paths)[*n] = strdup(p);
  if ((*paths)[*n] == NULL) return oom(err, "paths");
  (*n)++;
  return QV_OK;
}

static qv_status collect_files(const qv_table *t, char ***paths, int64_t *n, int64_t *cap,
                               qv_error *err) {
  /* a Parquet source is the user's data, not an Arrow cache: not listed,
   * so that no cache file is written or cleaned up beside it */
  if (t->kind == QV_TABLE_MAPPED)
    return t->src->pq ? QV_OK : add_path(paths, n, cap, t->src->path, err);
  for (int64_t r = 0; t->kind == QV_TABLE_CONCAT && r < t->n_rows_blocks; r++)
    for (int32_t j = 0; j < t->rows[r].n_blocks; j++)
      QV_RETURN_NOT_OK(collect_files(t->rows[r].blocks[j], paths, n, cap, err));
  return QV_OK;
}

qv_status qv_table_cache_files(const qv_table *t, char ***out_paths, int64_t *out_n,
                               qv_error *err) {
  char **paths = NULL;
  int64_t n = 0, cap = 0;
  qv_status st = collect_files(t, &paths, &n, &cap, err);
  if (st != QV_OK) {
    qv_table_free_paths(paths, n);
    return st;
  }
  *out_paths = paths;
  *out_n = n;
  return QV_OK;
}

void qv_table_free_paths(char **paths, int64_t n) {
  for (int64_t i = 0; paths != NULL && i < n; i++) free(paths[i]);
  free(paths);
}

/* ------------------------------------------------------------------------ */
/* Batch index                                                               */

/*
 * Largest batch b with offsets[b] <= row, by interpolation search: batch
 * sizes are usually near-uniform, so the first guess (the row's fraction of
 * the table, scaled to the batch count) is exact or one off. Each guess
 * shrinks [lo, hi]; after a few guesses that do not converge, plain
 * bisection bounds the cost at O(log n).
 */
int64_t qv_tbl_find_batch(const qv_table *t, int64_t row) {
  const int64_t *off = t->offsets;
  int64_t lo = 0, hi = t->n_batches - 1; /* answer in [lo, hi]; off[lo] <= row */
  int steps = 0;
  while (lo < hi) {
    if (off[hi] <= row) return hi;
    int64_t g;
    if (steps++ < 4) {
      double frac = (double)(row - off[lo]) / (double)(off[hi] - off[lo]);
      g = lo + (int64_t)(frac * (double)(hi - lo));
    } else {
      g = lo + (hi - lo) / 2;
    }
    if (g < lo) g = lo;
    if (g > hi - 1) g = hi - 1;
    if (off[g] <= row) {
      if (off[g + 1] > row) return g;
      lo = g + 1;
    } else {
      hi = g - 1;
    }
  }
  return lo;
}

qv_status qv_table_locate(const qv_table *t, int64_t row, int64_t *out_batch, int64_t *out_row,
                          qv_error *err) {
  if (row < 0 || row >= t->num_rows)
    return qv_error_set(err, QV_ERANGE, "table: row %lld is out of range (%lld rows)",
                        (long long)row, (long long)t->num_rows);
  int64_t b = qv_tbl_find_batch(t, row);
  *out_batch = b;
  *out_row = row - t->offsets[b];
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Gather                                                                    */

int64_t qv_tbl_gather_sort_min_n = 1 << 10;
int64_t qv_tbl_gather_sort_min_rows = 1 << 20;

/* Bucket lookup table for resolving many rows: lut[k] is the batch holding
 * row k << shift; a row's batch lies in [lut[k], lut[k+1]]. Buckets are
 * about an eighth of a batch, so most hold no batch boundary and resolve
 * without a search. */
typedef struct row_lut {
  int64_t *lut;
  int shift;
  int64_t n;
} row_lut;

static qv_status lut_build(const qv_table *t, row_lut *l, qv_error *err) {
  int64_t nb = t->n_batches, total = t->num_rows;
  int64_t want = 8 * nb < 64 ? 64 : 8 * nb;
  if (want > (int64_t)1 << 24) want = (int64_t)1 << 24;
  int shift = 0;
  while (((total - 1) >> shift) >= want) shift++;
  l->shift = shift;
  l->n = ((total - 1) >> shift) + 1;
  l->lut = malloc(sizeof *l->lut * (size_t)(l->n + 1));
  if (l->lut == NULL) return oom(err, "row index");
  int64_t b = 0;
  for (int64_t k = 0; k < l->n; k++) {
    int64_t r = k << shift;
    while (t->offsets[b + 1] <= r) b++;
    l->lut[k] = b;
  }
  l->lut[l->n] = nb - 1;
  return QV_OK;
}

/* Resolve rows to (batch, row in batch) in one pass over the indices. */
static void resolve_rows(const qv_table *t, const row_lut *l, const int64_t *idx, int64_t n,
                         int64_t *batch, int64_t *row) {
  const int64_t *off = t->offsets;
  const int64_t *lut = l->lut;
  int shift = l->shift;
  for (int64_t i = 0; i < n; i++) {
    int64_t x = idx[i], k = x >> shift;
    int64_t lo = lut[k], hi = lut[k + 1];
    if (lo < hi && off[lo + 1] > x) hi = lo; /* usually settled here */
    while (lo < hi) {                        /* largest b in [lo, hi] with off[b] <= x */
      int64_t mid = (lo + hi + 1) >> 1;
      if (off[mid] <= x) lo = mid;
      else hi = mid - 1;
    }
    batch[i] = lo;
    row[i] = x - off[lo];
  }
}

/* Gather columns for rows (batch[i], row[i]), row i to output row dest[i]
 * (dest NULL: to row i). Only the batches touched are decoded and handed
 * to the kernel (batch[] is rewritten to indexes into that list). cols[]
 * receives one array per column. Large gathers with output rows run the
 * kernels' loops on two threads (measured: one thread's random reads
 * leave memory bandwidth unused). */
static qv_status gather_columns(qv_table *t, int64_t *batch, const int64_t *row,
                                const int64_t *dest, int64_t n, qv_array **cols, qv_error *err) {
  qv_type *type = t->schema->type;
  int32_t nc = type->n_children;
  int64_t nb = t->n_batches;
  int64_t *remap = malloc(sizeof *remap * (size_t)nb);
  qv_array **used = calloc((size_t)(nb > 0 ? nb : 1), sizeof *used);
  qv_array **chunks = malloc(sizeof *chunks * (size_t)nb);
  qv_status st = remap && used && chunks ? QV_OK : oom(err, "gather");
  int64_t k = 0;
  if (st == QV_OK) {
    for (int64_t b = 0; b < nb; b++) remap[b] = -1;
    for (int64_t i = 0; i < n; i++) remap[batch[i]] = 0;
    for (int64_t b = 0; b < nb && st == QV_OK; b++) {
      if (remap[b] < 0) continue;
      st = qv_tbl_entry_array(t, b, &used[k], err);
      remap[b] = k++;
    }
    for (int64_t i = 0; st == QV_OK && i < n; i++) batch[i] = remap[batch[i]];
  }
  qv_pool *pool = NULL;
  if (st == QV_OK && dest != NULL && n >= qv_take_parallel_min_n && qv_cpu_count() >= 2)
    st = qv_pool_new(2, &pool, err);
  for (int32_t c = 0; c < nc && st == QV_OK; c++) {
    for (int64_t j = 0; j < k; j++) chunks[j] = used[j]->children[c];
    st = qv_take_chunked_to(chunks, k, batch, row, dest, n, pool, &cols[c], err);
    if (st != QV_OK) qv_error_prefix(err, st, "gather: column '%s': ", type->children[c].name);
  }
  qv_pool_free(pool);
  for (int64_t j = 0; used != NULL && j < k; j++) qv_array_unref(used[j]);
  free(remap);
  free(used);
  free(chunks);
  return st;
}

/* Indices gathered in output order: each row resolved through the bucket
 * table, then gathered. */
static qv_status gather_direct(qv_table *t, const int64_t *indices, int64_t n, qv_array **cols,
                               qv_error *err) {
  int64_t *batch = malloc(sizeof *batch * (size_t)n);
  int64_t *row = malloc(sizeof *row * (size_t)n);
  row_lut l = {0};
  qv_status st = batch && row ? QV_OK : oom(err, "gather");
  if (st == QV_OK) st = lut_build(t, &l, err);
  if (st == QV_OK) {
    resolve_rows(t, &l, indices, n, batch, row);
    st = gather_columns(t, batch, row, NULL, n, cols, err);
  }
  free(l.lut);
  free(batch);
  free(row);
  return st;
}

/* Bits needed for the values 0..x (x >= 0). */
static int bits_for(int64_t x) { return x > 0 ? 64 - __builtin_clzll((uint64_t)x) : 0; }

/* gather_sorted applies: the words (row << pbits | position) fit 64 bits
 * and the radix sort's 32-bit counters hold n. */
static bool sorted_fits(const qv_table *t, int64_t n) {
  return n < ((int64_t)1 << 32) && bits_for(t->num_rows - 1) + bits_for(n - 1) <= 64;
}

/* The sort leaves the rows of each group of 2^SORT_DROP_BITS consecutive
 * rows in input order: a group spans at most 1 KiB of an 8-byte column, a
 * few pages of strings, and the kernels prefetch exact addresses, so
 * ordering inside it buys nothing; dropping the bits saves one of the
 * three radix passes of a 1M-index gather from 100M rows (measured: 34 ->
 * 29 ms on the numeric columns, 86 -> 77 ms on all three). */
#define SORT_DROP_BITS 7

/*
 * Many indices in no order: gather in row order, each value written to its
 * output row. Random rows of a large mapped file cost a cache miss and a
 * TLB miss each in output order; in row order consecutive reads fall in
 * nearby pages, the kernels' prefetch a fixed distance ahead predicts the
 * real next address, and resolving rows to batches is a merge walk, not a
 * search. The (row, output position) pairs are packed into one word each
 * and radix-sorted by row (core/radix.c), by all but the lowest
 * SORT_DROP_BITS bits.
 */
static qv_status gather_sorted(qv_table *t, const int64_t *indices, int64_t n, qv_array **cols,
                               qv_error *err) {
  int kbits = bits_for(t->num_rows - 1), pbits = bits_for(n - 1);
  uint64_t *w = malloc(sizeof *w * (size_t)n), *tmp = malloc(sizeof *tmp * (size_t)n);
  int64_t *batch = malloc(sizeof *batch * (size_t)n);
  uint32_t *hist = malloc(sizeof *hist * QV_RADIX_HIST_WORDS);
  qv_status st = w && tmp && batch && hist ? QV_OK : oom(err, "gather");
  if (st == QV_OK) {
    for (int64_t i = 0; i < n; i++) w[i] = (uint64_t)indices[i] << pbits | (uint64_t)i;
    uint64_t *srt = w, *other = tmp;
    int drop = kbits > SORT_DROP_BITS ? SORT_DROP_BITS : 0;
    if (kbits > drop &&
        qv_radix_sort_words(w, tmp, n, pbits + drop, kbits - drop, hist, ~(uint64_t)0)) {
      srt = tmp;
      other = w;
    }
    /* Unpack in place: srt becomes the output positions, other the rows. */
    int64_t *dest = (int64_t *)srt, *row = (int64_t *)other;
    const int64_t *off = t->offsets;
    uint64_t pmask = pbits > 0 ? ((uint64_t)1 << pbits) - 1 : 0;
    int64_t b = 0;
    for (int64_t k = 0; k < n; k++) {
      uint64_t x = srt[k];
      int64_t r = (int64_t)(x >> pbits);
      while (off[b] > r) b--; /* rows of one group come in any order */
      while (off[b + 1] <= r) b++;
      batch[k] = b;
      row[k] = r - off[b];
      dest[k] = (int64_t)(x & pmask);
    }
    st = gather_columns(t, batch, row, dest, n, cols, err);
  }
  free(w);
  free(tmp);
  free(batch);
  free(hist);
  return st;
}

qv_status qv_table_gather(qv_table *t, const int64_t *indices, int64_t n, qv_array **out,
                          qv_error *err) {
  if (n < 0 || (n > 0 && indices == NULL))
    return qv_error_set(err, QV_EARG, "gather: needs %lld indices", (long long)n);
  bool up = true, down = true; /* indices non-decreasing / non-increasing */
  for (int64_t i = 0; i < n; i++) {
    if (indices[i] < 0 || indices[i] >= t->num_rows)
      return qv_error_set(err, QV_ERANGE,
                          "gather: index %lld (position %lld) is out of range for a table of "
                          "%lld rows",
                          (long long)indices[i], (long long)i, (long long)t->num_rows);
    if (i > 0) {
      up = up && indices[i] >= indices[i - 1];
      down = down && indices[i] <= indices[i - 1];
    }
  }
  qv_type *type = t->schema->type;
  int32_t nc = type->n_children;
  qv_array **cols = calloc((size_t)(nc > 0 ? nc : 1), sizeof *cols);
  if (cols == NULL) return oom(err, "columns");
  qv_status st = QV_OK;
  if (n == 0) {
    for (int32_t c = 0; c < nc && st == QV_OK; c++)
      st = qv_array_nulls(type->children[c].type, 0, &cols[c], err);
  } else if (n >= qv_tbl_gather_sort_min_n && t->num_rows >= qv_tbl_gather_sort_min_rows &&
             t->n_batches > 1 && !up && !down && sorted_fits(t, n)) {
    st = gather_sorted(t, indices, n, cols, err);
  } else {
    st = gather_direct(t, indices, n, cols, err);
  }
  if (st != QV_OK) {
    for (int32_t c = 0; c < nc; c++) qv_array_unref(cols[c]);
    free(cols);
    return st;
  }
  st = qv_make_batch(type, n, cols, nc, out, err);
  free(cols);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Chunked columns                                                           */

int64_t qv_chunks_length(qv_array *const *chunks, int64_t n) {
  int64_t total = 0;
  for (int64_t i = 0; i < n; i++) total += chunks[i]->length;
  return total;
}

qv_status qv_chunks_range(qv_array *const *chunks, int64_t n, int64_t off, int64_t len,
                          qv_type *type, qv_array **out, qv_error *err) {
  if (len == 0) return qv_array_nulls(type, 0, out, err);
  int64_t i = 0, pos = 0;
  while (i < n && pos + chunks[i]->length <= off) pos += chunks[i++]->length;
  if (i == n)
    return qv_error_set(err, QV_ERANGE, "column rows [%lld, %lld) out of range", (long long)off,
                        (long long)(off + len));
  if (off + len <= pos + chunks[i]->length)
    return qv_array_slice(chunks[i], off - pos, len, out, err);
  /* Spans chunks: slice the pieces and concatenate them. */
  qv_array **parts = NULL;
  int64_t np = 0, got = 0;
  qv_status st = QV_OK;
  for (int64_t j = i; j < n && got < len && st == QV_OK; j++) {
    int64_t start = j == i ? off - pos : 0;
    int64_t take = chunks[j]->length - start;
    if (take > len - got) take = len - got;
    if (take == 0) continue;
    qv_array **p = realloc(parts, sizeof *p * (size_t)(np + 1));
    if (p == NULL) {
      st = oom(err, "column pieces");
      break;
    }
    parts = p;
    st = qv_array_slice(chunks[j], start, take, &parts[np], err);
    if (st == QV_OK) np++;
    got += take;
  }
  if (st == QV_OK && got < len)
    st = qv_error_set(err, QV_ERANGE, "column rows [%lld, %lld) out of range", (long long)off,
                      (long long)(off + len));
  if (st == QV_OK) st = qv_array_concat(parts, np, out, err);
  for (int64_t j = 0; j < np; j++) qv_array_unref(parts[j]);
  free(parts);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Equality                                                                  */

bool qv_table_equals(qv_table *expected, qv_table *actual, qv_error *diff) {
  const qv_type *a = expected->schema->type, *b = actual->schema->type;
  if (a->n_children != b->n_children) {
    qv_error_set(diff, QV_EINVAL, "expected %d columns, found %d", a->n_children, b->n_children);
    return false;
  }
  for (int32_t c = 0; c < a->n_children; c++) {
    if (strcmp(a->children[c].name, b->children[c].name) != 0) {
      qv_error_set(diff, QV_EINVAL, "column %d: expected name '%s', found '%s'", c,
                   a->children[c].name, b->children[c].name);
      return false;
    }
    if (!qv_type_equals(a->children[c].type, b->children[c].type, false)) {
      char x[256], y[256];
      qv_type_to_string(a->children[c].type, x, sizeof x);
      qv_type_to_string(b->children[c].type, y, sizeof y);
      qv_error_set(diff, QV_EINVAL, "column '%s': expected type %s, found %s", a->children[c].name,
                   x, y);
      return false;
    }
  }
  if (expected->num_rows != actual->num_rows) {
    qv_error_set(diff, QV_EINVAL, "expected %lld rows, found %lld", (long long)expected->num_rows,
                 (long long)actual->num_rows);
    return false;
  }
  /* Walk both batch lists over the union of their boundaries. */
  int64_t i = 0, j = 0, pi = 0, pj = 0, row = 0;
  while (row < expected->num_rows) {
    qv_array *x = NULL, *y = NULL;
    qv_error e;
    e.message[0] = '\0';
    if (qv_tbl_entry_array(expected, i, &x, &e) != QV_OK ||
        qv_tbl_entry_array(actual, j, &y, &e) != QV_OK) {
      qv_array_unref(x);
      qv_error_set(diff, QV_EINVAL, "batch does not decode: %s", e.message);
      return false;
    }
    int64_t len = x->length - pi;
    if (y->length - pj < len) len = y->length - pj;
    for (int32_t c = 0; c < a->n_children; c++) {
      qv_array *sx = NULL, *sy = NULL;
      bool same = qv_array_slice(x->children[c], pi, len, &sx, NULL) == QV_OK &&
                  qv_array_slice(y->children[c], pj, len, &sy, NULL) == QV_OK &&
                  qv_array_equals(sx, sy, &e);
      qv_array_unref(sx);
      qv_array_unref(sy);
      if (!same) {
        qv_array_unref(x);
        qv_array_unref(y);
        qv_error_set(diff, QV_EINVAL, "column '%s', rows from %lld: %s", a->children[c].name,
                     (long long)row, e.message);
        return false;
      }
    }
    row += len;
    pi += len;
    pj += len;
    if (pi == x->length) i++, pi = 0;
    if (pj == y->length) j++, pj = 0;
    qv_array_unref(x);
    qv_array_unref(y);
  }
  return true;
}
