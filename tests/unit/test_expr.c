/*
 * test_expr.c — the expression language (include/quiver/expr.h):
 *  - parser: precedence and associativity through the canonical rendering,
 *    every construct, round trips, exact error messages with carets,
 *    limits on length and depth;
 *  - binder: column resolution (struct paths, flattened names,
 *    backquotes) and exact type-error messages;
 *  - evaluation on hand-made batches (null logic, checked arithmetic,
 *    error rows, guards, dictionaries and their cache);
 *  - a random oracle: random typed expressions over random batches of
 *    every supported column type (nulls, slices, struct parents,
 *    dictionaries, views), checked row by row against an interpreter
 *    written here that reads values straight from the buffers and applies
 *    the documented semantics one row at a time with short-circuit logic.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array_oracle.h"
#include "quiver/expr.h"
#include "qv_test.h"

/* ======================================================================== */
/* Parser                                                                    */

/* Canonical rendering of `text`, or "ERR: <message>". Caller frees. */
static char *render(const char *text) {
  qv_expr *e = NULL;
  qv_error err;
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  if (qv_expr_parse(text, -1, &e, &err) != QV_OK) {
    qv_strbuf_printf(&sb, NULL, "ERR: %s", err.message);
  } else {
    QV_CHECK(qv_expr_to_string(e, &sb, NULL) == QV_OK);
    qv_expr_free(e);
  }
  char *s = strdup(qv_strbuf_cstr(&sb));
  qv_strbuf_reset(&sb);
  return s;
}

#define CHECK_RENDER(text, want)                                                                   \
  do {                                                                                             \
    char *got_ = render(text);                                                                     \
    QV_CHECK_EQ_STR(got_, want);                                                                   \
    /* The rendering parses back to itself. */                                                     \
    if (strncmp(got_, "ERR", 3) != 0) {                                                            \
      char *again_ = render(got_);                                                                 \
      QV_CHECK_EQ_STR(again_, got_);                                                               \
      free(again_);                                                                                \
    }                                                                                              \
    free(got_);                                                                                    \
  } while (0)

static void test_precedence(void) {
  CHECK_RENDER("label == 1 and len(text) > 100", "((label == 1) and (len(text) > 100))");
  CHECK_RENDER("a or b and c", "(a or (b and c))");
  CHECK_RENDER("a and b or c", "((a and b) or c)");
  CHECK_RENDER("a or b or c", "((a or b) or c)");
  CHECK_RENDER("a and b and c", "((a and b) and c)");
  CHECK_RENDER("not a and b", "((not a) and b)");
  CHECK_RENDER("not a == 1", "(not (a == 1))");
  CHECK_RENDER("not not a", "(not (not a))");
  CHECK_RENDER("a + b * c - d / e % f", "((a + (b * c)) - ((d / e) % f))");
  CHECK_RENDER("a - b - c", "((a - b) - c)");
  CHECK_RENDER("a / b / c", "((a / b) / c)");
  CHECK_RENDER("a * (b + c)", "(a * (b + c))");
  CHECK_RENDER("((a))", "a");
  CHECK_RENDER("-x * 2", "((-x) * 2)");
  CHECK_RENDER("-5 * 2", "(-5 * 2)");
  CHECK_RENDER("- -5", "5");
  CHECK_RENDER("-(5) + - +2.5", "(-5 + -2.5)");
  CHECK_RENDER("-(-9223372036854775808)", "9223372036854775808");
  CHECK_RENDER("-(9223372036854775808)", "-9223372036854775808");
  CHECK_RENDER("-(18446744073709551615)",
               "ERR: integer literal -18446744073709551615 is out of range (the smallest is "
               "-9223372036854775808) at column 1:\n  -(18446744073709551615)\n  ^");
  CHECK_RENDER("-'a'", "(-'a')");
  CHECK_RENDER("--x", "(-(-x))");
  CHECK_RENDER("+x", "x");
  CHECK_RENDER("a - -1", "(a - -1)");
  CHECK_RENDER("a + 1 < b * 2", "((a + 1) < (b * 2))");
  CHECK_RENDER("a + 1 is null", "((a + 1) is null)");
  CHECK_RENDER("not a is not null", "(not (a is not null))");
  CHECK_RENDER("a + 1 in (2, 3)", "((a + 1) in (2, 3))");
  CHECK_RENDER("x in (1) or y", "((x in (1)) or y)");
  CHECK_RENDER("!a && b || !c", "(((not a) and b) or (not c))");
  CHECK_RENDER("AND_x == 1 AND Or_y", "((AND_x == 1) and Or_y)");
}

static void test_constructs(void) {
  CHECK_RENDER("a == 1", "(a == 1)");
  CHECK_RENDER("a = 1", "(a == 1)");
  CHECK_RENDER("a != 1", "(a != 1)");
  CHECK_RENDER("a <> 1", "(a != 1)");
  CHECK_RENDER("a < 1 or a <= 2 or a > 3 or a >= 4",
               "((((a < 1) or (a <= 2)) or (a > 3)) or (a >= 4))");
  CHECK_RENDER("x is null", "(x is null)");
  CHECK_RENDER("x IS NOT NULL", "(x is not null)");
  CHECK_RENDER("x in (1, -2, null)", "(x in (1, -2, null))");
  CHECK_RENDER("x not in ('a', \"b\")", "(x not in ('a', 'b'))");
  CHECK_RENDER("x in (true, false, 1.5)", "(x in (true, false, 1.5))");
  CHECK_RENDER("starts_with(s, 'p') or ends_with(s, 'q') or contains(s, 'r')",
               "((starts_with(s, 'p') or ends_with(s, 'q')) or contains(s, 'r'))");
  CHECK_RENDER("LEN(s) + abs(-x)", "(len(s) + abs((-x)))");
  CHECK_RENDER("len", "len");
  CHECK_RENDER("`odd name` == 1", "(`odd name` == 1)");
  CHECK_RENDER("`a``b` + `and` + `x`", "((`a``b` + `and`) + x)");
  CHECK_RENDER("a.b.c", "a.b.c");
  CHECK_RENDER("`a.b`.c", "`a.b`.c");
  CHECK_RENDER("s == 'it\\'s\\n\\t\\\\ \\x41\\u00e9\\0'",
               "(s == 'it\\'s\\n\\t\\\\ A\xc3\xa9\\x00')");
  CHECK_RENDER("s == \"say \\\"hi\\\"\"", "(s == 'say \"hi\"')");
  CHECK_RENDER("x == 1.5e3 or y == .5 or z == 1e20 or w == -0.0 or v == 2.",
               "(((((x == 1500.0) or (y == 0.5)) or (z == 1e+20)) or (w == -0.0)) or (v == 2.0))");
  CHECK_RENDER("a == 9223372036854775807", "(a == 9223372036854775807)");
  CHECK_RENDER("a == 18446744073709551615", "(a == 18446744073709551615)");
  CHECK_RENDER("a == -9223372036854775808", "(a == -9223372036854775808)");
  CHECK_RENDER("TRUE and Null is NULL or False", "((true and (null is null)) or false)");
  CHECK_RENDER("  a\n==\t1  ", "(a == 1)");
}

static void test_parse_errors(void) {
  CHECK_RENDER("label == 1 and",
               "ERR: expected an expression after 'and', found end of input at column 15:\n"
               "  label == 1 and\n"
               "                ^");
  CHECK_RENDER("a < b < c",
               "ERR: comparisons do not chain: write 'a < b and b < c' instead of 'a < b < c' "
               "at column 7:\n  a < b < c\n        ^");
  CHECK_RENDER("(a + 1",
               "ERR: expected ')' to close the '(' at column 1, found end of input at column 7:\n"
               "  (a + 1\n        ^");
  CHECK_RENDER("f(x)",
               "ERR: unknown function 'f' (known: abs, cast, ceil, coalesce, contains, ends_with, "
               "exp, floor, if, len, ln, log, log10, log2, lower, pow, round, sqrt, "
               "starts_with, substr, upper) at "
               "column 1:\n  f(x)\n  ^");
  CHECK_RENDER("len(a, b)", "ERR: len() takes 1 argument, found 2 at column 1:\n  len(a, b)\n  ^");
  CHECK_RENDER("starts_with(s)",
               "ERR: starts_with() takes 2 arguments, found 1 at column 1:\n  starts_with(s)\n  ^");
  CHECK_RENDER("contains(a,)",
               "ERR: expected an expression after ',', found ')' at column 12:\n  contains(a,)\n"
               "             ^");
  CHECK_RENDER("len(a",
               "ERR: expected ')' to close the call of len() at column 4, found end of input at "
               "column 6:\n  len(a\n       ^");
  CHECK_RENDER("x in (y)",
               "ERR: expected a literal in the 'in' list (columns and expressions are not "
               "allowed), found 'y' at column 7:\n  x in (y)\n        ^");
  CHECK_RENDER("x in (1 2)",
               "ERR: expected ',' or ')' to close the 'in' list at column 6, found '2' at column "
               "9:\n  x in (1 2)\n          ^");
  CHECK_RENDER("x in 1",
               "ERR: expected '(' after 'in', found '1' at column 6:\n  x in 1\n       ^");
  CHECK_RENDER("x is 1",
               "ERR: expected 'null' or 'not null' after 'is', found '1' at column 6:\n"
               "  x is 1\n       ^");
  CHECK_RENDER("x is not",
               "ERR: expected 'null' after 'is not', found end of input at column 9:\n"
               "  x is not\n          ^");
  CHECK_RENDER("1e999", "ERR: float literal '1e999' is out of range at column 1:\n  1e999\n  ^");
  CHECK_RENDER("99999999999999999999",
               "ERR: integer literal 99999999999999999999 is out of range (the largest is "
               "18446744073709551615) at column 1:\n  99999999999999999999\n  ^");
  CHECK_RENDER("x > -9223372036854775809",
               "ERR: integer literal -9223372036854775809 is out of range (the smallest is "
               "-9223372036854775808) at column 5:\n  x > -9223372036854775809\n      ^");
  CHECK_RENDER("12abc", "ERR: invalid number '12abc' at column 1:\n  12abc\n  ^");
  CHECK_RENDER("'abc", "ERR: unterminated string literal (no closing ') at column 1:\n  'abc\n  ^");
  CHECK_RENDER("s == 'a\\q'",
               "ERR: unknown escape '\\q' in a string literal (known: \\\\ \\' \\\" \\n \\t \\r "
               "\\0 \\xHH \\uHHHH) at column 8:\n  s == 'a\\q'\n         ^");
  CHECK_RENDER("s == '\\x4'",
               "ERR: expected two hexadecimal digits after '\\x' in a string literal at column "
               "7:\n  s == '\\x4'\n        ^");
  CHECK_RENDER("s == '\\ud800'",
               "ERR: '\\uD800' is a UTF-16 surrogate, not a character at column 7:\n"
               "  s == '\\ud800'\n        ^");
  CHECK_RENDER("`abc",
               "ERR: unterminated backquoted name (no closing `) at column 1:\n  `abc\n  ^");
  CHECK_RENDER("a @ b", "ERR: unexpected character '@' at column 3:\n  a @ b\n    ^");
  CHECK_RENDER("a & b",
               "ERR: unexpected '&' (did you mean '&&' or 'and'?) at column 3:\n  a & b\n    ^");
  CHECK_RENDER("a.b.1",
               "ERR: expected a field name after '.', found '1' at column 5:\n  a.b.1\n      ^");
  CHECK_RENDER("", "ERR: empty expression");
  CHECK_RENDER("   ", "ERR: empty expression");
  CHECK_RENDER("a )", "ERR: unmatched ')' at column 3:\n  a )\n    ^");
  CHECK_RENDER("a b",
               "ERR: expected an operator or the end of the expression, found 'b' at column 3:\n"
               "  a b\n    ^");
  CHECK_RENDER("()", "ERR: expected an expression after '(', found ')' at column 2:\n  ()\n   ^");
  CHECK_RENDER("a and or b",
               "ERR: expected an expression after 'and', found 'or' at column 7:\n"
               "  a and or b\n        ^");
  CHECK_RENDER("a +",
               "ERR: expected an expression after '+', found end of input at column 4:\n"
               "  a +\n     ^");
  CHECK_RENDER("not",
               "ERR: expected an expression after 'not', found end of input at column 4:\n"
               "  not\n     ^");
  CHECK_RENDER("a == \x01", "ERR: unexpected byte 0x01 at column 6:\n  a ==  \n       ^");
  /* Multi-line text names the line; columns count characters, not bytes. */
  CHECK_RENDER("a == 1 and\n  b ==",
               "ERR: expected an expression after '==', found end of input at line 2, column "
               "7:\n    b ==\n        ^");
  CHECK_RENDER("s == '\xc3\xa9t\xc3\xa9' and",
               "ERR: expected an expression after 'and', found end of input at column 15:\n"
               "  s == '\xc3\xa9t\xc3\xa9' and\n                ^");
}

static void test_long_lines_and_limits(void) {
  /* A long line is cut to a window around the caret. */
  char text[400];
  snprintf(text, sizeof text, "a == 1 and %s == 2 and",
           "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
           "bbbbbbbbbbbbbbb");
  char *got = render(text);
  QV_CHECK_EQ_STR(got,
                  "ERR: expected an expression after 'and', found end of input at column 123:\n"
                  "  ...bbbbbbbbbbbbbbbbbbbbbbbbbbb == 2 and\n"
                  "                                         ^");
  free(got);

  /* Depth: parentheses, unary chains and operator chains are bounded. */
  char *deep = malloc(1000);
  int k = 0;
  for (int i = 0; i < 200; i++) deep[k++] = '(';
  deep[k++] = 'a';
  for (int i = 0; i < 200; i++) deep[k++] = ')';
  deep[k] = 0;
  qv_expr *e = NULL;
  qv_error err;
  QV_CHECK_EQ_INT(qv_expr_parse(deep, -1, &e, &err), QV_EINVAL);
  QV_CHECK(strncmp(err.message, "expression nests deeper than 128 levels at column 129:", 54) == 0);
  k = 0;
  for (int i = 0; i < 127; i++) deep[k++] = '(';
  deep[k++] = 'a';
  for (int i = 0; i < 127; i++) deep[k++] = ')';
  deep[k] = 0;
  QV_CHECK_EQ_INT(qv_expr_parse(deep, -1, &e, &err), QV_OK);
  qv_expr_free(e);
  k = 0;
  deep[k++] = 'a';
  for (int i = 0; i < 200; i++) {
    memcpy(deep + k, " + a", 4);
    k += 4;
  }
  deep[k] = 0;
  QV_CHECK_EQ_INT(qv_expr_parse(deep, -1, &e, &err), QV_EINVAL);
  QV_CHECK(strncmp(err.message, "expression nests deeper than 128 levels at column 511:", 54) == 0);
  k = 0;
  for (int i = 0; i < 300; i++) {
    memcpy(deep + k, "- ", 2);
    k += 2;
  }
  deep[k++] = 'a';
  deep[k] = 0;
  QV_CHECK_EQ_INT(qv_expr_parse(deep, -1, &e, &err), QV_EINVAL);
  QV_CHECK(strstr(err.message, "expression nests deeper than 128 levels") == err.message);
  free(deep);
  /* A long 'in' list is one level. */
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_strbuf_append_str(&sb, "x in (0", NULL);
  for (int i = 1; i < 5000; i++) qv_strbuf_printf(&sb, NULL, ", %d", i);
  qv_strbuf_append_str(&sb, ")", NULL);
  QV_CHECK_EQ_INT(qv_expr_parse(qv_strbuf_cstr(&sb), -1, &e, &err), QV_OK);
  qv_expr_free(e);
  qv_strbuf_reset(&sb);
  /* Length. */
  char *huge = malloc(QV_EXPR_MAX_LENGTH + 2);
  memset(huge, ' ', QV_EXPR_MAX_LENGTH + 1);
  huge[0] = 'a';
  huge[QV_EXPR_MAX_LENGTH + 1] = 0;
  QV_CHECK_EQ_INT(qv_expr_parse(huge, -1, &e, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message, "expression is 65537 bytes long; the limit is 65536");
  huge[QV_EXPR_MAX_LENGTH] = 0;
  QV_CHECK_EQ_INT(qv_expr_parse(huge, -1, &e, &err), QV_OK);
  qv_expr_free(e);
  free(huge);
  /* Explicit length: embedded text after len is ignored. */
  QV_CHECK_EQ_INT(qv_expr_parse("a == 1 garbage", 6, &e, &err), QV_OK);
  qv_expr_free(e);
  QV_CHECK_EQ_INT(qv_expr_parse(NULL, -1, &e, &err), QV_EARG);
}

/* ======================================================================== */
/* A fixed schema and batch for binding and evaluation                       */

static qv_type *dict_t(qv_type_id index, qv_type_id value) {
  qv_type *t = qv_type_new(QV_DICTIONARY);
  t->index_type = qv_type_new(index);
  t->value_type = qv_type_new(value);
  return t;
}

static qv_array *prim(qv_type_id id, int64_t n, const char *valid, const void *values, int w) {
  qv_array *a = qv_array_new(qv_type_new(id), 2, 0);
  qv_type_unref(a->type);
  a->length = n;
  a->null_count = -1;
  if (valid) {
    a->buffers[0] = orc_buf((n + 7) / 8);
    for (int64_t i = 0; i < n; i++)
      if (valid[i] == '1') qv_bit_set(a->buffers[0]->data, i);
  }
  if (id == QV_BOOL) {
    a->buffers[1] = orc_buf((n + 7) / 8);
    const char *bits = values;
    for (int64_t i = 0; i < n; i++)
      if (bits[i] == '1') qv_bit_set(a->buffers[1]->data, i);
  } else {
    a->buffers[1] = orc_buf(n * w);
    memcpy(a->buffers[1]->data, values, (size_t)(n * w));
  }
  return a;
}

static qv_array *strs(qv_type_id id, int64_t n, const char *const *s) {
  qv_array *a = qv_array_new(qv_type_new(id), 3, 0);
  qv_type_unref(a->type);
  a->length = n;
  a->null_count = -1;
  a->buffers[0] = orc_buf((n + 7) / 8);
  a->buffers[1] = orc_buf(4 * (n + 1));
  int64_t total = 0;
  for (int64_t i = 0; i < n; i++) total += s[i] ? (int64_t)strlen(s[i]) : 0;
  a->buffers[2] = orc_buf(total);
  int32_t pos = 0;
  for (int64_t i = 0; i < n; i++) {
    memcpy(a->buffers[1]->data + 4 * i, &pos, 4);
    if (!s[i]) continue;
    qv_bit_set(a->buffers[0]->data, i);
    memcpy(a->buffers[2]->data + pos, s[i], strlen(s[i]));
    pos += (int32_t)strlen(s[i]);
  }
  memcpy(a->buffers[1]->data + 4 * n, &pos, 4);
  return a;
}

/* Columns of the fixed batch (6 rows). */
enum { FIX_ROWS = 6 };

static qv_array *fixed_batch(void) {
  static const int64_t label[FIX_ROWS] = {1, 0, 1, 1, 2, 1};
  static const int32_t n32[FIX_ROWS] = {5, -3, 0, 7, 100, 2};
  static const int64_t big[FIX_ROWS] = {INT64_MAX, 1, -1, INT64_MIN, 2, 0};
  static const uint64_t u[FIX_ROWS] = {0, 1, UINT64_MAX, (uint64_t)1 << 63, 5, 7};
  static const double f[FIX_ROWS] = {1.5, -0.5, NAN, 3.0, 0.0, 2.5};
  static const char *const text[FIX_ROWS] = {"hello world", "h\xc3\xa9llo", NULL, "",
                                             "abc",         "xyzabc"};
  static const int8_t didx[FIX_ROWS] = {0, 1, 0, 2, 1, 3};
  static const char *const dvals[4] = {"apple", "banana", NULL, "cherry"};
  static const int32_t lofs[FIX_ROWS + 1] = {0, 2, 2, 5, 5, 6, 10};
  static const int32_t items[10] = {0};
  static const int32_t sx[FIX_ROWS] = {10, 20, 30, 40, 50, 60};

  qv_type *st = qv_type_new(QV_STRUCT);
  QV_CHECK(qv_type_add_child(st, "label", true, qv_type_new(QV_INT64), NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "n", true, qv_type_new(QV_INT32), NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "big", true, qv_type_new(QV_INT64), NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "u", true, qv_type_new(QV_UINT64), NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "f", true, qv_type_new(QV_DOUBLE), NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "flag", true, qv_type_new(QV_BOOL), NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "text", true, qv_type_new(QV_STRING), NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "d", true, dict_t(QV_INT8, QV_STRING), NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "tags", true, qv_type_list_of(QV_LIST, qv_type_new(QV_INT32)),
                             NULL, NULL) == QV_OK);
  qv_type *inner = qv_type_new(QV_STRUCT);
  QV_CHECK(qv_type_add_child(inner, "x", true, qv_type_new(QV_INT32), NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "s", true, inner, NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "s.x", true, qv_type_new(QV_INT32), NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "odd name", true, qv_type_new(QV_INT32), NULL, NULL) == QV_OK);
  QV_CHECK(qv_type_add_child(st, "ts", true, qv_type_timestamp(QV_MILLI, "UTC"), NULL, NULL) ==
           QV_OK);

  qv_array *b = qv_array_new(st, 1, st->n_children);
  qv_type_unref(st);
  b->length = FIX_ROWS;
  b->null_count = 0;
  int k = 0;
  b->children[k++] = prim(QV_INT64, FIX_ROWS, NULL, label, 8);
  b->children[k++] = prim(QV_INT32, FIX_ROWS, "110111", n32, 4);
  b->children[k++] = prim(QV_INT64, FIX_ROWS, NULL, big, 8);
  b->children[k++] = prim(QV_UINT64, FIX_ROWS, NULL, u, 8);
  b->children[k++] = prim(QV_DOUBLE, FIX_ROWS, "111110", f, 8);
  b->children[k++] = prim(QV_BOOL, FIX_ROWS, "111011", "101010", 0);
  b->children[k++] = strs(QV_STRING, FIX_ROWS, text);
  qv_array *d = prim(QV_INT8, FIX_ROWS, "111101", didx, 1);
  qv_type_unref(d->type);
  d->type = dict_t(QV_INT8, QV_STRING);
  d->dictionary = strs(QV_STRING, 4, dvals);
  b->children[k++] = d;
  qv_array *l = qv_array_new(qv_type_list_of(QV_LIST, qv_type_new(QV_INT32)), 2, 1);
  qv_type_unref(l->type);
  l->length = FIX_ROWS;
  l->null_count = -1;
  l->buffers[0] = orc_buf(1);
  l->buffers[0]->data[0] = 0x3d; /* 101111: row 1 null */
  l->buffers[1] = orc_buf(4 * (FIX_ROWS + 1));
  memcpy(l->buffers[1]->data, lofs, sizeof lofs);
  l->children[0] = prim(QV_INT32, 10, NULL, items, 4);
  b->children[k++] = l;
  qv_array *s = qv_array_new(qv_type_ref(b->type->children[k].type), 1, 1);
  qv_type_unref(s->type);
  s->length = FIX_ROWS;
  s->null_count = -1;
  s->buffers[0] = orc_buf(1);
  s->buffers[0]->data[0] = 0x2f; /* 111101: row 4 null */
  s->children[0] = prim(QV_INT32, FIX_ROWS, NULL, sx, 4);
  b->children[k++] = s;
  b->children[k++] = prim(QV_INT32, FIX_ROWS, NULL, n32, 4);
  b->children[k++] = prim(QV_INT32, FIX_ROWS, NULL, n32, 4);
  qv_array *ts = prim(QV_INT64, FIX_ROWS, "011111", big, 8);
  qv_type_unref(ts->type);
  ts->type = qv_type_timestamp(QV_MILLI, "UTC");
  b->children[k++] = ts;
  qv_error err;
  if (qv_array_validate(b, QV_VALIDATE_FULL, "fixed", &err) != QV_OK) {
    fprintf(stderr, "fixed batch invalid: %s\n", err.message);
    abort();
  }
  return b;
}

static qv_schema *schema_of(const qv_array *batch) {
  return qv_schema_new(qv_type_ref(batch->type));
}

/* Bind `text` to the schema: "OK" or the error message (static buffer). */
static const char *bind_msg(const qv_schema *schema, const char *text) {
  static qv_error err;
  qv_expr *e = NULL;
  if (qv_expr_parse(text, -1, &e, &err) != QV_OK) return err.message;
  qv_bound_expr *b = NULL;
  qv_status st = qv_expr_bind(e, schema, &b, &err);
  qv_expr_free(e);
  qv_bound_expr_free(b);
  return st == QV_OK ? "OK" : err.message;
}

static void test_bind_errors(void) {
  qv_array *batch = fixed_batch();
  qv_schema *schema = schema_of(batch);
  QV_CHECK_EQ_STR(bind_msg(schema, "label == 1 and len(text) > 3"), "OK");
  QV_CHECK_EQ_STR(bind_msg(schema, "s.x > 1 and `s.x` > 1 and `odd name` < 3 and d == 'apple'"),
                  "OK");
  QV_CHECK_EQ_STR(bind_msg(schema, "ts is null and tags is not null and len(tags) > 1"), "OK");
  QV_CHECK_EQ_STR(bind_msg(schema, "text == 1"),
                  "cannot compare column 'text' (string) with 1 (int64) at column 6:\n"
                  "  text == 1\n       ^");
  QV_CHECK_EQ_STR(bind_msg(schema, "lable == 1"),
                  "unknown column 'lable' (did you mean 'label'?) at column 1:\n  lable == 1\n  ^");
  QV_CHECK_EQ_STR(bind_msg(schema, "zzz == 1"),
                  "unknown column 'zzz' at column 1:\n  zzz == 1\n  ^");
  QV_CHECK_EQ_STR(bind_msg(schema, "s.y == 1"),
                  "struct 's' has no field 'y' (did you mean 'x'?) at column 1:\n  s.y == 1\n  ^");
  QV_CHECK_EQ_STR(bind_msg(schema, "label.x == 1"),
                  "column 'label' (int64) is not a struct, so it has no field 'x' at column 1:\n"
                  "  label.x == 1\n  ^");
  QV_CHECK_EQ_STR(bind_msg(schema, "text + 1 > 2"),
                  "cannot apply '+' to column 'text' (string) and 1 (int64) at column 6:\n"
                  "  text + 1 > 2\n       ^");
  QV_CHECK_EQ_STR(bind_msg(schema, "label and flag"),
                  "'and' needs boolean operands, found column 'label' (int64) at column 7:\n"
                  "  label and flag\n        ^");
  QV_CHECK_EQ_STR(bind_msg(schema, "not len(text)"),
                  "'not' needs boolean operand, found 'len(text)' (int64) at column 1:\n"
                  "  not len(text)\n  ^");
  QV_CHECK_EQ_STR(bind_msg(schema, "label == null"),
                  "comparing with null gives null for every row; use 'is null' or 'is not null' "
                  "at column 7:\n  label == null\n        ^");
  QV_CHECK_EQ_STR(bind_msg(schema, "len(label) > 1"),
                  "len() needs a string, binary or list, found column 'label' (int64) at column "
                  "1:\n  len(label) > 1\n  ^");
  QV_CHECK_EQ_STR(bind_msg(schema, "starts_with(text, 1)"),
                  "starts_with() needs a string or binary second argument, found 1 (int64) at "
                  "column 19:\n  starts_with(text, 1)\n                    ^");
  QV_CHECK_EQ_STR(bind_msg(schema, "tags == 1"),
                  "column 'tags' (list<item: int32>) can only be used in len() or with 'is null' "
                  "at column 1:\n  tags == 1\n  ^");
  QV_CHECK_EQ_STR(
      bind_msg(schema, "ts > 1"),
      "column 'ts' (timestamp[ms, tz=UTC]) can only be used with 'is null' "
      "(expressions compute with bool, integer, floating-point, string and binary "
      "columns, dictionaries of those, and lists in len()) at column 1:\n  ts > 1\n  ^");
  QV_CHECK_EQ_STR(bind_msg(schema, "label in (1, 'a')"),
                  "cannot compare column 'label' (int64) with 'a' (string) in the 'in' list at "
                  "column 14:\n  label in (1, 'a')\n               ^");
  QV_CHECK_EQ_STR(bind_msg(schema, "-text"),
                  "cannot negate column 'text' (string) at column 1:\n  -text\n  ^");
  QV_CHECK_EQ_STR(
      bind_msg(schema, "abs(flag)"),
      "abs() needs a number, found column 'flag' (bool) at column 1:\n  abs(flag)\n  ^");
  QV_CHECK_EQ_STR(bind_msg(schema, "flag == 'x'"),
                  "cannot compare column 'flag' (bool) with 'x' (string) at column 6:\n"
                  "  flag == 'x'\n       ^");
  QV_CHECK_EQ_STR(bind_msg(schema, "null in (1)"),
                  "the left side of 'in' is null, so the result is null for every row at column "
                  "1:\n  null in (1)\n  ^");
  QV_CHECK_EQ_STR(bind_msg(schema, "tags"),
                  "column 'tags' (list<item: int32>) can only be used in len() or with 'is null' "
                  "at column 1:\n  tags\n  ^");
  QV_CHECK_EQ_STR(bind_msg(schema, "len(text) + 1 == flag"),
                  "cannot compare 'len(text) + 1' (int64) with column 'flag' (bool) at column "
                  "15:\n  len(text) + 1 == flag\n                ^");
  /* Null literals take their type from the context. */
  QV_CHECK_EQ_STR(bind_msg(schema, "flag and null or label + null > 1 or len(null) > 0"), "OK");
  /* Predicates must be boolean. */
  qv_bound_expr *b = NULL;
  qv_error err;
  QV_CHECK_EQ_INT(qv_predicate_compile("len(text) + 1", schema, &b, &err), QV_ETYPE);
  QV_CHECK_EQ_STR(err.message,
                  "a filter needs a boolean expression, found int64 at column 1:\n"
                  "  len(text) + 1\n  ^");
  QV_CHECK_EQ_INT(qv_predicate_compile("text", schema, &b, &err), QV_ETYPE);
  QV_CHECK_EQ_STR(err.message,
                  "a filter needs a boolean expression, found string at column 1:\n"
                  "  text\n  ^");
  QV_CHECK_EQ_INT(qv_predicate_compile("flag", schema, &b, &err), QV_OK);
  QV_CHECK_EQ_INT(qv_bound_expr_result_type(b), QV_BOOL);
  qv_bound_expr_free(b);
  qv_schema_unref(schema);
  qv_array_unref(batch);
}

/* ======================================================================== */
/* Evaluation on the fixed batch                                             */

/* Evaluate and render the result as "v,v,null,...", or "ERR: message". */
static char *eval_str(const qv_array *batch, const char *text) {
  qv_schema *schema = schema_of(batch);
  qv_expr *e = NULL;
  qv_bound_expr *b = NULL;
  qv_error err;
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_array *out = NULL;
  if (qv_expr_parse(text, -1, &e, &err) != QV_OK || qv_expr_bind(e, schema, &b, &err) != QV_OK ||
      qv_bound_expr_eval(b, batch, &out, &err) != QV_OK) {
    qv_strbuf_printf(&sb, NULL, "ERR: %s", err.message);
  } else {
    for (int64_t i = 0; i < out->length; i++) {
      if (i) qv_strbuf_append_char(&sb, ',', NULL);
      QV_CHECK(qv_format_value_json(out, i, &sb, NULL) == QV_OK);
    }
    QV_CHECK(qv_array_validate(out, QV_VALIDATE_FULL, "result", &err) == QV_OK);
    /* select() agrees with eval() for predicates. */
    if (out->type->id == QV_BOOL) {
      uint8_t bits[8] = {0};
      int64_t count = -1;
      QV_CHECK(qv_bound_expr_select(b, batch, bits, &count, &err) == QV_OK);
      int64_t want = 0;
      for (int64_t i = 0; i < out->length; i++) {
        bool t = qv_array_is_valid(out, i) && qv_bit_get(out->buffers[1]->data, i);
        want += t;
        QV_CHECK(qv_bit_get(bits, i) == t);
      }
      QV_CHECK_EQ_INT(count, want);
    }
  }
  qv_array_unref(out);
  qv_bound_expr_free(b);
  qv_expr_free(e);
  qv_schema_unref(schema);
  char *s = strdup(qv_strbuf_cstr(&sb));
  qv_strbuf_reset(&sb);
  return s;
}

#define CHECK_EVAL(batch, text, want)                                                              \
  do {                                                                                             \
    char *got_ = eval_str(batch, text);                                                            \
    QV_CHECK_EQ_STR(got_, want);                                                                   \
    free(got_);                                                                                    \
  } while (0)

static void test_eval_fixed(void) {
  qv_array *b = fixed_batch();
  /* label: 1,0,1,1,2,1   n: 5,-3,null,7,100,2   f: 1.5,-0.5,NaN,3,0,null
   * flag: T,F,T,null,T,F (bits 101010, valid 111011)
   * text: 'hello world','héllo',null,'','abc','xyzabc'
   * d: apple,banana,apple,null(value),null(index),cherry
   * tags lengths: 2,null,3,0,1,4   s: rows valid except 4; s.x 10..60 */
  CHECK_EVAL(b, "label == 1 and len(text) > 3", "true,false,null,false,false,true");
  CHECK_EVAL(b, "label", "1,0,1,1,2,1");
  CHECK_EVAL(b, "n * 2 + 1", "11,-5,null,15,201,5");
  CHECK_EVAL(b, "n / 2", "2.5,-1.5,null,3.5,50.0,1.0");
  CHECK_EVAL(b, "n % 3", "2,0,null,1,1,2");
  CHECK_EVAL(b, "n % -3", "-1,0,null,-2,-2,-1");
  CHECK_EVAL(b, "-n", "-5,3,null,-7,-100,-2");
  CHECK_EVAL(b, "abs(n) + abs(f)", "6.5,3.5,null,10.0,100.0,null");
  CHECK_EVAL(b, "f > 1", "true,false,false,true,false,null");
  CHECK_EVAL(b, "f != f", "false,false,true,false,false,null");
  CHECK_EVAL(b, "f % 1", "0.5,0.5,\"NaN\",0.0,0.0,null");
  CHECK_EVAL(b, "f * 2", "3.0,-1.0,\"NaN\",6.0,0.0,null");
  CHECK_EVAL(b, "flag", "true,false,true,null,true,false");
  CHECK_EVAL(b, "not flag", "false,true,false,null,false,true");
  CHECK_EVAL(b, "flag and null", "null,false,null,null,null,false");
  CHECK_EVAL(b, "flag or null", "true,null,true,null,true,null");
  CHECK_EVAL(b, "flag and label == 1", "true,false,true,null,false,false");
  CHECK_EVAL(b, "flag or label == 1", "true,false,true,true,true,true");
  CHECK_EVAL(b, "flag == true", "true,false,true,null,true,false");
  CHECK_EVAL(b, "flag < true", "false,true,false,null,false,true");
  CHECK_EVAL(b, "flag is null", "false,false,false,true,false,false");
  CHECK_EVAL(b, "n is not null", "true,true,false,true,true,true");
  CHECK_EVAL(b, "null is null", "true,true,true,true,true,true");
  CHECK_EVAL(b, "null", "null,null,null,null,null,null");
  CHECK_EVAL(b, "label + null", "null,null,null,null,null,null");
  CHECK_EVAL(b, "len(text)", "11,5,null,0,3,6");
  CHECK_EVAL(b, "text", "\"hello world\",\"h\xc3\xa9llo\",null,\"\",\"abc\",\"xyzabc\"");
  CHECK_EVAL(b, "text < 'b'", "false,false,null,true,true,false");
  CHECK_EVAL(b, "text >= 'h'", "true,true,null,false,false,true");
  CHECK_EVAL(b, "starts_with(text, 'h')", "true,true,null,false,false,false");
  CHECK_EVAL(b, "ends_with(text, 'abc')", "false,false,null,false,true,true");
  CHECK_EVAL(b, "contains(text, 'l')", "true,true,null,false,false,false");
  CHECK_EVAL(b, "contains(text, '')", "true,true,null,true,true,true");
  CHECK_EVAL(b, "contains(text, text)", "true,true,null,true,true,true");
  CHECK_EVAL(b, "text in ('abc', '', 'zzz')", "false,false,null,true,true,false");
  CHECK_EVAL(b, "text not in ('abc', null)", "null,null,null,null,false,null");
  CHECK_EVAL(b, "label in (1, 2.5)", "true,false,true,true,false,true");
  CHECK_EVAL(b, "label in (2, 18446744073709551615)", "false,false,false,false,true,false");
  CHECK_EVAL(b, "label not in (0, null)", "null,false,null,null,null,null");
  CHECK_EVAL(b, "flag in (false)", "false,true,false,null,false,true");
  CHECK_EVAL(b, "u > 5", "false,false,true,true,false,true");
  CHECK_EVAL(b, "u == 18446744073709551615", "false,false,true,false,false,false");
  CHECK_EVAL(b, "u > -1 and big < u", "false,false,true,true,true,true");
  CHECK_EVAL(b, "u in (0, 9223372036854775808, -1)", "true,false,false,true,false,false");
  CHECK_EVAL(b, "u", "0,1,18446744073709551615,9223372036854775808,5,7");
  CHECK_EVAL(b, "u / 2 > 1e18", "false,false,true,true,false,false");
  CHECK_EVAL(b, "d", "\"apple\",\"banana\",\"apple\",null,null,\"cherry\"");
  CHECK_EVAL(b, "d == 'apple'", "true,false,true,null,null,false");
  CHECK_EVAL(b, "starts_with(d, 'b') or d is null", "false,true,false,true,true,false");
  CHECK_EVAL(b, "len(d) + label", "6,6,6,null,null,7");
  CHECK_EVAL(b, "d == text", "false,false,null,null,null,false");
  CHECK_EVAL(b, "d in ('cherry', 'banana')", "false,true,false,null,null,true");
  CHECK_EVAL(b, "len(tags)", "2,null,3,0,1,4");
  CHECK_EVAL(b, "tags is null", "false,true,false,false,false,false");
  CHECK_EVAL(b, "s.x", "10,20,30,40,null,60");
  CHECK_EVAL(b, "s is null", "false,false,false,false,true,false");
  CHECK_EVAL(b, "`s.x` + `odd name`", "10,-6,0,14,200,4");
  CHECK_EVAL(b, "ts is null", "true,false,false,false,false,false");
  CHECK_EVAL(b, "1 + 2 * 3 == 7", "true,true,true,true,true,true");
  CHECK_EVAL(b, "'a' < 'b'", "true,true,true,true,true,true");
  /* A literal that is not UTF-8 is binary (and still compares with text). */
  CHECK_EVAL(b, "text < '\\xff'", "true,true,null,true,true,true");
  qv_schema *sch = schema_of(b);
  qv_expr *xe = NULL;
  qv_bound_expr *xb = NULL;
  QV_CHECK(qv_expr_parse("'\\xff\\xfe'", -1, &xe, NULL) == QV_OK);
  QV_CHECK(qv_expr_bind(xe, sch, &xb, NULL) == QV_OK);
  QV_CHECK_EQ_INT(qv_bound_expr_result_type(xb), QV_BINARY);
  qv_bound_expr_free(xb);
  qv_expr_free(xe);
  QV_CHECK(qv_expr_parse("'caf\\u00e9'", -1, &xe, NULL) == QV_OK);
  QV_CHECK(qv_expr_bind(xe, sch, &xb, NULL) == QV_OK);
  QV_CHECK_EQ_INT(qv_bound_expr_result_type(xb), QV_STRING);
  qv_bound_expr_free(xb);
  qv_expr_free(xe);
  qv_schema_unref(sch);
  /* Checked integer arithmetic names the sub-expression and the row. */
  CHECK_EVAL(
      b, "big + 1 > 0",
      "ERR: integer overflow: 9223372036854775807 + 1 does not fit int64 in 'big + 1' at row 0");
  CHECK_EVAL(
      b, "big - 1 > 0",
      "ERR: integer overflow: -9223372036854775808 - 1 does not fit int64 in 'big - 1' at row 3");
  CHECK_EVAL(b, "big * (label + 1)",
             "ERR: integer overflow: 9223372036854775807 * 2 does not fit int64 in 'big * (label + "
             "1)' at row 0");
  CHECK_EVAL(
      b, "-big",
      "ERR: integer overflow: -(-9223372036854775808) does not fit int64 in '-big' at row 3");
  CHECK_EVAL(
      b, "abs(big)",
      "ERR: integer overflow: abs(-9223372036854775808) does not fit int64 in 'abs(big)' at row 3");
  CHECK_EVAL(b, "u + 0",
             "ERR: integer overflow: uint64 value 18446744073709551615 does not fit int64 in 'u + "
             "0' at row 2");
  CHECK_EVAL(b, "10 % (label - 1) > 0", "ERR: division by zero in '10 % (label - 1)' at row 0");
  CHECK_EVAL(b, "big % -1", "0,0,0,0,0,0");
  CHECK_EVAL(b, "big / 0 > 0", "true,true,false,false,true,false");
  /* Only rows that decide the result can fail. */
  CHECK_EVAL(b, "label != 1 and 10 % (label - 1) == 0", "false,true,false,false,true,false");
  CHECK_EVAL(b, "label == 1 or 10 % (label - 1) == 0", "true,true,true,true,true,true");
  CHECK_EVAL(
      b, "big < 0 and big - 1 < 0",
      "ERR: integer overflow: -9223372036854775808 - 1 does not fit int64 in 'big - 1' at row 3");
  CHECK_EVAL(
      b, "big > 2 and big + 1 > 0",
      "ERR: integer overflow: 9223372036854775807 + 1 does not fit int64 in 'big + 1' at row 0");
  CHECK_EVAL(b, "big < 3 and big > -3 and big * big >= 0", "false,true,true,false,true,true");
  CHECK_EVAL(b, "u < 10 and u + 1 > 0", "true,true,false,false,true,true");
  CHECK_EVAL(
      b, "n + (big + 1) > 0",
      "ERR: integer overflow: 9223372036854775807 + 1 does not fit int64 in '(big + 1)' at row 0");
  CHECK_EVAL(b, "ts is null or abs(n * 0 + big) > 0",
             "ERR: integer overflow: abs(-9223372036854775808) does not fit int64 in 'abs(n * 0 + "
             "big)' at row 3");
  qv_array_unref(b);
}

/* Evaluation against a batch of another shape, slices and the dictionary
 * cache. */
static void test_eval_batches(void) {
  qv_array *b = fixed_batch();
  qv_schema *schema = schema_of(b);
  qv_bound_expr *pred = NULL;
  qv_error err;
  QV_REQUIRE(qv_predicate_compile("d == 'apple' or starts_with(d, 'c')", schema, &pred, &err) ==
             QV_OK);
  uint8_t bits[2];
  int64_t count;
  QV_CHECK(qv_bound_expr_select(pred, b, bits, &count, &err) == QV_OK);
  QV_CHECK_EQ_INT(count, 3);
  QV_CHECK_EQ_INT(bits[0], 0x25); /* rows 0, 2, 5 */
  /* Slices of the batch share the dictionary: the cached result is reused
   * with other indices. */
  for (int64_t off = 0; off <= FIX_ROWS; off++) {
    qv_array *s = NULL;
    QV_REQUIRE(qv_array_slice(b, off, FIX_ROWS - off, &s, &err) == QV_OK);
    bits[0] = 0;
    QV_CHECK(qv_bound_expr_select(pred, s, bits, &count, &err) == QV_OK);
    int64_t want = 0;
    for (int64_t i = off; i < FIX_ROWS; i++) want += (0x25 >> i) & 1;
    QV_CHECK_EQ_INT(count, want);
    QV_CHECK_EQ_INT(bits[0], (0x25 >> off) & 0xff);
    qv_array_unref(s);
  }
  /* A batch whose column has another type is refused. */
  qv_type *st = qv_type_new(QV_STRUCT);
  QV_CHECK(qv_type_add_child(st, "label", true, qv_type_new(QV_INT32), NULL, NULL) == QV_OK);
  qv_schema *s2 = qv_schema_new(st);
  qv_bound_expr *lab = NULL;
  QV_REQUIRE(qv_predicate_compile("label == 1", schema, &lab, &err) == QV_OK);
  qv_array *other = qv_array_new(s2->type, 0, 1);
  other->length = 2;
  static const int32_t v[2] = {1, 2};
  other->children[0] = prim(QV_INT32, 2, NULL, v, 4);
  QV_CHECK_EQ_INT(qv_bound_expr_select(lab, other, bits, &count, &err), QV_ETYPE);
  QV_CHECK_EQ_STR(err.message,
                  "batch does not match the expression's schema: column 'label' is "
                  "int32, the expression was bound to int64");
  qv_array_unref(other);
  qv_schema_unref(s2);
  /* select() refuses a non-boolean expression. */
  qv_expr *e = NULL;
  qv_bound_expr *num = NULL;
  QV_REQUIRE(qv_expr_parse("label + 1", -1, &e, &err) == QV_OK);
  QV_REQUIRE(qv_expr_bind(e, schema, &num, &err) == QV_OK);
  QV_CHECK_EQ_INT(qv_bound_expr_result_type(num), QV_INT64);
  QV_CHECK_EQ_INT(qv_bound_expr_select(num, b, bits, &count, &err), QV_ETYPE);
  QV_CHECK_EQ_STR(err.message, "a filter needs a boolean expression, found int64");
  qv_bound_expr_free(num);
  qv_expr_free(e);
  /* A malformed dictionary index is an error, not a read out of bounds. */
  qv_array *bad = fixed_batch();
  bad->children[7]->buffers[1]->data[2] = 9;
  QV_CHECK_EQ_INT(qv_bound_expr_select(pred, bad, bits, &count, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "column 'd': row 2: dictionary index 9 is out of range (the "
                  "dictionary has 4 values)");
  /* So is a string offset past the data. */
  qv_bound_expr *tl = NULL;
  QV_REQUIRE(qv_predicate_compile("len(text) > 1", schema, &tl, &err) == QV_OK);
  int32_t big_off = 1000;
  memcpy(bad->children[6]->buffers[1]->data + 4, &big_off, 4);
  QV_CHECK_EQ_INT(qv_bound_expr_select(tl, bad, bits, &count, &err), QV_EINVAL);
  QV_CHECK_EQ_STR(err.message,
                  "string offsets or views point outside their buffers (malformed "
                  "array) in 'len(text)' at row 0");
  qv_bound_expr_free(tl);
  qv_array_unref(bad);
  qv_bound_expr_free(lab);
  qv_bound_expr_free(pred);
  /* An empty batch. */
  qv_array *empty = NULL;
  QV_REQUIRE(qv_array_slice(b, 3, 0, &empty, &err) == QV_OK);
  CHECK_EVAL(empty, "label == 1 and len(text) > 3 or d == 'x'", "");
  qv_array_unref(empty);
  qv_schema_unref(schema);
  qv_array_unref(b);
}

/* ======================================================================== */
/* Random oracle                                                             */

/* Oracle values. Integers are kept exactly in 128 bits. */
typedef enum { OV_NULL, OV_BOOL, OV_INT, OV_FLT, OV_STR, OV_LIST, OV_OTHER, OV_ERR } ov_kind;
typedef struct ov {
  ov_kind k;
  bool b;
  __int128 i;
  double f;
  const uint8_t *s;
  int64_t n; /* string length, list length */
  bool binary;
} ov;

static ov ov_null(void) {
  ov v = {0};
  v.k = OV_NULL;
  return v;
}
static ov ov_err(void) {
  ov v = {0};
  v.k = OV_ERR;
  return v;
}
static ov ov_bool(bool b) {
  ov v = {0};
  v.k = OV_BOOL;
  v.b = b;
  return v;
}
static ov ov_int(__int128 i) {
  ov v = {0};
  v.k = OV_INT;
  v.i = i;
  return v;
}
static ov ov_flt(double f) {
  ov v = {0};
  v.k = OV_FLT;
  v.f = f;
  return v;
}

/* IEEE binary16 -> double, straight from the bit layout. */
static double half_value(uint16_t h) {
  int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 0) v = ldexp(m, -24);
  else if (e == 31) v = m ? NAN : INFINITY;
  else v = ldexp(1024 + m, e - 25);
  return sign ? -v : v;
}

/* Element at physical slot p of a (validity checked by the caller). */
static ov ov_at(const qv_array *a, int64_t p) {
  if (a->type->id == QV_NA) return ov_null();
  if (a->buffers[0] && !qv_bit_get(a->buffers[0]->data, p)) return ov_null();
  const uint8_t *d = a->n_buffers > 1 && a->buffers[1] ? a->buffers[1]->data : NULL;
  switch (a->type->id) {
    case QV_BOOL: return ov_bool(qv_bit_get(d, p));
    case QV_INT8:
    case QV_INT16:
    case QV_INT32:
    case QV_INT64:
    case QV_UINT8:
    case QV_UINT16:
    case QV_UINT32: return ov_int(orc_get_u(d, a->type->id, p));
    case QV_UINT64: {
      uint64_t u;
      memcpy(&u, d + 8 * p, 8);
      return ov_int((__int128)u);
    }
    case QV_HALF_FLOAT: {
      uint16_t h;
      memcpy(&h, d + 2 * p, 2);
      return ov_flt(half_value(h));
    }
    case QV_FLOAT: {
      float f;
      memcpy(&f, d + 4 * p, 4);
      return ov_flt(f);
    }
    case QV_DOUBLE: {
      double f;
      memcpy(&f, d + 8 * p, 8);
      return ov_flt(f);
    }
    case QV_STRING:
    case QV_BINARY:
    case QV_LARGE_STRING:
    case QV_LARGE_BINARY: {
      int w = (a->type->id == QV_LARGE_STRING || a->type->id == QV_LARGE_BINARY) ? 8 : 4;
      ov v = {0};
      v.k = OV_STR;
      int64_t b0 = orc_get(d, w, p), e0 = orc_get(d, w, p + 1);
      v.s = a->buffers[2]->data + b0;
      v.n = e0 - b0;
      v.binary = a->type->id == QV_BINARY || a->type->id == QV_LARGE_BINARY;
      return v;
    }
    case QV_STRING_VIEW:
    case QV_BINARY_VIEW: {
      ov v = {0};
      v.k = OV_STR;
      v.binary = a->type->id == QV_BINARY_VIEW;
      const uint8_t *view = d + 16 * p;
      int32_t n, bi, off;
      memcpy(&n, view, 4);
      v.n = n;
      if (n <= 12) {
        v.s = view + 4;
      } else {
        memcpy(&bi, view + 8, 4);
        memcpy(&off, view + 12, 4);
        v.s = a->buffers[2 + bi]->data + off;
      }
      return v;
    }
    case QV_DICTIONARY: {
      int64_t idx = orc_get_u(d, a->type->index_type->id, p);
      return ov_at(a->dictionary, a->dictionary->offset + idx);
    }
    case QV_LIST:
    case QV_LARGE_LIST: {
      int w = a->type->id == QV_LARGE_LIST ? 8 : 4;
      ov v = {0};
      v.k = OV_LIST;
      v.n = orc_get(d, w, p + 1) - orc_get(d, w, p);
      return v;
    }
    case QV_FIXED_SIZE_LIST: {
      ov v = {0};
      v.k = OV_LIST;
      v.n = a->type->list_size;
      return v;
    }
    default: {
      ov v = {0};
      v.k = OV_OTHER;
      return v;
    }
  }
}

/* Column `path` of logical row `row` of the batch. */
static ov ov_column(const qv_array *batch, const int *path, int depth, int64_t row) {
  const qv_array *a = batch;
  int64_t l = row;
  for (int d = 0; d < depth; d++) {
    int64_t p = a->offset + l;
    if (a->buffers && a->n_buffers > 0 && a->buffers[0] && !qv_bit_get(a->buffers[0]->data, p))
      return ov_null();
    a = a->children[path[d]];
    l = p;
  }
  return ov_at(a, a->offset + l);
}

/* The random schema. Each column: name (as written in expressions), path,
 * and what the generator may use it for. */
typedef enum { G_BOOL, G_NUM, G_STR, G_LIST, G_OTHER } gkind;
typedef struct gcol {
  const char *text;
  int path[3];
  int depth;
  gkind kind;
} gcol;

static qv_type *rand_schema_type(void) {
  qv_type *t = qv_type_new(QV_STRUCT);
#define ADD(name, type) QV_CHECK(qv_type_add_child(t, name, true, type, NULL, NULL) == QV_OK)
  ADD("i8", orc_t(QV_INT8));                              /* 0 */
  ADD("i16", orc_t(QV_INT16));                            /* 1 */
  ADD("i32", orc_t(QV_INT32));                            /* 2 */
  ADD("i64", orc_t(QV_INT64));                            /* 3 */
  ADD("u8", orc_t(QV_UINT8));                             /* 4 */
  ADD("u32", orc_t(QV_UINT32));                           /* 5 */
  ADD("u64", orc_t(QV_UINT64));                           /* 6 */
  ADD("f16", orc_t(QV_HALF_FLOAT));                       /* 7 */
  ADD("f32", orc_t(QV_FLOAT));                            /* 8 */
  ADD("f64", orc_t(QV_DOUBLE));                           /* 9 */
  ADD("b", orc_t(QV_BOOL));                               /* 10 */
  ADD("s", orc_t(QV_STRING));                             /* 11 */
  ADD("ls", orc_t(QV_LARGE_STRING));                      /* 12 */
  ADD("sv", orc_t(QV_STRING_VIEW));                       /* 13 */
  ADD("bin", orc_t(QV_BINARY));                           /* 14 */
  ADD("ds", orc_dict(QV_INT8, orc_t(QV_STRING)));         /* 15 */
  ADD("dl", orc_dict(QV_UINT32, orc_t(QV_LARGE_STRING))); /* 16 */
  ADD("di", orc_dict(QV_INT16, orc_t(QV_INT64)));         /* 17 */
  ADD("df", orc_dict(QV_UINT8, orc_t(QV_DOUBLE)));        /* 18 */
  ADD("db", orc_dict(QV_INT32, orc_t(QV_BOOL)));          /* 19 */
  ADD("l", orc_list(QV_LIST, orc_t(QV_INT32)));           /* 20 */
  ADD("ll", orc_list(QV_LARGE_LIST, orc_t(QV_INT8)));     /* 21 */
  ADD("fsl", orc_fsl(orc_t(QV_INT16), 3));                /* 22 */
  qv_type *z = orc_nested(QV_STRUCT, NULL, 1, orc_t(QV_INT64));
  ADD("st", orc_nested(QV_STRUCT, NULL, 3, orc_t(QV_INT32), orc_t(QV_STRING), z)); /* 23 */
  ADD("odd name", orc_t(QV_INT32));                                                /* 24 */
  ADD("n", orc_t(QV_NA));                                                          /* 25 */
  ADD("ts", qv_type_timestamp(QV_MICRO, NULL));                                    /* 26 */
#undef ADD
  return t;
}

static const gcol GCOLS[] = {
    {"i8", {0}, 1, G_NUM},          {"i16", {1}, 1, G_NUM},
    {"i32", {2}, 1, G_NUM},         {"i64", {3}, 1, G_NUM},
    {"u8", {4}, 1, G_NUM},          {"u32", {5}, 1, G_NUM},
    {"u64", {6}, 1, G_NUM},         {"f16", {7}, 1, G_NUM},
    {"f32", {8}, 1, G_NUM},         {"f64", {9}, 1, G_NUM},
    {"b", {10}, 1, G_BOOL},         {"s", {11}, 1, G_STR},
    {"ls", {12}, 1, G_STR},         {"sv", {13}, 1, G_STR},
    {"bin", {14}, 1, G_STR},        {"ds", {15}, 1, G_STR},
    {"dl", {16}, 1, G_STR},         {"di", {17}, 1, G_NUM},
    {"df", {18}, 1, G_NUM},         {"db", {19}, 1, G_BOOL},
    {"l", {20}, 1, G_LIST},         {"ll", {21}, 1, G_LIST},
    {"fsl", {22}, 1, G_LIST},       {"st.c0", {23, 0}, 2, G_NUM},
    {"st.c1", {23, 1}, 2, G_STR},   {"st.c2.c0", {23, 2, 0}, 3, G_NUM},
    {"`odd name`", {24}, 1, G_NUM}, {"n", {25}, 1, G_OTHER},
    {"ts", {26}, 1, G_OTHER},       {"st", {23}, 1, G_OTHER},
};
#define N_GCOLS ((int)(sizeof GCOLS / sizeof GCOLS[0]))

/* Make values small so that arithmetic mostly stays in range, with a few
 * extremes; map string bytes to a three-letter alphabet (plus a UTF-8
 * continuation byte now and then) so that comparisons and searches hit. */
static uint8_t small_byte(uint8_t c) {
  if (c == 'a' || c == 'b' || c == 'c' || c == 0xA9) return c;
  return orc_int(10) == 0 ? 0xA9 : (uint8_t)("abc"[c % 3]);
}

static void tame(qv_array *a) {
  if (!a) return;
  const qv_type *t = a->type;
  qv_buffer *vb = a->n_buffers > 1 ? a->buffers[1] : NULL;
  switch (t->id) {
    case QV_INT8:
    case QV_INT16:
    case QV_INT32:
    case QV_INT64:
    case QV_UINT8:
    case QV_UINT16:
    case QV_UINT32:
    case QV_UINT64: {
      int w = qv_type_byte_width(t);
      bool sign = qv_type_id_is_signed_integer(t->id);
      for (int64_t i = 0; i < vb->size / w; i++) {
        int64_t v = sign ? orc_int(41) - 20 : orc_int(41);
        if (w == 8 && orc_int(30) == 0) {
          static const int64_t ext[] = {INT64_MAX, INT64_MIN, (int64_t)1 << 62, -((int64_t)1 << 62),
                                        -1};
          v = ext[orc_int(5)];
        }
        orc_put(vb->data, w, i, v);
      }
      break;
    }
    case QV_HALF_FLOAT: {
      static const uint16_t hs[] = {0x3C00, 0xC000, 0x0000, 0x8000, 0x3800,
                                    0x7C00, 0x7E00, 0x4500, 0x5640};
      for (int64_t i = 0; i < vb->size / 2; i++) memcpy(vb->data + 2 * i, &hs[orc_int(9)], 2);
      break;
    }
    case QV_FLOAT:
    case QV_DOUBLE: {
      static const double fs[] = {-2.5, -1, 0, -0.0, 0.5, 1, 3, 7.25, NAN, INFINITY, 1e300, 20, -7};
      for (int64_t i = 0; i < vb->size / qv_type_byte_width(t); i++) {
        double f = fs[orc_int(13)];
        if (t->id == QV_FLOAT) {
          float g = (float)f;
          memcpy(vb->data + 4 * i, &g, 4);
        } else {
          memcpy(vb->data + 8 * i, &f, 8);
        }
      }
      break;
    }
    case QV_STRING:
    case QV_BINARY:
    case QV_LARGE_STRING:
    case QV_LARGE_BINARY:
      for (int64_t i = 0; i < a->buffers[2]->size; i++)
        a->buffers[2]->data[i] = small_byte(a->buffers[2]->data[i]);
      break;
    case QV_STRING_VIEW:
    case QV_BINARY_VIEW:
      for (int64_t i = 0; i < vb->size / 16; i++) {
        uint8_t *v = vb->data + 16 * i;
        int32_t n;
        memcpy(&n, v, 4);
        if (n <= 12) {
          for (int j = 0; j < n; j++) v[4 + j] = small_byte(v[4 + j]);
        } else {
          int32_t bi, off;
          memcpy(&bi, v + 8, 4);
          memcpy(&off, v + 12, 4);
          uint8_t *p = a->buffers[2 + bi]->data + off;
          for (int j = 0; j < n; j++) p[j] = small_byte(p[j]);
          memcpy(v + 4, p, 4);
        }
      }
      break;
    default: break;
  }
  for (int32_t k = 0; k < a->n_children; k++) tame(a->children[k]);
  tame(a->dictionary);
}

/* ---- the oracle's expression tree ------------------------------------- */

typedef enum {
  O_COL,
  O_LIT,
  O_NOT,
  O_AND,
  O_OR,
  O_CMP,
  O_ARITH,
  O_NEG,
  O_ABS,
  O_ISNULL,
  O_IN,
  O_LEN,
  O_STRFN
} okind;

typedef struct onode {
  okind k;
  int op; /* CMP: 0..5 (== != < <= > >=); ARITH: + - * / %; STRFN 0..2 */
  bool neg;
  int col;
  ov lit;
  char litbuf[8];
  struct onode *a, *b;
  int n_list;
  ov list[6];
  char listbuf[6][8];
} onode;

typedef struct gen {
  qv_strbuf text;
  onode nodes[512];
  int n_nodes;
} gen;

static onode *onew(gen *g, okind k) {
  if (g->n_nodes == 512) abort();
  onode *n = &g->nodes[g->n_nodes++];
  memset(n, 0, sizeof *n);
  n->k = k;
  return n;
}

#define EMIT(...) qv_strbuf_printf(&g->text, NULL, __VA_ARGS__)

static int pick_col(gkind k) {
  for (;;) {
    int c = (int)orc_int(N_GCOLS);
    if (GCOLS[c].kind == k) return c;
  }
}

static void gen_strlit(gen *g, ov *v, char *buf) {
  static const char *const pool[] = {"", "a", "b", "ab", "ba", "abc", "c", "cc", "\xa9"};
  int k = (int)orc_int(9);
  strcpy(buf, pool[k]);
  v->k = OV_STR;
  v->s = (const uint8_t *)buf;
  v->n = (int64_t)strlen(buf);
  if (k == 8) EMIT("'\\xa9'");
  else EMIT("\"%s\"", buf);
}

static void gen_numlit(gen *g, ov *v, bool allow_float) {
  int r = (int)orc_int(allow_float ? 12 : 10);
  if (r < 7) {
    int64_t x = orc_int(45) - 20;
    *v = ov_int(x);
    EMIT("%" PRId64, x);
  } else if (r == 7) {
    *v = ov_int(INT64_MAX);
    EMIT("9223372036854775807");
  } else if (r == 8) {
    *v = ov_int(INT64_MIN);
    EMIT("-9223372036854775808");
  } else if (r == 9) {
    *v = ov_int((__int128)UINT64_MAX);
    EMIT("18446744073709551615");
  } else {
    static const double fs[] = {0.5, -2.5, 3.0, 1e300, 7.25, -0.0};
    static const char *const ft[] = {"0.5", "-2.5", "3.0", "1e300", "7.25", "-0.0"};
    int k = (int)orc_int(6);
    *v = ov_flt(fs[k]);
    EMIT("%s", ft[k]);
  }
}

static onode *gen_bool(gen *g, int depth);
static onode *gen_num(gen *g, int depth);

static onode *gen_str(gen *g, int depth) {
  (void)depth;
  if (orc_int(4) == 0) {
    onode *n = onew(g, O_LIT);
    gen_strlit(g, &n->lit, n->litbuf);
    return n;
  }
  onode *n = onew(g, O_COL);
  n->col = pick_col(G_STR);
  EMIT("%s", GCOLS[n->col].text);
  return n;
}

static onode *gen_num_any(gen *g, int depth, bool no_lit);
static onode *gen_num(gen *g, int depth) { return gen_num_any(g, depth, false); }

/* A number expression; no_lit: not a bare literal (minus of a literal is
 * folded into the literal by the parser, with its own range rules). */
static onode *gen_num_any(gen *g, int depth, bool no_lit) {
  int r = (int)orc_int(depth <= 0 ? 3 : 9);
  if (r == 0 && no_lit) r = 1;
  if (r == 0) {
    onode *n = onew(g, O_LIT);
    gen_numlit(g, &n->lit, true);
    return n;
  }
  if (r <= 2) {
    onode *n = onew(g, O_COL);
    n->col = pick_col(G_NUM);
    EMIT("%s", GCOLS[n->col].text);
    return n;
  }
  if (r <= 5) {
    onode *n = onew(g, O_ARITH);
    n->op = (int)orc_int(5);
    EMIT("(");
    n->a = gen_num(g, depth - 1);
    EMIT(" %s ", (const char *[]){"+", "-", "*", "/", "%"}[n->op]);
    n->b = gen_num(g, depth - 1);
    EMIT(")");
    return n;
  }
  if (r == 6) {
    onode *n = onew(g, orc_int(2) ? O_NEG : O_ABS);
    EMIT(n->k == O_NEG ? "(-(" : "abs(");
    n->a = gen_num_any(g, depth - 1, n->k == O_NEG);
    EMIT(n->k == O_NEG ? "))" : ")");
    return n;
  }
  onode *n = onew(g, O_LEN);
  EMIT("len(");
  if (orc_int(3) == 0) {
    onode *c = onew(g, O_COL);
    c->col = pick_col(G_LIST);
    EMIT("%s", GCOLS[c->col].text);
    n->a = c;
  } else {
    n->a = gen_str(g, depth - 1);
  }
  EMIT(")");
  return n;
}

static onode *gen_bool(gen *g, int depth) {
  int r = (int)orc_int(depth <= 0 ? 3 : 14);
  static const char *const cmp_ops[] = {"==", "!=", "<", "<=", ">", ">="};
  if (r == 0) {
    onode *n = onew(g, O_COL);
    n->col = pick_col(G_BOOL);
    EMIT("%s", GCOLS[n->col].text);
    return n;
  }
  if (r <= 2) { /* numeric comparison */
    onode *n = onew(g, O_CMP);
    n->op = (int)orc_int(6);
    EMIT("(");
    n->a = gen_num(g, depth - 1);
    EMIT(" %s ", cmp_ops[n->op]);
    n->b = gen_num(g, depth - 1);
    EMIT(")");
    return n;
  }
  if (r == 3) { /* string comparison */
    onode *n = onew(g, O_CMP);
    n->op = (int)orc_int(6);
    EMIT("(");
    n->a = gen_str(g, depth - 1);
    EMIT(" %s ", cmp_ops[n->op]);
    n->b = gen_str(g, depth - 1);
    EMIT(")");
    return n;
  }
  if (r <= 6) {
    onode *n = onew(g, r == 6 ? O_OR : O_AND);
    EMIT("(");
    n->a = gen_bool(g, depth - 1);
    EMIT(r == 6 ? (orc_int(2) ? " or " : " || ") : (orc_int(2) ? " and " : " && "));
    if (orc_int(8) == 0) {
      n->b = onew(g, O_LIT);
      n->b->lit = orc_int(3) ? ov_null() : ov_bool(orc_int(2));
      EMIT("%s", n->b->lit.k == OV_NULL ? "null" : n->b->lit.b ? "true" : "false");
    } else {
      n->b = gen_bool(g, depth - 1);
    }
    EMIT(")");
    return n;
  }
  if (r == 7) {
    onode *n = onew(g, O_NOT);
    EMIT(orc_int(2) ? "(not " : "(!");
    n->a = gen_bool(g, depth - 1);
    EMIT(")");
    return n;
  }
  if (r == 8) {
    onode *n = onew(g, O_ISNULL);
    n->neg = orc_int(2);
    EMIT("(");
    int w = (int)orc_int(4);
    if (w == 0) {
      onode *c = onew(g, O_COL);
      c->col = (int)orc_int(N_GCOLS);
      EMIT("%s", GCOLS[c->col].text);
      n->a = c;
    } else if (w == 1) {
      n->a = gen_str(g, depth - 1);
    } else if (w == 2) {
      n->a = gen_bool(g, depth - 1);
    } else {
      n->a = gen_num(g, depth - 1);
    }
    EMIT(n->neg ? " is not null)" : " is null)");
    return n;
  }
  if (r <= 10) { /* in */
    onode *n = onew(g, O_IN);
    n->neg = orc_int(3) == 0;
    bool str = r == 10;
    EMIT("(");
    n->a = str ? gen_str(g, depth - 1) : gen_num(g, depth - 1);
    EMIT(n->neg ? " not in (" : " in (");
    n->n_list = 1 + (int)orc_int(5);
    for (int k = 0; k < n->n_list; k++) {
      if (k) EMIT(", ");
      if (orc_int(8) == 0) {
        n->list[k] = ov_null();
        EMIT("null");
      } else if (str) {
        gen_strlit(g, &n->list[k], n->listbuf[k]);
      } else {
        gen_numlit(g, &n->list[k], true);
      }
    }
    EMIT("))");
    return n;
  }
  if (r == 11) { /* bool comparison */
    onode *n = onew(g, O_CMP);
    n->op = (int)orc_int(6);
    EMIT("(");
    n->a = gen_bool(g, depth - 1);
    EMIT(" %s ", cmp_ops[n->op]);
    n->b = gen_bool(g, depth - 1);
    EMIT(")");
    return n;
  }
  onode *n = onew(g, O_STRFN);
  n->op = (int)orc_int(3);
  EMIT("%s(", (const char *[]){"starts_with", "ends_with", "contains"}[n->op]);
  n->a = gen_str(g, depth - 1);
  EMIT(", ");
  n->b = gen_str(g, depth - 1);
  EMIT(")");
  return n;
}

/* ---- the oracle's semantics, one row at a time ------------------------ */

static bool fits_i64(__int128 v) { return v >= INT64_MIN && v <= INT64_MAX; }

static double to_f(const ov *v) { return v->k == OV_FLT ? v->f : (double)v->i; }

static int bytes_order(const ov *a, const ov *b) {
  int64_t m = a->n < b->n ? a->n : b->n;
  for (int64_t k = 0; k < m; k++)
    if (a->s[k] != b->s[k]) return a->s[k] < b->s[k] ? -1 : 1;
  return (a->n > b->n) - (a->n < b->n);
}

static bool apply_cmp(int op, int c) {
  switch (op) {
    case 0: return c == 0;
    case 1: return c != 0;
    case 2: return c < 0;
    case 3: return c <= 0;
    case 4: return c > 0;
    default: return c >= 0;
  }
}

/* Compare two non-null values: 0/1 result, or -1 for "false because NaN". */
static bool ov_compare(int op, const ov *a, const ov *b) {
  if (a->k == OV_STR) return apply_cmp(op, bytes_order(a, b));
  if (a->k == OV_BOOL) return apply_cmp(op, (int)a->b - (int)b->b);
  if (a->k == OV_INT && b->k == OV_INT) return apply_cmp(op, (a->i > b->i) - (a->i < b->i));
  double x = to_f(a), y = to_f(b);
  switch (op) {
    case 0: return x == y;
    case 1: return x != y;
    case 2: return x < y;
    case 3: return x <= y;
    case 4: return x > y;
    default: return x >= y;
  }
}

static bool naive_find(const ov *s, const ov *p) {
  if (p->n > s->n) return false;
  for (int64_t k = 0; k + p->n <= s->n; k++)
    if (memcmp(s->s + k, p->s, (size_t)p->n) == 0) return true;
  return false;
}

static ov oeval(const onode *n, const qv_array *batch, int64_t row) {
  switch (n->k) {
    case O_COL: {
      const gcol *c = &GCOLS[n->col];
      return ov_column(batch, c->path, c->depth, row);
    }
    case O_LIT: return n->lit;
    case O_NOT: {
      ov a = oeval(n->a, batch, row);
      if (a.k != OV_BOOL) return a;
      return ov_bool(!a.b);
    }
    case O_AND:
    case O_OR: {
      bool is_and = n->k == O_AND;
      ov a = oeval(n->a, batch, row);
      if (a.k == OV_ERR) return a;
      if (a.k == OV_BOOL && a.b != is_and) return a; /* decided */
      ov b = oeval(n->b, batch, row);
      if (b.k == OV_ERR) return b;
      if (b.k == OV_BOOL && b.b != is_and) return b;
      if (a.k == OV_NULL || b.k == OV_NULL) return ov_null();
      return ov_bool(is_and);
    }
    case O_CMP: {
      ov a = oeval(n->a, batch, row), b = oeval(n->b, batch, row);
      if (a.k == OV_ERR) return a;
      if (b.k == OV_ERR) return b;
      if (a.k == OV_NULL || b.k == OV_NULL) return ov_null();
      return ov_bool(ov_compare(n->op, &a, &b));
    }
    case O_ARITH: {
      ov a = oeval(n->a, batch, row), b = oeval(n->b, batch, row);
      if (a.k == OV_ERR) return a;
      if (b.k == OV_ERR) return b;
      if (a.k == OV_NULL || b.k == OV_NULL) return ov_null();
      if (n->op == 3 || a.k == OV_FLT || b.k == OV_FLT) {
        double x = to_f(&a), y = to_f(&b);
        switch (n->op) {
          case 0: return ov_flt(x + y);
          case 1: return ov_flt(x - y);
          case 2: return ov_flt(x * y);
          case 3: return ov_flt(x / y);
          default: {
            double r = fmod(x, y);
            if (r != 0) {
              if ((r < 0) != (y < 0)) r += y;
            } else {
              r = copysign(0.0, y);
            }
            return ov_flt(r);
          }
        }
      }
      if (!fits_i64(a.i) || !fits_i64(b.i)) return ov_err();
      __int128 x = a.i, y = b.i, r;
      switch (n->op) {
        case 0: r = x + y; break;
        case 1: r = x - y; break;
        case 2: r = x * y; break;
        default:
          if (y == 0) return ov_err();
          /* floor modulo */
          r = y > 0 ? ((x % y) + y) % y : -(((-x) % (-y) + (-y)) % (-y));
          break;
      }
      if (!fits_i64(r)) return ov_err();
      return ov_int(r);
    }
    case O_NEG:
    case O_ABS: {
      ov a = oeval(n->a, batch, row);
      if (a.k == OV_ERR || a.k == OV_NULL) return a;
      if (a.k == OV_FLT) return ov_flt(n->k == O_NEG ? -a.f : fabs(a.f));
      if (!fits_i64(a.i)) return ov_err();
      __int128 r = n->k == O_NEG ? -a.i : (a.i < 0 ? -a.i : a.i);
      if (!fits_i64(r)) return ov_err();
      return ov_int(r);
    }
    case O_ISNULL: {
      ov a = oeval(n->a, batch, row);
      if (a.k == OV_ERR) return a;
      return ov_bool((a.k == OV_NULL) != n->neg);
    }
    case O_IN: {
      ov a = oeval(n->a, batch, row);
      if (a.k == OV_ERR || a.k == OV_NULL) return a;
      bool has_null = false;
      for (int k = 0; k < n->n_list; k++) {
        if (n->list[k].k == OV_NULL) {
          has_null = true;
          continue;
        }
        if (ov_compare(0, &a, &n->list[k])) return ov_bool(!n->neg);
      }
      return has_null ? ov_null() : ov_bool(n->neg);
    }
    case O_LEN: {
      ov a = oeval(n->a, batch, row);
      if (a.k == OV_ERR || a.k == OV_NULL) return a;
      if (a.k == OV_LIST) return ov_int(a.n);
      int64_t len = 0;
      for (int64_t k = 0; k < a.n; k++)
        if (a.binary || (a.s[k] & 0xC0) != 0x80) len++;
      return ov_int(len);
    }
    case O_STRFN: {
      ov a = oeval(n->a, batch, row), b = oeval(n->b, batch, row);
      if (a.k == OV_ERR) return a;
      if (b.k == OV_ERR) return b;
      if (a.k == OV_NULL || b.k == OV_NULL) return ov_null();
      if (b.n > a.n) return ov_bool(false);
      if (n->op == 0) return ov_bool(memcmp(a.s, b.s, (size_t)b.n) == 0);
      if (n->op == 1) return ov_bool(memcmp(a.s + a.n - b.n, b.s, (size_t)b.n) == 0);
      return ov_bool(naive_find(&a, &b));
    }
  }
  return ov_err();
}

/* Compare the library's result for one row with the oracle's. */
static bool row_matches(const qv_array *out, int64_t i, const ov *want) {
  bool valid = qv_array_is_valid(out, i);
  if (want->k == OV_NULL) return !valid;
  if (!valid) return false;
  const uint8_t *d = out->buffers[1]->data;
  switch (out->type->id) {
    case QV_BOOL: return want->k == OV_BOOL && qv_bit_get(d, i) == want->b;
    case QV_INT64: {
      int64_t v;
      memcpy(&v, d + 8 * i, 8);
      return want->k == OV_INT && want->i == v;
    }
    case QV_UINT64: {
      uint64_t v;
      memcpy(&v, d + 8 * i, 8);
      return want->k == OV_INT && want->i == (__int128)v;
    }
    case QV_DOUBLE: {
      double v;
      memcpy(&v, d + 8 * i, 8);
      double w = to_f(want);
      if (isnan(w)) return isnan(v);
      return memcmp(&v, &w, 8) == 0;
    }
    default: {
      int32_t b, e;
      memcpy(&b, d + 4 * i, 4);
      memcpy(&e, d + 4 * i + 4, 4);
      return want->k == OV_STR && want->n == e - b &&
             memcmp(out->buffers[2]->data + b, want->s, (size_t)want->n) == 0;
    }
  }
}

static void test_random_oracle(void) {
  qv_type *st = rand_schema_type();
  qv_schema *schema = qv_schema_new(qv_type_ref(st));
  int exprs = 0, evaluated = 0, errors = 0, failures = 0;
  int64_t true_rows = 0;
  for (int iter = 0; iter < 600 && failures < 5; iter++) {
    gen *g = calloc(1, sizeof *g);
    qv_strbuf_init(&g->text);
    onode *root =
        iter % 4 == 3 ? gen_num(g, 1 + (int)orc_int(4)) : gen_bool(g, 1 + (int)orc_int(5));
    const char *text = qv_strbuf_cstr(&g->text);
    qv_expr *e = NULL;
    qv_bound_expr *b = NULL;
    qv_error err;
    if (qv_expr_parse(text, -1, &e, &err) != QV_OK || qv_expr_bind(e, schema, &b, &err) != QV_OK) {
      fprintf(stderr, "random expression did not bind: %s\n  %s\n", text, err.message);
      failures++;
      QV_CHECK(false);
      qv_expr_free(e);
      qv_strbuf_reset(&g->text);
      free(g);
      continue;
    }
    exprs++;
    /* Several batches per bound expression: working memory is reused, and
     * slices of one batch share its dictionaries (the cache). */
    qv_array *base = orc_gen_sliced(st, orc_int(80));
    tame(base);
    for (int rep = 0; rep < 4 && failures < 5; rep++) {
      qv_array *batch = NULL;
      if (rep == 0) {
        batch = qv_array_ref(base);
      } else if (rep == 3) {
        batch = orc_gen_sliced(st, orc_int(300));
        tame(batch);
      } else {
        int64_t off = orc_int(base->length + 1);
        QV_CHECK(qv_array_slice(base, off, orc_int(base->length - off + 1), &batch, NULL) == QV_OK);
      }
      int64_t rows = batch->length;
      /* The oracle: the whole batch fails if any row fails. */
      ov *want = malloc(sizeof(ov) * (size_t)(rows + 1));
      bool want_err = false;
      for (int64_t i = 0; i < rows; i++) {
        want[i] = oeval(root, batch, i);
        if (want[i].k == OV_ERR) want_err = true;
      }
      qv_array *out = NULL;
      qv_status st_eval = qv_bound_expr_eval(b, batch, &out, &err);
      evaluated++;
      if (want_err) {
        errors++;
        if (st_eval != QV_ERANGE) {
          fprintf(stderr, "expected an evaluation error for %s (rows %" PRId64 "), got %d\n", text,
                  rows, (int)st_eval);
          failures++;
          QV_CHECK(false);
        }
      } else if (st_eval != QV_OK) {
        fprintf(stderr, "evaluation failed for %s: %s\n", text, err.message);
        failures++;
        QV_CHECK(false);
      } else {
        QV_CHECK_EQ_INT(out->length, rows);
        for (int64_t i = 0; i < rows; i++) {
          if (!row_matches(out, i, &want[i])) {
            orc_sb s = {0};
            orc_render(batch, i, &s);
            fprintf(stderr, "row %" PRId64 " differs for %s\n  batch row: %s\n  oracle kind %d\n",
                    i, text, s.p, (int)want[i].k);
            free(s.p);
            failures++;
            QV_CHECK(false);
            break;
          }
        }
        if (out->type->id == QV_BOOL) {
          uint8_t *bits = calloc(1, (size_t)(rows + 8) / 8 + 1);
          int64_t count = -1;
          QV_CHECK(qv_bound_expr_select(b, batch, bits, &count, &err) == QV_OK);
          int64_t n_true = 0;
          for (int64_t i = 0; i < rows; i++) {
            bool t = want[i].k == OV_BOOL && want[i].b;
            n_true += t;
            if (qv_bit_get(bits, i) != t) {
              fprintf(stderr, "select differs at row %" PRId64 " for %s\n", i, text);
              failures++;
              QV_CHECK(false);
              break;
            }
          }
          QV_CHECK_EQ_INT(count, n_true);
          true_rows += n_true;
          free(bits);
        }
      }
      qv_array_unref(out);
      free(want);
      qv_array_unref(batch);
    }
    qv_array_unref(base);
    qv_bound_expr_free(b);
    qv_expr_free(e);
    qv_strbuf_reset(&g->text);
    free(g);
  }
  fprintf(stderr,
          "random oracle: %d expressions, %d evaluations (%d expected errors), %" PRId64
          " true rows\n",
          exprs, evaluated, errors, true_rows);
  QV_CHECK(exprs >= 600);
  QV_CHECK(errors < evaluated / 3);
  qv_schema_unref(schema);
  qv_type_unref(st);
}

int main(void) {
  QV_RUN(test_precedence);
  QV_RUN(test_constructs);
  QV_RUN(test_parse_errors);
  QV_RUN(test_long_lines_and_limits);
  QV_RUN(test_bind_errors);
  QV_RUN(test_eval_fixed);
  QV_RUN(test_eval_batches);
  QV_RUN(test_random_oracle);
  return QV_TEST_END();
}
