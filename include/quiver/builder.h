/*
 * quiver/builder.h — building Arrow arrays in memory from C: append values
 * and nulls one element at a time (or fixed-width values in bulk), for
 * every Arrow type, nested ones included, then finish into an immutable
 * qv_array (array.h). Part of the core layer.
 *
 * A builder is made for one type and grows heap buffers (qv_buffer,
 * doubling their capacity) as values arrive. Nested types have one child
 * builder per child field, reached with qv_builder_child(); dictionary and
 * run-end-encoded types have a builder for their values, reached with
 * qv_builder_values(). Child builders belong to their parent: they are
 * freed and finished with it, never on their own.
 *
 * Which append goes with which type (any other is a QV_ETYPE error that
 * names the builder, its type and the appends it takes):
 *   every type        append_null / append_nulls (QV_EARG on a field
 *                     declared non-nullable; unions append the null to
 *                     their first child, as Arrow C++ does)
 *   bool              append_bool
 *   int8..uint64      append_int, append_uint (range-checked: QV_ERANGE),
 *                     append_values (bulk, raw little-endian)
 *   halffloat/float/double
 *                     append_double (float16 rounds to nearest even),
 *                     append_values
 *   decimal32..256    append_int / append_uint (the unscaled integer),
 *                     append_decimal ("-123.45", scaled to the type's
 *                     scale); at most `precision` digits (QV_ERANGE)
 *   date32/date64/time32/time64/timestamp/duration/month_interval
 *                     append_int (the stored integer in the type's unit),
 *                     append_values
 *   day_time_interval append_day_time
 *   month_day_nano_interval
 *                     append_month_day_nano
 *   binary/string/large_binary/large_string/binary_view/string_view
 *                     append_bytes, append_string (string types: the bytes
 *                     must be UTF-8, QV_EINVAL otherwise)
 *   fixed_size_binary append_bytes of exactly byte_width bytes
 *   any fixed-width type other than bool
 *                     append_bytes of exactly its byte width (the raw
 *                     little-endian value: float16 bits, decimal bytes...)
 *   list/large_list/list_view/large_list_view/map/fixed_size_list
 *                     begin_list, then the element's values appended to
 *                     qv_builder_child(b, 0) (for map: begin_struct, key
 *                     into child 0 and value into child 1, end_struct on
 *                     the entries builder), then end_list
 *   struct            begin_struct, one value per child, end_struct; or
 *                     append n values to every child, then append_structs(n)
 *   sparse/dense union
 *                     begin_union(type code), one value appended to the
 *                     child of that code, end_union (sparse unions get a
 *                     null in every other child)
 *   dictionary        a value of the value type through the append that
 *                     type takes ("by value": looked up in a hash table of
 *                     the values so far; a new value is added to the
 *                     dictionary), or append_index with the dictionary
 *                     values appended to qv_builder_values(b) ("by
 *                     index"); the two ways cannot be mixed
 *   run_end_encoded   a value of the value type (by value: an equal
 *                     neighbour, compared bytewise, extends the last run;
 *                     nulls make null runs), or begin_run(n), one value
 *                     appended to qv_builder_values(b), end_run
 *   null              append_null / append_nulls only
 *
 * Misuse is reported, never undefined: a nested element opened and not
 * closed (or closed twice), values appended to a child outside
 * begin_.../end_... ("child 'item' holds 3 values, expected 2: values were
 * appended to it outside begin_list/end_list"), a fixed-size list element
 * with the wrong number of values, an index type or run-end type that
 * overflows, an offset past the 32-bit limit of list/string (QV_ERANGE:
 * use the large_ types). A failed append leaves the builder as it was.
 *
 * Not thread-safe: one builder, one thread at a time.
 */
#ifndef QUIVER_BUILDER_H
#define QUIVER_BUILDER_H

#include "quiver/array.h"
#include "quiver/core.h"
#include "quiver/type.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qv_builder qv_builder;

/**
 * New empty builder for arrays of `type` (a reference is taken). Every
 * Arrow type is accepted, including nested and dictionary types (whose
 * value type may itself be nested). Free with qv_builder_free.
 */
QV_API qv_status qv_builder_new(const qv_type *type, qv_builder **out, qv_error *err) QV_NODISCARD;

/** Free a builder made by qv_builder_new, with its children and whatever
 *  it holds (arrays already finished stay valid). NULL-safe. Child
 *  builders are freed with their parent; passing one here is a no-op. */
QV_API void qv_builder_free(qv_builder *b);

/** Type of the arrays built (borrowed). */
QV_API const qv_type *qv_builder_type(const qv_builder *b);
/** Elements appended since the builder was made or last finished. */
QV_API int64_t qv_builder_length(const qv_builder *b);
/** Of which null (top-level validity; unions and run-end encoded: 0). */
QV_API int64_t qv_builder_null_count(const qv_builder *b);

/**
 * Child builder i (borrowed; lives as long as the parent) of a list-like
 * (i = 0), map (0: the "entries" struct), struct or union builder, or
 * NULL when the type has no child i. Dictionary and run-end-encoded
 * builders have no children here: see qv_builder_values.
 */
QV_API qv_builder *qv_builder_child(qv_builder *b, int32_t i);

/**
 * Builder of the values of a dictionary builder (the dictionary itself:
 * append to it when appending by index) or of a run-end-encoded builder
 * (one value per run, for begin_run/end_run). NULL for other types.
 */
QV_API qv_builder *qv_builder_values(qv_builder *b);

/** Make room for `n` more elements (buffers of fixed size per element;
 *  a hint, never required). */
QV_API qv_status qv_builder_reserve(qv_builder *b, int64_t n, qv_error *err) QV_NODISCARD;

/* ---- scalars ----------------------------------------------------------- */

/** Append one null / `n` nulls (any type; see the table at the top of
 *  this file for unions and run-end encoded types). */
QV_API qv_status qv_builder_append_null(qv_builder *b, qv_error *err) QV_NODISCARD;
QV_API qv_status qv_builder_append_nulls(qv_builder *b, int64_t n, qv_error *err) QV_NODISCARD;
/** Append one value to a builder of a type that takes it (see the table at
 *  the top of this file): bool; a signed or unsigned integer (checked
 *  against the type's range: QV_ERANGE) for integer and temporal types; a
 *  double for half/float/double. A call the type does not take is
 *  QV_ETYPE, naming the calls it does take. */
QV_API qv_status qv_builder_append_bool(qv_builder *b, bool v, qv_error *err) QV_NODISCARD;
QV_API qv_status qv_builder_append_int(qv_builder *b, int64_t v, qv_error *err) QV_NODISCARD;
QV_API qv_status qv_builder_append_uint(qv_builder *b, uint64_t v, qv_error *err) QV_NODISCARD;
QV_API qv_status qv_builder_append_double(qv_builder *b, double v, qv_error *err) QV_NODISCARD;
/** `len` bytes at `data` (copied; data may be NULL when len is 0). */
QV_API qv_status qv_builder_append_bytes(qv_builder *b, const void *data, int64_t len,
                                         qv_error *err) QV_NODISCARD;
/** A NUL-terminated string (append_bytes of strlen(s) bytes). */
QV_API qv_status qv_builder_append_string(qv_builder *b, const char *s, qv_error *err) QV_NODISCARD;
/** A decimal written in base 10 ("12.5", "-0.001", "7"): optional sign,
 *  digits, optional '.' and digits. Scaled to the type's scale without
 *  rounding: more fractional digits than the scale is QV_ERANGE unless the
 *  extra digits are zeros. */
QV_API qv_status qv_builder_append_decimal(qv_builder *b, const char *text,
                                           qv_error *err) QV_NODISCARD;
QV_API qv_status qv_builder_append_day_time(qv_builder *b, int32_t days, int32_t millis,
                                            qv_error *err) QV_NODISCARD;
QV_API qv_status qv_builder_append_month_day_nano(qv_builder *b, int32_t months, int32_t days,
                                                  int64_t nanos, qv_error *err) QV_NODISCARD;
/**
 * Bulk append of `n` valid values of a fixed-width type other than bool
 * (integers, floats, decimals, temporal, intervals, fixed_size_binary):
 * n * byte_width raw little-endian bytes copied from `values`. Not for
 * dictionary or run-end-encoded builders.
 */
QV_API qv_status qv_builder_append_values(qv_builder *b, const void *values, int64_t n,
                                          qv_error *err) QV_NODISCARD;

/* ---- nested ------------------------------------------------------------ */

/** Open / close one element of a list, large list, list view, large list
 *  view, map or fixed-size list builder (see the file comment). */
QV_API qv_status qv_builder_begin_list(qv_builder *b, qv_error *err) QV_NODISCARD;
QV_API qv_status qv_builder_end_list(qv_builder *b, qv_error *err) QV_NODISCARD;

/** Open / close one element of a struct builder. */
QV_API qv_status qv_builder_begin_struct(qv_builder *b, qv_error *err) QV_NODISCARD;
QV_API qv_status qv_builder_end_struct(qv_builder *b, qv_error *err) QV_NODISCARD;
/** `n` valid struct elements whose child values were appended already:
 *  every child must hold exactly length + n values (the columnar way to
 *  build a record batch). */
QV_API qv_status qv_builder_append_structs(qv_builder *b, int64_t n, qv_error *err) QV_NODISCARD;

/** Open an element of a union builder holding the child with `type_code`
 *  (QV_EARG when the type has no such code); close it after appending
 *  exactly one value to that child. */
QV_API qv_status qv_builder_begin_union(qv_builder *b, int8_t type_code,
                                        qv_error *err) QV_NODISCARD;
QV_API qv_status qv_builder_end_union(qv_builder *b, qv_error *err) QV_NODISCARD;

/** Dictionary builders: append an index into the dictionary (values
 *  appended to qv_builder_values(b)). Checked against the index type at
 *  once and against the dictionary's length at finish (QV_ERANGE). */
QV_API qv_status qv_builder_append_index(qv_builder *b, int64_t index, qv_error *err) QV_NODISCARD;

/** Run-end-encoded builders: open a run of `n` >= 1 elements whose value
 *  is the one value appended to qv_builder_values(b) before end_run. */
QV_API qv_status qv_builder_begin_run(qv_builder *b, int64_t n, qv_error *err) QV_NODISCARD;
QV_API qv_status qv_builder_end_run(qv_builder *b, qv_error *err) QV_NODISCARD;

/* ---- finish ------------------------------------------------------------ */

/**
 * Move everything appended so far into a new array (caller owns one
 * reference) and reset the builder to empty, ready for more. A validity
 * buffer is present only when there are nulls. Fails (builder unchanged)
 * when an element is still open anywhere in the tree or a child holds
 * values outside an element. Dictionary builders keep their dictionary
 * across finishes, as Arrow's do: each finished array carries every value
 * appended so far, so earlier dictionaries are prefixes of later ones (the
 * IPC writer then sends deltas). Only the top builder may be finished.
 */
QV_API qv_status qv_builder_finish(qv_builder *b, qv_array **out, qv_error *err) QV_NODISCARD;

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_BUILDER_H */
