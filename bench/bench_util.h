/*
 * bench_util.h — clocks, memory readings and the splitmix64 generator the
 * C benchmarks share (bench/bench_*.c). Not part of the library.
 */
#ifndef QUIVER_BENCH_UTIL_H
#define QUIVER_BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Wall-clock seconds (monotonic). */
static inline double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds of this thread: less disturbed than wall time when the
 * machine is shared. */
static inline double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds of the whole process (pool threads included): what a
 * machine shared with other work disturbs least. */
static inline double process_cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Anonymous resident memory of this process in KiB (RssAnon), 0 if unknown. */
static inline long anon_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = 0;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "RssAnon:", 8) == 0) kb = strtol(line + 8, NULL, 10);
  if (f) fclose(f);
  return kb;
}

/* splitmix64: advance *x and return the next value. */
static inline uint64_t splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

#endif /* QUIVER_BENCH_UTIL_H */
