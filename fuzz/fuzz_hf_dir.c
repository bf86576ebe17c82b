/*
 * fuzz_hf_dir.c — libFuzzer target for opening Hugging Face `datasets`
 * directories as a whole: qv_hf_dir_open (layout classification, state.json
 * / dataset_info.json / dataset_dict.json read from disk, data file names
 * checked against the directory, builder split naming, shard_lengths and
 * num_examples checked against the files, sources and worker groups,
 * unreadable files) and qv_dataset_open / qv_dataset_open_indices_file on
 * what it finds. fuzz_hf_json covers the JSON parsers alone; this covers
 * what the dataset layer does with their results and real files.
 *
 * Input: byte 0 picks the layout, the rest is one or two JSON texts split
 * at the first NUL byte:
 *   0: a save_to_disk Dataset directory — text 1 is state.json, text 2
 *      dataset_info.json;
 *   1: a load_dataset cache directory — text 1 is dataset_info.json;
 *   2: a DatasetDict — text 1 is dataset_dict.json, text 2 the state.json
 *      of split directories "train" and "test" (with a fixed
 *      dataset_info.json).
 * Every directory also holds valid data files (3 rows: data-00000-of-00001
 * .arrow, json-train.arrow, json-test-0000{0,1}-of-00002.arrow), an indices
 * mapping cache-0123456789abcdef.arrow, a map worker group and a torn
 * file, written once at start-up into a private temporary directory.
 * Invariants defended: no crash, hang, leak or unbounded allocation; every
 * failure has a message; a split that opens has the rows its files hold,
 * and every file a split uses lies inside the directory.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quiver/builder.h"
#include "quiver/dataset.h"
#include "quiver/hf.h"
#include "quiver/writer.h"

static char g_root[PATH_MAX];   /* private temporary directory */
static char g_dir[3][PATH_MAX]; /* one directory per layout */

static void die(const char *what, const qv_error *err) {
  fprintf(stderr, "fuzz_hf_dir setup: %s: %s\n", what, err ? err->message : "");
  abort();
}

static void write_text(const char *dir, const char *name, const char *text, size_t len) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (f == NULL) die(path, NULL);
  if (len > 0 && fwrite(text, 1, len, f) != len) die(path, NULL);
  fclose(f);
}

/* An IPC stream of one column `name` (int64 or uint64) holding `vals`. */
static void write_arrow(const char *dir, const char *file, const char *name, qv_type_id id,
                        const int64_t *vals, int64_t n) {
  qv_error err;
  qv_type *st = qv_type_new(QV_STRUCT);
  if (st == NULL || qv_type_add_child(st, name, true, qv_type_new(id), NULL, &err) != QV_OK)
    die("type", &err);
  qv_builder *b = NULL;
  if (qv_builder_new(st, &b, &err) != QV_OK) die("builder", &err);
  for (int64_t i = 0; i < n; i++)
    if (qv_builder_append_int(qv_builder_child(b, 0), vals[i], &err) != QV_OK) die("append", &err);
  qv_array *batch = NULL;
  if (qv_builder_append_structs(b, n, &err) != QV_OK || qv_builder_finish(b, &batch, &err) != QV_OK)
    die("finish", &err);
  qv_builder_free(b);
  qv_schema *schema = qv_schema_new(st); /* takes st */
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  qv_write_options o = {QV_FORMAT_STREAM, QV_COMPRESSION_NONE, 0, 0, 0, 0};
  qv_writer *w = NULL;
  if (qv_writer_open_path(path, schema, &o, &w, &err) != QV_OK ||
      qv_writer_write_batch(w, batch, &err) != QV_OK || qv_writer_close(w, &err) != QV_OK)
    die(path, &err);
  qv_array_unref(batch);
  qv_schema_unref(schema);
}

static void fill_dir(const char *dir) {
  static const int64_t data[3] = {10, 20, 30}, idx[3] = {2, 0, 1};
  if (mkdir(dir, 0700) != 0) die(dir, NULL);
  write_arrow(dir, "data-00000-of-00001.arrow", "x", QV_INT64, data, 3);
  write_arrow(dir, "json-train.arrow", "x", QV_INT64, data, 3);
  write_arrow(dir, "json-test-00000-of-00002.arrow", "x", QV_INT64, data, 2);
  write_arrow(dir, "json-test-00001-of-00002.arrow", "x", QV_INT64, data + 2, 1);
  write_arrow(dir, "cache-0123456789abcdef.arrow", "indices", QV_UINT64, idx, 3);
  write_arrow(dir, "cache-fedcba9876543210_00000_of_00002.arrow", "x", QV_INT64, data, 2);
  write_arrow(dir, "cache-fedcba9876543210_00001_of_00002.arrow", "x", QV_INT64, data, 2);
  write_text(dir, "cache-torn.arrow", "\xff\xff\xff\xff\x10", 5);
}

static void cleanup(void) {
  char cmd[PATH_MAX + 16];
  if (g_root[0] != '\0' && strncmp(g_root, "/tmp/", 5) == 0) {
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    if (system(cmd) != 0) fprintf(stderr, "fuzz_hf_dir: could not remove %s\n", g_root);
  }
}

static void setup(void) {
  snprintf(g_root, sizeof g_root, "/tmp/quiver-fuzz-hfdir-XXXXXX");
  if (mkdtemp(g_root) == NULL) die("mkdtemp", NULL);
  atexit(cleanup);
  for (int i = 0; i < 3; i++) {
    snprintf(g_dir[i], sizeof g_dir[i], "%s/d%d", g_root, i);
    fill_dir(g_dir[i]);
  }
  char sub[PATH_MAX];
  static const char info[] =
      "{\"features\": {\"x\": {\"dtype\": \"int64\", \"_type\": \"Value\"}}}";
  for (int i = 0; i < 2; i++) {
    snprintf(sub, sizeof sub, "%s/%s", g_dir[2], i ? "test" : "train");
    fill_dir(sub);
    write_text(sub, "dataset_info.json", info, sizeof info - 1);
  }
}

/* Every split that opens holds the rows of its files, all inside `dir`. */
static void check_dir(const char *dir, const qv_hf_dir *d) {
  char *real = realpath(dir, NULL);
  if (real == NULL) abort();
  size_t rl = strlen(real);
  for (int64_t i = 0; i < d->n_splits; i++) {
    const qv_hf_split *sp = &d->splits[i];
    int64_t rows = 0;
    for (int64_t k = 0; k < sp->n_files; k++) {
      char *fr = realpath(sp->files[k].path, NULL);
      if (fr == NULL || strncmp(fr, real, rl) != 0 || fr[rl] != '/') abort();
      free(fr);
      rows += sp->files[k].rows;
    }
    qv_dataset *ds = NULL;
    qv_error err;
    err.message[0] = '\0';
    const char *name = d->layout == QV_HF_LAYOUT_DATASET ? NULL : sp->name;
    qv_status st = qv_dataset_open(dir, name, &ds, &err);
    if (st == QV_OK) {
      if (sp->error != NULL || qv_dataset_num_rows(ds) != rows) abort();
      if (rows > 0) {
        qv_array *r = NULL;
        if (qv_dataset_row(ds, rows - 1, &r, &err) != QV_OK) abort();
        qv_array_unref(r);
      }
      qv_dataset_unref(ds);
    } else if (err.message[0] == '\0') {
      abort();
    }
  }
  free(real);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (g_root[0] == '\0') setup();
  if (size < 1 || size > 64 * 1024) return 0;
  int mode = data[0] % 3;
  const char *a = (const char *)data + 1;
  size_t n = size - 1;
  const char *nul = memchr(a, '\0', n);
  size_t alen = nul ? (size_t)(nul - a) : n;
  const char *b = nul ? nul + 1 : "";
  size_t blen = nul ? n - alen - 1 : 0;
  const char *dir = g_dir[mode];
  char path[PATH_MAX];
  /* Only the layout's own JSON files exist: remove the others first. */
  static const char *const kJson[] = {"state.json", "dataset_info.json", "dataset_dict.json"};
  for (int i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, kJson[i]);
    unlink(path);
  }
  if (mode == 0) {
    write_text(dir, "state.json", a, alen);
    write_text(dir, "dataset_info.json", b, blen);
  } else if (mode == 1) {
    write_text(dir, "dataset_info.json", a, alen);
  } else {
    write_text(dir, "dataset_dict.json", a, alen);
    for (int i = 0; i < 2; i++) {
      snprintf(path, sizeof path, "%s/%s", dir, i ? "test" : "train");
      write_text(path, "state.json", b, blen);
    }
  }
  qv_hf_dir *d = NULL;
  qv_error err;
  err.message[0] = '\0';
  if (qv_hf_dir_open(dir, &d, &err) == QV_OK) {
    check_dir(dir, d);
    qv_hf_dir_free(d);
    if (mode != 2) {
      snprintf(path, sizeof path, "%s/cache-0123456789abcdef.arrow", dir);
      qv_dataset *ds = NULL;
      if (qv_dataset_open_indices_file(path, &ds, &err) == QV_OK) {
        if (qv_dataset_num_rows(ds) != 3) abort();
        qv_dataset_unref(ds);
      }
    }
  } else if (err.message[0] == '\0') {
    abort();
  }
  return 0;
}
