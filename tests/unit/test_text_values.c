/*
 * test_text_values.c — the text readers' number parser
 * (formats/text_internal.h) against the C library's strtod, bit for bit:
 * random decimals of 1 to 20 significant digits with exponents around the
 * fast paths' limits, values printed with 17 digits (what JSON and CSV
 * writers emit), and exact halfway cases between two doubles.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/text_internal.h"
#include "qv_test.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static int64_t mismatches;

static void check(const char *s) {
  double got = 0, want = strtod(s, NULL);
  if (!qv_text_parse_double((const uint8_t *)s, (int64_t)strlen(s), &got) ||
      memcmp(&got, &want, 8) != 0) {
    if (mismatches++ < 5) fprintf(stderr, "'%s': got %.17g, strtod %.17g\n", s, got, want);
  }
}

static void test_random_decimals(void) {
  char buf[64];
  for (int i = 0; i < 200000; i++) {
    int digits = 1 + (int)(next() % 20), point = (int)(next() % (uint64_t)(digits + 1));
    int k = 0;
    if (next() & 1) buf[k++] = '-';
    for (int d = 0; d < digits; d++) {
      if (d == point && d > 0) buf[k++] = '.';
      buf[k++] = (char)('0' + (d == 0 ? 1 + next() % 9 : next() % 10));
    }
    if (next() % 3 == 0)
      k += snprintf(buf + k, sizeof buf - (size_t)k, "e%d", (int)(next() % 61) - 30);
    buf[k] = '\0';
    check(buf);
  }
  QV_CHECK_EQ_INT(mismatches, 0);
}

static void test_printed_doubles(void) {
  char buf[64];
  for (int i = 0; i < 200000; i++) {
    double v =
        ((double)(next() >> 11) / 9007199254740992.0 - 0.5) * pow(10, (int)(next() % 24) - 8);
    snprintf(buf, sizeof buf, "%.17g", v);
    check(buf);
    snprintf(buf, sizeof buf, "%.6f", v);
    check(buf);
  }
  QV_CHECK_EQ_INT(mismatches, 0);
}

static void test_halfway(void) {
  /* exact midpoints between neighbouring doubles (2^53 + 1, times powers
   * of ten and two), and their neighbours one digit away */
  const char *cases[] = {"9007199254740993",      "9007199254740993.0",  "9007199254740995",
                         "900719925474099.3e1",   "18014398509481986",   "18014398509481990",
                         "1.8014398509481986e16", "9007199254740992.5",  "4.5035996273704965e15",
                         "123456789012345678",    "1234567890123456789", "0.1",
                         "9007199254740993e-5",   "72057594037927945",   "7.2057594037927945e16"};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check(cases[i]);
  QV_CHECK_EQ_INT(mismatches, 0);
}

int main(void) {
  QV_RUN(test_random_decimals);
  QV_RUN(test_printed_doubles);
  QV_RUN(test_halfway);
  return QV_TEST_END();
}
