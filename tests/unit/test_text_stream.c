/*
 * test_text_stream.c — the streaming CSV and JSON Lines readers
 * (qv_csv_stream_path, qv_jsonl_stream_path) against the whole-file
 * readers of the same bytes (whose inference tests/python checks against
 * pyarrow): with tiny blocks, rows, quoted newlines, CRLF and multibyte
 * UTF-8 straddle every window edge; a type that widens in a late window
 * restarts the read and gives the whole-file type; the reader's own
 * accounting stays near the window size on a file many windows long;
 * errors in a late window name the file's line; gzip / zstd output of
 * the writers reads back. Runs under ASan too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quiver/csv.h"
#include "quiver/jsonl.h"
#include "quiver/print.h"
#include "qv_test.h"

static qv_error E;
static int g_threads; /* 0: every core */
static char g_escape; /* CSV escape character of same_as_whole (0: none) */

/* A sink gathering batches into a qv_read_result (emptied on begin). */
typedef struct gather {
  qv_read_result r;
  int64_t begins, cap;
} gather;

static qv_status g_begin(void *ctx, const qv_schema *schema, qv_error *err) {
  (void)err;
  gather *g = ctx;
  qv_read_result_reset(&g->r);
  g->cap = 0;
  g->r.schema = qv_schema_ref((qv_schema *)schema);
  g->begins++;
  return QV_OK;
}

static qv_status g_batch(void *ctx, qv_array *b, qv_error *err) {
  gather *g = ctx;
  if (g->r.n_batches == g->cap) {
    g->cap = g->cap ? 2 * g->cap : 8;
    qv_array **nb = realloc(g->r.batches, (size_t)g->cap * sizeof *nb);
    if (nb == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
    g->r.batches = nb;
  }
  g->r.batches[g->r.n_batches++] = qv_array_ref(b);
  g->r.n_rows += b->length;
  return QV_OK;
}

static char *rows_json(const qv_read_result *r) {
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  for (int64_t b = 0; b < r->n_batches; b++)
    for (int64_t i = 0; i < r->batches[b]->length; i++) {
      if (qv_format_row_json(r->batches[b], i, &sb, &E) != QV_OK) abort();
      qv_strbuf_append_char(&sb, '\n', NULL);
    }
  char *s = strdup(qv_strbuf_cstr(&sb));
  qv_strbuf_reset(&sb);
  return s;
}

static char dir[] = "/tmp/qv-text-stream-XXXXXX";

static const char *write_file(const char *name, const char *data, size_t n) {
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (f == NULL || fwrite(data, 1, n, f) != n) abort();
  fclose(f);
  return path;
}

/* Stream `data` as CSV (or JSON Lines) with block size bs and compare with
 * the whole-file reader: same schema, same rows. Returns the stats. */
static void same_as_whole(bool csv, const char *data, int64_t bs, qv_text_stream_stats *out) {
  const char *path = write_file(csv ? "t.csv" : "t.jsonl", data, strlen(data));
  qv_read_result whole;
  gather g;
  memset(&g, 0, sizeof g);
  qv_text_stream_stats stats;
  memset(&stats, 0, sizeof stats);
  qv_batch_sink sink = {g_begin, g_batch, &g};
  qv_status st;
  if (csv) {
    qv_csv_read_options o;
    memset(&o, 0, sizeof o);
    o.escape = g_escape;
    QV_REQUIRE(qv_csv_read_path(path, &o, &whole, &E) == QV_OK);
    o.block_size = bs;
    o.threads = g_threads;
    st = qv_csv_stream_path(path, &o, &sink, NULL, NULL, &stats, &E);
  } else {
    qv_jsonl_read_options o;
    memset(&o, 0, sizeof o);
    QV_REQUIRE(qv_jsonl_read_path(path, &o, &whole, &E) == QV_OK);
    o.block_size = bs;
    o.threads = g_threads;
    st = qv_jsonl_stream_path(path, &o, &sink, NULL, NULL, &stats, &E);
  }
  if (st != QV_OK) fprintf(stderr, "stream: %s\n", E.message);
  QV_REQUIRE(st == QV_OK);
  QV_CHECK(g.begins == stats.restarts + 1);
  QV_CHECK(qv_schema_equals(whole.schema, g.r.schema, false));
  QV_CHECK_EQ_INT(g.r.n_rows, whole.n_rows);
  QV_CHECK_EQ_INT(stats.rows, whole.n_rows);
  char *a = rows_json(&whole), *b = rows_json(&g.r);
  QV_CHECK_EQ_STR(b, a);
  free(a);
  free(b);
  qv_read_result_reset(&whole);
  qv_read_result_reset(&g.r);
  if (out) *out = stats;
}

static void test_csv_window_edges(void) {
  /* quoted delimiters, doubled quotes, quoted LF and CRLF, CRLF rows,
   * two- and three-byte UTF-8, empty lines, no final newline */
  const char *data =
      "a,b,c\r\n"
      "1,\"x,y\",\xc3\xa9t\xc3\xa9\r\n"
      "2,\"he said \"\"hi\"\"\",\xe2\x82\xac\r\n"
      "3,\"multi\nline\",z\n"
      "\n"
      "4,\"crlf\r\ninside\",\xe2\x82\xac\xe2\x82\xac\n"
      "5,plain,last";
  int64_t sizes[] = {1, 2, 3, 5, 8, 13, 64, 1 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
    same_as_whole(true, data, sizes[i], NULL);
}

/* An escaped newline (escape + LF) last in a window is inside a field:
 * the row goes on in the next window (found by fuzz_csv). */
static void test_csv_escaped_newline_at_window_end(void) {
  g_escape = '\\';
  const char *data =
      "h1,h2\\\nstill h2\n"
      "1,a\\\nb\n"
      "2,\\\n\\\n\n"
      "3,end\\,x\n";
  int64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 11, 16, 1 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
    same_as_whole(true, data, sizes[i], NULL);
  g_escape = 0;
}

static void test_csv_widening_restarts(void) {
  /* int64 for many windows, then a double, then text; a column null for
   * a while, then ints; naive timestamps, then a zoned one (-> string) */
  size_t cap = 1 << 20, n = 0;
  char *d = malloc(cap);
  n += (size_t)snprintf(d + n, cap - n, "i,f,s,late,ts\n");
  for (int r = 0; r < 3000; r++)
    n += (size_t)snprintf(d + n, cap - n, "%d,%d,%d,%s,2020-01-01T00:00:%02d\n", r, r, r,
                          r < 2000 ? "" : "7", r % 60);
  n += (size_t)snprintf(d + n, cap - n, "1,2.5,x,8,2020-01-01T00:00:00Z\n");
  qv_text_stream_stats st;
  same_as_whole(true, d, 512, &st);
  QV_CHECK(st.restarts >= 1);
  QV_CHECK(st.windows > 20);
  free(d);
}

static void test_csv_bounded_memory(void) {
  /* a file about 40 windows long: what the reader holds stays a few
   * windows, far below the file */
  size_t cap = 4 << 20, n = 0;
  char *d = malloc(cap);
  n += (size_t)snprintf(d + n, cap - n, "id,x,name\n");
  for (int r = 0; n + 64 < cap; r++)
    n += (size_t)snprintf(d + n, cap - n, "%d,%d.25,\"name %d, quoted\"\n", r, r, r);
  int64_t bs = 16 << 10, window = 2 * 2 * bs; /* 2 threads x 2 blocks */
  g_threads = 2;
  qv_text_stream_stats st;
  same_as_whole(true, d, bs, &st);
  g_threads = 0;
  QV_CHECK(st.windows >= 20);
  QV_CHECK_EQ_INT(st.restarts, 0);
  /* the window, its spans and its converted columns: a few windows'
   * worth whatever the core count, never the file */
  QV_CHECK(st.peak_bytes > 0);
  QV_CHECK(st.peak_bytes < 8 * window);
  QV_CHECK(st.peak_bytes < (int64_t)n / 4);
  free(d);
}

static void test_csv_error_in_late_window(void) {
  size_t cap = 1 << 20, n = 0;
  char *d = malloc(cap);
  n += (size_t)snprintf(d + n, cap - n, "a,b\n");
  for (int r = 0; r < 5000; r++) n += (size_t)snprintf(d + n, cap - n, "%d,%d\n", r, r);
  n += (size_t)snprintf(d + n, cap - n, "1,2,3\n");
  const char *path = write_file("bad.csv", d, n);
  gather g;
  memset(&g, 0, sizeof g);
  qv_batch_sink sink = {g_begin, g_batch, &g};
  qv_csv_read_options o;
  memset(&o, 0, sizeof o);
  o.block_size = 256;
  QV_CHECK(qv_csv_stream_path(path, &o, &sink, NULL, NULL, NULL, &E) == QV_EINVAL);
  QV_CHECK(strstr(E.message, "bad.csv: line 5002, column 1") != NULL);
  qv_read_result_reset(&g.r);
  /* an unterminated quote at the very end */
  path = write_file("open.csv", "a,b\n1,2\n3,\"open\n4,5\n", 20);
  QV_CHECK(qv_csv_stream_path(path, &o, &sink, NULL, NULL, NULL, &E) == QV_EINVAL);
  QV_CHECK(strstr(E.message, "line 3, column 3") != NULL);
  qv_read_result_reset(&g.r);
  free(d);
}

static void test_jsonl_windows(void) {
  const char *data =
      "{\"a\": 1, \"s\": \"\xc3\xa9t\xc3\xa9\", \"l\": [1, 2]}\r\n"
      "\n"
      "{\"a\": 2, \"s\": \"\xe2\x82\xac\", \"o\": {\"x\": null}}\n"
      "{\"a\": 3.5, \"s\": \"x\", \"o\": {\"x\": true, \"y\": \"2020-01-01\"}}\n"
      "{\"a\": null, \"l\": [], \"late\": \"2021-03-04T05:06:07\"}";
  int64_t sizes[] = {1, 2, 7, 16, 64, 1 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
    same_as_whole(false, data, sizes[i], NULL);
  /* an int column for many windows, then a real and a new key */
  size_t cap = 1 << 20, n = 0;
  char *d = malloc(cap);
  for (int r = 0; r < 3000; r++) n += (size_t)snprintf(d + n, cap - n, "{\"i\": %d}\n", r);
  n += (size_t)snprintf(d + n, cap - n, "{\"i\": 0.5, \"new\": [\"x\"]}\n");
  qv_text_stream_stats st;
  same_as_whole(false, d, 512, &st);
  QV_CHECK(st.restarts >= 1);
  /* a conflict in a late window names its line */
  n += (size_t)snprintf(d + n, cap - n, "{\"i\": \"text\"}\n");
  const char *path = write_file("bad.jsonl", d, n);
  gather g;
  memset(&g, 0, sizeof g);
  qv_batch_sink sink = {g_begin, g_batch, &g};
  qv_jsonl_read_options o;
  memset(&o, 0, sizeof o);
  o.block_size = 512;
  QV_CHECK(qv_jsonl_stream_path(path, &o, &sink, NULL, NULL, NULL, &E) == QV_EINVAL);
  QV_CHECK(strstr(E.message, "bad.jsonl: line 3002") != NULL);
  qv_read_result_reset(&g.r);
  free(d);
}

/* The writers' gzip and zstd output read back by the streaming readers
 * (which know compressed input by its magic bytes). */
static void test_compressed_round_trip(void) {
  const char *text = "a,b\n1,x\n2,\"y,z\"\n3,\xc3\xa9\n";
  qv_read_result src;
  QV_REQUIRE(qv_csv_read_buffer(text, (int64_t)strlen(text), "t.csv", NULL, &src, &E) == QV_OK);
  char *want = rows_json(&src);
  qv_text_compression codecs[] = {QV_TEXT_COMPRESSION_GZIP, QV_TEXT_COMPRESSION_ZSTD};
  for (int k = 0; k < 2; k++) {
    char path[300];
    snprintf(path, sizeof path, "%s/c%d.csv", dir, k);
    qv_csv_write_options wo;
    memset(&wo, 0, sizeof wo);
    wo.compression = codecs[k];
    qv_csv_writer *w = NULL;
    QV_REQUIRE(qv_csv_writer_open(path, src.schema, &wo, &w, &E) == QV_OK);
    for (int rep = 0; rep < 300; rep++)
      QV_REQUIRE(qv_csv_writer_write(w, src.batches[0], &E) == QV_OK);
    QV_REQUIRE(qv_csv_writer_close(w, &E) == QV_OK);
    gather g;
    memset(&g, 0, sizeof g);
    qv_batch_sink sink = {g_begin, g_batch, &g};
    qv_csv_read_options o;
    memset(&o, 0, sizeof o);
    o.block_size = 64;
    QV_REQUIRE(qv_csv_stream_path(path, &o, &sink, NULL, NULL, NULL, &E) == QV_OK);
    QV_CHECK_EQ_INT(g.r.n_rows, 900);
    char *got = rows_json(&g.r);
    QV_CHECK(strncmp(got, want, strlen(want)) == 0);
    free(got);
    qv_read_result_reset(&g.r);
    /* JSON Lines the same way */
    snprintf(path, sizeof path, "%s/c%d.jsonl", dir, k);
    qv_jsonl_write_options jo = {codecs[k], 0};
    qv_jsonl_writer *jw = NULL;
    QV_REQUIRE(qv_jsonl_writer_open_options(path, &jo, &jw, &E) == QV_OK);
    QV_REQUIRE(qv_jsonl_writer_write(jw, src.batches[0], &E) == QV_OK);
    QV_REQUIRE(qv_jsonl_writer_close(jw, &E) == QV_OK);
    memset(&g, 0, sizeof g);
    qv_jsonl_read_options jr;
    memset(&jr, 0, sizeof jr);
    QV_REQUIRE(qv_jsonl_stream_path(path, &jr, &sink, NULL, NULL, NULL, &E) == QV_OK);
    got = rows_json(&g.r);
    QV_CHECK_EQ_STR(got, want);
    free(got);
    qv_read_result_reset(&g.r);
  }
  free(want);
  qv_read_result_reset(&src);
}

int main(void) {
  if (mkdtemp(dir) == NULL) return 1;
  QV_RUN(test_csv_window_edges);
  QV_RUN(test_csv_escaped_newline_at_window_end);
  QV_RUN(test_csv_widening_restarts);
  QV_RUN(test_csv_bounded_memory);
  QV_RUN(test_csv_error_in_late_window);
  QV_RUN(test_jsonl_windows);
  QV_RUN(test_compressed_round_trip);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) return 1;
  return QV_TEST_END();
}
