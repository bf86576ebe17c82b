/*
 * progress.h — a one-line progress bar on stderr for long-running CLI
 * commands (convert; later: save, shuffle, map...). Top layer.
 *
 * Shown only when stderr is a terminal and the work has already taken
 * more than a moment (QV_PROGRESS_DELAY_S); redrawn at most ten times a
 * second; nothing at all is written otherwise, so pipes and logs stay
 * clean. The environment variable QV_PROGRESS overrides the terminal
 * check: "0" never draws, "1" always draws, at once (used by tests).
 *
 * Usage:
 *   cli_progress p;
 *   cli_progress_start(&p, "convert", total_bytes);   // 0 = unknown
 *   for (...) cli_progress_update(&p, rows_done, bytes_done);
 *   cli_progress_finish(&p, ok);
 */
#ifndef QUIVER_CLI_PROGRESS_H
#define QUIVER_CLI_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Work shorter than this never shows a bar. */
#define QV_PROGRESS_DELAY_S 0.5
/* Shortest interval between two redraws (10 per second). */
#define QV_PROGRESS_INTERVAL_S 0.1
/* Width of the bar itself, in cells. */
#define QV_PROGRESS_BAR_CELLS 24

typedef struct cli_progress {
  bool enabled; /* drawing allowed (terminal, or QV_PROGRESS=1) */
  double delay; /* seconds before the first draw */
  const char *label;
  int64_t total_bytes; /* 0 when unknown */
  int64_t total_rows;  /* > 0: a row-count bar (cli_progress_start_rows) */
  int64_t rows, bytes; /* done so far */
  double start, last_draw;
  bool drawn; /* something is on the line */
  int width;  /* characters of the last line drawn */
  FILE *out;
} cli_progress;

/** Begin: decide whether drawing is allowed; nothing is drawn yet. */
void cli_progress_start(cli_progress *p, const char *label, int64_t total_bytes);

/** Begin a bar measured in rows (dataset commands: the rows of the
 *  dataset); updates pass bytes 0. */
void cli_progress_start_rows(cli_progress *p, const char *label, int64_t total_rows);

/** Rows and bytes done so far (absolute counts). Redraws when allowed and
 *  due. Cheap when not drawing: one clock read. */
void cli_progress_update(cli_progress *p, int64_t rows, int64_t bytes);

/** End: on success, if a bar was shown, draw the final state and end the
 *  line; on failure, erase the bar (the error message follows). */
void cli_progress_finish(cli_progress *p, bool ok);

/** "1.5 GiB", "12.0 MiB", "512 B" into out (cap >= 16). */
void cli_format_bytes(double bytes, char *out, size_t cap);

#endif
