/*
 * progress.c — the CLI's progress bar on stderr (see progress.h): rows and
 * bytes done, percent and ETA when the total is known, throughput. Top
 * layer; no library state.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_format_bytes(double bytes, char *out, size_t cap) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 5) {
    bytes /= 1024.0;
    u++;
  }
  if (u == 0) snprintf(out, cap, "%.0f B", bytes);
  else snprintf(out, cap, "%.1f %s", bytes, units[u]);
}

/* 1234567 -> "1,234,567" */
static void format_count(int64_t v, char *out, size_t cap) {
  char digits[32];
  int n = snprintf(digits, sizeof digits, "%lld", (long long)(v < 0 ? 0 : v));
  size_t k = 0;
  for (int i = 0; i < n && k + 2 < cap; i++) {
    if (i > 0 && (n - i) % 3 == 0) out[k++] = ',';
    out[k++] = digits[i];
  }
  out[k] = '\0';
}

void cli_progress_start(cli_progress *p, const char *label, int64_t total_bytes) {
  memset(p, 0, sizeof *p);
  p->label = label;
  p->total_bytes = total_bytes > 0 ? total_bytes : 0;
  p->out = stderr;
  p->start = p->last_draw = now_s();
  p->delay = QV_PROGRESS_DELAY_S;
  const char *env = getenv("QV_PROGRESS");
  if (env && strcmp(env, "0") == 0) {
    p->enabled = false;
  } else if (env && strcmp(env, "1") == 0) {
    p->enabled = true;
    p->delay = 0;
  } else {
    p->enabled = isatty(STDERR_FILENO) == 1;
  }
}

static void draw(cli_progress *p, double t, bool final) {
  char line[256], rows[32], done[24], total[24], rate[24];
  double elapsed = t - p->start;
  format_count(p->rows, rows, sizeof rows);
  cli_format_bytes((double)p->bytes, done, sizeof done);
  cli_format_bytes(elapsed > 0 ? (double)p->bytes / elapsed : 0, rate, sizeof rate);
  int n;
  if (p->total_rows > 0) {
    double frac = final ? 1 : (double)p->rows / (double)p->total_rows;
    if (frac > 1) frac = 1;
    char bar[QV_PROGRESS_BAR_CELLS + 1], all[32], eta[32] = "";
    int full = (int)(frac * QV_PROGRESS_BAR_CELLS);
    for (int i = 0; i < QV_PROGRESS_BAR_CELLS; i++) bar[i] = i < full ? '=' : i == full ? '>' : ' ';
    bar[QV_PROGRESS_BAR_CELLS] = '\0';
    format_count(p->total_rows, all, sizeof all);
    if (!final && frac > 0.001 && elapsed > 0) {
      double left = elapsed / frac - elapsed;
      if (left < 3600) snprintf(eta, sizeof eta, "  ETA %d:%02d", (int)left / 60, (int)left % 60);
    } else if (final) {
      snprintf(eta, sizeof eta, "  in %.1fs", elapsed);
    }
    n = snprintf(line, sizeof line, "%s %3d%% [%s] %s / %s rows%s", p->label, (int)(frac * 100),
                 bar, rows, all, eta);
  } else if (p->total_bytes > 0) {
    double frac = (double)p->bytes / (double)p->total_bytes;
    if (frac > 1) frac = 1;
    if (final) frac = 1;
    char bar[QV_PROGRESS_BAR_CELLS + 1];
    int full = (int)(frac * QV_PROGRESS_BAR_CELLS);
    for (int i = 0; i < QV_PROGRESS_BAR_CELLS; i++) bar[i] = i < full ? '=' : i == full ? '>' : ' ';
    bar[QV_PROGRESS_BAR_CELLS] = '\0';
    cli_format_bytes((double)p->total_bytes, total, sizeof total);
    char eta[32] = "";
    if (!final && frac > 0.001 && elapsed > 0) {
      double left = elapsed / frac - elapsed;
      if (left < 3600) snprintf(eta, sizeof eta, "  ETA %d:%02d", (int)left / 60, (int)left % 60);
    } else if (final) {
      snprintf(eta, sizeof eta, "  in %.1fs", elapsed);
    }
    n = snprintf(line, sizeof line, "%s %3d%% [%s] %s rows  %s / %s  %s/s%s", p->label,
                 (int)(frac * 100), bar, rows, done, total, rate, eta);
  } else {
    char tail[32] = "";
    if (final) snprintf(tail, sizeof tail, "  in %.1fs", elapsed);
    n = snprintf(line, sizeof line, "%s %s rows  %s  %s/s%s", p->label, rows, done, rate, tail);
  }
  if (n < 0) return;
  if (n >= (int)sizeof line) n = (int)sizeof line - 1;
  /* \r, the line, then blanks over whatever a longer previous line left */
  int pad = p->width > n ? p->width - n : 0;
  fprintf(p->out, "\r%s%*s", line, pad, "");
  if (final) fputc('\n', p->out);
  fflush(p->out);
  p->width = n;
  p->drawn = true;
  p->last_draw = t;
}

void cli_progress_start_rows(cli_progress *p, const char *label, int64_t total_rows) {
  cli_progress_start(p, label, 0);
  p->total_rows = total_rows > 0 ? total_rows : 0;
}

void cli_progress_update(cli_progress *p, int64_t rows, int64_t bytes) {
  p->rows = rows;
  p->bytes = bytes;
  if (!p->enabled) return;
  double t = now_s();
  if (t - p->start < p->delay) return;
  if (p->drawn && t - p->last_draw < QV_PROGRESS_INTERVAL_S) return;
  draw(p, t, false);
}

void cli_progress_finish(cli_progress *p, bool ok) {
  if (!p->enabled || !p->drawn) return;
  if (ok) {
    draw(p, now_s(), true);
  } else {
    fprintf(p->out, "\r%*s\r", p->width, "");
    fflush(p->out);
  }
  p->drawn = false;
}
