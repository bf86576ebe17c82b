/*
 * bench_stream.c FILE [REPS] — the cost of opening an IPC stream of many
 * batches (issue 11, item 5): `head -n 1` in-process (lazy open, first
 * batch, row 0 as JSON), a first open (index walked from pread of the
 * headers and stored in an empty index cache), the same walk with the
 * cache off, a reopen (index cache hit), and, as the before-anchor of the
 * same run, the walk of the headers through the mapping
 * (qv_reader_open_buffer over a fresh mapping: one page fault per batch
 * header). Each is the best of REPS (default 5) on a warm page cache.
 * Prints one JSON object: seconds and the growth of this process's
 * resident set (VmRSS, file pages included) while the opened reader is
 * held; for the cheap ones (reopen, head) also the best thread CPU time
 * of 10 tries a round (the machine is shared, and waiting for a core is
 * not the code's cost). XDG_CACHE_HOME is pointed at temporary directories under
 * $TMPDIR (never the real home cache). Not part of the library.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "quiver/ipc.h"
#include "quiver/print.h"

/* A /proc/self/status field in KiB ("VmRSS:", "RssFile:"), 0 if unknown. */
static long status_kb(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = 0;
  size_t n = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0) kb = strtol(line + n, NULL, 10);
  if (f) fclose(f);
  return kb;
}

typedef enum { WALK_PREAD, WALK_MAPPED, HEAD } kind;

static double g_cpu; /* thread CPU seconds of the last one() */

/* One open of `path`; returns seconds, sets *rss_kb (growth while open). */
static double one(const char *path, kind k, qv_index_cache_mode mode, long *rss_kb,
                  int64_t *batches) {
  qv_error err;
  qv_reader *r = NULL;
  qv_buffer *map = NULL;
  long before = status_kb("VmRSS:");
  double c0 = cpu_now();
  double t0 = now();
  qv_status st;
  if (k == WALK_MAPPED) {
    st = qv_buffer_map_file(path, &map, NULL, &err);
    if (st == QV_OK) st = qv_reader_open_buffer(map, NULL, &r, &err);
  } else {
    qv_index_options io = {k == HEAD, mode};
    st = qv_reader_open_file(path, NULL, &io, &r, &err);
  }
  if (st == QV_OK && k == HEAD) {
    qv_array *b = NULL;
    qv_strbuf sb;
    qv_strbuf_init(&sb);
    st = qv_reader_next(r, &b, &err);
    if (st == QV_OK && b != NULL) st = qv_format_row_json(b, 0, &sb, &err);
    if (st == QV_OK && sb.len < 2) st = QV_EINVAL;
    qv_strbuf_reset(&sb);
    qv_array_unref(b);
  }
  double t = now() - t0;
  g_cpu = cpu_now() - c0;
  if (st != QV_OK) {
    fprintf(stderr, "bench_stream: %s\n", err.message);
    exit(1);
  }
  *rss_kb = status_kb("VmRSS:") - before;
  qv_reader_index_info info;
  qv_reader_index_state(r, &info);
  *batches = info.batches_indexed;
  qv_reader_close(r);
  qv_buffer_unref(map);
  return t;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_stream FILE [REPS]\n");
    return 2;
  }
  const char *path = argv[1];
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  char xdg[512], cmd[600];
  double best[5] = {1e9, 1e9, 1e9, 1e9, 1e9};
  long rss[5] = {0, 0, 0, 0, 0};
  int64_t nb[5] = {0, 0, 0, 0, 0};
  double cpu[2] = {1e9, 1e9}; /* reopen, head */
  unsetenv("QV_INDEX_CACHE");
  for (int i = 0; i < reps; i++) {
    long kb;
    int64_t b;
    double t;
    /* mapping walk (before) */
    t = one(path, WALK_MAPPED, QV_INDEX_CACHE_OFF, &kb, &b);
    if (t < best[0]) best[0] = t, rss[0] = kb, nb[0] = b;
    /* pread walk, no cache */
    t = one(path, WALK_PREAD, QV_INDEX_CACHE_OFF, &kb, &b);
    if (t < best[1]) best[1] = t, rss[1] = kb, nb[1] = b;
    /* first open: walk + store into an empty cache */
    snprintf(xdg, sizeof xdg, "%s/qv-bench-stream-%ld-%d", tmp, (long)getpid(), i);
    setenv("XDG_CACHE_HOME", xdg, 1);
    t = one(path, WALK_PREAD, QV_INDEX_CACHE_DEFAULT, &kb, &b);
    if (t < best[2]) best[2] = t, rss[2] = kb, nb[2] = b;
    /* reopen: cache hit; head -n 1 (lazy; the cache is not consulted for
     * the first batch) */
    for (int j = 0; j < 10; j++) {
      t = one(path, WALK_PREAD, QV_INDEX_CACHE_DEFAULT, &kb, &b);
      if (t < best[3]) best[3] = t, rss[3] = kb, nb[3] = b;
      if (g_cpu < cpu[0]) cpu[0] = g_cpu;
      t = one(path, HEAD, QV_INDEX_CACHE_DEFAULT, &kb, &b);
      if (t < best[4]) best[4] = t, rss[4] = kb, nb[4] = b;
      if (g_cpu < cpu[1]) cpu[1] = g_cpu;
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", xdg);
    if (system(cmd) != 0) fprintf(stderr, "bench_stream: could not remove %s\n", xdg);
  }
  printf(
      "{\"batches\": %lld, \"mapped_walk_s\": %.6f, \"mapped_walk_rss_kb\": %ld, "
      "\"pread_walk_s\": %.6f, \"pread_walk_rss_kb\": %ld, \"first_open_s\": %.6f, "
      "\"first_open_rss_kb\": %ld, \"reopen_s\": %.6f, \"reopen_rss_kb\": %ld, "
      "\"head_s\": %.6f, \"head_rss_kb\": %ld, \"head_batches_indexed\": %lld, "
      "\"reopen_cpu_s\": %.6f, \"head_cpu_s\": %.6f}\n",
      (long long)nb[1], best[0], rss[0], best[1], rss[1], best[2], rss[2], best[3], rss[3], best[4],
      rss[4], (long long)nb[4], cpu[0], cpu[1]);
  return 0;
}
