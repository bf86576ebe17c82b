/*
 * dataset_map.c — datasets' Dataset.map with a C function: batches of the
 * dataset (through its mapping) go to the callback, its columns are merged
 * with the input columns (replacing same-named ones in place, appending
 * new ones, dropping remove_columns), and the output is streamed to
 * `cache-<fingerprint>.arrow` beside the data (atomically, through the
 * row sink of dataset_sink.c) or kept in memory. With num_proc, the dataset is cut into contiguous shards
 * and each is mapped by a forked worker process that receives the shard as
 * a recipe (qv_table_recipe: files are reopened, data is not copied) and
 * writes `cache-<fp>_{rank:05d}_of_{num_proc:05d}.arrow`; the parent joins
 * the results as a concatenation table. Existing cache files (single or
 * per-worker sets, any worker count) are reused as datasets does.
 * Dataset layer.
 *
 * Worker protocol: each worker writes records to a pipe: 'p' + int64 rows
 * done since the last record (progress), then one final 'k' (success, no
 * update: the function returned nothing), 'o' (success, output written) or
 * 'e' + int32 status + int32 length + message. A worker that dies without
 * a final record is reported with its exit status or signal.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/atomic_internal.h"
#include "dataset/dataset_internal.h"
#include "quiver/ipc.h"

static qv_status oom(qv_error *err) { return qv_error_set(err, QV_ENOMEM, "map: out of memory"); }

/* Everything one shard's map needs. */
typedef struct map_job {
  const qv_map_fn *fn;
  bool batched;
  int64_t batch_size; /* resolved (>= 1) */
  bool drop_last;
  int32_t n_input; /* input column indices (-1 count: all) */
  const int32_t *input;
  qv_type *input_type; /* STRUCT of the input columns, or NULL (all) */
  bool *removed;       /* [num_columns] */
  int64_t writer_batch_size;
  int rank;
  int64_t offset;          /* dataset row of the shard's row 0 */
  const char *fp;          /* fingerprint written into the output */
  qv_progress_fn progress; /* may be NULL */
  void *progress_ctx;
  int64_t progress_total;
  int progress_fd; /* worker: pipe for progress records, else -1 */
} map_job;

/* Outcome of one shard. */
typedef struct map_result {
  bool updated;            /* false: the function returned nothing */
  qv_table *table;         /* output (updated only) */
  qv_hf_feature *features; /* output features (updated only) */
} map_result;

static void result_reset(map_result *r) {
  qv_table_unref(r->table);
  qv_hf_feature_free(r->features);
  memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------------ */
/* Output assembly                                                           */

/* Output columns of one batch: the input's (minus removed ones), replaced
 * or followed by the function's. Builds the schema on the first batch. */
typedef struct out_state {
  qv_schema *schema; /* data schema of the output (no metadata) */
  qv_schema *file_schema;
  qv_hf_feature *features;
  int32_t n;        /* output columns */
  int32_t *src;     /* per output column: >= 0 input column, < 0 -(k+1) function column */
  qv_ds_sink *sink; /* opened at the first output (memory or cache file) */
} out_state;

static void out_reset(out_state *o) {
  qv_schema_unref(o->schema);
  qv_schema_unref(o->file_schema);
  qv_hf_feature_free(o->features);
  free(o->src);
  qv_ds_sink_abort(o->sink);
  memset(o, 0, sizeof *o);
}

static qv_status out_plan(out_state *o, const qv_dataset *shard, const map_job *job,
                          const qv_array *fout, qv_error *err) {
  const qv_schema *in = qv_table_schema(shard->data);
  int32_t nin = qv_schema_num_fields(in), nf = fout->n_children;
  o->src = calloc((size_t)(nin + nf + 1), sizeof *o->src);
  qv_type *st = qv_type_new(QV_STRUCT);
  if (o->src == NULL || st == NULL) {
    qv_type_unref(st);
    return oom(err);
  }
  const qv_type *ft = fout->type;
  for (int32_t k = 0; k < nf; k++)
    for (int32_t j = 0; j < k; j++)
      if (strcmp(ft->children[k].name, ft->children[j].name) == 0) {
        qv_type_unref(st);
        return qv_error_set(err, QV_EARG, "map %s@%s: the function returned column '%s' twice",
                            job->fn->name, job->fn->version, ft->children[k].name);
      }
  int32_t n = 0;
  qv_status s = QV_OK;
  for (int32_t c = 0; c < nin && s == QV_OK; c++) {
    if (job->removed[c]) continue;
    const qv_field *f = qv_schema_field(in, c);
    int32_t src = c;
    for (int32_t k = 0; k < nf; k++)
      if (strcmp(ft->children[k].name, f->name) == 0) src = -(k + 1);
    const qv_field *use = src >= 0 ? f : &ft->children[-src - 1];
    s = qv_type_add_child(st, use->name, use->nullable, qv_type_ref(use->type), &use->metadata,
                          err);
    if (s != QV_OK) qv_type_unref(use->type);
    o->src[n++] = src;
  }
  for (int32_t k = 0; k < nf && s == QV_OK; k++) {
    bool placed = false;
    for (int32_t j = 0; j < n && !placed; j++) placed = o->src[j] == -(k + 1);
    if (placed) continue;
    const qv_field *use = &ft->children[k];
    s = qv_type_add_child(st, use->name, use->nullable, qv_type_ref(use->type), &use->metadata,
                          err);
    if (s != QV_OK) qv_type_unref(use->type);
    o->src[n++] = -(k + 1);
  }
  if (s != QV_OK) {
    qv_type_unref(st);
    return s;
  }
  o->n = n;
  o->schema = qv_schema_new(st);
  if (o->schema == NULL) return oom(err);
  QV_RETURN_NOT_OK(qv_ds_features_for_schema(o->schema, shard->features, &o->features, err));
  return qv_ds_file_schema(o->schema, o->features, job->fp, &o->file_schema, err);
}

/* The merged output batch (new reference). */
static qv_status out_batch(out_state *o, const map_job *job, int64_t call, const qv_array *in,
                           const qv_array *fout, qv_array **out, qv_error *err) {
  int64_t rows = fout->length;
  bool kept_input = false;
  for (int32_t j = 0; j < o->n; j++) kept_input |= o->src[j] >= 0;
  if (kept_input && rows != in->length)
    return qv_error_set(err, QV_EARG,
                        "map %s@%s: call %lld returned %lld rows for a batch of %lld while input "
                        "columns are kept; remove them (remove_columns) to change the number of "
                        "rows",
                        job->fn->name, job->fn->version, (long long)call, (long long)rows,
                        (long long)in->length);
  if (!job->batched && rows != 1)
    return qv_error_set(err, QV_EARG,
                        "map %s@%s: call %lld returned %lld rows; without batched, a call maps "
                        "one row to one row",
                        job->fn->name, job->fn->version, (long long)call, (long long)rows);
  qv_array **ch = calloc((size_t)(o->n > 0 ? o->n : 1), sizeof *ch);
  if (ch == NULL) return oom(err);
  qv_status st = QV_OK;
  const qv_type *want = o->schema->type;
  for (int32_t j = 0; j < o->n && st == QV_OK; j++) {
    const qv_array *src = NULL;
    if (o->src[j] >= 0) {
      src = in->children[o->src[j]];
      st = qv_array_slice((qv_array *)src, in->offset, in->length, &ch[j], err);
      continue;
    }
    int32_t k = -o->src[j] - 1;
    if (k >= fout->n_children ||
        strcmp(fout->type->children[k].name, want->children[j].name) != 0) {
      st = qv_error_set(err, QV_EARG,
                        "map %s@%s: call %lld returned other columns than the first call",
                        job->fn->name, job->fn->version, (long long)call);
      break;
    }
    if (!qv_type_equals(fout->children[k]->type, want->children[j].type, false)) {
      char a[128], b[128];
      qv_type_to_string(fout->children[k]->type, a, sizeof a);
      qv_type_to_string(want->children[j].type, b, sizeof b);
      st = qv_error_set(
          err, QV_ETYPE, "map %s@%s: call %lld returned column '%s' as %s, earlier calls as %s",
          job->fn->name, job->fn->version, (long long)call, want->children[j].name, a, b);
      break;
    }
    st = qv_array_slice(fout->children[k], fout->offset, rows, &ch[j], err);
  }
  if (st == QV_OK && fout->n_children != 0) {
    int32_t used = 0;
    for (int32_t j = 0; j < o->n; j++) used += o->src[j] < 0;
    if (used != fout->n_children)
      st = qv_error_set(err, QV_EARG,
                        "map %s@%s: call %lld returned other columns than the first call",
                        job->fn->name, job->fn->version, (long long)call);
  }
  if (st != QV_OK) {
    for (int32_t j = 0; j < o->n; j++) qv_array_unref(ch[j]);
    free(ch);
    return st;
  }
  st = qv_ds_make_struct(o->schema->type, rows, ch, o->n, out, err);
  free(ch);
  return st;
}

/* ------------------------------------------------------------------------ */
/* One shard, in this process                                                */

static void report_progress(const map_job *job, int64_t delta, int64_t done) {
  if (job->progress_fd >= 0) {
    char rec[9];
    rec[0] = 'p';
    memcpy(rec + 1, &delta, 8);
    ssize_t k = write(job->progress_fd, rec, sizeof rec);
    (void)k;
  } else if (job->progress != NULL) {
    job->progress(job->progress_ctx, "map", done, job->progress_total);
  }
}

/* The input batch the function sees: the chosen columns (zero copy). */
static qv_status input_view(const map_job *job, qv_array *batch, qv_array **out, qv_error *err) {
  if (job->input_type == NULL) {
    *out = qv_array_ref(batch);
    return QV_OK;
  }
  qv_array **ch = calloc((size_t)(job->n_input > 0 ? job->n_input : 1), sizeof *ch);
  if (ch == NULL) return oom(err);
  for (int32_t i = 0; i < job->n_input; i++) ch[i] = qv_array_ref(batch->children[job->input[i]]);
  qv_status st = qv_ds_make_struct(job->input_type, batch->length, ch, job->n_input, out, err);
  free(ch);
  return st;
}

static qv_status map_single(qv_dataset *shard, const map_job *job, const char *path,
                            map_result *res, qv_error *err) {
  memset(res, 0, sizeof *res);
  int64_t bs = job->batched ? job->batch_size : 1;
  qv_dataset_iter *it = NULL;
  QV_RETURN_NOT_OK(qv_dataset_iter_new(shard, bs, job->batched && job->drop_last, &it, err));
  out_state o;
  memset(&o, 0, sizeof o);
  qv_status st = QV_OK;
  int64_t call = 0, done = 0, since = 0;
  int decided = -1; /* 0: no update, 1: update */
  while (st == QV_OK) {
    qv_array *batch = NULL, *view = NULL, *fout = NULL;
    int64_t first = 0;
    st = qv_dataset_iter_next(it, &batch, &first, err);
    if (st != QV_OK || batch == NULL) break;
    st = input_view(job, batch, &view, err);
    if (st == QV_OK) {
      st = job->fn->call(job->fn->ctx, view, job->offset + first, job->rank, &fout, err);
      if (st != QV_OK)
        qv_error_prefix(err, st, "map %s@%s: call %lld (rows %lld..%lld): ", job->fn->name,
                        job->fn->version, (long long)call, (long long)(job->offset + first),
                        (long long)(job->offset + first + batch->length - 1));
    }
    if (st == QV_OK && fout != NULL && (fout->type->id != QV_STRUCT || fout->n_children < 0))
      st = qv_error_set(err, QV_EARG, "map %s@%s: the function must return a STRUCT array",
                        job->fn->name, job->fn->version);
    if (st == QV_OK) {
      int now = fout != NULL;
      if (decided >= 0 && decided != now)
        st = qv_error_set(err, QV_EARG,
                          "map %s@%s: call %lld returned %s while earlier calls returned %s",
                          job->fn->name, job->fn->version, (long long)call,
                          now ? "columns" : "nothing", now ? "nothing" : "columns");
      decided = now;
    }
    if (st == QV_OK && fout != NULL) {
      if (o.schema == NULL) st = out_plan(&o, shard, job, fout, err);
      if (st == QV_OK && o.sink == NULL)
        st = qv_ds_sink_open(path, o.file_schema, job->writer_batch_size, true, &o.sink, err);
      qv_array *merged = NULL;
      if (st == QV_OK) st = out_batch(&o, job, call, batch, fout, &merged, err);
      if (st == QV_OK) st = qv_ds_sink_push(o.sink, merged, err);
    }
    qv_array_unref(fout);
    qv_array_unref(view);
    done += batch->length;
    since += batch->length;
    qv_array_unref(batch);
    call++;
    if (since >= 4096) {
      report_progress(job, since, done);
      since = 0;
    }
  }
  if (since > 0) report_progress(job, since, done);
  qv_dataset_iter_free(it);
  if (st == QV_OK && decided == 1) {
    res->updated = true;
    st = qv_ds_sink_finish(o.sink, &res->table, err);
    o.sink = NULL;
    if (st == QV_OK) {
      res->features = o.features;
      o.features = NULL;
    }
  }
  out_reset(&o);
  if (st != QV_OK) result_reset(res);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Worker processes                                                          */

static bool write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t k = write(fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    c += k;
    n -= (size_t)k;
  }
  return true;
}

/* A shard's recipe: data table recipe + indices recipe (may be absent). */
typedef struct shard_recipe {
  uint8_t *data;
  int64_t data_len;
  uint8_t *indices;
  int64_t indices_len;
} shard_recipe;

static void recipe_reset(shard_recipe *r) {
  free(r->data);
  free(r->indices);
  memset(r, 0, sizeof *r);
}

static qv_status recipe_of(const qv_dataset *shard, shard_recipe *r, qv_error *err) {
  memset(r, 0, sizeof *r);
  QV_RETURN_NOT_OK(qv_table_recipe(shard->data, &r->data, &r->data_len, err));
  if (shard->indices != NULL)
    QV_RETURN_NOT_OK(qv_table_recipe(shard->indices, &r->indices, &r->indices_len, err));
  return QV_OK;
}

/* In the worker: rebuild the shard from its recipe (the parent's copy of
 * the tables is not used), map it, report. Never returns. */
static void worker_main(const qv_dataset *like, const shard_recipe *rec, map_job *job,
                        const char *path, int fd) {
  qv_error err;
  err.message[0] = '\0';
  qv_table *data = NULL, *indices = NULL;
  qv_dataset *shard = NULL;
  map_result res;
  memset(&res, 0, sizeof res);
  qv_status st = qv_table_from_recipe(rec->data, rec->data_len, &data, &err);
  if (st == QV_OK && rec->indices != NULL)
    st = qv_table_from_recipe(rec->indices, rec->indices_len, &indices, &err);
  if (st == QV_OK) st = qv_ds_derive(like, data, indices, like->fingerprint, NULL, &shard, &err);
  job->progress_fd = fd;
  if (st == QV_OK) st = map_single(shard, job, path, &res, &err);
  char tag = st != QV_OK ? 'e' : res.updated ? 'o' : 'k';
  bool ok = write_all(fd, &tag, 1);
  if (st != QV_OK) {
    int32_t code = (int32_t)st, len = (int32_t)strlen(err.message);
    ok = ok && write_all(fd, &code, 4) && write_all(fd, &len, 4) &&
         write_all(fd, err.message, (size_t)len);
  }
  _exit(ok && st == QV_OK ? 0 : 1);
}

/* Remove what a worker that died may have left of its output: the
 * temporaries of dead writers beside `path` (core/atomic_internal.h; the
 * worker has been reaped, so its pid no longer runs). */
static void remove_temporaries(const char *path) {
  if (path == NULL) return;
  const char *slash = strrchr(path, '/');
  char dir[PATH_MAX];
  if ((size_t)snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1,
                       slash ? path : ".") >= sizeof dir)
    return;
  (void)qv_atomic_reclaim(dir, NULL, NULL);
}

typedef struct worker {
  pid_t pid;
  int fd;
  int rank;
  char tag; /* final record, 0 until read */
  int32_t code;
  char msg[QV_ERROR_SIZE];
  char buf[16 + QV_ERROR_SIZE];
  size_t have;
} worker;

/* Consume complete records from w->buf. */
static void worker_parse(worker *w, int64_t *progress_rows) {
  size_t pos = 0;
  while (pos < w->have && w->tag == 0) {
    char t = w->buf[pos];
    if (t == 'p') {
      if (w->have - pos < 9) break;
      int64_t d;
      memcpy(&d, w->buf + pos + 1, 8);
      *progress_rows += d;
      pos += 9;
    } else if (t == 'o' || t == 'k') {
      w->tag = t;
      pos++;
    } else if (t == 'e') {
      if (w->have - pos < 9) break;
      int32_t code, len;
      memcpy(&code, w->buf + pos + 1, 4);
      memcpy(&len, w->buf + pos + 5, 4);
      if (len < 0 || len >= QV_ERROR_SIZE) len = 0;
      if (w->have - pos < 9 + (size_t)len) break;
      w->code = code;
      memcpy(w->msg, w->buf + pos + 9, (size_t)len);
      w->msg[len] = '\0';
      w->tag = 'e';
      pos += 9 + (size_t)len;
    } else {
      w->tag = '?';
      pos = w->have;
    }
  }
  memmove(w->buf, w->buf + pos, w->have - pos);
  w->have -= pos;
}

/* Run the map of shards[ranks[i]] in worker processes, at most `parallel`
 * at a time. Outputs go to paths[rank] (temporary files when the result is
 * to be kept in memory). updated[rank] receives whether the function
 * returned columns. */
static qv_status run_workers(qv_dataset **shards, const int *ranks, int n, int parallel,
                             map_job *jobs, char **paths, bool *updated,
                             const qv_dataset_options *opts, int64_t total, qv_error *err) {
  worker *ws = calloc((size_t)n, sizeof *ws);
  shard_recipe *recs = calloc((size_t)n, sizeof *recs);
  if (ws == NULL || recs == NULL) {
    free(ws);
    free(recs);
    return oom(err);
  }
  qv_status st = QV_OK;
  for (int i = 0; i < n && st == QV_OK; i++) st = recipe_of(shards[ranks[i]], &recs[i], err);
  int started = 0, finished = 0;
  int64_t progress_rows = 0;
  fflush(NULL);
  while (st == QV_OK && finished < n) {
    while (st == QV_OK && started < n && started - finished < parallel) {
      int pfd[2];
      if (pipe(pfd) != 0) {
        st = qv_error_set(err, QV_EIO, "map: pipe: %s", strerror(errno));
        break;
      }
      int rank = ranks[started];
      pid_t pid = fork();
      if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        st = qv_error_set(err, QV_EIO, "map: fork: %s", strerror(errno));
        break;
      }
      if (pid == 0) {
        close(pfd[0]);
        for (int j = 0; j < started; j++)
          if (ws[j].fd >= 0) close(ws[j].fd);
        worker_main(shards[rank], &recs[started], &jobs[rank], paths[rank], pfd[1]);
      }
      close(pfd[1]);
      ws[started].pid = pid;
      ws[started].fd = pfd[0];
      ws[started].rank = rank;
      started++;
    }
    if (st != QV_OK) break;
    /* Wait for output of any running worker. */
    struct pollfd pf[64];
    int idx[64], np = 0;
    for (int i = 0; i < started && np < 64; i++)
      if (ws[i].fd >= 0) {
        pf[np].fd = ws[i].fd;
        pf[np].events = POLLIN;
        idx[np++] = i;
      }
    if (np == 0) break;
    if (poll(pf, (nfds_t)np, -1) < 0) {
      if (errno == EINTR) continue;
      st = qv_error_set(err, QV_EIO, "map: poll: %s", strerror(errno));
      break;
    }
    for (int k = 0; k < np; k++) {
      if (!(pf[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      worker *w = &ws[idx[k]];
      ssize_t got = read(w->fd, w->buf + w->have, sizeof w->buf - w->have);
      if (got > 0) {
        w->have += (size_t)got;
        worker_parse(w, &progress_rows);
        if (opts && opts->progress) opts->progress(opts->progress_ctx, "map", progress_rows, total);
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      /* EOF: the worker is done (or died). */
      close(w->fd);
      w->fd = -1;
      int status = 0;
      while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR) {}
      finished++;
      if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) remove_temporaries(paths[w->rank]);
      if (w->tag == 'o' || w->tag == 'k') {
        updated[w->rank] = w->tag == 'o';
      } else if (w->tag == 'e') {
        st = qv_error_set(err, (qv_status)w->code, "map worker %d: %s", w->rank, w->msg);
      } else if (WIFSIGNALED(status)) {
        st = qv_error_set(err, QV_EIO, "map worker %d died (signal %d)", w->rank, WTERMSIG(status));
      } else {
        st = qv_error_set(err, QV_EIO, "map worker %d exited with status %d without a result",
                          w->rank, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
      }
    }
  }
  /* On failure no new worker starts; the running ones finish (their files
   * are complete caches a later run reuses, as datasets does). */
  for (int i = 0; i < started; i++) {
    if (ws[i].fd < 0) continue;
    char sink[4096];
    while (read(ws[i].fd, sink, sizeof sink) > 0) {}
    close(ws[i].fd);
    int status;
    while (waitpid(ws[i].pid, &status, 0) < 0 && errno == EINTR) {}
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) remove_temporaries(paths[ws[i].rank]);
  }
  for (int i = 0; i < n; i++) recipe_reset(&recs[i]);
  free(recs);
  free(ws);
  return st;
}

/* Read a worker's temporary output into an in-memory table and remove it. */
static qv_status load_into_memory(const char *path, qv_table **out, qv_error *err) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return qv_error_set(err, QV_EIO, "%s: %s", path, strerror(errno));
  qv_buffer *buf = NULL;
  qv_status st = qv_buffer_read_fd(fd, 0, &buf, err);
  close(fd);
  unlink(path);
  qv_reader *r = NULL;
  if (st == QV_OK) st = qv_reader_open_buffer(buf, NULL, &r, err);
  qv_buffer_unref(buf);
  if (st != QV_OK) return st;
  int64_t nb = qv_reader_num_batches(r);
  qv_array **batches = calloc((size_t)(nb > 0 ? nb : 1), sizeof *batches);
  if (batches == NULL) st = oom(err);
  int64_t got = 0;
  for (; st == QV_OK && got < nb; got++) {
    st = qv_reader_batch(r, got, &batches[got], err);
    if (st != QV_OK) break;
  }
  if (st == QV_OK) st = qv_table_from_batches(qv_reader_schema(r), batches, nb, out, err);
  for (int64_t i = 0; i < got; i++) qv_array_unref(batches[i]);
  free(batches);
  qv_reader_close(r);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Existing cache files                                                      */

/* datasets' choice among existing cache sets: the most complete, then the
 * worker count closest to the requested one, then the smallest. */
static qv_status pick_existing(const char *base, int want, int *out_count, qv_error *err) {
  *out_count = 0;
  const char *slash = strrchr(base, '/');
  const char *dot = strrchr(base, '.');
  if (slash == NULL || dot == NULL || dot < slash) return QV_OK;
  char dir[PATH_MAX];
  if ((size_t)snprintf(dir, sizeof dir, "%.*s", (int)(slash - base), base) >= sizeof dir)
    return QV_OK;
  const char *stem = slash + 1;
  size_t stem_len = (size_t)(dot - stem);
  const char *ext = dot;
  /* counts[m] = files present for a set of m workers (m <= 4096 tracked). */
  enum { MAXM = 4096 };
  int *counts = calloc(MAXM + 1, sizeof *counts);
  if (counts == NULL) return oom(err);
  if (qv_ds_file_exists(base)) counts[1] = 1;
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d != NULL && (e = readdir(d)) != NULL) {
    const char *nm = e->d_name;
    if (strncmp(nm, stem, stem_len) != 0) continue;
    long long r = 0, m = 0;
    int used = 0;
    char tail[32];
    if (sscanf(nm + stem_len, "_%lld_of_%lld%n", &r, &m, &used) != 2) continue;
    snprintf(tail, sizeof tail, "_%05lld_of_%05lld", r, m);
    if (strncmp(nm + stem_len, tail, (size_t)used) != 0 || (size_t)used != strlen(tail) ||
        strcmp(nm + stem_len + used, ext) != 0)
      continue;
    if (m >= 1 && m <= MAXM && r >= 0 && r < m) counts[m]++;
  }
  if (d != NULL) closedir(d);
  double best_missing = 2;
  long best_diff = 0;
  int best = 0;
  for (int m = 1; m <= MAXM; m++) {
    if (counts[m] == 0) continue;
    double missing = (double)(m - counts[m]) / m;
    long diff = labs((long)m - want);
    if (best == 0 || missing < best_missing || (missing == best_missing && diff < best_diff)) {
      best = m;
      best_missing = missing;
      best_diff = diff;
    }
  }
  free(counts);
  *out_count = best;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* map                                                                       */

static qv_status find_names(const qv_dataset *ds, const char *what, const char *const *names,
                            int32_t n, int32_t *idx, qv_error *err) {
  for (int32_t i = 0; i < n; i++) {
    idx[i] = names[i] ? qv_dataset_column_index(ds, names[i]) : -1;
    if (idx[i] < 0) {
      qv_strbuf cols;
      qv_strbuf_init(&cols);
      qv_ds_column_list(ds, &cols);
      qv_status st = qv_error_set(err, QV_EARG,
                                  "%s ['%s'] not in the dataset. Current columns in the "
                                  "dataset: [%s]",
                                  what, names[i] ? names[i] : "(null)", qv_strbuf_cstr(&cols));
      qv_strbuf_reset(&cols);
      return st;
    }
  }
  return QV_OK;
}

static qv_status map_fingerprint(const qv_dataset *ds, const qv_map_fn *fn,
                                 const qv_map_options *mo, const qv_dataset_options *opts,
                                 char fp[QV_FINGERPRINT_SIZE], qv_error *err) {
  char id[512], digest[QV_FINGERPRINT_SIZE];
  if ((size_t)snprintf(id, sizeof id, "%s@%s", fn->name, fn->version) >= sizeof id)
    return qv_error_set(err, QV_EARG, "map: function name and version are too long");
  if (fn->params != NULL) QV_RETURN_NOT_OK(qv_ds_args_digest(fn->params, digest, err));
  qv_fingerprint_args *a = NULL;
  QV_RETURN_NOT_OK(qv_fingerprint_args_new(&a, err));
  if (mo->batched) {
    qv_fingerprint_arg_bool(a, "batched", true, err);
    if (mo->batch_size != 0 && mo->batch_size != QV_DATASET_MAP_BATCH_SIZE)
      qv_fingerprint_arg_int(a, "batch_size", mo->batch_size < 0 ? -1 : mo->batch_size, err);
    if (mo->drop_last_batch) qv_fingerprint_arg_bool(a, "drop_last_batch", true, err);
  }
  if (mo->input_columns != NULL) {
    qv_fingerprint_arg_begin_list(a, "input_columns", err);
    for (int32_t i = 0; i < mo->n_input_columns; i++)
      qv_fingerprint_arg_str(a, NULL, mo->input_columns[i], err);
    qv_fingerprint_arg_end(a, err);
  }
  if (mo->n_remove_columns > 0) {
    qv_fingerprint_arg_begin_list(a, "remove_columns", err);
    for (int32_t i = 0; i < mo->n_remove_columns; i++)
      qv_fingerprint_arg_str(a, NULL, mo->remove_columns[i], err);
    qv_fingerprint_arg_end(a, err);
  }
  if (fn->params != NULL) qv_fingerprint_arg_str(a, "params", digest, err);
  qv_status st = qv_ds_fingerprint(ds, opts, id, a, fp, err);
  qv_fingerprint_args_free(a);
  return st;
}

/* Nothing to call: the empty dataset (without mapping), columns removed. */
static qv_status map_empty(qv_dataset *ds, const qv_map_options *mo, qv_dataset **out,
                           qv_error *err) {
  qv_status st = QV_OK;
  qv_dataset *empty = NULL;
  if (ds->indices != NULL) {
    qv_table *t = NULL;
    st = qv_table_slice(ds->data, 0, 0, &t, err);
    if (st == QV_OK) st = qv_ds_derive(ds, t, NULL, ds->fingerprint, NULL, &empty, err);
    qv_table_unref(t);
  } else {
    empty = qv_dataset_ref(ds);
  }
  if (st == QV_OK && mo->n_remove_columns > 0) {
    st = qv_dataset_remove_columns(empty, mo->remove_columns, mo->n_remove_columns, out, err);
    qv_dataset_unref(empty);
  } else if (st == QV_OK) {
    *out = empty;
  }
  return st;
}

/* The STRUCT type of the input columns (indices `input`) into *out. */
static qv_status map_input_type(const qv_dataset *ds, const qv_map_options *mo,
                                const int32_t *input, qv_type **out, qv_error *err) {
  qv_type *input_type = qv_type_new(QV_STRUCT);
  *out = input_type;
  if (input_type == NULL) return oom(err);
  qv_status st = QV_OK;
  for (int32_t i = 0; st == QV_OK && i < mo->n_input_columns; i++) {
    const qv_field *f = qv_schema_field(qv_dataset_schema(ds), input[i]);
    st = qv_type_add_child(input_type, f->name, f->nullable, qv_type_ref(f->type), &f->metadata,
                           err);
    if (st != QV_OK) qv_type_unref(f->type);
  }
  return st;
}

/* One map call's shards: what each runs, where its output goes, what it
 * gave. Arrays of num_shards entries; todo[0..n_todo) lists the shards
 * that have to run (the others reuse their cache file). */
typedef struct map_run {
  qv_dataset *ds;
  const qv_dataset_options *opts;
  const char *fp;   /* the map's fingerprint */
  const char *base; /* cache file path of the whole result, or NULL (in memory) */
  bool reuse;       /* existing cache files may be reused */
  int num_shards;
  qv_dataset **shards;
  map_job *jobs;
  char **paths;
  map_result *results;
  bool *updated;
  int *todo;
  int n_todo;
  qv_atomic_dir *scratch; /* in-memory results of worker processes */
} map_run;

static qv_status map_run_alloc(map_run *m, qv_error *err) {
  size_t n = (size_t)m->num_shards;
  m->shards = calloc(n, sizeof *m->shards);
  m->jobs = calloc(n, sizeof *m->jobs);
  m->paths = calloc(n, sizeof *m->paths);
  m->results = calloc(n, sizeof *m->results);
  m->updated = calloc(n, sizeof *m->updated);
  m->todo = calloc(n, sizeof *m->todo);
  if (!m->shards || !m->jobs || !m->paths || !m->results || !m->updated || !m->todo)
    return oom(err);
  return QV_OK;
}

static void map_run_free(map_run *m) {
  qv_atomic_dir_abort(m->scratch); /* the private directory and what is in it */
  for (int r = 0; r < m->num_shards; r++) {
    if (m->shards) qv_dataset_unref(m->shards[r]);
    if (m->jobs) free((char *)m->jobs[r].fp);
    if (m->paths) free(m->paths[r]);
    if (m->results) result_reset(&m->results[r]);
  }
  free(m->shards);
  free(m->jobs);
  free(m->paths);
  free(m->results);
  free(m->updated);
  free(m->todo);
}

/* Shard r: rows [start, end) of the dataset with the job `proto` describes,
 * starting at dataset row `offset`. Opens its cache file when it can be
 * reused, else adds it to the shards to run. */
static qv_status plan_shard(map_run *m, int r, int64_t start, int64_t end, int64_t offset,
                            const map_job *proto, int64_t bs, qv_error *err) {
  qv_dataset *ds = m->ds;
  int num_shards = m->num_shards;
  qv_status st = QV_OK;
  if (num_shards == 1) m->shards[r] = qv_dataset_ref(ds);
  else st = qv_ds_select_contiguous(ds, start, end - start, ds->fingerprint, &m->shards[r], err);
  if (st != QV_OK) return st;
  map_job *j = &m->jobs[r];
  *j = *proto;
  j->batch_size = bs < 0 ? (end - start > 0 ? end - start : 1) : bs;
  j->rank = num_shards > 1 ? r : 0;
  j->offset = offset;
  char suffix[64] = "";
  if (num_shards > 1) snprintf(suffix, sizeof suffix, "_%05d_of_%05d", r, num_shards);
  char *fp_r = malloc(QV_FINGERPRINT_SIZE + 64);
  if (fp_r == NULL) return oom(err);
  snprintf(fp_r, QV_FINGERPRINT_SIZE + 64, "%s%s", m->fp, suffix);
  st = qv_fingerprint_validate(fp_r, err);
  j->fp = fp_r;
  if (st == QV_OK && m->base != NULL)
    st = qv_ds_cache_path(ds, m->opts, m->fp, num_shards > 1 ? suffix : NULL, &m->paths[r], err);
  if (st != QV_OK) return st;
  if (m->paths[r] != NULL && m->reuse && qv_ds_cache_reusable(m->paths[r])) {
    /* Reuse: the worker's (or the single) cache file. */
    map_result *res = &m->results[r];
    st = qv_table_open_path(m->paths[r], NULL, &res->table, err);
    if (st == QV_OK)
      st = qv_hf_features_resolve(qv_table_schema(res->table), &res->features, NULL, err);
    res->updated = true;
    m->updated[r] = true;
    return st;
  }
  m->todo[m->n_todo++] = r;
  return QV_OK;
}

/* A private directory named as atomic temporaries are (hidden, with this
 * process's pid and start time), so that if this process dies a later
 * writer in $TMPDIR reclaims it; never committed, removed at the end
 * (qv_atomic_dir_abort). The shards to run write their results there. */
static qv_status open_scratch(map_run *m, qv_error *err) {
  const char *t = getenv("TMPDIR");
  char where[PATH_MAX];
  if ((size_t)snprintf(where, sizeof where, "%s/quiver-map", t && *t ? t : "/tmp") >= sizeof where)
    return qv_error_set(err, QV_EARG, "%s: path too long", where);
  QV_RETURN_NOT_OK(qv_atomic_dir_open(where, &m->scratch, err));
  char tmpdir[PATH_MAX];
  snprintf(tmpdir, sizeof tmpdir, "%s", qv_atomic_dir_tmp(m->scratch));
  qv_status st = QV_OK;
  for (int i = 0; i < m->n_todo; i++) {
    char p[PATH_MAX + 32];
    if ((size_t)snprintf(p, sizeof p, "%s/shard-%05d.arrow", tmpdir, m->todo[i]) >= sizeof p)
      st = qv_error_set(err, QV_EARG, "%s: path too long", tmpdir);
    else if ((m->paths[m->todo[i]] = qv_ds_strdup(p)) == NULL) st = oom(err);
  }
  return st;
}

/* Run the shards in todo: in `num_proc` worker processes when there are
 * several shards, else here. */
static qv_status run_shards(map_run *m, int num_proc, int64_t rows, qv_error *err) {
  qv_status st = QV_OK;
  if (m->n_todo > 0 && num_proc >= 1 && m->num_shards > 1) {
    /* Worker processes; in-memory results travel through temporary files. */
    if (m->base == NULL) st = open_scratch(m, err);
    if (st == QV_OK)
      st = run_workers(m->shards, m->todo, m->n_todo, num_proc, m->jobs, m->paths, m->updated,
                       m->opts, rows, err);
    for (int i = 0; st == QV_OK && i < m->n_todo; i++) {
      int r = m->todo[i];
      map_result *res = &m->results[r];
      res->updated = m->updated[r];
      if (!m->updated[r]) continue;
      if (m->base == NULL) st = load_into_memory(m->paths[r], &res->table, err);
      else st = qv_table_open_path(m->paths[r], NULL, &res->table, err);
      if (st == QV_OK)
        st = qv_hf_features_resolve(qv_table_schema(res->table), &res->features, NULL, err);
    }
  } else {
    for (int i = 0; i < m->n_todo && st == QV_OK; i++) {
      int r = m->todo[i];
      st = map_single(m->shards[r], &m->jobs[r], m->paths[r], &m->results[r], err);
    }
  }
  return st;
}

/* The mapped dataset from the shards' results: the input itself when no
 * shard's call returned columns, else their concatenation. */
static qv_status map_assemble(map_run *m, const qv_map_fn *fn, qv_dataset **out, qv_error *err) {
  int num_shards = m->num_shards;
  bool any_update = false, all_update = true;
  for (int r = 0; r < num_shards; r++) {
    any_update |= m->results[r].updated;
    all_update &= m->results[r].updated;
  }
  if (!any_update) {
    *out = qv_dataset_ref(m->ds);
    return QV_OK;
  }
  if (!all_update)
    return qv_error_set(err, QV_EARG,
                        "map %s@%s: the function returned columns for some shards and nothing "
                        "for others",
                        fn->name, fn->version);
  qv_table *data = NULL;
  qv_status st = QV_OK;
  if (num_shards == 1) {
    data = qv_table_ref(m->results[0].table);
  } else {
    qv_table **ts = calloc((size_t)num_shards, sizeof *ts);
    if (ts == NULL) return oom(err);
    for (int r = 0; r < num_shards; r++) ts[r] = m->results[r].table;
    st = qv_table_concat(ts, num_shards, 0, &data, err);
    free(ts);
  }
  if (st == QV_OK) {
    qv_hf_feature *f = m->results[0].features;
    m->results[0].features = NULL;
    st = qv_ds_new(data, NULL, m->fp, f, m->ds, out, err);
  }
  qv_table_unref(data);
  return st;
}

qv_status qv_dataset_map(qv_dataset *ds, const qv_map_fn *fn, const qv_map_options *map_opts,
                         const qv_dataset_options *opts, qv_dataset **out, qv_error *err) {
  if (fn == NULL || fn->call == NULL || fn->name == NULL || fn->version == NULL ||
      fn->name[0] == '\0')
    return qv_error_set(err, QV_EARG, "map: the function needs a name, a version and a call");
  qv_map_options mo;
  memset(&mo, 0, sizeof mo);
  if (map_opts) mo = *map_opts;
  if (mo.num_proc < 0) return qv_error_set(err, QV_EARG, "map: num_proc must be >= 0");
  if (mo.n_input_columns < 0 || mo.n_remove_columns < 0)
    return qv_error_set(err, QV_EARG, "map: negative column count");
  int32_t nc = qv_dataset_num_columns(ds);
  int32_t *input = calloc((size_t)(mo.n_input_columns + 1), sizeof *input);
  int32_t *remove = calloc((size_t)(mo.n_remove_columns + 1), sizeof *remove);
  bool *removed = calloc((size_t)(nc + 1), sizeof *removed);
  qv_status st = input && remove && removed ? QV_OK : oom(err);
  if (st == QV_OK && mo.input_columns)
    st = find_names(ds, "Input column", mo.input_columns, mo.n_input_columns, input, err);
  if (st == QV_OK)
    st = find_names(ds, "Column to remove", mo.remove_columns, mo.n_remove_columns, remove, err);
  for (int32_t i = 0; st == QV_OK && i < mo.n_remove_columns; i++) removed[remove[i]] = true;
  int64_t rows = qv_dataset_num_rows(ds);
  qv_type *input_type = NULL;
  char fp[QV_FINGERPRINT_SIZE];
  char *base = NULL;
  map_run m = {.ds = ds, .opts = opts, .fp = fp, .num_shards = 1};
  if (st != QV_OK) goto done;
  if (rows == 0) {
    st = map_empty(ds, &mo, out, err);
    goto done;
  }
  if (mo.input_columns != NULL) st = map_input_type(ds, &mo, input, &input_type, err);
  if (st == QV_OK) st = map_fingerprint(ds, fn, &mo, opts, fp, err);
  if (st == QV_OK) st = qv_ds_cache_path(ds, opts, fp, NULL, &base, err);
  if (st != QV_OK) goto done;
  m.base = base;
  int num_proc = mo.num_proc;
  if (num_proc > rows) num_proc = (int)rows;
  m.num_shards = num_proc > 0 ? num_proc : 1;
  m.reuse = base != NULL && !(opts && opts->ignore_cache);
  if (m.reuse) {
    int existing = 0;
    st = pick_existing(base, m.num_shards, &existing, err);
    if (st != QV_OK) goto done;
    if (existing > 0 && existing <= rows) m.num_shards = existing;
  }
  if ((st = map_run_alloc(&m, err)) != QV_OK) goto done;
  /* What every shard's job shares; plan_shard adds its rows and names. */
  map_job proto = {
      .fn = fn,
      .batched = mo.batched,
      .drop_last = mo.drop_last_batch,
      .n_input = mo.n_input_columns,
      .input = input,
      .input_type = input_type,
      .removed = removed,
      .writer_batch_size = opts && opts->writer_batch_size > 0 ? opts->writer_batch_size
                                                               : QV_DATASET_WRITER_BATCH_SIZE,
      .progress = opts ? opts->progress : NULL,
      .progress_ctx = opts ? opts->progress_ctx : NULL,
      .progress_total = rows,
      .progress_fd = -1,
  };
  int64_t bs = mo.batch_size == 0 ? QV_DATASET_MAP_BATCH_SIZE : mo.batch_size;
  int64_t offset = 0;
  for (int r = 0; r < m.num_shards && st == QV_OK; r++) {
    int64_t start = 0, end = rows;
    if (m.num_shards > 1) qv_hf_shard_range(rows, m.num_shards, r, &start, &end);
    st = plan_shard(&m, r, start, end, offset, &proto, bs, err);
    offset += end - start;
  }
  if (st == QV_OK) st = run_shards(&m, num_proc, rows, err);
  if (st == QV_OK) st = map_assemble(&m, fn, out, err);
done:
  map_run_free(&m);
  free(base);
  qv_type_unref(input_type);
  free(input);
  free(remove);
  free(removed);
  return st;
}
