/*
 * bench_write.c OUT_DIR GB [--rows-per-batch N] [--level L] [--threads T]
 * [--reps R] — quiver side of the write benchmark (issue 3): build a
 * table of about GB gigabytes in
 * memory with the array builder (quiver/builder.h) — columns id int64
 * (= row number), x float64 (splitmix64 bits -> [0, 1)), s string (one of
 * 4096 42-byte words, picked by splitmix64; the words of gen_data.py) — in
 * record batches of N rows (default 65536), then write it to
 * OUT_DIR/quiver-none.arrows and OUT_DIR/quiver-zstd.arrows as IPC streams
 * (qv_writer_open_fd on a file opened by the benchmark: page cache, no
 * fsync — the same work pyarrow's RecordBatchStreamWriter on an OSFile
 * does), timing each write from open to close; zstd at level L (default
 * 1, pyarrow's default) on T threads (default 0: one per CPU). `sync` runs
 * before each timed write so earlier writes' writeback does not compete.
 * With R > 1 repetitions (default 1) the best time counts.
 *
 * Prints one JSON line: rows, data bytes (sum of the buffers), build time,
 * per codec seconds / GB/s (data bytes / seconds, 1 GB = 1e9 B) / file
 * bytes, and checksums that bench_write.py verifies on its side.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "quiver/builder.h"
#include "quiver/writer.h"

#define N_WORDS 4096
#define WORD_LEN 42

static uint64_t mix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static int die(const char *what, const qv_error *err) {
  fprintf(stderr, "bench_write: %s: %s\n", what, err->message);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: bench_write OUT_DIR GB [--rows-per-batch N] [--level L] "
            "[--threads T] [--reps R]\n");
    return 2;
  }
  const char *dir = argv[1];
  double gb = atof(argv[2]);
  int64_t per_batch = 65536;
  int level = 1, threads = 0, reps = 1;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--rows-per-batch") == 0) per_batch = atoll(argv[i + 1]);
    else if (strcmp(argv[i], "--level") == 0) level = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--reps") == 0) reps = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "bench_write: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  /* bytes per row: 8 (id) + 8 (x) + 4 (offset) + 42 (string) */
  int64_t rows = (int64_t)(gb * 1e9 / (8 + 8 + 4 + WORD_LEN));
  if (rows < 1 || per_batch < 1) return 2;

  static char words[N_WORDS][WORD_LEN + 1];
  for (int i = 0; i < N_WORDS; i++) {
    char w[8];
    snprintf(w, sizeof w, "w%06d", i);
    for (int k = 0; k < 6; k++) memcpy(words[i] + 7 * k, w, 7);
  }

  qv_error err;
  qv_type *st = qv_type_new(QV_STRUCT);
  if (qv_type_add_child(st, "id", true, qv_type_new(QV_INT64), NULL, &err) != QV_OK ||
      qv_type_add_child(st, "x", true, qv_type_new(QV_DOUBLE), NULL, &err) != QV_OK ||
      qv_type_add_child(st, "s", true, qv_type_new(QV_STRING), NULL, &err) != QV_OK)
    return die("schema", &err);
  qv_schema *schema = qv_schema_new(st);
  qv_builder *b = NULL;
  if (qv_builder_new(schema->type, &b, &err) != QV_OK) return die("builder", &err);
  qv_builder *bid = qv_builder_child(b, 0), *bx = qv_builder_child(b, 1),
             *bs = qv_builder_child(b, 2);

  /* ---- build ---- */
  double t0 = now();
  int64_t n_batches = (rows + per_batch - 1) / per_batch;
  qv_array **batches = calloc((size_t)n_batches, sizeof *batches);
  int64_t *ids = malloc(sizeof(int64_t) * (size_t)per_batch);
  double *xs = malloc(sizeof(double) * (size_t)per_batch);
  uint64_t id_sum = 0, x_xor = 0, s_bytes = 0;
  int64_t data_bytes = 0;
  for (int64_t bi = 0; bi < n_batches; bi++) {
    int64_t first = bi * per_batch, n = rows - first < per_batch ? rows - first : per_batch;
    for (int64_t i = 0; i < n; i++) {
      int64_t r = first + i;
      ids[i] = r;
      xs[i] = (double)(mix64((uint64_t)r) >> 11) * 0x1.0p-53;
      uint64_t bits;
      memcpy(&bits, &xs[i], 8);
      id_sum += (uint64_t)r;
      x_xor ^= bits;
    }
    if (qv_builder_append_values(bid, ids, n, &err) != QV_OK ||
        qv_builder_append_values(bx, xs, n, &err) != QV_OK)
      return die("append", &err);
    if (qv_builder_reserve(bs, n, &err) != QV_OK) return die("reserve", &err);
    for (int64_t i = 0; i < n; i++) {
      const char *w = words[mix64((uint64_t)(first + i) ^ 0xabcdefull) % N_WORDS];
      if (qv_builder_append_bytes(bs, w, WORD_LEN, &err) != QV_OK) return die("append", &err);
      s_bytes += WORD_LEN;
    }
    if (qv_builder_append_structs(b, n, &err) != QV_OK ||
        qv_builder_finish(b, &batches[bi], &err) != QV_OK)
      return die("finish", &err);
    data_bytes += 8 * n + 8 * n + 4 * (n + 1) + WORD_LEN * n;
  }
  double build_s = now() - t0;
  free(ids);
  free(xs);

  /* ---- write ---- */
  const char *codecs[2] = {"none", "zstd"};
  double secs[2], cpu[2];
  int64_t sizes[2];
  for (int c = 0; c < 2; c++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/quiver-%s.arrows", dir, codecs[c]);
    secs[c] = 1e300;
    for (int rep = 0; rep < reps; rep++) {
      unlink(path);
      sync();
      double w0 = now(), c0 = process_cpu_now();
      int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) {
        perror(path);
        return 1;
      }
      qv_write_options o = {
          QV_FORMAT_STREAM, c ? QV_COMPRESSION_ZSTD : QV_COMPRESSION_NONE, level, 8, -1, threads};
      qv_writer *w = NULL;
      if (qv_writer_open_fd(fd, schema, &o, &w, &err) != QV_OK) return die("open", &err);
      for (int64_t bi = 0; bi < n_batches; bi++)
        if (qv_writer_write_batch(w, batches[bi], &err) != QV_OK) return die("write", &err);
      if (qv_writer_close(w, &err) != QV_OK) return die("close", &err);
      close(fd);
      double t = now() - w0;
      if (t < secs[c]) {
        secs[c] = t;
        cpu[c] = process_cpu_now() - c0;
      }
    }
    struct stat sb;
    sizes[c] = stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1;
  }
  printf(
      "{\"tool\": \"quiver\", \"rows\": %lld, \"batches\": %lld, \"data_bytes\": %lld, "
      "\"build_s\": %.3f, \"zstd_level\": %d, \"threads\": %d, \"reps\": %d, "
      "\"none\": {\"seconds\": %.3f, \"cpu_s\": %.3f, \"gbps\": %.3f, \"file_bytes\": %lld}, "
      "\"zstd\": {\"seconds\": %.3f, \"cpu_s\": %.3f, \"gbps\": %.3f, \"file_bytes\": %lld}, "
      "\"checksum\": {\"id_sum\": %llu, \"x_xor\": %llu, \"s_bytes\": %llu}}\n",
      (long long)rows, (long long)n_batches, (long long)data_bytes, build_s, level, threads, reps,
      secs[0], cpu[0], (double)data_bytes / secs[0] / 1e9, (long long)sizes[0], secs[1], cpu[1],
      (double)data_bytes / secs[1] / 1e9, (long long)sizes[1], (unsigned long long)id_sum,
      (unsigned long long)x_xor, (unsigned long long)s_bytes);
  for (int64_t bi = 0; bi < n_batches; bi++) qv_array_unref(batches[bi]);
  free(batches);
  qv_builder_free(b);
  qv_schema_unref(schema);
  return 0;
}
