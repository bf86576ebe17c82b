/*
 * qv_test.h — the tiny assertion harness every C unit test uses.
 * A test file defines `static void test_x(void)` functions and a main()
 * that calls QV_RUN(test_x) for each, then returns QV_TEST_END().
 * Prints "N passed, N failed" as its closing line.
 */
#ifndef QV_TEST_H
#define QV_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int qv_test_failed_checks_;
static int qv_test_passed_;
static int qv_test_failed_;

#define QV_CHECK(cond)                                                                             \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                     \
      qv_test_failed_checks_++;                                                                    \
    }                                                                                              \
  } while (0)

/* Fatal variant: stop the current test function. */
#define QV_REQUIRE(cond)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: requirement failed: %s\n", __FILE__, __LINE__, #cond);               \
      qv_test_failed_checks_++;                                                                    \
      return;                                                                                      \
    }                                                                                              \
  } while (0)

#define QV_CHECK_EQ_INT(a, b)                                                                      \
  do {                                                                                             \
    long long qa_ = (long long)(a), qb_ = (long long)(b);                                          \
    if (qa_ != qb_) {                                                                              \
      fprintf(stderr, "%s:%d: %s == %s failed: %lld vs %lld\n", __FILE__, __LINE__, #a, #b, qa_,   \
              qb_);                                                                                \
      qv_test_failed_checks_++;                                                                    \
    }                                                                                              \
  } while (0)

#define QV_CHECK_EQ_STR(a, b)                                                                      \
  do {                                                                                             \
    const char *qa_ = (a), *qb_ = (b);                                                             \
    if (!qa_ || !qb_ || strcmp(qa_, qb_) != 0) {                                                   \
      fprintf(stderr, "%s:%d: %s == %s failed:\n  got:      %s\n  expected: %s\n", __FILE__,       \
              __LINE__, #a, #b, qa_ ? qa_ : "(null)", qb_ ? qb_ : "(null)");                       \
      qv_test_failed_checks_++;                                                                    \
    }                                                                                              \
  } while (0)

#define QV_RUN(fn)                                                                                 \
  do {                                                                                             \
    int before_ = qv_test_failed_checks_;                                                          \
    fn();                                                                                          \
    if (qv_test_failed_checks_ == before_) {                                                       \
      qv_test_passed_++;                                                                           \
    } else {                                                                                       \
      qv_test_failed_++;                                                                           \
      fprintf(stderr, "FAILED: %s\n", #fn);                                                        \
    }                                                                                              \
  } while (0)

#define QV_TEST_END()                                                                              \
  (printf("%d passed, %d failed\n", qv_test_passed_, qv_test_failed_),                             \
   (qv_test_failed_ == 0 && qv_test_passed_ > 0) ? 0 : 1)

#endif
