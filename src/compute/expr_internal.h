/*
 * expr_internal.h — shapes shared by the three parts of the expression
 * engine: the syntax tree (expr_parse.c), the bound tree (expr_bind.c) and
 * the evaluator (expr_eval.c). Compute layer, private to src/compute.
 * The language itself is specified in docs/expressions.md.
 */
#ifndef QUIVER_EXPR_INTERNAL_H
#define QUIVER_EXPR_INTERNAL_H

#include "quiver/expr.h"

/** Most segments in a dotted column path (a.b.c). */
#define QVX_MAX_PATH 32

/* ------------------------------------------------------------------------ */
/* Syntax tree                                                               */

typedef enum qvx_lit_kind {
  QVX_LIT_NULL,
  QVX_LIT_BOOL,
  QVX_LIT_INT,   /* fits int64: i */
  QVX_LIT_UINT,  /* above INT64_MAX, fits uint64: u */
  QVX_LIT_FLOAT, /* f */
  QVX_LIT_STRING /* s, slen (decoded bytes, NUL-terminated copy) */
} qvx_lit_kind;

typedef struct qvx_lit {
  qvx_lit_kind kind;
  bool b;
  int64_t i;
  uint64_t u;
  double f;
  const char *s;
  int64_t slen;
} qvx_lit;

typedef enum qvx_node_kind {
  QVX_N_LITERAL,
  QVX_N_COLUMN,
  QVX_N_NOT,
  QVX_N_NEG,
  QVX_N_AND,
  QVX_N_OR,
  QVX_N_CMP,     /* op: qvx_op comparison */
  QVX_N_ARITH,   /* op: qvx_op arithmetic */
  QVX_N_IS_NULL, /* negated: is not null */
  QVX_N_IN,      /* args[0] operand, args[1..] literals; negated: not in */
  QVX_N_CALL     /* op: qvx_fn */
} qvx_node_kind;

typedef enum qvx_op {
  QVX_EQ,
  QVX_NE,
  QVX_LT,
  QVX_LE,
  QVX_GT,
  QVX_GE,
  QVX_ADD,
  QVX_SUB,
  QVX_MUL,
  QVX_DIV,
  QVX_MOD
} qvx_op;

typedef enum qvx_fn {
  QVX_FN_LEN,
  QVX_FN_STARTS_WITH,
  QVX_FN_ENDS_WITH,
  QVX_FN_CONTAINS,
  QVX_FN_ABS,
  /* numeric functions (QVX_B_MATH) */
  QVX_FN_SQRT,
  QVX_FN_EXP,
  QVX_FN_LN, /* log(x) and ln(x): natural logarithm */
  QVX_FN_LOG10,
  QVX_FN_LOG2,
  QVX_FN_FLOOR,
  QVX_FN_CEIL,
  QVX_FN_ROUND,
  QVX_FN_POW,
  /* strings (QVX_B_STRMAP) */
  QVX_FN_LOWER,
  QVX_FN_UPPER,
  QVX_FN_SUBSTR, /* substr(s, start[, length]) */
  /* choices */
  QVX_FN_COALESCE, /* coalesce(a, b) */
  QVX_FN_IF,       /* if(cond, a, b) */
  QVX_FN_CAST      /* cast(x, 'int64' | 'double' | 'string' | 'bool') */
} qvx_fn;

typedef struct qvx_node {
  qvx_node_kind kind;
  int op;             /* qvx_op or qvx_fn */
  bool negated;       /* is not null / not in */
  int32_t start, end; /* byte span of the whole node in the text */
  int32_t op_pos;     /* byte position of the operator / function name */
  int32_t depth;      /* 1 for leaves */
  qvx_lit lit;        /* LITERAL */
  int32_t n_path;     /* COLUMN: path segments (NUL-terminated names) */
  char **path;
  int32_t n_args;
  struct qvx_node **args;
} qvx_node;

struct qv_expr {
  char *text; /* NUL-terminated copy */
  int64_t len;
  qvx_node *root;
  void *arena; /* every node and string of the tree */
};

/** Operator spelling ("==", "+", ...) and function name. Static. */
const char *qvx_op_name(int op);
const char *qvx_fn_name(int fn);

/**
 * Set an error that points into the expression text: the message formed
 * from fmt, then " at column C" (or " at line L, column C" for multi-line
 * text), then ":", the line holding byte `pos` and a caret under it.
 * Returns st.
 */
qv_status qvx_error_at(qv_error *err, qv_status st, const char *text, int64_t len, int64_t pos,
                       const char *fmt, ...) QV_PRINTF(6, 7);

/** Append the canonical rendering of one node (see qv_expr_to_string). */
qv_status qvx_render(const qvx_node *n, qv_strbuf *out, qv_error *err);

/* ------------------------------------------------------------------------ */
/* Bound tree                                                                */

/* The kinds of values the evaluator computes with. */
typedef enum qvx_kind {
  QVX_K_NULL, /* the untyped null literal */
  QVX_K_BOOL, /* bits */
  QVX_K_I64,  /* int64_t; every integer type except uint64 */
  QVX_K_U64,  /* uint64_t; uint64 columns and literals above INT64_MAX */
  QVX_K_F64,  /* double; half_float, float, double */
  QVX_K_STR,  /* string or binary bytes (see qvx_vec.str) */
  QVX_K_LIST, /* a list column; only len() takes it */
  QVX_K_ANY   /* a column of another type; only `is null` takes it */
} qvx_kind;

typedef enum qvx_bkind {
  QVX_B_LIT,
  QVX_B_COL,
  QVX_B_NOT,
  QVX_B_NEG,
  QVX_B_ABS,
  QVX_B_AND,
  QVX_B_OR,
  QVX_B_CMP,
  QVX_B_ARITH,
  QVX_B_IS_NULL,
  QVX_B_IN,
  QVX_B_LEN,
  QVX_B_STRFN,  /* starts_with / ends_with / contains: op is the qvx_fn */
  QVX_B_MATH,   /* sqrt, exp, log..., floor, ceil, round, pow: op is the qvx_fn */
  QVX_B_STRMAP, /* lower / upper / substr: op is the qvx_fn */
  QVX_B_COALESCE,
  QVX_B_IF,   /* a: condition, b: then, third: else */
  QVX_B_CAST, /* a: the value; out: the target kind */
  QVX_B_DICT  /* child evaluated over a dictionary, then mapped by indices */
} qvx_bkind;

/* String access: logical element i of a string vector. */
typedef enum qvx_str_mode {
  QVX_S_SCALAR, /* the same bytes for every row */
  QVX_S_OFF32,  /* int32 offsets + data */
  QVX_S_OFF64,  /* int64 offsets + data */
  QVX_S_VIEW    /* 16-byte views + variadic data buffers */
} qvx_str_mode;

typedef struct qvx_str {
  qvx_str_mode mode;
  const uint8_t *offsets;  /* OFF32/OFF64: offsets buffer; VIEW: views */
  int64_t base;            /* physical slot of logical element 0 */
  const uint8_t *data;     /* OFF32/OFF64: data; SCALAR: the bytes */
  int64_t data_size;       /* OFF32/OFF64: data size; SCALAR: length */
  qv_buffer *const *vbufs; /* VIEW: variadic buffers */
  int32_t n_vbufs;
  const int64_t *indirect; /* when set: logical i reads element indirect[i] */
} qvx_str;

/* One evaluated operand: n values of one kind, validity aligned at bit 0. */
typedef struct qvx_vec {
  qvx_kind kind;
  bool is_binary;
  int64_t n;
  const uint8_t *valid; /* NULL: every row valid */
  const void *values;   /* BOOL: bits; I64/U64/F64: arrays */
  qvx_str str;          /* STR */
  const qv_array *list; /* LIST: the list array ... */
  int64_t list_base;    /* ... and the physical slot of element 0 */
} qvx_vec;

/* A resolved column: child indices from the batch down to the leaf. */
typedef struct qvx_col {
  int32_t depth;
  int32_t path[QVX_MAX_PATH];
  char *name;    /* dotted display name */
  qv_type *type; /* the leaf's type (reference) */
} qvx_col;

/* A growable scratch area owned by a node and reused across batches. */
typedef struct qvx_scratch {
  uint8_t *p;
  int64_t cap;
} qvx_scratch;

typedef struct qvx_bnode {
  qvx_bkind kind;
  int op;
  bool negated;
  qvx_kind out;    /* kind of the result */
  bool is_binary;  /* STR results: binary rather than string */
  bool can_fail;   /* may raise an error at evaluation */
  bool in_dict;    /* COL: read the dictionary's values (inside a DICT) */
  int32_t ref_col; /* -1 no column, -2 several, else the one column used */
  int32_t start, end, op_pos;
  int32_t col;             /* COL: index into qv_bound_expr.cols */
  qvx_lit lit;             /* LIT (string bytes owned by the bound expression) */
  struct qvx_bnode *a, *b; /* operands */
  struct qvx_bnode *third; /* IF: the else operand; STRMAP substr: the length (or NULL) */
  /* IN: the literal set, sorted, in the comparison kind `in_kind` */
  qvx_kind in_kind;
  int64_t in_n;
  int64_t *in_i64;
  uint64_t *in_u64;
  double *in_f64;
  const uint8_t **in_str;
  int64_t *in_str_len;
  bool in_has_null, in_has_true, in_has_false;
  /* working memory */
  qvx_scratch s_valid, s_values, s_aux, s_aux2, s_care;
  int64_t lit_filled; /* LIT: rows of s_values already holding the value */
  /* DICT: result cached for the dictionary array it was computed from */
  qv_array *cached_dict;
  qvx_vec cached;
} qvx_bnode;

struct qv_bound_expr {
  char *text;
  int64_t len;
  qvx_bnode *root;
  int32_t n_cols;
  qvx_col *cols;
  int32_t n_nodes;
  qvx_bnode **nodes; /* every node, for freeing */
  char **strings;    /* literal bytes owned here */
  int32_t n_strings;
};

/** Human name of an evaluation kind ("int64", "string", ...). */
const char *qvx_kind_name(qvx_kind k, bool is_binary);

#endif /* QUIVER_EXPR_INTERNAL_H */
