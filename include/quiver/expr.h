/*
 * quiver/expr.h — a small expression language over the columns of a record
 * batch: comparisons, and/or/not, arithmetic, `is null`, `in (...)`, and
 * functions (len, starts_with, ends_with, contains, abs, sqrt, exp, ln/log,
 * log10, log2, floor, ceil, round, pow, lower, upper, substr, coalesce, if,
 * cast). It is what
 * `quiver filter --where='label == 1 and len(text) > 100'` and the dataset
 * layer's filter evaluate. The language (grammar, precedence, types, null
 * semantics, errors) is specified in docs/expressions.md.
 *
 * Three steps, each with its own object:
 *   1. qv_expr_parse: text -> qv_expr (syntax only; no schema needed).
 *   2. qv_expr_bind: qv_expr + qv_schema -> qv_bound_expr (columns
 *      resolved, types checked, result type known).
 *   3. qv_bound_expr_eval / qv_bound_expr_select: evaluate a bound
 *      expression over one record batch at a time, vectorised (no per-row
 *      allocation; working memory is kept in the bound expression and
 *      reused from batch to batch).
 * Errors are values: parse and bind errors name the offending token and
 * show it with a caret under a copy of the text; evaluation errors (integer
 * overflow, division by zero) name the sub-expression and the row.
 *
 * Compute layer; depends on core only.
 */
#ifndef QUIVER_EXPR_H
#define QUIVER_EXPR_H

#include "quiver/array.h"
#include "quiver/core.h"
#include "quiver/print.h"
#include "quiver/type.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Longest expression text accepted, in bytes. */
#define QV_EXPR_MAX_LENGTH 65536
/** Deepest expression tree accepted (operators, calls and parentheses
 *  nested inside one another; a chain `a + b + c` is two levels). */
#define QV_EXPR_MAX_DEPTH 128

/** A parsed expression (syntax tree plus a copy of its text). */
typedef struct qv_expr qv_expr;

/**
 * Parse `text` (`len` bytes; pass -1 for a NUL-terminated string).
 * On success *out owns a new expression, freed with qv_expr_free. On a
 * syntax error returns QV_EINVAL with a message saying what was expected,
 * where (line/column), and the offending line with a caret, e.g.
 *   expected an expression after 'and' at column 15 (end of input):
 *     label == 1 and
 *                   ^
 * Texts longer than QV_EXPR_MAX_LENGTH or nested deeper than
 * QV_EXPR_MAX_DEPTH are refused (QV_EINVAL) the same way.
 */
QV_API qv_status qv_expr_parse(const char *text, int64_t len, qv_expr **out,
                               qv_error *err) QV_NODISCARD;

/** Free a parsed expression. NULL-safe. */
QV_API void qv_expr_free(qv_expr *e);

/**
 * Append the canonical rendering of the expression to `out`: every
 * operator application fully parenthesised, keywords in lower case,
 * literals normalised, names backquoted when they need it, e.g.
 * "((label == 1) and (len(text) > 100))". Parsing the rendering gives the
 * same tree again.
 */
QV_API qv_status qv_expr_to_string(const qv_expr *e, qv_strbuf *out, qv_error *err) QV_NODISCARD;

/** An expression bound to a schema, ready to evaluate. */
typedef struct qv_bound_expr qv_bound_expr;

/**
 * Resolve the columns of `e` in `schema` and type-check it. `e` and
 * `schema` may be freed afterwards (the bound expression keeps what it
 * needs). On a type error returns QV_ETYPE; on an unknown column QV_EINVAL;
 * both messages point at the offending part of the text with a caret.
 * The bound expression keeps working memory for evaluation, so one bound
 * expression must be used by one thread at a time (bind once per thread).
 * Free with qv_bound_expr_free.
 */
QV_API qv_status qv_expr_bind(const qv_expr *e, const qv_schema *schema, qv_bound_expr **out,
                              qv_error *err) QV_NODISCARD;

/**
 * Parse and bind in one step, and check that the result is boolean (what
 * a filter needs). Non-boolean results give QV_ETYPE.
 */
QV_API qv_status qv_predicate_compile(const char *text, const qv_schema *schema,
                                      qv_bound_expr **out, qv_error *err) QV_NODISCARD;

/** Free a bound expression. NULL-safe. */
QV_API void qv_bound_expr_free(qv_bound_expr *b);

/**
 * Type id of the expression's result: QV_BOOL, QV_INT64, QV_UINT64 (a bare
 * uint64 column), QV_DOUBLE, QV_STRING, QV_BINARY (a bare string or binary
 * column or literal) or QV_NA (the null literal).
 */
QV_API qv_type_id qv_bound_expr_result_type(const qv_bound_expr *b);

/**
 * Evaluate over one record batch (a STRUCT array whose schema matches the
 * one bound to: every column the expression uses must have the bound type,
 * else QV_ETYPE). *out receives a new array of batch->length elements of
 * the result type (with a validity bitmap where results are null), owned by
 * the caller. The batch must be valid at QV_VALIDATE_DEFAULT (what the
 * reader returns); string offsets and dictionary indices are still checked
 * as they are read, and a violation gives QV_EINVAL rather than a read out
 * of bounds. Integer overflow and integer division by zero give QV_ERANGE
 * naming the sub-expression and the row (only rows whose value decides the
 * result count: `x != 0 and 10 % x > 1` does not fail where x is 0).
 */
QV_API qv_status qv_bound_expr_eval(qv_bound_expr *b, const qv_array *batch, qv_array **out,
                                    qv_error *err) QV_NODISCARD;

/**
 * Evaluate a boolean expression over one batch as a filter: bit i of
 * `out_bits` (LSB first; the caller provides (batch->length + 7) / 8 bytes)
 * is set when the expression is true at row i, and cleared when it is
 * false or null (SQL semantics: a filter keeps only true rows).
 * `out_count` (may be NULL) receives the number of set bits. QV_ETYPE when
 * the result type is not QV_BOOL; other errors as qv_bound_expr_eval.
 */
QV_API qv_status qv_bound_expr_select(qv_bound_expr *b, const qv_array *batch, uint8_t *out_bits,
                                      int64_t *out_count, qv_error *err) QV_NODISCARD;

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_EXPR_H */
