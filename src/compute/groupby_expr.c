/*
 * groupby_expr.c — compute layer: aggregate expressions of the group-by
 * (qv_aggregate_parse, qv_table_group_by_exprs; quiver/compute.h). An
 * aggregate expression is the expression language (expr.h,
 * docs/expressions.md) over aggregate calls: each call ("max(v1)") is cut
 * out of the text and replaced by a hidden column name, the calls are
 * computed by one qv_table_group_by, and the rewritten text is bound to
 * the aggregated table (keys + hidden columns) and evaluated over it. A
 * text that is a single call is that aggregate's column as it is.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "compute/groupby_internal.h"
#include "quiver/expr.h"

typedef struct agg_name {
  const char *name;
  qv_agg_kind kind;
} agg_name;

static const agg_name AGG_NAMES[] = {
    {"count", QV_AGG_COUNT},
    {"count_distinct", QV_AGG_COUNT_DISTINCT},
    {"sum", QV_AGG_SUM},
    {"mean", QV_AGG_MEAN},
    {"avg", QV_AGG_MEAN},
    {"min", QV_AGG_MIN},
    {"max", QV_AGG_MAX},
    {"first", QV_AGG_FIRST},
    {"last", QV_AGG_LAST},
    {"var", QV_AGG_VAR},
    {"var_samp", QV_AGG_VAR},
    {"variance", QV_AGG_VAR},
    {"var_pop", QV_AGG_VAR_POP},
    {"stddev", QV_AGG_STDDEV},
    {"stddev_samp", QV_AGG_STDDEV},
    {"std", QV_AGG_STDDEV},
    {"stddev_pop", QV_AGG_STDDEV_POP},
    {"median", QV_AGG_MEDIAN},
    {"quantile", QV_AGG_QUANTILE},
    {"quantile_cont", QV_AGG_QUANTILE},
    {"top_k", QV_AGG_TOP_K},
    {"bottom_k", QV_AGG_BOTTOM_K},
    {"corr", QV_AGG_CORR},
    {"covar", QV_AGG_COVAR},
    {"covar_samp", QV_AGG_COVAR},
    {"covar_pop", QV_AGG_COVAR_POP},
    {"any", QV_AGG_ANY},
    {"bool_or", QV_AGG_ANY},
    {"all", QV_AGG_ALL},
    {"bool_and", QV_AGG_ALL},
    {"list", QV_AGG_LIST},
};
#define N_AGG_NAMES ((int)(sizeof AGG_NAMES / sizeof AGG_NAMES[0]))

static int lookup_name(const char *s, size_t len) {
  for (int i = 0; i < N_AGG_NAMES; i++)
    if (strlen(AGG_NAMES[i].name) == len && strncasecmp(AGG_NAMES[i].name, s, len) == 0) return i;
  return -1;
}

static bool is_ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool is_ident(char c) { return isalnum((unsigned char)c) || c == '_'; }

static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
  return s;
}

/* A column argument: a bare name or a `backquoted` one (`` is a quote). */
static bool column_arg(char *s, const char **out) {
  size_t n = strlen(s);
  if (n >= 2 && s[0] == '`' && s[n - 1] == '`') {
    char *w = s;
    for (size_t r = 1; r + 1 < n; r++) {
      if (s[r] == '`') {
        if (s[r + 1] != '`' || r + 2 >= n) return false;
        r++;
      }
      *w++ = s[r];
    }
    *w = '\0';
    *out = s;
    return true;
  }
  if (n == 0 || !is_ident_start(s[0])) return false;
  for (size_t i = 1; i < n; i++)
    if (!is_ident(s[i])) return false;
  *out = s;
  return true;
}

qv_status qv_aggregate_parse(const char *text, char *storage, qv_aggregate *out, qv_error *err) {
  if (!text || !storage || !out) return qv_error_set(err, QV_EARG, "aggregate: no text");
  strcpy(storage, text);
  char *s = trim(storage);
  size_t i = 0;
  while (is_ident(s[i])) i++;
  int which = i ? lookup_name(s, i) : -1;
  if (which < 0) {
    return qv_error_set(err, QV_EARG,
                        "'%s' is not an aggregate call (expected e.g. sum(col), count(*), "
                        "quantile(col, 0.5); functions: count, count_distinct, sum, mean, min, "
                        "max, first, last, var, var_pop, stddev, stddev_pop, median, quantile, "
                        "top_k, bottom_k, corr, covar, covar_pop, any, all, list)",
                        text);
  }
  char *p = s + i;
  while (isspace((unsigned char)*p)) p++;
  size_t n = strlen(p);
  if (*p != '(' || n < 2 || p[n - 1] != ')')
    return qv_error_set(err, QV_EARG, "'%s': expected '(' arguments ')' after '%s'", text,
                        AGG_NAMES[which].name);
  p[n - 1] = '\0';
  p++;
  /* split the arguments at top-level commas (outside backquotes) */
  char *args[4];
  int na = 0;
  char *start = p;
  bool inq = false;
  for (char *c = p;; c++) {
    if (*c == '`') inq = !inq;
    if ((*c == ',' && !inq) || *c == '\0') {
      bool end = *c == '\0';
      *c = '\0';
      if (na == 4) return qv_error_set(err, QV_EARG, "'%s': too many arguments", text);
      args[na++] = trim(start);
      start = c + 1;
      if (end) break;
    }
  }
  if (na == 1 && args[0][0] == '\0') na = 0;
  memset(out, 0, sizeof *out);
  qv_agg_kind k = AGG_NAMES[which].kind;
  const char *fn = AGG_NAMES[which].name;
  int want = (k == QV_AGG_QUANTILE || k == QV_AGG_TOP_K || k == QV_AGG_BOTTOM_K ||
              k == QV_AGG_CORR || k == QV_AGG_COVAR || k == QV_AGG_COVAR_POP)
                 ? 2
                 : 1;
  if (k == QV_AGG_COUNT && na == 1 && strcmp(args[0], "*") == 0) {
    out->kind = QV_AGG_COUNT_ALL;
    return QV_OK;
  }
  if (na != want)
    return qv_error_set(err, QV_EARG, "'%s': %s takes %d argument%s, not %d", text, fn, want,
                        want == 1 ? "" : "s", na);
  out->kind = k;
  if (!column_arg(args[0], &out->column))
    return qv_error_set(err, QV_EARG, "'%s': argument 1 of %s must be a column name, not '%s'",
                        text, fn, args[0]);
  if (want == 2) {
    char *e = NULL;
    errno = 0;
    if (k == QV_AGG_QUANTILE) {
      out->q = strtod(args[1], &e);
      if (e == args[1] || *e || errno)
        return qv_error_set(err, QV_EARG, "'%s': the quantile must be a number, not '%s'", text,
                            args[1]);
    } else if (k == QV_AGG_TOP_K || k == QV_AGG_BOTTOM_K) {
      long long v = strtoll(args[1], &e, 10);
      if (e == args[1] || *e || errno || v < 1)
        return qv_error_set(err, QV_EARG, "'%s': k must be a positive integer, not '%s'", text,
                            args[1]);
      out->k = v;
    } else if (!column_arg(args[1], &out->column2)) {
      return qv_error_set(err, QV_EARG, "'%s': argument 2 of %s must be a column name, not '%s'",
                          text, fn, args[1]);
    }
  }
  return QV_OK;
}

/* Skip a quoted run starting at s[i] (quote char q, doubled to escape). */
static size_t skip_quoted(const char *s, size_t i) {
  char q = s[i++];
  while (s[i]) {
    if (s[i] == q) {
      if (s[i + 1] == q) {
        i += 2;
        continue;
      }
      return i + 1;
    }
    if (s[i] == '\\' && q != '`' && s[i + 1]) i++;
    i++;
  }
  return i;
}

/* One "EXPR [AS NAME]": its expression text and name (both malloc'ed). */
static qv_status split_as(const char *text, char **expr, char **name, qv_error *err) {
  size_t n = strlen(text);
  size_t cut = n, name_at = n;
  int depth = 0;
  for (size_t i = 0; i < n;) {
    char c = text[i];
    if (c == '\'' || c == '"' || c == '`') {
      i = skip_quoted(text, i);
      continue;
    }
    if (c == '(') depth++;
    if (c == ')') depth--;
    if (depth == 0 && i > 0 && isspace((unsigned char)text[i - 1]) && (c == 'a' || c == 'A') &&
        (text[i + 1] == 's' || text[i + 1] == 'S') &&
        (isspace((unsigned char)text[i + 2]) || text[i + 2] == '`')) {
      cut = i;
      name_at = i + 2;
    }
    i++;
  }
  *expr = strndup(text, cut);
  char *nm = strdup(name_at < n ? text + name_at : "");
  if (!*expr || !nm) {
    free(*expr);
    free(nm);
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  char *t = trim(nm);
  if (name_at < n) {
    const char *col = NULL;
    if (!column_arg(t, &col)) {
      qv_status st = qv_error_set(err, QV_EARG, "the name after AS must be a name, not '%s'", t);
      free(*expr);
      free(nm);
      return st;
    }
    *name = strdup(col);
  } else {
    *name = strdup(trim(*expr));
  }
  free(nm);
  if (!*name) {
    free(*expr);
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  return QV_OK;
}

/* Scalar expressions inside aggregate calls ("sum(a * b)"): each distinct
 * text becomes a hidden input column computed batch by batch before the
 * group-by. */
typedef struct input_list {
  char **texts; /* trimmed expression texts */
  char **names; /* their input columns: the text itself, or __qv_inN when a
                   column already has that name */
  int32_t n, cap;
} input_list;

static void inputs_reset(input_list *il) {
  for (int32_t i = 0; i < il->n; i++) {
    free(il->texts[i]);
    free(il->names[i]);
  }
  free(il->texts);
  free(il->names);
  memset(il, 0, sizeof *il);
}

/* The input column for expression text `text` (added when new). */
static qv_status input_for(input_list *il, const qv_schema *schema, const char *text,
                           const char **name, qv_error *err) {
  for (int32_t i = 0; i < il->n; i++)
    if (strcmp(il->texts[i], text) == 0) {
      *name = il->names[i];
      return QV_OK;
    }
  if (il->n == il->cap) {
    int32_t cap = il->cap ? il->cap * 2 : 4;
    char **t2 = realloc(il->texts, sizeof *t2 * (size_t)cap);
    if (t2) il->texts = t2;
    char **n2 = realloc(il->names, sizeof *n2 * (size_t)cap);
    if (n2) il->names = n2;
    if (!t2 || !n2) return qv_error_set(err, QV_ENOMEM, "out of memory");
    il->cap = cap;
  }
  char hidden[32];
  snprintf(hidden, sizeof hidden, "__qv_in%d", il->n);
  bool taken = qv_schema_find(schema, text) >= 0;
  for (int32_t i = 0; i < il->n && !taken; i++) taken = strcmp(il->names[i], text) == 0;
  il->texts[il->n] = strdup(text);
  il->names[il->n] = strdup(taken ? hidden : text);
  if (!il->texts[il->n] || !il->names[il->n]) {
    free(il->texts[il->n]);
    free(il->names[il->n]);
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  *name = il->names[il->n++];
  return QV_OK;
}

/* `call` ("sum(a * b)") with every column argument that is not a column
 * name replaced by its input column, backquoted ("sum(`a * b`)"); the
 * arguments are split at commas outside parentheses and quotes. */
static qv_status lift_args(const char *call, input_list *il, const qv_schema *schema, char **out,
                           qv_error *err) {
  *out = NULL;
  size_t i = 0, n = strlen(call);
  while (is_ident(call[i])) i++;
  int which = lookup_name(call, i);
  size_t open = i;
  while (open < n && call[open] != '(') open++;
  if (which < 0 || open >= n || call[n - 1] != ')') {
    *out = strdup(call); /* qv_aggregate_parse reports it */
    return *out ? QV_OK : qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  qv_agg_kind k = AGG_NAMES[which].kind;
  bool two_cols = k == QV_AGG_CORR || k == QV_AGG_COVAR || k == QV_AGG_COVAR_POP;
  qv_strbuf sb;
  qv_strbuf_init(&sb);
  qv_status st = qv_strbuf_append(&sb, call, (int64_t)open + 1, err);
  size_t start = open + 1;
  int depth = 0, arg = 0;
  for (size_t e = start; e < n && st == QV_OK; e++) {
    char c = call[e];
    if (c == '\'' || c == '"' || c == '`') {
      e = skip_quoted(call, e) - 1;
      continue;
    }
    if (c == '(') depth++;
    if (c == ')') depth--;
    if (!((c == ',' && depth == 0) || e == n - 1)) continue;
    char *a = strndup(call + start, e - start), *copy = a ? strdup(a) : NULL;
    if (!a || !copy) {
      free(a);
      free(copy);
      st = qv_error_set(err, QV_ENOMEM, "out of memory");
      break;
    }
    char *ta = trim(a);
    const char *col = NULL;
    bool column_pos = arg == 0 || (arg == 1 && two_cols);
    if (column_pos && *ta && strcmp(ta, "*") != 0 && !column_arg(trim(copy), &col)) {
      const char *name = NULL;
      st = input_for(il, schema, ta, &name, err);
      if (st == QV_OK) st = qv_strbuf_append_char(&sb, '`', err);
      for (const char *q = name; st == QV_OK && *q; q++) {
        st = qv_strbuf_append_char(&sb, *q, err);
        if (st == QV_OK && *q == '`') st = qv_strbuf_append_char(&sb, '`', err); /* doubled */
      }
      if (st == QV_OK) st = qv_strbuf_append_char(&sb, '`', err);
    } else {
      st = qv_strbuf_append(&sb, call + start, (int64_t)(e - start), err);
    }
    free(a);
    free(copy);
    if (st == QV_OK) st = qv_strbuf_append_char(&sb, call[e] == ',' ? ',' : ')', err);
    start = e + 1;
    arg++;
  }
  if (st == QV_OK) {
    *out = strdup(qv_strbuf_cstr(&sb));
    if (!*out) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  qv_strbuf_reset(&sb);
  return st;
}

typedef struct call_list {
  qv_aggregate *aggs;
  char **storage;
  char **labels; /* hidden column names */
  int32_t n, cap;
} call_list;

static bool same_str(const char *a, const char *b) {
  return a == b || (a && b && strcmp(a, b) == 0);
}

/* The call of cl equal to `a` (kind, inputs, parameters), or -1. */
static int32_t find_same_call(const call_list *cl, const qv_aggregate *a) {
  for (int32_t j = 0; j < cl->n; j++) {
    const qv_aggregate *b = &cl->aggs[j];
    if (b->kind == a->kind && same_str(b->column, a->column) && same_str(b->column2, a->column2) &&
        b->q == a->q && b->k == a->k)
      return j;
  }
  return -1;
}

static qv_status rewrite(const char *expr, call_list *cl, input_list *il, const qv_schema *schema,
                         qv_strbuf *out, int32_t *n_calls, int32_t *only, qv_error *err) {
  size_t n = strlen(expr);
  *n_calls = 0;
  *only = -1;
  for (size_t i = 0; i < n;) {
    char c = expr[i];
    if (c == '\'' || c == '"' || c == '`') {
      size_t j = skip_quoted(expr, i);
      QV_RETURN_NOT_OK(qv_strbuf_append(out, expr + i, (int64_t)(j - i), err));
      i = j;
      continue;
    }
    if (is_ident_start(c) && (i == 0 || !is_ident(expr[i - 1]))) {
      size_t j = i;
      while (is_ident(expr[j])) j++;
      size_t p = j;
      while (isspace((unsigned char)expr[p])) p++;
      if (expr[p] == '(' && lookup_name(expr + i, j - i) >= 0) {
        int depth = 0;
        size_t e = p;
        for (; e < n; e++) {
          if (expr[e] == '`' || expr[e] == '\'' || expr[e] == '"') {
            e = skip_quoted(expr, e) - 1;
            continue;
          }
          if (expr[e] == '(') depth++;
          if (expr[e] == ')' && --depth == 0) break;
        }
        if (e >= n) return qv_error_set(err, QV_EARG, "unbalanced parentheses in '%s'", expr);
        char *raw = strndup(expr + i, e + 1 - i), *call = NULL;
        if (!raw) return qv_error_set(err, QV_ENOMEM, "out of memory");
        qv_status lst = lift_args(raw, il, schema, &call, err);
        free(raw);
        if (lst != QV_OK) return lst;
        if (cl->n == cl->cap) {
          int32_t cap = cl->cap ? cl->cap * 2 : 8;
          qv_aggregate *a = realloc(cl->aggs, sizeof *a * (size_t)cap);
          if (a) cl->aggs = a;
          char **s2 = realloc(cl->storage, sizeof *s2 * (size_t)cap);
          if (s2) cl->storage = s2;
          char **l2 = realloc(cl->labels, sizeof *l2 * (size_t)cap);
          if (l2) cl->labels = l2;
          if (!a || !s2 || !l2) {
            free(call);
            return qv_error_set(err, QV_ENOMEM, "out of memory");
          }
          cl->cap = cap;
        }
        cl->storage[cl->n] = malloc(strlen(call) + 1);
        cl->labels[cl->n] = malloc(32);
        if (!cl->storage[cl->n] || !cl->labels[cl->n]) {
          free(cl->storage[cl->n]);
          free(cl->labels[cl->n]);
          free(call);
          return qv_error_set(err, QV_ENOMEM, "out of memory");
        }
        qv_status st = qv_aggregate_parse(call, cl->storage[cl->n], &cl->aggs[cl->n], err);
        free(call);
        if (st != QV_OK) {
          free(cl->storage[cl->n]);
          free(cl->labels[cl->n]);
          return st;
        }
        int32_t same = find_same_call(cl, &cl->aggs[cl->n]);
        if (same >= 0) { /* corr(v1, v2) * corr(v1, v2): one aggregate, read twice */
          free(cl->storage[cl->n]);
          free(cl->labels[cl->n]);
          QV_RETURN_NOT_OK(qv_strbuf_printf(out, err, "`%s`", cl->labels[same]));
          *only = same;
          (*n_calls)++;
          i = e + 1;
          continue;
        }
        snprintf(cl->labels[cl->n], 32, "__qv_agg%d", cl->n);
        cl->aggs[cl->n].name = cl->labels[cl->n];
        QV_RETURN_NOT_OK(qv_strbuf_printf(out, err, "`%s`", cl->labels[cl->n]));
        *only = cl->n;
        cl->n++;
        (*n_calls)++;
        i = e + 1;
        continue;
      }
      QV_RETURN_NOT_OK(qv_strbuf_append(out, expr + i, (int64_t)(j - i), err));
      i = j;
      continue;
    }
    QV_RETURN_NOT_OK(qv_strbuf_append(out, expr + i, 1, err));
    i++;
  }
  return QV_OK;
}

/* t with one more column per input expression, evaluated batch by batch
 * with the expression engine (the other columns shared). */
static qv_status with_inputs(qv_table *t, const input_list *il, qv_table **out, qv_error *err) {
  const qv_schema *s = qv_table_schema(t);
  int64_t nb = qv_table_num_batches(t);
  int32_t nc = s->type->n_children, ni = il->n;
  qv_bound_expr **be = calloc((size_t)ni, sizeof *be);
  qv_array **batches = calloc((size_t)(nb ? nb : 1), sizeof *batches);
  qv_type *st_type = qv_type_new(QV_STRUCT);
  qv_status st = be && batches && st_type ? QV_OK : qv_error_set(err, QV_ENOMEM, "out of memory");
  for (int32_t i = 0; i < ni && st == QV_OK; i++) {
    qv_expr *e = NULL;
    st = qv_expr_parse(il->texts[i], -1, &e, err);
    if (st == QV_OK) st = qv_expr_bind(e, s, &be[i], err);
    qv_expr_free(e);
    if (st != QV_OK) qv_error_prefix(err, st, "'%s': ", il->texts[i]);
  }
  for (int32_t j = 0; j < nc && st == QV_OK; j++) {
    const qv_field *f = &s->type->children[j];
    st = qv_type_add_child(st_type, f->name, f->nullable, qv_type_ref(f->type), &f->metadata, err);
  }
  for (int32_t i = 0; i < ni && st == QV_OK; i++) {
    qv_type *rt = qv_type_new(qv_bound_expr_result_type(be[i]));
    st = rt ? qv_type_add_child(st_type, il->names[i], true, rt, NULL, err)
            : qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  for (int64_t b = 0; b < nb && st == QV_OK; b++) {
    qv_array *src = NULL;
    st = qv_table_batch(t, b, &src, err);
    qv_array *nbatch = st == QV_OK ? qv_array_new(st_type, 1, nc + ni) : NULL;
    if (st == QV_OK && !nbatch) st = qv_error_set(err, QV_ENOMEM, "out of memory");
    if (st == QV_OK) {
      nbatch->length = src->length;
      nbatch->null_count = 0;
      batches[b] = nbatch;
    }
    for (int32_t j = 0; j < nc && st == QV_OK; j++) {
      qv_array *ch = src->children[j];
      if (src->offset == 0 && ch->length == src->length) nbatch->children[j] = qv_array_ref(ch);
      else st = qv_array_slice(ch, src->offset, src->length, &nbatch->children[j], err);
    }
    for (int32_t i = 0; i < ni && st == QV_OK; i++) {
      st = qv_bound_expr_eval(be[i], src, &nbatch->children[nc + i], err);
      if (st != QV_OK) qv_error_prefix(err, st, "'%s': ", il->texts[i]);
      else if (!qv_type_equals(nbatch->children[nc + i]->type, st_type->children[nc + i].type,
                               false))
        st = qv_error_set(err, QV_ETYPE, "'%s': evaluated to an unexpected type", il->texts[i]);
    }
    if (src) qv_array_unref(src);
  }
  qv_schema *schema = NULL;
  if (st == QV_OK) {
    schema = qv_schema_new(qv_type_ref(st_type));
    if (!schema) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  if (st == QV_OK) st = qv_table_from_batches(schema, batches, nb, out, err);
  if (schema) qv_schema_unref(schema);
  for (int64_t b = 0; b < nb && batches; b++)
    if (batches[b]) qv_array_unref(batches[b]);
  for (int32_t i = 0; i < ni && be; i++) qv_bound_expr_free(be[i]);
  free(be);
  free(batches);
  if (st_type) qv_type_unref(st_type);
  return st;
}

qv_status qv_table_group_by_exprs(qv_table *t, const char *const *keys, int32_t n_keys,
                                  const char *const *exprs, int32_t n_exprs,
                                  const qv_group_by_options *opts, qv_table **out, qv_error *err) {
  if (n_exprs < 0 || (n_exprs && !exprs))
    return qv_error_set(err, QV_EARG, "group-by: no aggregate expressions");
  if (!t) return qv_error_set(err, QV_EARG, "group-by: needs a table, keys and aggregates");
  call_list cl;
  memset(&cl, 0, sizeof cl);
  input_list il;
  memset(&il, 0, sizeof il);
  char **names = calloc((size_t)(n_exprs ? n_exprs : 1), sizeof *names);
  char **texts = calloc((size_t)(n_exprs ? n_exprs : 1), sizeof *texts);
  int32_t *direct = malloc(sizeof(int32_t) * (size_t)(n_exprs ? n_exprs : 1));
  qv_status st = names && texts && direct ? QV_OK : qv_error_set(err, QV_ENOMEM, "out of memory");
  for (int32_t i = 0; i < n_exprs && st == QV_OK; i++) {
    char *expr = NULL;
    st = split_as(exprs[i], &expr, &names[i], err);
    qv_strbuf sb;
    qv_strbuf_init(&sb);
    int32_t nc = 0, only = -1;
    if (st == QV_OK) st = rewrite(expr, &cl, &il, qv_table_schema(t), &sb, &nc, &only, err);
    if (st == QV_OK && nc == 0)
      st = qv_error_set(err, QV_EARG, "no aggregate call in '%s' (e.g. sum(col), count(*))",
                        trim(expr));
    if (st == QV_OK) {
      texts[i] = strdup(qv_strbuf_cstr(&sb));
      if (!texts[i]) st = qv_error_set(err, QV_ENOMEM, "out of memory");
      char hidden[40];
      snprintf(hidden, sizeof hidden, "`__qv_agg%d`", only);
      direct[i] = (nc == 1 && texts[i] && strcmp(trim(texts[i]), hidden) == 0) ? only : -1;
    }
    qv_strbuf_reset(&sb);
    free(expr);
    if (st != QV_OK) qv_error_prefix(err, st, "aggregate %d ('%s'): ", i + 1, exprs[i]);
  }
  qv_table *agg = NULL, *src = NULL;
  if (st == QV_OK && il.n > 0) st = with_inputs(t, &il, &src, err);
  if (st == QV_OK)
    st = qv_table_group_by(src ? src : t, keys, n_keys, cl.aggs, cl.n, opts, &agg, err);
  if (src) qv_table_unref(src);
  inputs_reset(&il);
  /* the final columns: keys, then each expression */
  int32_t n_out = n_keys + n_exprs;
  qv_array **cols = calloc((size_t)(n_out ? n_out : 1), sizeof *cols);
  const char **onames = calloc((size_t)(n_out ? n_out : 1), sizeof *onames);
  qv_array *batch = NULL;
  int64_t ng = agg ? qv_table_num_rows(agg) : 0;
  if (st == QV_OK && (!cols || !onames)) st = qv_error_set(err, QV_ENOMEM, "out of memory");
  if (st == QV_OK && ng > 0) st = qv_table_batch(agg, 0, &batch, err);
  const qv_schema *as = agg ? qv_table_schema(agg) : NULL;
  for (int32_t i = 0; i < n_keys && st == QV_OK; i++) {
    onames[i] = keys[i];
    if (batch) cols[i] = qv_array_ref(batch->children[i]);
    else st = qv_array_nulls(as->type->children[i].type, 0, &cols[i], err);
  }
  for (int32_t i = 0; i < n_exprs && st == QV_OK; i++) {
    onames[n_keys + i] = names[i];
    if (direct[i] >= 0) {
      int32_t c = n_keys + direct[i];
      if (batch) cols[n_keys + i] = qv_array_ref(batch->children[c]);
      else st = qv_array_nulls(as->type->children[c].type, 0, &cols[n_keys + i], err);
      continue;
    }
    qv_expr *e = NULL;
    qv_bound_expr *be = NULL;
    st = qv_expr_parse(texts[i], -1, &e, err);
    if (st == QV_OK) st = qv_expr_bind(e, as, &be, err);
    if (st == QV_OK) {
      if (batch) st = qv_bound_expr_eval(be, batch, &cols[n_keys + i], err);
      else {
        qv_type *rt = qv_type_new(qv_bound_expr_result_type(be));
        st = rt ? qv_array_nulls(rt, 0, &cols[n_keys + i], err)
                : qv_error_set(err, QV_ENOMEM, "out of memory");
        if (rt) qv_type_unref(rt);
      }
    }
    qv_bound_expr_free(be);
    qv_expr_free(e);
    if (st != QV_OK) qv_error_prefix(err, st, "aggregate %d ('%s'): ", i + 1, exprs[i]);
  }
  for (int32_t i = 0; i < n_out && st == QV_OK; i++)
    for (int32_t j = 0; j < i; j++)
      if (strcmp(onames[i], onames[j]) == 0) {
        st = qv_error_set(err, QV_EARG,
                          "group-by: two output columns are named '%s' (name one with AS)",
                          onames[i]);
        break;
      }
  if (st == QV_OK) st = qvg_build_table(onames, cols, n_out, ng, out, err);
  for (int32_t i = 0; cols && i < n_out; i++)
    if (cols[i]) qv_array_unref(cols[i]);
  free(cols);
  free(onames);
  if (batch) qv_array_unref(batch);
  if (agg) qv_table_unref(agg);
  for (int32_t i = 0; i < cl.n; i++) {
    free(cl.storage[i]);
    free(cl.labels[i]);
  }
  free(cl.aggs);
  free(cl.storage);
  free(cl.labels);
  for (int32_t i = 0; names && i < n_exprs; i++) free(names[i]);
  for (int32_t i = 0; texts && i < n_exprs; i++) free(texts[i]);
  free(names);
  free(texts);
  free(direct);
  return st;
}
