/*
 * expr_parse.c — lexer and recursive-descent parser of the expression
 * language (docs/expressions.md), its canonical rendering, and the
 * caret-style error messages that parse and bind errors share. Compute
 * layer; needs only core. Produces the syntax tree of expr_internal.h;
 * expr_bind.c gives it types, expr_eval.c evaluates it.
 *
 * The text is tokenised up front (at most one token per byte, and the text
 * is bounded by QV_EXPR_MAX_LENGTH). Parsing recursion is bounded by
 * QV_EXPR_MAX_DEPTH, and so is the depth of the tree built, so that
 * binding, rendering and evaluation (all recursive) stay shallow.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute/expr_internal.h"

/* ======================================================================== */
/* Arena: every node and string of one tree, freed at once                   */

typedef struct arena_block {
  struct arena_block *next;
  size_t used, cap;
  max_align_t data[];
} arena_block;

static void *arena_alloc(void **arena, size_t n) {
  n = (n + 15) & ~(size_t)15;
  arena_block *b = *arena;
  if (!b || b->cap - b->used < n) {
    size_t cap = n > 4096 ? n : 4096;
    arena_block *nb = malloc(sizeof *nb + cap);
    if (!nb) return NULL;
    nb->next = b;
    nb->used = 0;
    nb->cap = cap;
    *arena = nb;
    b = nb;
  }
  void *p = (char *)b->data + b->used;
  b->used += n;
  memset(p, 0, n);
  return p;
}

static void arena_free(void *arena) {
  arena_block *b = arena;
  while (b) {
    arena_block *next = b->next;
    free(b);
    b = next;
  }
}

/* ======================================================================== */
/* Error messages with a caret                                               */

/* Display width of bytes [a, b): UTF-8 continuation bytes take no column. */
static int64_t cols_between(const char *t, int64_t a, int64_t b) {
  int64_t c = 0;
  for (int64_t i = a; i < b; i++)
    if (((uint8_t)t[i] & 0xC0) != 0x80) c++;
  return c;
}

/* Longest excerpt of a line shown under an error, in bytes. */
#define EXCERPT_MAX 72
/* Bytes of context kept before the caret when a long line is cut. */
#define EXCERPT_BEFORE 36

qv_status qvx_error_at(qv_error *err, qv_status st, const char *text, int64_t len, int64_t pos,
                       const char *fmt, ...) {
  if (!err) return st;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (pos < 0) pos = 0;
  if (pos > len) pos = len;
  int64_t line = 1, ls = 0;
  bool multiline = memchr(text, '\n', (size_t)len) != NULL;
  for (int64_t i = 0; i < pos; i++)
    if (text[i] == '\n') {
      line++;
      ls = i + 1;
    }
  int64_t le = pos;
  while (le < len && text[le] != '\n') le++;
  int64_t col = cols_between(text, ls, pos) + 1;
  /* Cut long lines to a window around the caret. */
  int64_t ws = ls, we = le;
  bool cut_front = false, cut_back = false;
  if (we - ws > EXCERPT_MAX) {
    if (pos - ws > EXCERPT_BEFORE) {
      ws = pos - EXCERPT_BEFORE;
      while (ws < pos && ((uint8_t)text[ws] & 0xC0) == 0x80) ws++;
      cut_front = true;
    }
    if (we - ws > EXCERPT_MAX) {
      we = ws + EXCERPT_MAX;
      while (we > pos && we < le && ((uint8_t)text[we] & 0xC0) == 0x80) we--;
      cut_back = true;
    }
  }
  char excerpt[EXCERPT_MAX * 2 + 16];
  size_t e = 0;
  if (cut_front) {
    memcpy(excerpt, "...", 3);
    e = 3;
  }
  for (int64_t i = ws; i < we; i++) {
    uint8_t c = (uint8_t)text[i];
    excerpt[e++] = (c == '\t' || c == '\r' || c < 0x20 || c == 0x7f) ? ' ' : (char)c;
  }
  if (cut_back) {
    memcpy(excerpt + e, "...", 3);
    e += 3;
  }
  excerpt[e] = '\0';
  int64_t caret = (cut_front ? 3 : 0) + cols_between(text, ws, pos);
  char where[64];
  if (multiline) snprintf(where, sizeof where, "line %" PRId64 ", column %" PRId64, line, col);
  else snprintf(where, sizeof where, "column %" PRId64, col);
  char pad[EXCERPT_MAX + 8];
  if (caret > EXCERPT_MAX + 4) caret = EXCERPT_MAX + 4;
  memset(pad, ' ', (size_t)caret);
  pad[caret] = '\0';
  return qv_error_set(err, st, "%s at %s:\n  %s\n  %s^", msg, where, excerpt, pad);
}

/* ======================================================================== */
/* Lexer                                                                     */

typedef enum tok_kind {
  T_END,
  T_IDENT,  /* name in s/slen; quoted when backquoted */
  T_INT,    /* magnitude in u (sign comes from a unary minus) */
  T_FLOAT,  /* f */
  T_STRING, /* decoded bytes in s/slen */
  T_LPAREN,
  T_RPAREN,
  T_COMMA,
  T_DOT,
  T_OP, /* op: qvx_op */
  T_AND,
  T_OR,
  T_NOT,
  T_IS,
  T_IN,
  T_NULL,
  T_TRUE,
  T_FALSE
} tok_kind;

typedef struct token {
  tok_kind kind;
  int32_t start, end; /* byte span in the text */
  int op;
  bool quoted;
  uint64_t u;
  double f;
  char *s; /* arena copy, NUL-terminated */
  int64_t slen;
} token;

typedef struct parser {
  const char *text;
  int64_t len;
  void **arena;
  token *toks;
  int64_t n_toks, cap_toks, pos;
  int32_t depth; /* current recursion depth */
  qv_error *err;
} parser;

static bool ident_start(int c) { return isalpha(c) || c == '_' || c >= 0x80; }
static bool ident_char(int c) { return isalnum(c) || c == '_' || c >= 0x80; }

static const struct {
  const char *word;
  tok_kind kind;
} KEYWORDS[] = {{"and", T_AND}, {"or", T_OR},     {"not", T_NOT},   {"is", T_IS},
                {"in", T_IN},   {"null", T_NULL}, {"true", T_TRUE}, {"false", T_FALSE}};

static tok_kind keyword_kind(const char *s, int64_t n) {
  for (size_t k = 0; k < sizeof KEYWORDS / sizeof KEYWORDS[0]; k++) {
    size_t wl = strlen(KEYWORDS[k].word);
    if ((size_t)n == wl && strncasecmp(s, KEYWORDS[k].word, wl) == 0) return KEYWORDS[k].kind;
  }
  return T_IDENT;
}

static qv_status perr(parser *p, int64_t pos, const char *fmt, ...) QV_PRINTF(3, 4);
static qv_status perr(parser *p, int64_t pos, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return qvx_error_at(p->err, QV_EINVAL, p->text, p->len, pos, "%s", msg);
}

static qv_status push_tok(parser *p, const token *t) {
  if (p->n_toks == p->cap_toks) {
    int64_t cap = p->cap_toks ? p->cap_toks * 2 : 32;
    token *nt = realloc(p->toks, sizeof *nt * (size_t)cap);
    if (!nt) return qv_error_set(p->err, QV_ENOMEM, "out of memory tokenising an expression");
    p->toks = nt;
    p->cap_toks = cap;
  }
  p->toks[p->n_toks++] = *t;
  return QV_OK;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Encode a code point (< 0x110000, not a surrogate) as UTF-8. */
static int utf8_put(uint32_t cp, char *o) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* A string literal starting at the quote at t[i]; decoded into tok. */
static qv_status lex_string(parser *p, int64_t i, token *tok, int64_t *next) {
  const char *t = p->text;
  char q = t[i];
  int64_t j = i + 1;
  /* Decoded text is never longer than the source. */
  char *out = arena_alloc(p->arena, (size_t)(p->len - i) + 1);
  if (!out) return qv_error_set(p->err, QV_ENOMEM, "out of memory parsing a string literal");
  int64_t o = 0;
  for (;;) {
    if (j >= p->len)
      return perr(p, i, "unterminated string literal (no closing %s)", q == '"' ? "\"" : "'");
    char c = t[j];
    if (c == q) break;
    if (c != '\\') {
      out[o++] = c;
      j++;
      continue;
    }
    if (j + 1 >= p->len)
      return perr(p, i, "unterminated string literal (no closing %s)", q == '"' ? "\"" : "'");
    char e = t[j + 1];
    switch (e) {
      case '\\':
      case '\'':
      case '"':
        out[o++] = e;
        j += 2;
        break;
      case 'n':
        out[o++] = '\n';
        j += 2;
        break;
      case 't':
        out[o++] = '\t';
        j += 2;
        break;
      case 'r':
        out[o++] = '\r';
        j += 2;
        break;
      case '0':
        out[o++] = '\0';
        j += 2;
        break;
      case 'x': {
        int h1 = j + 2 < p->len ? hexval((uint8_t)t[j + 2]) : -1;
        int h2 = j + 3 < p->len ? hexval((uint8_t)t[j + 3]) : -1;
        if (h1 < 0 || h2 < 0)
          return perr(p, j, "expected two hexadecimal digits after '\\x' in a string literal");
        out[o++] = (char)(h1 * 16 + h2);
        j += 4;
        break;
      }
      case 'u': {
        uint32_t cp = 0;
        for (int k = 0; k < 4; k++) {
          int h = j + 2 + k < p->len ? hexval((uint8_t)t[j + 2 + k]) : -1;
          if (h < 0)
            return perr(p, j, "expected four hexadecimal digits after '\\u' in a string literal");
          cp = cp * 16 + (uint32_t)h;
        }
        if (cp >= 0xD800 && cp <= 0xDFFF)
          return perr(p, j, "'\\u%04X' is a UTF-16 surrogate, not a character", (unsigned)cp);
        o += utf8_put(cp, out + o);
        j += 6;
        break;
      }
      default:
        if ((uint8_t)e < 0x20 || (uint8_t)e >= 0x7f)
          return perr(p, j,
                      "unknown escape in a string literal (known: \\\\ \\' \\\" \\n \\t \\r \\0 "
                      "\\xHH \\uHHHH)");
        return perr(p, j,
                    "unknown escape '\\%c' in a string literal (known: \\\\ \\' \\\" \\n \\t \\r "
                    "\\0 \\xHH \\uHHHH)",
                    e);
    }
  }
  out[o] = '\0';
  tok->kind = T_STRING;
  tok->s = out;
  tok->slen = o;
  *next = j + 1;
  return QV_OK;
}

/* A number starting at t[i] (a digit, or '.' followed by a digit). */
static qv_status lex_number(parser *p, int64_t i, token *tok, int64_t *next) {
  const char *t = p->text;
  int64_t j = i;
  bool is_float = false;
  while (j < p->len && isdigit((uint8_t)t[j])) j++;
  if (j < p->len && t[j] == '.') {
    is_float = true;
    j++;
    while (j < p->len && isdigit((uint8_t)t[j])) j++;
  }
  if (j < p->len && (t[j] == 'e' || t[j] == 'E')) {
    int64_t k = j + 1;
    if (k < p->len && (t[k] == '+' || t[k] == '-')) k++;
    if (k < p->len && isdigit((uint8_t)t[k])) {
      is_float = true;
      j = k;
      while (j < p->len && isdigit((uint8_t)t[j])) j++;
    }
  }
  if (j < p->len && (ident_char((uint8_t)t[j]) || t[j] == '.')) {
    int64_t k = j;
    while (k < p->len && (ident_char((uint8_t)t[k]) || t[k] == '.')) k++;
    return perr(p, i, "invalid number '%.*s'", (int)(k - i > 40 ? 40 : k - i), t + i);
  }
  char buf[128];
  int64_t n = j - i;
  if (n >= (int64_t)sizeof buf)
    return perr(p, i, "number literal longer than %d characters", (int)sizeof buf - 1);
  memcpy(buf, t + i, (size_t)n);
  buf[n] = '\0';
  if (is_float) {
    errno = 0;
    double f = strtod(buf, NULL);
    if (isinf(f)) return perr(p, i, "float literal '%s' is out of range", buf);
    tok->kind = T_FLOAT;
    tok->f = f;
  } else {
    uint64_t u = 0;
    for (int64_t k = 0; k < n; k++) {
      uint64_t d = (uint64_t)(buf[k] - '0');
      if (u > (UINT64_MAX - d) / 10)
        return perr(p, i, "integer literal %s is out of range (the largest is %" PRIu64 ")", buf,
                    UINT64_MAX);
      u = u * 10 + d;
    }
    tok->kind = T_INT;
    tok->u = u;
  }
  *next = j;
  return QV_OK;
}

static qv_status lex(parser *p) {
  const char *t = p->text;
  int64_t i = 0;
  while (i < p->len) {
    uint8_t c = (uint8_t)t[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      i++;
      continue;
    }
    token tok;
    memset(&tok, 0, sizeof tok);
    tok.start = (int32_t)i;
    int64_t next = i + 1;
    bool prev_ident = p->n_toks > 0 && (p->toks[p->n_toks - 1].kind == T_IDENT);
    if (c == '.' && !prev_ident && i + 1 < p->len && isdigit((uint8_t)t[i + 1])) {
      QV_RETURN_NOT_OK(lex_number(p, i, &tok, &next));
    } else if (isdigit(c)) {
      QV_RETURN_NOT_OK(lex_number(p, i, &tok, &next));
    } else if (c == '\'' || c == '"') {
      QV_RETURN_NOT_OK(lex_string(p, i, &tok, &next));
    } else if (c == '`') {
      char *out = arena_alloc(p->arena, (size_t)(p->len - i) + 1);
      if (!out) return qv_error_set(p->err, QV_ENOMEM, "out of memory parsing a name");
      int64_t j = i + 1, o = 0;
      for (;;) {
        if (j >= p->len) return perr(p, i, "unterminated backquoted name (no closing `)");
        if (t[j] == '`') {
          if (j + 1 < p->len && t[j + 1] == '`') {
            out[o++] = '`';
            j += 2;
            continue;
          }
          break;
        }
        if (t[j] == '\0') return perr(p, j, "a name cannot contain a NUL byte");
        out[o++] = t[j++];
      }
      out[o] = '\0';
      tok.kind = T_IDENT;
      tok.quoted = true;
      tok.s = out;
      tok.slen = o;
      next = j + 1;
    } else if (ident_start(c)) {
      int64_t j = i;
      while (j < p->len && ident_char((uint8_t)t[j])) j++;
      tok.kind = keyword_kind(t + i, j - i);
      if (tok.kind == T_IDENT) {
        char *out = arena_alloc(p->arena, (size_t)(j - i) + 1);
        if (!out) return qv_error_set(p->err, QV_ENOMEM, "out of memory parsing a name");
        memcpy(out, t + i, (size_t)(j - i));
        out[j - i] = '\0';
        tok.s = out;
        tok.slen = j - i;
      }
      next = j;
    } else {
      char c2 = i + 1 < p->len ? t[i + 1] : '\0';
      tok.kind = T_OP;
      switch (c) {
        case '(': tok.kind = T_LPAREN; break;
        case ')': tok.kind = T_RPAREN; break;
        case ',': tok.kind = T_COMMA; break;
        case '.': tok.kind = T_DOT; break;
        case '+': tok.op = QVX_ADD; break;
        case '-': tok.op = QVX_SUB; break;
        case '*': tok.op = QVX_MUL; break;
        case '/': tok.op = QVX_DIV; break;
        case '%': tok.op = QVX_MOD; break;
        case '=':
          tok.op = QVX_EQ;
          if (c2 == '=') next++;
          break;
        case '!':
          if (c2 == '=') {
            tok.op = QVX_NE;
            next++;
          } else tok.kind = T_NOT;
          break;
        case '<':
          if (c2 == '=') {
            tok.op = QVX_LE;
            next++;
          } else if (c2 == '>') {
            tok.op = QVX_NE;
            next++;
          } else tok.op = QVX_LT;
          break;
        case '>':
          if (c2 == '=') {
            tok.op = QVX_GE;
            next++;
          } else tok.op = QVX_GT;
          break;
        case '&':
          if (c2 != '&') return perr(p, i, "unexpected '&' (did you mean '&&' or 'and'?)");
          tok.kind = T_AND;
          next++;
          break;
        case '|':
          if (c2 != '|') return perr(p, i, "unexpected '|' (did you mean '||' or 'or'?)");
          tok.kind = T_OR;
          next++;
          break;
        default:
          if (c >= 0x20 && c < 0x7f) return perr(p, i, "unexpected character '%c'", c);
          return perr(p, i, "unexpected byte 0x%02x", c);
      }
    }
    tok.end = (int32_t)next;
    QV_RETURN_NOT_OK(push_tok(p, &tok));
    i = next;
  }
  token end;
  memset(&end, 0, sizeof end);
  end.kind = T_END;
  end.start = end.end = (int32_t)p->len;
  return push_tok(p, &end);
}

/* ======================================================================== */
/* Parser                                                                    */

static const token *peek(const parser *p) { return &p->toks[p->pos]; }
static const token *peek2(const parser *p) {
  return &p->toks[p->pos + 1 < p->n_toks ? p->pos + 1 : p->pos];
}
static const token *advance(parser *p) {
  const token *t = &p->toks[p->pos];
  if (t->kind != T_END) p->pos++;
  return t;
}

/* "'and'", "end of input", "'label'" ... for messages. */
static void describe(const parser *p, const token *t, char *out, size_t cap) {
  if (t->kind == T_END) {
    snprintf(out, cap, "end of input");
    return;
  }
  int n = t->end - t->start;
  if (n > 30) snprintf(out, cap, "'%.27s...'", p->text + t->start);
  else snprintf(out, cap, "'%.*s'", n, p->text + t->start);
}

/* "expected <what>, found <token>" at the token. */
static qv_status expected(parser *p, const token *t, const char *what) {
  char d[48];
  describe(p, t, d, sizeof d);
  return perr(p, t->start, "expected %s, found %s", what, d);
}

static qvx_node *new_node(parser *p, qvx_node_kind kind, int32_t start, int32_t end) {
  qvx_node *n = arena_alloc(p->arena, sizeof *n);
  if (!n) {
    qv_error_set(p->err, QV_ENOMEM, "out of memory building an expression");
    return NULL;
  }
  n->kind = kind;
  n->start = start;
  n->end = end;
  n->op_pos = start;
  n->depth = 1;
  return n;
}

/* Attach children (copied into the arena) and check the tree depth. */
static qv_status set_args(parser *p, qvx_node *n, qvx_node **args, int32_t count) {
  n->args = arena_alloc(p->arena, sizeof *args * (size_t)(count ? count : 1));
  if (!n->args) return qv_error_set(p->err, QV_ENOMEM, "out of memory building an expression");
  n->n_args = count;
  int32_t d = 0;
  for (int32_t k = 0; k < count; k++) {
    n->args[k] = args[k];
    if (args[k]->depth > d) d = args[k]->depth;
  }
  n->depth = d + 1;
  if (n->depth > QV_EXPR_MAX_DEPTH)
    return perr(p, n->op_pos, "expression nests deeper than %d levels", QV_EXPR_MAX_DEPTH);
  return QV_OK;
}

static qv_status parse_or(parser *p, qvx_node **out);

static qv_status enter(parser *p, const token *t) {
  if (++p->depth > QV_EXPR_MAX_DEPTH)
    return perr(p, t->start, "expression nests deeper than %d levels", QV_EXPR_MAX_DEPTH);
  return QV_OK;
}

/* What to say when an operand is missing after token `after`. */
static qv_status need_operand(parser *p, const token *after) {
  char what[96];
  char d[48];
  describe(p, after, d, sizeof d);
  snprintf(what, sizeof what, "an expression after %s", d);
  return expected(p, peek(p), what);
}

/* literal: number (with an optional leading '-'), string, true/false/null */
static bool at_literal(const parser *p) {
  const token *t = peek(p);
  if (t->kind == T_OP && t->op == QVX_SUB) {
    tok_kind k = peek2(p)->kind;
    return k == T_INT || k == T_FLOAT;
  }
  return t->kind == T_INT || t->kind == T_FLOAT || t->kind == T_STRING || t->kind == T_NULL ||
         t->kind == T_TRUE || t->kind == T_FALSE;
}

static qv_status parse_literal(parser *p, qvx_node **out) {
  const token *t = advance(p);
  bool neg = false;
  int32_t start = t->start;
  if (t->kind == T_OP) {
    neg = true;
    t = advance(p);
  }
  qvx_node *n = new_node(p, QVX_N_LITERAL, start, t->end);
  if (!n) return QV_ENOMEM;
  switch (t->kind) {
    case T_INT:
      if (!neg && t->u <= (uint64_t)INT64_MAX) {
        n->lit.kind = QVX_LIT_INT;
        n->lit.i = (int64_t)t->u;
      } else if (!neg) {
        n->lit.kind = QVX_LIT_UINT;
        n->lit.u = t->u;
      } else if (t->u <= (uint64_t)INT64_MAX + 1) {
        n->lit.kind = QVX_LIT_INT;
        n->lit.i = t->u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)t->u;
      } else {
        return perr(p, start,
                    "integer literal -%" PRIu64 " is out of range (the smallest is %" PRId64 ")",
                    t->u, INT64_MIN);
      }
      break;
    case T_FLOAT:
      n->lit.kind = QVX_LIT_FLOAT;
      n->lit.f = neg ? -t->f : t->f;
      break;
    case T_STRING:
      n->lit.kind = QVX_LIT_STRING;
      n->lit.s = t->s;
      n->lit.slen = t->slen;
      break;
    case T_NULL: n->lit.kind = QVX_LIT_NULL; break;
    case T_TRUE:
      n->lit.kind = QVX_LIT_BOOL;
      n->lit.b = true;
      break;
    default:
      n->lit.kind = QVX_LIT_BOOL;
      n->lit.b = false;
      break;
  }
  *out = n;
  return QV_OK;
}

static const struct {
  const char *name;
  qvx_fn fn;
  int32_t n_args;
} FUNCTIONS[] = {{"abs", QVX_FN_ABS, 1},
                 {"contains", QVX_FN_CONTAINS, 2},
                 {"ends_with", QVX_FN_ENDS_WITH, 2},
                 {"len", QVX_FN_LEN, 1},
                 {"length", QVX_FN_LEN, 1}, /* DuckDB's name */
                 {"starts_with", QVX_FN_STARTS_WITH, 2},
                 {"sqrt", QVX_FN_SQRT, 1},
                 {"exp", QVX_FN_EXP, 1},
                 {"ln", QVX_FN_LN, 1},
                 {"log", QVX_FN_LN, 1},
                 {"log10", QVX_FN_LOG10, 1},
                 {"log2", QVX_FN_LOG2, 1},
                 {"floor", QVX_FN_FLOOR, 1},
                 {"ceil", QVX_FN_CEIL, 1},
                 {"round", QVX_FN_ROUND, 1},
                 {"pow", QVX_FN_POW, 2},
                 {"lower", QVX_FN_LOWER, 1},
                 {"upper", QVX_FN_UPPER, 1},
                 {"substr", QVX_FN_SUBSTR, -3}, /* 2 or 3 */
                 {"coalesce", QVX_FN_COALESCE, 2},
                 {"if", QVX_FN_IF, 3},
                 {"cast", QVX_FN_CAST, 2}};
#define N_FUNCTIONS ((int)(sizeof FUNCTIONS / sizeof FUNCTIONS[0]))

const char *qvx_fn_name(int fn) {
  for (int k = 0; k < N_FUNCTIONS; k++)
    if ((int)FUNCTIONS[k].fn == fn) return FUNCTIONS[k].name;
  return "?";
}

static qv_status parse_call(parser *p, qvx_node **out) {
  const token *name = advance(p);
  int k = 0;
  while (k < N_FUNCTIONS && strcasecmp(FUNCTIONS[k].name, name->s) != 0) k++;
  if (k == N_FUNCTIONS || name->quoted)
    return perr(p, name->start,
                "unknown function '%s' (known: abs, cast, ceil, coalesce, contains, ends_with, "
                "exp, floor, if, len, ln, log, log10, log2, lower, pow, round, sqrt, "
                "starts_with, substr, upper)",
                name->s);
  const token *open = advance(p);
  qvx_node *args[3] = {NULL, NULL, NULL};
  int32_t count = 0; /* arguments seen (extra ones are parsed, then refused) */
  if (peek(p)->kind != T_RPAREN) {
    for (;;) {
      const token *before = &p->toks[p->pos - 1];
      if (peek(p)->kind == T_RPAREN || peek(p)->kind == T_COMMA || peek(p)->kind == T_END)
        return need_operand(p, before);
      qvx_node *arg;
      QV_RETURN_NOT_OK(parse_or(p, &arg));
      if (count < 3) args[count] = arg;
      count++;
      if (peek(p)->kind != T_COMMA) break;
      advance(p);
    }
  }
  if (peek(p)->kind != T_RPAREN) {
    char what[96];
    snprintf(what, sizeof what, "')' to close the call of %s() at column %" PRId64,
             FUNCTIONS[k].name, cols_between(p->text, 0, open->start) + 1);
    if (peek(p)->kind == T_END || peek(p)->kind == T_COMMA) return expected(p, peek(p), what);
    return expected(p, peek(p), "',' or ')'");
  }
  const token *close = advance(p);
  if (FUNCTIONS[k].n_args == -3 ? (count != 2 && count != 3) : count != FUNCTIONS[k].n_args) {
    if (FUNCTIONS[k].n_args == -3)
      return perr(p, name->start, "%s() takes 2 or 3 arguments, found %d", FUNCTIONS[k].name,
                  (int)count);
    return perr(p, name->start, "%s() takes %d argument%s, found %d", FUNCTIONS[k].name,
                FUNCTIONS[k].n_args, FUNCTIONS[k].n_args == 1 ? "" : "s", (int)count);
  }
  qvx_node *n = new_node(p, QVX_N_CALL, name->start, close->end);
  if (!n) return QV_ENOMEM;
  n->op = FUNCTIONS[k].fn;
  n->op_pos = name->start;
  QV_RETURN_NOT_OK(set_args(p, n, args, count));
  *out = n;
  return QV_OK;
}

static qv_status parse_column(parser *p, qvx_node **out) {
  const token *first = peek(p);
  char *segs[QVX_MAX_PATH];
  int32_t n_segs = 0;
  const token *last = first;
  for (;;) {
    const token *t = advance(p);
    if (n_segs == QVX_MAX_PATH)
      return perr(p, t->start, "column path has more than %d parts", QVX_MAX_PATH);
    segs[n_segs++] = t->s;
    last = t;
    if (peek(p)->kind != T_DOT) break;
    advance(p);
    if (peek(p)->kind != T_IDENT) return expected(p, peek(p), "a field name after '.'");
  }
  qvx_node *n = new_node(p, QVX_N_COLUMN, first->start, last->end);
  if (!n) return QV_ENOMEM;
  n->path = arena_alloc(p->arena, sizeof(char *) * (size_t)n_segs);
  if (!n->path) return qv_error_set(p->err, QV_ENOMEM, "out of memory building an expression");
  memcpy(n->path, segs, sizeof(char *) * (size_t)n_segs);
  n->n_path = n_segs;
  *out = n;
  return QV_OK;
}

static qv_status parse_unary(parser *p, qvx_node **out);

static qv_status parse_primary(parser *p, qvx_node **out) {
  const token *t = peek(p);
  if (at_literal(p)) return parse_literal(p, out);
  if (t->kind == T_IDENT) {
    if (peek2(p)->kind == T_LPAREN && !t->quoted) return parse_call(p, out);
    return parse_column(p, out);
  }
  if (t->kind == T_LPAREN) {
    const token *open = advance(p);
    if (peek(p)->kind == T_RPAREN || peek(p)->kind == T_END) return need_operand(p, open);
    QV_RETURN_NOT_OK(enter(p, open));
    qvx_node *inner;
    QV_RETURN_NOT_OK(parse_or(p, &inner));
    p->depth--;
    if (peek(p)->kind != T_RPAREN) {
      char what[64];
      snprintf(what, sizeof what, "')' to close the '(' at column %" PRId64,
               cols_between(p->text, 0, open->start) + 1);
      return expected(p, peek(p), what);
    }
    const token *close = advance(p);
    /* Parentheses widen the span (for messages) but add no node. */
    inner->start = open->start;
    inner->end = close->end;
    *out = inner;
    return QV_OK;
  }
  return expected(p, t, "an expression");
}

static qv_status parse_unary(parser *p, qvx_node **out) {
  const token *t = peek(p);
  if (t->kind == T_OP && (t->op == QVX_SUB || t->op == QVX_ADD) && !at_literal(p)) {
    advance(p);
    if (peek(p)->kind == T_END) return need_operand(p, t);
    QV_RETURN_NOT_OK(enter(p, t));
    qvx_node *operand;
    QV_RETURN_NOT_OK(parse_unary(p, &operand));
    p->depth--;
    if (t->op == QVX_ADD) { /* unary plus: the operand itself */
      *out = operand;
      return QV_OK;
    }
    /* Minus of a number literal ("-(5)", "- +5") is a literal itself. */
    if (operand->kind == QVX_N_LITERAL) {
      qvx_lit *l = &operand->lit;
      bool folded = true;
      if (l->kind == QVX_LIT_FLOAT) {
        l->f = -l->f;
      } else if (l->kind == QVX_LIT_INT && l->i == INT64_MIN) {
        l->kind = QVX_LIT_UINT;
        l->u = (uint64_t)INT64_MAX + 1;
      } else if (l->kind == QVX_LIT_INT) {
        l->i = -l->i;
      } else if (l->kind == QVX_LIT_UINT && l->u == (uint64_t)INT64_MAX + 1) {
        l->kind = QVX_LIT_INT;
        l->i = INT64_MIN;
      } else if (l->kind == QVX_LIT_UINT) {
        return perr(p, t->start,
                    "integer literal -%" PRIu64 " is out of range (the smallest is %" PRId64 ")",
                    l->u, INT64_MIN);
      } else {
        folded = false;
      }
      if (folded) {
        operand->start = t->start;
        *out = operand;
        return QV_OK;
      }
    }
    qvx_node *n = new_node(p, QVX_N_NEG, t->start, operand->end);
    if (!n) return QV_ENOMEM;
    QV_RETURN_NOT_OK(set_args(p, n, &operand, 1));
    *out = n;
    return QV_OK;
  }
  return parse_primary(p, out);
}

static qv_status parse_binary_chain(parser *p, qvx_node **out, bool additive);

static qv_status parse_product(parser *p, qvx_node **out) {
  return parse_binary_chain(p, out, false);
}

/* sum := product (('+'|'-') product)* ; product := unary (('*'|'/'|'%') unary)* */
static qv_status parse_binary_chain(parser *p, qvx_node **out, bool additive) {
  qvx_node *lhs;
  QV_RETURN_NOT_OK(additive ? parse_product(p, &lhs) : parse_unary(p, &lhs));
  for (;;) {
    const token *t = peek(p);
    if (t->kind != T_OP) break;
    bool match = additive ? (t->op == QVX_ADD || t->op == QVX_SUB)
                          : (t->op == QVX_MUL || t->op == QVX_DIV || t->op == QVX_MOD);
    if (!match) break;
    advance(p);
    const token *nx = peek(p);
    if (nx->kind == T_END || nx->kind == T_RPAREN || nx->kind == T_COMMA) return need_operand(p, t);
    qvx_node *rhs;
    QV_RETURN_NOT_OK(additive ? parse_product(p, &rhs) : parse_unary(p, &rhs));
    qvx_node *n = new_node(p, QVX_N_ARITH, lhs->start, rhs->end);
    if (!n) return QV_ENOMEM;
    n->op = t->op;
    n->op_pos = t->start;
    qvx_node *args[2] = {lhs, rhs};
    QV_RETURN_NOT_OK(set_args(p, n, args, 2));
    lhs = n;
  }
  *out = lhs;
  return QV_OK;
}

static bool is_cmp(const token *t) { return t->kind == T_OP && t->op <= QVX_GE; }

/* pred := sum [cmp sum | 'is' ['not'] 'null' | ['not'] 'in' '(' literals ')'] */
static qv_status parse_pred(parser *p, qvx_node **out) {
  qvx_node *lhs;
  QV_RETURN_NOT_OK(parse_binary_chain(p, &lhs, true));
  const token *t = peek(p);
  if (is_cmp(t)) {
    advance(p);
    const token *nx = peek(p);
    if (nx->kind == T_END || nx->kind == T_RPAREN || nx->kind == T_COMMA) return need_operand(p, t);
    qvx_node *rhs;
    QV_RETURN_NOT_OK(parse_binary_chain(p, &rhs, true));
    if (is_cmp(peek(p)))
      return perr(p, peek(p)->start,
                  "comparisons do not chain: write 'a < b and b < c' instead of 'a < b < c'");
    qvx_node *n = new_node(p, QVX_N_CMP, lhs->start, rhs->end);
    if (!n) return QV_ENOMEM;
    n->op = t->op;
    n->op_pos = t->start;
    qvx_node *args[2] = {lhs, rhs};
    QV_RETURN_NOT_OK(set_args(p, n, args, 2));
    *out = n;
    return QV_OK;
  }
  if (t->kind == T_IS) {
    advance(p);
    bool neg = false;
    if (peek(p)->kind == T_NOT) {
      advance(p);
      neg = true;
    }
    if (peek(p)->kind != T_NULL)
      return expected(p, peek(p),
                      neg ? "'null' after 'is not'" : "'null' or 'not null' after 'is'");
    const token *nul = advance(p);
    qvx_node *n = new_node(p, QVX_N_IS_NULL, lhs->start, nul->end);
    if (!n) return QV_ENOMEM;
    n->negated = neg;
    n->op_pos = t->start;
    QV_RETURN_NOT_OK(set_args(p, n, &lhs, 1));
    *out = n;
    return QV_OK;
  }
  if (t->kind == T_IN || (t->kind == T_NOT && peek2(p)->kind == T_IN)) {
    bool neg = t->kind == T_NOT;
    advance(p);
    if (neg) advance(p);
    const token *in_tok = &p->toks[p->pos - 1];
    if (peek(p)->kind != T_LPAREN) return expected(p, peek(p), "'(' after 'in'");
    const token *open = advance(p);
    /* Literals only: count them first (each takes at least one token). */
    int64_t cap = 1;
    for (int64_t k = p->pos; k < p->n_toks && p->toks[k].kind != T_RPAREN; k++) cap++;
    qvx_node **items = malloc(sizeof *items * (size_t)(cap + 1));
    if (!items) return qv_error_set(p->err, QV_ENOMEM, "out of memory parsing an 'in' list");
    items[0] = lhs;
    int32_t count = 1;
    qv_status st = QV_OK;
    for (;;) {
      if (!at_literal(p)) {
        st = expected(p, peek(p),
                      peek(p)->kind == T_IDENT
                          ? "a literal in the 'in' list (columns and expressions are not allowed)"
                          : "a literal in the 'in' list");
        break;
      }
      qvx_node *item;
      if ((st = parse_literal(p, &item)) != QV_OK) break;
      items[count++] = item;
      if (peek(p)->kind == T_COMMA) {
        advance(p);
        continue;
      }
      if (peek(p)->kind != T_RPAREN) {
        char what[80];
        snprintf(what, sizeof what, "',' or ')' to close the 'in' list at column %" PRId64,
                 cols_between(p->text, 0, open->start) + 1);
        st = expected(p, peek(p), what);
      }
      break;
    }
    if (st == QV_OK) {
      const token *close = advance(p);
      qvx_node *n = new_node(p, QVX_N_IN, lhs->start, close->end);
      if (!n) st = QV_ENOMEM;
      else {
        n->negated = neg;
        n->op_pos = neg ? t->start : in_tok->start;
        /* An 'in' list is one level however long it is. */
        st = set_args(p, n, items, count);
        *out = n;
      }
    }
    free(items);
    return st;
  }
  *out = lhs;
  return QV_OK;
}

/* not := ('not' | '!') not | pred */
static qv_status parse_not(parser *p, qvx_node **out) {
  const token *t = peek(p);
  if (t->kind != T_NOT) return parse_pred(p, out);
  advance(p);
  const token *nx = peek(p);
  if (nx->kind == T_END || nx->kind == T_RPAREN || nx->kind == T_COMMA) return need_operand(p, t);
  QV_RETURN_NOT_OK(enter(p, t));
  qvx_node *operand;
  QV_RETURN_NOT_OK(parse_not(p, &operand));
  p->depth--;
  qvx_node *n = new_node(p, QVX_N_NOT, t->start, operand->end);
  if (!n) return QV_ENOMEM;
  QV_RETURN_NOT_OK(set_args(p, n, &operand, 1));
  *out = n;
  return QV_OK;
}

/* and := not (('and' | '&&') not)* ; or := and (('or' | '||') and)* */
static qv_status parse_logic(parser *p, qvx_node **out, bool is_or) {
  qvx_node *lhs;
  QV_RETURN_NOT_OK(is_or ? parse_logic(p, &lhs, false) : parse_not(p, &lhs));
  for (;;) {
    const token *t = peek(p);
    if (t->kind != (is_or ? T_OR : T_AND)) break;
    advance(p);
    const token *nx = peek(p);
    if (nx->kind == T_END || nx->kind == T_RPAREN || nx->kind == T_COMMA || nx->kind == T_AND ||
        nx->kind == T_OR)
      return need_operand(p, t);
    qvx_node *rhs;
    QV_RETURN_NOT_OK(is_or ? parse_logic(p, &rhs, false) : parse_not(p, &rhs));
    qvx_node *n = new_node(p, is_or ? QVX_N_OR : QVX_N_AND, lhs->start, rhs->end);
    if (!n) return QV_ENOMEM;
    n->op_pos = t->start;
    qvx_node *args[2] = {lhs, rhs};
    QV_RETURN_NOT_OK(set_args(p, n, args, 2));
    lhs = n;
  }
  *out = lhs;
  return QV_OK;
}

static qv_status parse_or(parser *p, qvx_node **out) { return parse_logic(p, out, true); }

qv_status qv_expr_parse(const char *text, int64_t len, qv_expr **out, qv_error *err) {
  *out = NULL;
  if (!text) return qv_error_set(err, QV_EARG, "expression text is NULL");
  if (len < 0) len = (int64_t)strlen(text);
  if (len > QV_EXPR_MAX_LENGTH)
    return qv_error_set(err, QV_EINVAL, "expression is %" PRId64 " bytes long; the limit is %d",
                        len, QV_EXPR_MAX_LENGTH);
  qv_expr *e = calloc(1, sizeof *e);
  if (!e) return qv_error_set(err, QV_ENOMEM, "out of memory parsing an expression");
  e->text = malloc((size_t)len + 1);
  if (!e->text) {
    free(e);
    return qv_error_set(err, QV_ENOMEM, "out of memory parsing an expression");
  }
  memcpy(e->text, text, (size_t)len);
  e->text[len] = '\0';
  e->len = len;
  parser p;
  memset(&p, 0, sizeof p);
  p.text = e->text;
  p.len = len;
  p.arena = &e->arena;
  p.err = err;
  qv_status st = lex(&p);
  if (st == QV_OK) {
    if (peek(&p)->kind == T_END) {
      st = qv_error_set(err, QV_EINVAL, "empty expression");
    } else {
      st = parse_or(&p, &e->root);
      if (st == QV_OK && peek(&p)->kind != T_END) {
        const token *t = peek(&p);
        char d[48];
        describe(&p, t, d, sizeof d);
        if (t->kind == T_RPAREN) st = perr(&p, t->start, "unmatched ')'");
        else
          st = perr(&p, t->start, "expected an operator or the end of the expression, found %s", d);
      }
    }
  }
  free(p.toks);
  if (st != QV_OK) {
    qv_expr_free(e);
    return st;
  }
  *out = e;
  return QV_OK;
}

void qv_expr_free(qv_expr *e) {
  if (!e) return;
  arena_free(e->arena);
  free(e->text);
  free(e);
}

/* ======================================================================== */
/* Canonical rendering                                                       */

const char *qvx_op_name(int op) {
  static const char *const names[] = {"==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%"};
  return op >= 0 && op <= QVX_MOD ? names[op] : "?";
}

#define PUT(s) QV_RETURN_NOT_OK(qv_strbuf_append_str(out, (s), err))

static qv_status render_string(const char *s, int64_t n, qv_strbuf *out, qv_error *err) {
  PUT("'");
  for (int64_t i = 0; i < n; i++) {
    uint8_t c = (uint8_t)s[i];
    if (c == '\'' || c == '\\') {
      char esc[3] = {'\\', (char)c, 0};
      PUT(esc);
    } else if (c == '\n') PUT("\\n");
    else if (c == '\t') PUT("\\t");
    else if (c == '\r') PUT("\\r");
    else if (c < 0x20 || c == 0x7f) QV_RETURN_NOT_OK(qv_strbuf_printf(out, err, "\\x%02x", c));
    else QV_RETURN_NOT_OK(qv_strbuf_append_char(out, (char)c, err));
  }
  PUT("'");
  return QV_OK;
}

static qv_status render_name(const char *s, qv_strbuf *out, qv_error *err) {
  size_t n = strlen(s);
  bool bare = n > 0 && ident_start((uint8_t)s[0]) && keyword_kind(s, (int64_t)n) == T_IDENT;
  for (size_t i = 0; bare && i < n; i++)
    if (!ident_char((uint8_t)s[i])) bare = false;
  if (bare) return qv_strbuf_append_str(out, s, err);
  PUT("`");
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '`') PUT("``");
    else QV_RETURN_NOT_OK(qv_strbuf_append_char(out, s[i], err));
  }
  PUT("`");
  return QV_OK;
}

static qv_status render_lit(const qvx_lit *l, qv_strbuf *out, qv_error *err) {
  switch (l->kind) {
    case QVX_LIT_NULL: PUT("null"); return QV_OK;
    case QVX_LIT_BOOL: PUT(l->b ? "true" : "false"); return QV_OK;
    case QVX_LIT_INT: return qv_strbuf_printf(out, err, "%" PRId64, l->i);
    case QVX_LIT_UINT: return qv_strbuf_printf(out, err, "%" PRIu64, l->u);
    case QVX_LIT_FLOAT: return qv_format_double(out, l->f, err);
    case QVX_LIT_STRING: return render_string(l->s, l->slen, out, err);
  }
  return QV_OK;
}

qv_status qvx_render(const qvx_node *n, qv_strbuf *out, qv_error *err) {
  switch (n->kind) {
    case QVX_N_LITERAL: return render_lit(&n->lit, out, err);
    case QVX_N_COLUMN:
      for (int32_t k = 0; k < n->n_path; k++) {
        if (k) PUT(".");
        QV_RETURN_NOT_OK(render_name(n->path[k], out, err));
      }
      return QV_OK;
    case QVX_N_NOT:
      PUT("(not ");
      QV_RETURN_NOT_OK(qvx_render(n->args[0], out, err));
      PUT(")");
      return QV_OK;
    case QVX_N_NEG: {
      /* "(-(-5))" rather than "(--5)" for a negative literal operand. */
      const qvx_node *a = n->args[0];
      bool wrap = a->kind == QVX_N_LITERAL && ((a->lit.kind == QVX_LIT_INT && a->lit.i < 0) ||
                                               (a->lit.kind == QVX_LIT_FLOAT && signbit(a->lit.f)));
      PUT(wrap ? "(-(" : "(-");
      QV_RETURN_NOT_OK(qvx_render(a, out, err));
      PUT(wrap ? "))" : ")");
      return QV_OK;
    }
    case QVX_N_AND:
    case QVX_N_OR:
    case QVX_N_CMP:
    case QVX_N_ARITH:
      PUT("(");
      QV_RETURN_NOT_OK(qvx_render(n->args[0], out, err));
      PUT(" ");
      PUT(n->kind == QVX_N_AND ? "and" : n->kind == QVX_N_OR ? "or" : qvx_op_name(n->op));
      PUT(" ");
      QV_RETURN_NOT_OK(qvx_render(n->args[1], out, err));
      PUT(")");
      return QV_OK;
    case QVX_N_IS_NULL:
      PUT("(");
      QV_RETURN_NOT_OK(qvx_render(n->args[0], out, err));
      PUT(n->negated ? " is not null)" : " is null)");
      return QV_OK;
    case QVX_N_IN:
      PUT("(");
      QV_RETURN_NOT_OK(qvx_render(n->args[0], out, err));
      PUT(n->negated ? " not in (" : " in (");
      for (int32_t k = 1; k < n->n_args; k++) {
        if (k > 1) PUT(", ");
        QV_RETURN_NOT_OK(qvx_render(n->args[k], out, err));
      }
      PUT("))");
      return QV_OK;
    case QVX_N_CALL:
      PUT(qvx_fn_name(n->op));
      PUT("(");
      for (int32_t k = 0; k < n->n_args; k++) {
        if (k) PUT(", ");
        QV_RETURN_NOT_OK(qvx_render(n->args[k], out, err));
      }
      PUT(")");
      return QV_OK;
  }
  return QV_OK;
}

qv_status qv_expr_to_string(const qv_expr *e, qv_strbuf *out, qv_error *err) {
  return qvx_render(e->root, out, err);
}
