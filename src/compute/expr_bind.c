/*
 * expr_bind.c — binds a parsed expression (expr_parse.c) to a schema:
 * resolves column names and dotted struct paths, type-checks every
 * operator under the rules of docs/expressions.md, types null literals by
 * their context, sorts `in` lists for binary search, and marks the largest
 * null-propagating sub-expressions over one dictionary-encoded column so
 * that the evaluator (expr_eval.c) computes them once per dictionary and
 * maps the result through the indices. Compute layer; needs only core.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute/expr_internal.h"

typedef struct binder {
  qv_bound_expr *b;
  const qv_schema *schema;
  qv_error *err;
} binder;

const char *qvx_kind_name(qvx_kind k, bool is_binary) {
  switch (k) {
    case QVX_K_NULL: return "null";
    case QVX_K_BOOL: return "bool";
    case QVX_K_I64: return "int64";
    case QVX_K_U64: return "uint64";
    case QVX_K_F64: return "double";
    case QVX_K_STR: return is_binary ? "binary" : "string";
    case QVX_K_LIST: return "list";
    case QVX_K_ANY: return "other";
  }
  return "?";
}

static bool is_numeric(qvx_kind k) { return k == QVX_K_I64 || k == QVX_K_U64 || k == QVX_K_F64; }

/* Evaluation kind of a column type. */
static qvx_kind kind_of_type(const qv_type *t, bool *is_binary) {
  *is_binary = false;
  switch (t->id) {
    case QV_BOOL: return QVX_K_BOOL;
    case QV_INT8:
    case QV_INT16:
    case QV_INT32:
    case QV_INT64:
    case QV_UINT8:
    case QV_UINT16:
    case QV_UINT32: return QVX_K_I64;
    case QV_UINT64: return QVX_K_U64;
    case QV_HALF_FLOAT:
    case QV_FLOAT:
    case QV_DOUBLE: return QVX_K_F64;
    case QV_STRING:
    case QV_LARGE_STRING:
    case QV_STRING_VIEW: return QVX_K_STR;
    case QV_BINARY:
    case QV_LARGE_BINARY:
    case QV_BINARY_VIEW: *is_binary = true; return QVX_K_STR;
    case QV_LIST:
    case QV_LARGE_LIST:
    case QV_LIST_VIEW:
    case QV_LARGE_LIST_VIEW:
    case QV_FIXED_SIZE_LIST:
    case QV_MAP: return QVX_K_LIST;
    case QV_DICTIONARY: {
      if (!t->value_type || !t->index_type || !qv_type_id_is_integer(t->index_type->id) ||
          t->value_type->id == QV_DICTIONARY)
        return QVX_K_ANY;
      qvx_kind k = kind_of_type(t->value_type, is_binary);
      return (k == QVX_K_LIST || k == QVX_K_ANY) ? QVX_K_ANY : k;
    }
    default: return QVX_K_ANY;
  }
}

/* ------------------------------------------------------------------------ */
/* Nodes                                                                     */

static qvx_bnode *new_bnode(binder *bd, qvx_bkind kind, const qvx_node *src) {
  qv_bound_expr *b = bd->b;
  qvx_bnode **nodes = realloc(b->nodes, sizeof *nodes * (size_t)(b->n_nodes + 1));
  if (!nodes) return NULL;
  b->nodes = nodes;
  qvx_bnode *n = calloc(1, sizeof *n);
  if (!n) return NULL;
  b->nodes[b->n_nodes++] = n;
  n->kind = kind;
  n->start = src->start;
  n->end = src->end;
  n->op_pos = src->op_pos;
  n->ref_col = -1;
  n->col = -1;
  return n;
}

static int32_t merge_ref(int32_t a, int32_t b) {
  if (a == -1) return b;
  if (b == -1 || a == b) return a;
  return -2;
}

static qv_status oom(binder *bd) {
  return qv_error_set(bd->err, QV_ENOMEM, "out of memory binding an expression");
}

static qv_status bind_err(binder *bd, qv_status st, int32_t pos, const char *fmt, ...)
    QV_PRINTF(4, 5);
static qv_status bind_err(binder *bd, qv_status st, int32_t pos, const char *fmt, ...) {
  char msg[420];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return qvx_error_at(bd->err, st, bd->b->text, bd->b->len, pos, "%s", msg);
}

/* How an operand is named in messages: "column 'text' (string)",
 * "1 (int64)", "'len(s) + 1' (int64)". */
static void describe(binder *bd, const qvx_node *x, const qvx_bnode *n, char *out, size_t cap) {
  const char *kind = qvx_kind_name(n->out, n->is_binary);
  if (n->kind == QVX_B_COL) {
    char ty[96];
    qv_type_to_string(bd->b->cols[n->col].type, ty, sizeof ty);
    snprintf(out, cap, "column '%s' (%s)", bd->b->cols[n->col].name, ty);
    return;
  }
  if (x->kind == QVX_N_LITERAL && x->lit.kind == QVX_LIT_NULL) {
    snprintf(out, cap, "null");
    return;
  }
  int len = (int)(x->end - x->start);
  const char *t = bd->b->text + x->start;
  /* Literals show as written (a string literal has its own quotes);
   * other expressions are quoted. */
  const char *q = x->kind == QVX_N_LITERAL ? "" : "'";
  if (len > 40) snprintf(out, cap, "%s%.37s...%s (%s)", q, t, q, kind);
  else snprintf(out, cap, "%s%.*s%s (%s)", q, len, t, q, kind);
}

/* ------------------------------------------------------------------------ */
/* Columns                                                                   */

/* Levenshtein distance of two short strings, capped at 3. */
static int edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 64 || lb > 64) return 3;
  int prev[65], cur[65];
  for (size_t j = 0; j <= lb; j++) prev[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    cur[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int c = prev[j - 1] + (a[i - 1] != b[j - 1]);
      if (prev[j] + 1 < c) c = prev[j] + 1;
      if (cur[j - 1] + 1 < c) c = cur[j - 1] + 1;
      cur[j] = c;
    }
    memcpy(prev, cur, sizeof(int) * (lb + 1));
  }
  return prev[lb] > 3 ? 3 : prev[lb];
}

/* " (did you mean 'x'?)" for the closest child name, or "". */
static void suggest(const qv_type *st, const char *name, char *out, size_t cap) {
  out[0] = '\0';
  int best = 3;
  const char *bn = NULL;
  for (int32_t k = 0; k < st->n_children; k++) {
    int d = edit_distance(name, st->children[k].name);
    if (d < best || (d == best && bn == NULL && d <= 2)) {
      if (d <= 2) {
        best = d;
        bn = st->children[k].name;
      }
    }
  }
  if (bn) snprintf(out, cap, " (did you mean '%s'?)", bn);
}

static int32_t child_index(const qv_type *t, const char *name) {
  for (int32_t k = 0; k < t->n_children; k++)
    if (strcmp(t->children[k].name, name) == 0) return k;
  return -1;
}

static qv_status bind_column(binder *bd, const qvx_node *x, qvx_bnode **out) {
  const qv_type *t = bd->schema->type;
  int32_t path[QVX_MAX_PATH];
  int32_t depth = 0;
  char name[512];
  size_t nl = 0;
  name[0] = '\0';
  for (int32_t k = 0; k < x->n_path; k++) {
    int n = snprintf(name + nl, sizeof name - nl, "%s%s", k ? "." : "", x->path[k]);
    if (n > 0) nl = nl + (size_t)n < sizeof name ? nl + (size_t)n : sizeof name - 1;
  }
  for (int32_t k = 0; k < x->n_path; k++) {
    int32_t c = child_index(t, x->path[k]);
    if (c < 0) {
      /* A flattened top-level column named "a.b" answers a dotted path. */
      if (k == 0 && x->n_path > 1 && (c = child_index(t, name)) >= 0) {
        path[0] = c;
        depth = 1;
        t = t->children[c].type;
        break;
      }
      char sug[96];
      suggest(t, x->path[k], sug, sizeof sug);
      if (k == 0)
        return bind_err(bd, QV_EINVAL, x->start, "unknown column '%s'%s", x->path[0], sug);
      char prefix[512];
      size_t pl = 0;
      prefix[0] = '\0';
      for (int32_t j = 0; j < k; j++) {
        int n = snprintf(prefix + pl, sizeof prefix - pl, "%s%s", j ? "." : "", x->path[j]);
        if (n > 0) pl = pl + (size_t)n < sizeof prefix ? pl + (size_t)n : sizeof prefix - 1;
      }
      return bind_err(bd, QV_EINVAL, x->start, "struct '%s' has no field '%s'%s", prefix,
                      x->path[k], sug);
    }
    path[depth++] = c;
    t = t->children[c].type;
    if (k + 1 < x->n_path && t->id != QV_STRUCT) {
      char ty[96];
      qv_type_to_string(t, ty, sizeof ty);
      char prefix[512];
      size_t pl = 0;
      for (int32_t j = 0; j <= k; j++) {
        int n = snprintf(prefix + pl, sizeof prefix - pl, "%s%s", j ? "." : "", x->path[j]);
        if (n > 0) pl = pl + (size_t)n < sizeof prefix ? pl + (size_t)n : sizeof prefix - 1;
      }
      return bind_err(bd, QV_ETYPE, x->start,
                      "column '%s' (%s) is not a struct, so it has no field '%s'", prefix, ty,
                      x->path[k + 1]);
    }
  }
  qv_bound_expr *b = bd->b;
  int32_t id = -1;
  for (int32_t c = 0; c < b->n_cols && id < 0; c++)
    if (b->cols[c].depth == depth &&
        memcmp(b->cols[c].path, path, sizeof(int32_t) * (size_t)depth) == 0)
      id = c;
  if (id < 0) {
    qvx_col *cols = realloc(b->cols, sizeof *cols * (size_t)(b->n_cols + 1));
    if (!cols) return oom(bd);
    b->cols = cols;
    qvx_col *c = &cols[b->n_cols];
    memset(c, 0, sizeof *c);
    c->depth = depth;
    memcpy(c->path, path, sizeof(int32_t) * (size_t)depth);
    c->name = strdup(name);
    if (!c->name) return oom(bd);
    c->type = qv_type_ref((qv_type *)t);
    id = b->n_cols++;
  }
  qvx_bnode *n = new_bnode(bd, QVX_B_COL, x);
  if (!n) return oom(bd);
  n->col = id;
  n->ref_col = id;
  n->out = kind_of_type(t, &n->is_binary);
  *out = n;
  return QV_OK;
}

/* ------------------------------------------------------------------------ */
/* Operators                                                                 */

static qv_status bind_node(binder *bd, const qvx_node *x, qvx_bnode **out);

static bool is_null_lit(const qvx_bnode *n) { return n->kind == QVX_B_LIT && n->out == QVX_K_NULL; }

/* Give an untyped null literal the kind its context needs. */
static void type_null(qvx_bnode *n, qvx_kind k) {
  if (is_null_lit(n)) n->out = k;
}

/* Refuse list and other-typed columns where a value is needed. */
static qv_status need_value(binder *bd, const qvx_node *x, const qvx_bnode *n) {
  if (n->out != QVX_K_LIST && n->out != QVX_K_ANY) return QV_OK;
  char d[200];
  describe(bd, x, n, d, sizeof d);
  if (n->out == QVX_K_LIST)
    return bind_err(bd, QV_ETYPE, x->start, "%s can only be used in len() or with 'is null'", d);
  return bind_err(bd, QV_ETYPE, x->start,
                  "%s can only be used with 'is null' (expressions compute with bool, integer, "
                  "floating-point, string and binary columns, dictionaries of those, and lists "
                  "in len())",
                  d);
}

static qv_status bind_children(binder *bd, const qvx_node *x, qvx_bnode *n, int count) {
  qvx_bnode *kids[2] = {NULL, NULL};
  for (int k = 0; k < count; k++) {
    QV_RETURN_NOT_OK(bind_node(bd, x->args[k], &kids[k]));
    n->ref_col = merge_ref(n->ref_col, kids[k]->ref_col);
    n->can_fail = n->can_fail || kids[k]->can_fail;
  }
  n->a = kids[0];
  n->b = kids[1];
  return QV_OK;
}

static qv_status bind_logic(binder *bd, const qvx_node *x, qvx_bnode *n, int count) {
  QV_RETURN_NOT_OK(bind_children(bd, x, n, count));
  const char *what = x->kind == QVX_N_AND ? "'and'" : x->kind == QVX_N_OR ? "'or'" : "'not'";
  qvx_bnode *kids[2] = {n->a, n->b};
  for (int k = 0; k < count; k++) {
    type_null(kids[k], QVX_K_BOOL);
    if (kids[k]->out != QVX_K_BOOL) {
      char d[200];
      describe(bd, x->args[k], kids[k], d, sizeof d);
      return bind_err(bd, QV_ETYPE, n->op_pos, "%s needs boolean operand%s, found %s", what,
                      count == 1 ? "" : "s", d);
    }
  }
  n->out = QVX_K_BOOL;
  return QV_OK;
}

/* Comparable kinds: numbers with numbers, bools, strings with binary. */
static bool comparable(qvx_kind a, qvx_kind b) {
  if (is_numeric(a) && is_numeric(b)) return true;
  return a == b && (a == QVX_K_BOOL || a == QVX_K_STR);
}

static qv_status bind_cmp(binder *bd, const qvx_node *x, qvx_bnode *n) {
  QV_RETURN_NOT_OK(bind_children(bd, x, n, 2));
  if (is_null_lit(n->a) || is_null_lit(n->b))
    return bind_err(bd, QV_ETYPE, n->op_pos,
                    "comparing with null gives null for every row; use 'is null' or 'is not null'");
  QV_RETURN_NOT_OK(need_value(bd, x->args[0], n->a));
  QV_RETURN_NOT_OK(need_value(bd, x->args[1], n->b));
  if (!comparable(n->a->out, n->b->out)) {
    char da[200], db[200];
    describe(bd, x->args[0], n->a, da, sizeof da);
    describe(bd, x->args[1], n->b, db, sizeof db);
    return bind_err(bd, QV_ETYPE, n->op_pos, "cannot compare %s with %s", da, db);
  }
  n->out = QVX_K_BOOL;
  return QV_OK;
}

static qv_status bind_arith(binder *bd, const qvx_node *x, qvx_bnode *n) {
  QV_RETURN_NOT_OK(bind_children(bd, x, n, 2));
  if (is_null_lit(n->a) && is_null_lit(n->b)) {
    type_null(n->a, QVX_K_I64);
    type_null(n->b, QVX_K_I64);
  }
  type_null(n->a, n->b->out == QVX_K_F64 ? QVX_K_F64 : QVX_K_I64);
  type_null(n->b, n->a->out == QVX_K_F64 ? QVX_K_F64 : QVX_K_I64);
  QV_RETURN_NOT_OK(need_value(bd, x->args[0], n->a));
  QV_RETURN_NOT_OK(need_value(bd, x->args[1], n->b));
  if (!is_numeric(n->a->out) || !is_numeric(n->b->out)) {
    char da[200], db[200];
    describe(bd, x->args[0], n->a, da, sizeof da);
    describe(bd, x->args[1], n->b, db, sizeof db);
    return bind_err(bd, QV_ETYPE, n->op_pos, "cannot apply '%s' to %s and %s", qvx_op_name(n->op),
                    da, db);
  }
  if (n->op == QVX_DIV || n->a->out == QVX_K_F64 || n->b->out == QVX_K_F64) {
    n->out = QVX_K_F64;
  } else {
    n->out = QVX_K_I64;
    n->can_fail = true; /* checked int64 arithmetic */
  }
  return QV_OK;
}

static qv_status bind_unary_num(binder *bd, const qvx_node *x, qvx_bnode *n) {
  QV_RETURN_NOT_OK(bind_children(bd, x, n, 1));
  type_null(n->a, QVX_K_I64);
  QV_RETURN_NOT_OK(need_value(bd, x->args[0], n->a));
  if (!is_numeric(n->a->out)) {
    char d[200];
    describe(bd, x->args[0], n->a, d, sizeof d);
    if (n->kind == QVX_B_NEG) return bind_err(bd, QV_ETYPE, n->op_pos, "cannot negate %s", d);
    return bind_err(bd, QV_ETYPE, n->op_pos, "abs() needs a number, found %s", d);
  }
  n->out = n->a->out == QVX_K_F64 ? QVX_K_F64 : QVX_K_I64;
  if (n->out == QVX_K_I64) n->can_fail = true;
  return QV_OK;
}

/* qsort comparators for the `in` sets */
static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}
static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}
static int cmp_f64(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
typedef struct str_item {
  const uint8_t *p;
  int64_t n;
} str_item;
static int cmp_str_item(const void *a, const void *b) {
  const str_item *x = a, *y = b;
  int64_t m = x->n < y->n ? x->n : y->n;
  int c = m ? memcmp(x->p, y->p, (size_t)m) : 0;
  if (c) return c;
  return (x->n > y->n) - (x->n < y->n);
}

static qv_status bind_in(binder *bd, const qvx_node *x, qvx_bnode *n) {
  qvx_bnode *lhs;
  QV_RETURN_NOT_OK(bind_node(bd, x->args[0], &lhs));
  n->a = lhs;
  n->ref_col = lhs->ref_col;
  n->can_fail = lhs->can_fail;
  n->out = QVX_K_BOOL;
  if (is_null_lit(lhs))
    return bind_err(bd, QV_ETYPE, x->args[0]->start,
                    "the left side of 'in' is null, so the result is null for every row");
  QV_RETURN_NOT_OK(need_value(bd, x->args[0], lhs));
  qvx_kind lk = lhs->out;
  /* Type-check the items; numbers compare as doubles if either side is. */
  bool any_float = lk == QVX_K_F64;
  for (int32_t k = 1; k < x->n_args; k++) {
    const qvx_lit *l = &x->args[k]->lit;
    qvx_kind ik = l->kind == QVX_LIT_NULL    ? QVX_K_NULL
                  : l->kind == QVX_LIT_BOOL  ? QVX_K_BOOL
                  : l->kind == QVX_LIT_INT   ? QVX_K_I64
                  : l->kind == QVX_LIT_UINT  ? QVX_K_U64
                  : l->kind == QVX_LIT_FLOAT ? QVX_K_F64
                                             : QVX_K_STR;
    if (ik == QVX_K_NULL) {
      n->in_has_null = true;
      continue;
    }
    if (!comparable(lk, ik)) {
      char d[200];
      describe(bd, x->args[0], lhs, d, sizeof d);
      int len = (int)(x->args[k]->end - x->args[k]->start);
      return bind_err(bd, QV_ETYPE, x->args[k]->start,
                      "cannot compare %s with %.*s (%s) in the 'in' list", d, len > 40 ? 40 : len,
                      bd->b->text + x->args[k]->start, qvx_kind_name(ik, false));
    }
    if (ik == QVX_K_F64) any_float = true;
  }
  int64_t m = x->n_args > 1 ? x->n_args - 1 : 1, cnt = 0;
  if (lk == QVX_K_BOOL) {
    for (int32_t k = 1; k < x->n_args; k++) {
      const qvx_lit *l = &x->args[k]->lit;
      if (l->kind != QVX_LIT_BOOL) continue;
      if (l->b) n->in_has_true = true;
      else n->in_has_false = true;
    }
    n->in_kind = QVX_K_BOOL;
    return QV_OK;
  }
  if (lk == QVX_K_STR) {
    str_item *items = malloc(sizeof *items * (size_t)m);
    if (!items) return oom(bd);
    for (int32_t k = 1; k < x->n_args; k++) {
      const qvx_lit *l = &x->args[k]->lit;
      if (l->kind != QVX_LIT_STRING) continue;
      char *copy = malloc((size_t)l->slen + 1);
      char **strs = realloc(bd->b->strings, sizeof(char *) * (size_t)(bd->b->n_strings + 1));
      if (!copy || !strs) {
        free(copy);
        if (strs) bd->b->strings = strs;
        free(items);
        return oom(bd);
      }
      bd->b->strings = strs;
      memcpy(copy, l->s, (size_t)l->slen + 1);
      strs[bd->b->n_strings++] = copy;
      items[cnt].p = (const uint8_t *)copy;
      items[cnt].n = l->slen;
      cnt++;
    }
    qsort(items, (size_t)cnt, sizeof *items, cmp_str_item);
    n->in_str = malloc(sizeof *n->in_str * (size_t)(cnt ? cnt : 1));
    n->in_str_len = malloc(sizeof *n->in_str_len * (size_t)(cnt ? cnt : 1));
    if (!n->in_str || !n->in_str_len) {
      free(items);
      return oom(bd);
    }
    for (int64_t k = 0; k < cnt; k++) {
      n->in_str[k] = items[k].p;
      n->in_str_len[k] = items[k].n;
    }
    free(items);
    n->in_n = cnt;
    n->in_kind = QVX_K_STR;
    return QV_OK;
  }
  /* Numbers. */
  if (any_float) {
    n->in_kind = QVX_K_F64;
    n->in_f64 = malloc(sizeof(double) * (size_t)m);
    if (!n->in_f64) return oom(bd);
    for (int32_t k = 1; k < x->n_args; k++) {
      const qvx_lit *l = &x->args[k]->lit;
      if (l->kind == QVX_LIT_INT) n->in_f64[cnt++] = (double)l->i;
      else if (l->kind == QVX_LIT_UINT) n->in_f64[cnt++] = (double)l->u;
      else if (l->kind == QVX_LIT_FLOAT && !isnan(l->f)) n->in_f64[cnt++] = l->f;
    }
    qsort(n->in_f64, (size_t)cnt, sizeof(double), cmp_f64);
  } else if (lk == QVX_K_U64) {
    n->in_kind = QVX_K_U64;
    n->in_u64 = malloc(sizeof(uint64_t) * (size_t)m);
    if (!n->in_u64) return oom(bd);
    for (int32_t k = 1; k < x->n_args; k++) {
      const qvx_lit *l = &x->args[k]->lit;
      if (l->kind == QVX_LIT_INT && l->i >= 0) n->in_u64[cnt++] = (uint64_t)l->i;
      else if (l->kind == QVX_LIT_UINT) n->in_u64[cnt++] = l->u;
    }
    qsort(n->in_u64, (size_t)cnt, sizeof(uint64_t), cmp_u64);
  } else {
    n->in_kind = QVX_K_I64;
    n->in_i64 = malloc(sizeof(int64_t) * (size_t)m);
    if (!n->in_i64) return oom(bd);
    for (int32_t k = 1; k < x->n_args; k++) {
      const qvx_lit *l = &x->args[k]->lit;
      if (l->kind == QVX_LIT_INT) n->in_i64[cnt++] = l->i; /* uint literals never match */
    }
    qsort(n->in_i64, (size_t)cnt, sizeof(int64_t), cmp_i64);
  }
  n->in_n = cnt;
  return QV_OK;
}

static qv_status bind_call(binder *bd, const qvx_node *x, qvx_bnode *n) {
  const char *fname = qvx_fn_name(x->op);
  if (x->op == QVX_FN_ABS) {
    n->kind = QVX_B_ABS;
    return bind_unary_num(bd, x, n);
  }
  if (x->op == QVX_FN_LOWER || x->op == QVX_FN_UPPER || x->op == QVX_FN_SUBSTR) {
    n->kind = QVX_B_STRMAP;
    n->op = x->op;
    QV_RETURN_NOT_OK(bind_children(bd, x, n, x->op == QVX_FN_SUBSTR ? 2 : 1));
    type_null(n->a, QVX_K_STR);
    if (n->a->out != QVX_K_STR) {
      char d[200];
      describe(bd, x->args[0], n->a, d, sizeof d);
      return bind_err(bd, QV_ETYPE, x->args[0]->start, "%s() needs a string, found %s", fname, d);
    }
    if (x->op == QVX_FN_SUBSTR) {
      if (x->n_args == 3) {
        QV_RETURN_NOT_OK(bind_node(bd, x->args[2], &n->third));
        n->ref_col = merge_ref(n->ref_col, n->third->ref_col);
        n->can_fail = n->can_fail || n->third->can_fail;
      }
      qvx_bnode *ints[2] = {n->b, n->third};
      for (int k = 0; k < 2; k++) {
        if (!ints[k]) continue;
        type_null(ints[k], QVX_K_I64);
        if (ints[k]->out != QVX_K_I64 && ints[k]->out != QVX_K_U64) {
          char d[200];
          describe(bd, x->args[k + 1], ints[k], d, sizeof d);
          return bind_err(bd, QV_ETYPE, x->args[k + 1]->start,
                          "substr() needs an integer %s, found %s", k ? "length" : "start", d);
        }
      }
      n->can_fail = true; /* uint64 positions beyond int64 */
    }
    n->out = QVX_K_STR;
    n->is_binary = n->a->is_binary;
    return QV_OK;
  }
  if (x->op == QVX_FN_CAST) {
    n->kind = QVX_B_CAST;
    n->op = x->op;
    const qvx_node *t = x->args[1];
    if (t->kind != QVX_N_LITERAL || t->lit.kind != QVX_LIT_STRING)
      return bind_err(bd, QV_ETYPE, t->start,
                      "cast() needs the target type as a string: 'int64', 'double', 'string' or "
                      "'bool'");
    static const struct {
      const char *name;
      qvx_kind kind;
    } TARGETS[] = {{"int64", QVX_K_I64},  {"bigint", QVX_K_I64},  {"int", QVX_K_I64},
                   {"double", QVX_K_F64}, {"float64", QVX_K_F64}, {"float", QVX_K_F64},
                   {"string", QVX_K_STR}, {"varchar", QVX_K_STR}, {"utf8", QVX_K_STR},
                   {"bool", QVX_K_BOOL},  {"boolean", QVX_K_BOOL}};
    int k = 0, nt = (int)(sizeof TARGETS / sizeof TARGETS[0]);
    while (k < nt && strcasecmp(TARGETS[k].name, t->lit.s) != 0) k++;
    if (k == nt)
      return bind_err(bd, QV_ETYPE, t->start,
                      "cast() to '%s' is not supported (types: int64, double, string, bool)",
                      t->lit.s);
    QV_RETURN_NOT_OK(bind_children(bd, x, n, 1));
    type_null(n->a, TARGETS[k].kind);
    QV_RETURN_NOT_OK(need_value(bd, x->args[0], n->a));
    if (n->a->out == QVX_K_LIST || n->a->out == QVX_K_ANY) {
      char d[200];
      describe(bd, x->args[0], n->a, d, sizeof d);
      return bind_err(bd, QV_ETYPE, x->args[0]->start, "cannot cast %s", d);
    }
    if (TARGETS[k].kind == QVX_K_STR && n->a->out == QVX_K_STR && n->a->is_binary) {
      char d[200];
      describe(bd, x->args[0], n->a, d, sizeof d);
      return bind_err(bd, QV_ETYPE, x->args[0]->start, "cannot cast %s to string", d);
    }
    n->out = TARGETS[k].kind;
    n->can_fail = true; /* unparsable strings, out-of-range numbers */
    return QV_OK;
  }
  if (x->op == QVX_FN_COALESCE || x->op == QVX_FN_IF) {
    bool is_if = x->op == QVX_FN_IF;
    n->kind = is_if ? QVX_B_IF : QVX_B_COALESCE;
    n->op = x->op;
    QV_RETURN_NOT_OK(bind_children(bd, x, n, 2));
    qvx_bnode *va = n->a, *vb = n->b;
    const qvx_node *xa = x->args[0], *xb = x->args[1];
    if (is_if) {
      QV_RETURN_NOT_OK(bind_node(bd, x->args[2], &n->third));
      n->ref_col = merge_ref(n->ref_col, n->third->ref_col);
      n->can_fail = n->can_fail || n->third->can_fail;
      type_null(n->a, QVX_K_BOOL);
      if (n->a->out != QVX_K_BOOL) {
        char d[200];
        describe(bd, x->args[0], n->a, d, sizeof d);
        return bind_err(bd, QV_ETYPE, x->args[0]->start, "if() needs a boolean condition, found %s",
                        d);
      }
      va = n->b, vb = n->third, xa = x->args[1], xb = x->args[2];
    }
    if (va->out == QVX_K_NULL) type_null(va, vb->out == QVX_K_NULL ? QVX_K_I64 : vb->out);
    if (vb->out == QVX_K_NULL) type_null(vb, va->out);
    if (va->out == QVX_K_LIST || va->out == QVX_K_ANY) QV_RETURN_NOT_OK(need_value(bd, xa, va));
    if (vb->out == QVX_K_LIST || vb->out == QVX_K_ANY) QV_RETURN_NOT_OK(need_value(bd, xb, vb));
    if (va->out == vb->out) {
      n->out = va->out;
      n->is_binary = va->is_binary || vb->is_binary;
    } else if (is_numeric(va->out) && is_numeric(vb->out)) {
      n->out = QVX_K_F64; /* mixed numbers compute in double */
    } else {
      char da[200], db[200];
      describe(bd, xa, va, da, sizeof da);
      describe(bd, xb, vb, db, sizeof db);
      return bind_err(bd, QV_ETYPE, n->op_pos, "%s() needs values of one type, found %s and %s",
                      fname, da, db);
    }
    return QV_OK;
  }
  if (x->op >= QVX_FN_SQRT && x->op <= QVX_FN_POW) {
    n->kind = QVX_B_MATH;
    n->op = x->op;
    int count = x->op == QVX_FN_POW ? 2 : 1;
    QV_RETURN_NOT_OK(bind_children(bd, x, n, count));
    qvx_bnode *kids[2] = {n->a, n->b};
    for (int k = 0; k < count; k++) {
      type_null(kids[k], QVX_K_F64);
      QV_RETURN_NOT_OK(need_value(bd, x->args[k], kids[k]));
      if (!is_numeric(kids[k]->out)) {
        char d[200];
        describe(bd, x->args[k], kids[k], d, sizeof d);
        return bind_err(bd, QV_ETYPE, x->args[k]->start, "%s() needs a number, found %s", fname, d);
      }
    }
    /* floor/ceil/round keep integers as they are; the rest compute in double */
    bool keep = (x->op == QVX_FN_FLOOR || x->op == QVX_FN_CEIL || x->op == QVX_FN_ROUND) &&
                n->a->out != QVX_K_F64;
    n->out = keep ? QVX_K_I64 : QVX_K_F64;
    if (keep && n->a->out == QVX_K_U64) n->can_fail = true;
    return QV_OK;
  }
  if (x->op == QVX_FN_LEN) {
    n->kind = QVX_B_LEN;
    QV_RETURN_NOT_OK(bind_children(bd, x, n, 1));
    type_null(n->a, QVX_K_STR);
    if (n->a->out != QVX_K_STR && n->a->out != QVX_K_LIST) {
      char d[200];
      describe(bd, x->args[0], n->a, d, sizeof d);
      return bind_err(bd, QV_ETYPE, n->op_pos, "len() needs a string, binary or list, found %s", d);
    }
    n->out = QVX_K_I64;
    return QV_OK;
  }
  n->kind = QVX_B_STRFN;
  n->op = x->op;
  QV_RETURN_NOT_OK(bind_children(bd, x, n, 2));
  type_null(n->a, QVX_K_STR);
  type_null(n->b, QVX_K_STR);
  for (int k = 0; k < 2; k++) {
    qvx_bnode *c = k ? n->b : n->a;
    if (c->out != QVX_K_STR) {
      char d[200];
      describe(bd, x->args[k], c, d, sizeof d);
      return bind_err(bd, QV_ETYPE, x->args[k]->start,
                      "%s() needs a string or binary %s argument, found %s", fname,
                      k ? "second" : "first", d);
    }
  }
  n->out = QVX_K_BOOL;
  return QV_OK;
}

/* True when the bytes are valid UTF-8 (no overlongs, surrogates or code
 * points past U+10FFFF). */
static bool utf8_valid(const uint8_t *s, int64_t n) {
  int64_t i = 0;
  while (i < n) {
    uint8_t c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (len == 0 || c > 0xF4 || i + len > n) return false;
    for (int k = 1; k < len; k++)
      if ((s[i + k] & 0xC0) != 0x80) return false;
    if (c == 0xE0 && s[i + 1] < 0xA0) return false;  /* overlong */
    if (c == 0xED && s[i + 1] >= 0xA0) return false; /* surrogate */
    if (c == 0xF0 && s[i + 1] < 0x90) return false;  /* overlong */
    if (c == 0xF4 && s[i + 1] >= 0x90) return false; /* > U+10FFFF */
    i += len;
  }
  return true;
}

static qv_status bind_literal(binder *bd, const qvx_node *x, qvx_bnode **out) {
  qvx_bnode *n = new_bnode(bd, QVX_B_LIT, x);
  if (!n) return oom(bd);
  n->lit = x->lit;
  switch (x->lit.kind) {
    case QVX_LIT_NULL: n->out = QVX_K_NULL; break;
    case QVX_LIT_BOOL: n->out = QVX_K_BOOL; break;
    case QVX_LIT_INT: n->out = QVX_K_I64; break;
    case QVX_LIT_UINT: n->out = QVX_K_U64; break;
    case QVX_LIT_FLOAT: n->out = QVX_K_F64; break;
    case QVX_LIT_STRING: {
      n->out = QVX_K_STR;
      /* A literal whose bytes are not UTF-8 (written with \x escapes) is
       * binary; it still compares with string columns. */
      n->is_binary = !utf8_valid((const uint8_t *)x->lit.s, x->lit.slen);
      char *copy = malloc((size_t)x->lit.slen + 1);
      char **strs = realloc(bd->b->strings, sizeof(char *) * (size_t)(bd->b->n_strings + 1));
      if (strs) bd->b->strings = strs;
      if (!copy || !strs) {
        free(copy);
        return oom(bd);
      }
      memcpy(copy, x->lit.s, (size_t)x->lit.slen + 1);
      strs[bd->b->n_strings++] = copy;
      n->lit.s = copy;
      break;
    }
  }
  *out = n;
  return QV_OK;
}

static qv_status bind_node(binder *bd, const qvx_node *x, qvx_bnode **out) {
  if (x->kind == QVX_N_LITERAL) return bind_literal(bd, x, out);
  if (x->kind == QVX_N_COLUMN) return bind_column(bd, x, out);
  static const qvx_bkind kinds[] = {
      [QVX_N_NOT] = QVX_B_NOT,         [QVX_N_NEG] = QVX_B_NEG, [QVX_N_AND] = QVX_B_AND,
      [QVX_N_OR] = QVX_B_OR,           [QVX_N_CMP] = QVX_B_CMP, [QVX_N_ARITH] = QVX_B_ARITH,
      [QVX_N_IS_NULL] = QVX_B_IS_NULL, [QVX_N_IN] = QVX_B_IN,   [QVX_N_CALL] = QVX_B_STRFN};
  qvx_bnode *n = new_bnode(bd, kinds[x->kind], x);
  if (!n) return oom(bd);
  n->op = x->op;
  n->negated = x->negated;
  *out = n;
  switch (x->kind) {
    case QVX_N_NOT: return bind_logic(bd, x, n, 1);
    case QVX_N_AND:
    case QVX_N_OR: return bind_logic(bd, x, n, 2);
    case QVX_N_NEG: return bind_unary_num(bd, x, n);
    case QVX_N_CMP: return bind_cmp(bd, x, n);
    case QVX_N_ARITH: return bind_arith(bd, x, n);
    case QVX_N_IS_NULL:
      QV_RETURN_NOT_OK(bind_children(bd, x, n, 1));
      n->out = QVX_K_BOOL;
      return QV_OK;
    case QVX_N_IN: return bind_in(bd, x, n);
    case QVX_N_CALL: return bind_call(bd, x, n);
    default: return QV_OK;
  }
}

/* ------------------------------------------------------------------------ */
/* Dictionary sub-expressions                                                */

/* True when null in the (one) column gives null out: such a sub-expression
 * may be computed over the dictionary's values and mapped by the indices
 * (null indices map to null). */
static bool strict(const qvx_bnode *n) {
  switch (n->kind) {
    case QVX_B_AND:
    case QVX_B_OR:
    case QVX_B_COALESCE:
    case QVX_B_IF:
    case QVX_B_IS_NULL: return false;
    case QVX_B_LIT:
    case QVX_B_COL: return true;
    default: return (!n->a || strict(n->a)) && (!n->b || strict(n->b));
  }
}

static void mark_in_dict(qvx_bnode *n) {
  if (!n) return;
  if (n->kind == QVX_B_COL) n->in_dict = true;
  mark_in_dict(n->a);
  mark_in_dict(n->b);
  mark_in_dict(n->third);
}

static qv_status wrap_dicts(binder *bd, qvx_bnode **slot) {
  qvx_bnode *n = *slot;
  if (!n) return QV_OK;
  if (n->ref_col >= 0 && bd->b->cols[n->ref_col].type->id == QV_DICTIONARY &&
      n->kind != QVX_B_COL && n->kind != QVX_B_LIT && !n->can_fail && strict(n) &&
      n->out != QVX_K_STR) {
    qvx_node src;
    memset(&src, 0, sizeof src);
    src.start = n->start;
    src.end = n->end;
    src.op_pos = n->op_pos;
    qvx_bnode *d = new_bnode(bd, QVX_B_DICT, &src);
    if (!d) return oom(bd);
    d->a = n;
    d->out = n->out;
    d->col = n->ref_col;
    d->ref_col = n->ref_col;
    mark_in_dict(n);
    *slot = d;
    return QV_OK;
  }
  QV_RETURN_NOT_OK(wrap_dicts(bd, &n->a));
  QV_RETURN_NOT_OK(wrap_dicts(bd, &n->b));
  return wrap_dicts(bd, &n->third);
}

/* ------------------------------------------------------------------------ */
/* Public entry points                                                       */

void qv_bound_expr_free(qv_bound_expr *b) {
  if (!b) return;
  for (int32_t k = 0; k < b->n_nodes; k++) {
    qvx_bnode *n = b->nodes[k];
    free(n->in_i64);
    free(n->in_u64);
    free(n->in_f64);
    free(n->in_str);
    free(n->in_str_len);
    free(n->s_valid.p);
    free(n->s_values.p);
    free(n->s_aux.p);
    free(n->s_aux2.p);
    free(n->s_care.p);
    qv_array_unref(n->cached_dict);
    free(n);
  }
  free(b->nodes);
  for (int32_t k = 0; k < b->n_cols; k++) {
    free(b->cols[k].name);
    qv_type_unref(b->cols[k].type);
  }
  free(b->cols);
  for (int32_t k = 0; k < b->n_strings; k++) free(b->strings[k]);
  free(b->strings);
  free(b->text);
  free(b);
}

qv_status qv_expr_bind(const qv_expr *e, const qv_schema *schema, qv_bound_expr **out,
                       qv_error *err) {
  *out = NULL;
  if (!e || !schema || !schema->type || schema->type->id != QV_STRUCT)
    return qv_error_set(err, QV_EARG, "qv_expr_bind needs an expression and a schema");
  qv_bound_expr *b = calloc(1, sizeof *b);
  if (!b) return qv_error_set(err, QV_ENOMEM, "out of memory binding an expression");
  b->text = malloc((size_t)e->len + 1);
  if (!b->text) {
    free(b);
    return qv_error_set(err, QV_ENOMEM, "out of memory binding an expression");
  }
  memcpy(b->text, e->text, (size_t)e->len + 1);
  b->len = e->len;
  binder bd = {b, schema, err};
  qv_status st = bind_node(&bd, e->root, &b->root);
  if (st == QV_OK) st = need_value(&bd, e->root, b->root);
  if (st == QV_OK) st = wrap_dicts(&bd, &b->root);
  if (st != QV_OK) {
    qv_bound_expr_free(b);
    return st;
  }
  *out = b;
  return QV_OK;
}

qv_type_id qv_bound_expr_result_type(const qv_bound_expr *b) {
  switch (b->root->out) {
    case QVX_K_BOOL: return QV_BOOL;
    case QVX_K_I64: return QV_INT64;
    case QVX_K_U64: return QV_UINT64;
    case QVX_K_F64: return QV_DOUBLE;
    case QVX_K_STR: return b->root->is_binary ? QV_BINARY : QV_STRING;
    default: return QV_NA;
  }
}

qv_status qv_predicate_compile(const char *text, const qv_schema *schema, qv_bound_expr **out,
                               qv_error *err) {
  *out = NULL;
  qv_expr *e = NULL;
  QV_RETURN_NOT_OK(qv_expr_parse(text, -1, &e, err));
  qv_bound_expr *b = NULL;
  qv_status st = qv_expr_bind(e, schema, &b, err);
  qv_expr_free(e);
  if (st != QV_OK) return st;
  if (b->root->out != QVX_K_BOOL) {
    char ty[96];
    if (b->root->kind == QVX_B_COL) qv_type_to_string(b->cols[b->root->col].type, ty, sizeof ty);
    else snprintf(ty, sizeof ty, "%s", qvx_kind_name(b->root->out, b->root->is_binary));
    st = qvx_error_at(err, QV_ETYPE, b->text, b->len, b->root->start,
                      "a filter needs a boolean expression, found %s", ty);
    qv_bound_expr_free(b);
    return st;
  }
  *out = b;
  return QV_OK;
}
